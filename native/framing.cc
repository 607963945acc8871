// Finds complete PostgreSQL messages (type byte + int32 length) in a byte range.
// Layout of `out` (Int32Array): out[0] = offset of the first incomplete message (or end),
// out[1] = status (0 ok, 1 a length < 4 or > maxMessageSize at out[0]),
// then one (type, start, length) triple per complete message; length counts itself, not the type byte.
// Written against the C N-API: the call costs far more than the scan, so it avoids wrapper objects.
#include "framing.h"

#include <cstdint>

namespace tidepool {

static bool TypedArray(napi_env env, napi_value v, napi_typedarray_type want, void** data, size_t* length) {
  bool is = false;
  if (napi_is_typedarray(env, v, &is) != napi_ok || !is) return false;
  napi_typedarray_type type;
  if (napi_get_typedarray_info(env, v, &type, length, data, nullptr, nullptr) != napi_ok) return false;
  return type == want;
}

napi_value ScanFrames(napi_env env, napi_callback_info info) {
  size_t argc = 5;
  napi_value argv[5];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  void* bufData = nullptr;
  void* outData = nullptr;
  size_t len = 0;
  size_t outLen = 0;
  double offsetD = 0, endD = 0, maxD = 0;
  if (argc < 5 || !TypedArray(env, argv[0], napi_uint8_array, &bufData, &len) ||
      !TypedArray(env, argv[3], napi_int32_array, &outData, &outLen) ||
      napi_get_value_double(env, argv[1], &offsetD) != napi_ok || napi_get_value_double(env, argv[2], &endD) != napi_ok ||
      napi_get_value_double(env, argv[4], &maxD) != napi_ok) {
    napi_throw_type_error(env, nullptr, "scanFrames(buf: Uint8Array, offset, end, out: Int32Array, maxMessageSize)");
    return nullptr;
  }
  const int64_t offset = static_cast<int64_t>(offsetD);
  const int64_t end = static_cast<int64_t>(endD);
  const int64_t maxSize = static_cast<int64_t>(maxD);
  if (offset < 0 || end > static_cast<int64_t>(len) || offset > end || outLen < 2) {
    napi_throw_range_error(env, nullptr, "scanFrames: bad range");
    return nullptr;
  }
  const uint8_t* p = static_cast<const uint8_t*>(bufData);
  int32_t* o = static_cast<int32_t*>(outData);
  const int64_t cap = (static_cast<int64_t>(outLen) - 2) / 3;
  int64_t count = 0;
  int32_t status = 0;
  int64_t pos = offset;
  while (count < cap && end - pos >= 5) {
    const uint32_t mlen = (static_cast<uint32_t>(p[pos + 1]) << 24) | (static_cast<uint32_t>(p[pos + 2]) << 16) |
                          (static_cast<uint32_t>(p[pos + 3]) << 8) | static_cast<uint32_t>(p[pos + 4]);
    if (mlen < 4 || static_cast<int64_t>(mlen) > maxSize) {
      status = 1;
      break;
    }
    if (end - pos < 1 + static_cast<int64_t>(mlen)) break;
    int32_t* t = o + 2 + count * 3;
    t[0] = p[pos];
    t[1] = static_cast<int32_t>(pos);
    t[2] = static_cast<int32_t>(mlen);
    pos += 1 + mlen;
    count++;
  }
  o[0] = static_cast<int32_t>(pos);
  o[1] = status;
  napi_value result;
  napi_create_int32(env, static_cast<int32_t>(count), &result);
  return result;
}

}  // namespace tidepool
