// The tidepool native addon: exports only; each function lives in its own file.
#include <napi.h>

#include "framing.h"

static Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("scanFrames", Napi::Function::New(env, tidepool::ScanFrames, "scanFrames"));
  return exports;
}

NODE_API_MODULE(tidepool_native, Init)
