// relayStateScan: the native relay's session-state scan (relay-state-scan.h) on reads given from JavaScript, for the
// tests that hold it to its TypeScript twin (src/pooler/session-state/state-scan.ts).
#include "relay-napi.h"
#include "relay-state-scan.h"

namespace tidepool {
namespace {

/** relayStateScan(reads: Uint8Array[]) -> the kinds named | the kinds cleared << 8, the reads fed one after another as
 *  a client's stream. */
Napi::Value RelayStateScan(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsArray()) {
    Napi::TypeError::New(env, "relayStateScan(reads: Uint8Array[])").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  Napi::Array reads = info[0].As<Napi::Array>();
  relay::StateScan scan;
  for (uint32_t i = 0; i < reads.Length(); i++) {
    uint8_t* data = nullptr;
    size_t len = 0;
    if (!Typed(reads.Get(i), napi_uint8_array, &data, &len)) {
      Napi::TypeError::New(env, "relayStateScan: every read is a Uint8Array").ThrowAsJavaScriptException();
      return env.Undefined();
    }
    scan.Feed(data, len);
  }
  return Napi::Number::New(env, scan.Take());
}

}  // namespace

void InitRelayStateScan(Napi::Env env, Napi::Object exports) {
  exports.Set("relayStateScan", Napi::Function::New(env, RelayStateScan, "relayStateScan"));
}

}  // namespace tidepool
