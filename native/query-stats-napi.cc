// relayQueryStatsSize and relayQueryStats: the relay's table of simple-protocol query fingerprints (query-stats.h),
// sized at start and on RELOAD and read only when /api/top/queries asks; queryFingerprint runs the normalizer on
// texts given from JavaScript, for the tests that hold it to its TypeScript twin.
#include <cinttypes>
#include <cstdio>

#include "relay-napi.h"

namespace tidepool {
namespace {

std::string Hex(uint64_t h) {
  char out[17];
  std::snprintf(out, sizeof out, "%016" PRIx64, h);
  return std::string(out, 16);
}

/** relayQueryStatsSize(n): at most n fingerprints (0: recording off); a new size empties the table. */
Napi::Value RelayQueryStatsSize(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsNumber()) {
    Napi::TypeError::New(env, "relayQueryStatsSize(n: number)").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  relay::Relay* r = CurrentRelay(info);
  if (!r) return env.Undefined();
  const double n = info[0].As<Napi::Number>().DoubleValue();
  r->queryStats_.Resize(n > 0 && n < 1e7 ? static_cast<size_t>(n) : 0);
  return env.Undefined();
}

/** relayQueryStats() -> {pools: number[], hashes: string[], texts: string[], counts: number[], times: number[]}: the
 *  entries with at least one completed query (time in microseconds). */
Napi::Value RelayQueryStats(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  relay::Relay* r = CurrentRelay(info);
  if (!r) return env.Undefined();
  Napi::Array pools = Napi::Array::New(env), hashes = Napi::Array::New(env), texts = Napi::Array::New(env),
              counts = Napi::Array::New(env), times = Napi::Array::New(env);
  uint32_t n = 0;
  for (const auto& e : r->queryStats_.entries()) {
    if (e.count == 0) continue;
    pools.Set(n, Napi::Number::New(env, e.pool));
    hashes.Set(n, Napi::String::New(env, Hex(e.hash)));
    texts.Set(n, Napi::String::New(env, e.text.data(), e.text.size()));
    counts.Set(n, Napi::Number::New(env, e.count));
    times.Set(n, Napi::Number::New(env, e.timeUs));
    n++;
  }
  Napi::Object out = Napi::Object::New(env);
  out.Set("pools", pools);
  out.Set("hashes", hashes);
  out.Set("texts", texts);
  out.Set("counts", counts);
  out.Set("times", times);
  return out;
}

/** queryFingerprint(pieces: Uint8Array[]) -> [hash (16 hex digits), normalized text]: the pieces fed one after another
 *  as one Query text. */
Napi::Value QueryFingerprintOf(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsArray()) {
    Napi::TypeError::New(env, "queryFingerprint(pieces: Uint8Array[])").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  Napi::Array pieces = info[0].As<Napi::Array>();
  relay::QueryFingerprint q;
  q.Start();
  for (uint32_t i = 0; i < pieces.Length(); i++) {
    uint8_t* data = nullptr;
    size_t len = 0;
    if (!Typed(pieces.Get(i), napi_uint8_array, &data, &len)) {
      Napi::TypeError::New(env, "queryFingerprint: every piece is a Uint8Array").ThrowAsJavaScriptException();
      return env.Undefined();
    }
    q.Feed(data, len);
  }
  q.Finish();
  Napi::Array out = Napi::Array::New(env, 2);
  out.Set(0u, Napi::String::New(env, Hex(q.hash)));
  out.Set(1u, Napi::String::New(env, q.text.data(), q.text.size()));
  return out;
}

}  // namespace

void InitQueryStats(Napi::Env env, Napi::Object exports) {
  exports.Set("relayQueryStatsSize", Napi::Function::New(env, RelayQueryStatsSize, "relayQueryStatsSize"));
  exports.Set("relayQueryStats", Napi::Function::New(env, RelayQueryStats, "relayQueryStats"));
  exports.Set("queryFingerprint", Napi::Function::New(env, QueryFingerprintOf, "queryFingerprint"));
}

}  // namespace tidepool
