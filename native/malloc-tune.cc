// glibc malloc tuning for the log store's shard threads: a fixed mmap threshold and a trim after each seal.
//
// glibc raises its mmap threshold to the size of every mmapped block freed (up to 32 MiB). A shard frees
// typed arrays of 1-32 MiB at every seal, so after the first seal such arrays come from the thread's malloc
// arena, whose freed space stays resident: the process grows from one seal to the next. A fixed threshold
// (which also turns the adjustment off) sends large blocks back to mmap, and malloc_trim gives the free pages
// inside the arenas back to the kernel. A separate addon so that the shard code does not depend on it.
#include <napi.h>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace {

/** setMmapThreshold(bytes): true when glibc took it; false elsewhere (musl, macOS) or when refused. */
Napi::Value SetMmapThreshold(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsNumber()) {
    Napi::TypeError::New(env, "setMmapThreshold(bytes): bytes must be a number").ThrowAsJavaScriptException();
    return env.Undefined();
  }
#if defined(__GLIBC__)
  const int64_t bytes = info[0].As<Napi::Number>().Int64Value();
  if (bytes < 0 || bytes > (32 << 20)) return Napi::Boolean::New(env, false);
  return Napi::Boolean::New(env, mallopt(M_MMAP_THRESHOLD, static_cast<int>(bytes)) == 1);
#else
  return Napi::Boolean::New(env, false);
#endif
}

/** trim(): gives free malloc memory back to the kernel (every arena); true when some was released. */
Napi::Value Trim(const Napi::CallbackInfo& info) {
#if defined(__GLIBC__)
  return Napi::Boolean::New(info.Env(), malloc_trim(0) == 1);
#else
  return Napi::Boolean::New(info.Env(), false);
#endif
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("setMmapThreshold", Napi::Function::New(env, SetMmapThreshold, "setMmapThreshold"));
  exports.Set("trim", Napi::Function::New(env, Trim, "trim"));
  return exports;
}

}  // namespace

NODE_API_MODULE(tidepool_malloc, Init)
