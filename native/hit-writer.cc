// Search hits as the API returns them, {"id":"<24 hex>","data":<stored document>,"time":"<ISO 8601>"}, written
// from a sealed fraction's decompressed block in one call per run of neighbouring documents (the TypeScript path
// made several typed-array views, an id string and a time per hit), and a search's hits joined into the answer.
// Twins: src/native/hit-writer.ts. Every index is checked here, so a wrong argument throws instead of crashing.
#include "hit-writer.h"
#include "iso-time.h"

#include <cmath>
#include <cstdint>
#include <cstring>

namespace tidepool {

namespace {

bool Typed(napi_env env, napi_value v, napi_typedarray_type want, void** data, size_t* length) {
  bool is = false;
  if (napi_is_typedarray(env, v, &is) != napi_ok || !is) return false;
  napi_typedarray_type type;
  if (napi_get_typedarray_info(env, v, &type, length, data, nullptr, nullptr) != napi_ok) return false;
  return type == want;
}

bool Int(napi_env env, napi_value v, int64_t* out) {
  double d = 0;
  if (napi_get_value_double(env, v, &d) != napi_ok || !std::isfinite(d) || d != std::floor(d) || std::fabs(d) > 9.0e15) return false;
  *out = static_cast<int64_t>(d);
  return true;
}

napi_value Number(napi_env env, int64_t v) {
  napi_value r;
  napi_create_double(env, static_cast<double>(v), &r);
  return r;
}

const char kHex[] = "0123456789abcdef";
// Times isoTime() writes as YYYY-MM-DDTHH:MM:SS.mmmZ (1970 to 9999); others take the caller's slow path.
constexpr double kMaxTime = 253402300800000.0;
constexpr int64_t kHitBytes = 75;  // {"id":"(7) id(24) ","data":(9) ,"time":"(9) time(24) "}(2)

inline uint8_t* Put(uint8_t* p, const char* s, size_t n) {
  std::memcpy(p, s, n);
  return p + n;
}

}  // namespace

// writeHits(out, pos, raw, offsets, first, count, step, ids, times, base, idsHex, hitOffs, hitTimes, at):
// hits j = 0 .. count - 1 are the documents of block index b = first + j * step (step 1 or -1): bytes
// raw[offsets[b] .. offsets[b + 1]), id ids[12 * (base + b) ..] (binary), time times[base + b]. Each is written
// at out[pos ..]; its start goes to hitOffs[at + j], its time to hitTimes[at + j], its id as hex to
// idsHex[24 * (at + j) ..]. Returns the position after the last one, or -1 (nothing written) when `out` is too
// small or a time is before 1970 or past 9999.
napi_value WriteHits(napi_env env, napi_callback_info info) {
  size_t argc = 14;
  napi_value argv[14];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  void *outD, *rawD, *offD, *idsD, *timesD, *hexD, *hoD, *htD;
  size_t outN, rawN, offN, idsN, timesN, hexN, hoN, htN;
  int64_t pos, first, count, step, base, at;
  if (argc < 14 || !Typed(env, argv[0], napi_uint8_array, &outD, &outN) || !Int(env, argv[1], &pos) ||
      !Typed(env, argv[2], napi_uint8_array, &rawD, &rawN) || !Typed(env, argv[3], napi_uint32_array, &offD, &offN) ||
      !Int(env, argv[4], &first) || !Int(env, argv[5], &count) || !Int(env, argv[6], &step) ||
      !Typed(env, argv[7], napi_uint8_array, &idsD, &idsN) || !Typed(env, argv[8], napi_float64_array, &timesD, &timesN) ||
      !Int(env, argv[9], &base) || !Typed(env, argv[10], napi_uint8_array, &hexD, &hexN) ||
      !Typed(env, argv[11], napi_uint32_array, &hoD, &hoN) || !Typed(env, argv[12], napi_float64_array, &htD, &htN) ||
      !Int(env, argv[13], &at)) {
    napi_throw_type_error(env, nullptr, "writeHits(out, pos, raw, offsets, first, count, step, ids, times, base, idsHex, hitOffs, hitTimes, at)");
    return nullptr;
  }
  const int64_t last = first + (count - 1) * step;
  const int64_t lo = step > 0 ? first : last;
  const int64_t hi = step > 0 ? last : first;
  if (count < 1 || (step != 1 && step != -1) || lo < 0 || hi + 2 > static_cast<int64_t>(offN) || base < 0 ||
      base + hi >= static_cast<int64_t>(timesN) || 12 * (base + hi + 1) > static_cast<int64_t>(idsN) || pos < 0 || at < 0 ||
      at + count > static_cast<int64_t>(hoN) || at + count > static_cast<int64_t>(htN) || 24 * (at + count) > static_cast<int64_t>(hexN)) {
    napi_throw_range_error(env, nullptr, "writeHits: bad range");
    return nullptr;
  }
  const uint32_t* offsets = static_cast<const uint32_t*>(offD);
  const double* times = static_cast<const double*>(timesD);
  if (offsets[lo] > offsets[hi + 1] || offsets[hi + 1] > rawN) {
    napi_throw_range_error(env, nullptr, "writeHits: offsets outside the block");
    return nullptr;
  }
  int64_t need = 0;
  for (int64_t b = lo; b <= hi; b++) {
    const double t = times[base + b];
    if (!(t >= 0 && t < kMaxTime) || offsets[b] > offsets[b + 1]) return Number(env, -1);
    need += kHitBytes + (offsets[b + 1] - offsets[b]);
  }
  if (pos + need > static_cast<int64_t>(outN)) return Number(env, -1);
  uint8_t* const out = static_cast<uint8_t*>(outD);
  const uint8_t* raw = static_cast<const uint8_t*>(rawD);
  const uint8_t* ids = static_cast<const uint8_t*>(idsD);
  uint8_t* hex = static_cast<uint8_t*>(hexD);
  uint32_t* hitOffs = static_cast<uint32_t*>(hoD);
  double* hitTimes = static_cast<double*>(htD);
  uint8_t* p = out + pos;
  for (int64_t j = 0, b = first; j < count; j++, b += step) {
    hitOffs[at + j] = static_cast<uint32_t>(p - out);
    hitTimes[at + j] = times[base + b];
    p = Put(p, "{\"id\":\"", 7);
    const uint8_t* id = ids + 12 * (base + b);
    uint8_t* h = hex + 24 * (at + j);
    for (int k = 0; k < 12; k++) {
      h[2 * k] = static_cast<uint8_t>(kHex[id[k] >> 4]);
      h[2 * k + 1] = static_cast<uint8_t>(kHex[id[k] & 15]);
    }
    std::memcpy(p, h, 24);
    p = Put(p + 24, "\",\"data\":", 9);
    const uint32_t len = offsets[b + 1] - offsets[b];
    std::memcpy(p, raw + offsets[b], len);
    p = Put(p + len, ",\"time\":\"", 9);
    iso::Write(static_cast<int64_t>(std::floor(times[base + b])), p);
    p = Put(p + 24, "\"}", 2);
  }
  return Number(env, p - out);
}

// joinHits(out, pos, json, offs, from, to): hits from .. to - 1 (hit k is json[offs[k] .. offs[k + 1])) written
// at out[pos ..] with a comma between each two. Returns the position after them, or -1 when `out` is too small.
napi_value JoinHits(napi_env env, napi_callback_info info) {
  size_t argc = 6;
  napi_value argv[6];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  void *outD, *jsonD, *offD;
  size_t outN, jsonN, offN;
  int64_t pos, from, to;
  if (argc < 6 || !Typed(env, argv[0], napi_uint8_array, &outD, &outN) || !Int(env, argv[1], &pos) ||
      !Typed(env, argv[2], napi_uint8_array, &jsonD, &jsonN) || !Typed(env, argv[3], napi_uint32_array, &offD, &offN) ||
      !Int(env, argv[4], &from) || !Int(env, argv[5], &to)) {
    napi_throw_type_error(env, nullptr, "joinHits(out, pos, json, offs, from, to)");
    return nullptr;
  }
  const uint32_t* offs = static_cast<const uint32_t*>(offD);
  if (pos < 0 || from < 0 || to < from || to + 1 > static_cast<int64_t>(offN)) {
    napi_throw_range_error(env, nullptr, "joinHits: bad range");
    return nullptr;
  }
  if (to == from) return Number(env, pos);
  int64_t need = to - from - 1;
  for (int64_t k = from; k < to; k++) {
    if (offs[k] > offs[k + 1] || offs[k + 1] > jsonN) {
      napi_throw_range_error(env, nullptr, "joinHits: offsets outside the hits");
      return nullptr;
    }
    need += offs[k + 1] - offs[k];
  }
  if (pos + need > static_cast<int64_t>(outN)) return Number(env, -1);
  uint8_t* const out = static_cast<uint8_t*>(outD);
  const uint8_t* json = static_cast<const uint8_t*>(jsonD);
  uint8_t* p = out + pos;
  for (int64_t k = from; k < to; k++) {
    if (k > from) *p++ = ',';
    const uint32_t len = offs[k + 1] - offs[k];
    std::memcpy(p, json + offs[k], len);
    p += len;
  }
  return Number(env, p - out);
}

}  // namespace tidepool
