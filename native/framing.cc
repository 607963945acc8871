// Finds complete PostgreSQL messages (type byte + int32 length) in a byte range.
// Layout of `out` (Int32Array): out[0] = offset of the first incomplete message (or end),
// out[1] = status (0 ok, 1 a length < 4 or > maxMessageSize at out[0]),
// then one (type, start, length) triple per complete message; length counts itself, not the type byte.
#include "framing.h"

#include <cstdint>

namespace tidepool {

Napi::Value ScanFrames(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  // Arguments are validated by the TypeScript loader; these checks only keep a misuse from crashing.
  if (info.Length() < 5 || !info[0].IsTypedArray() || !info[3].IsTypedArray()) {
    Napi::TypeError::New(env, "scanFrames(buf, offset, end, out, maxMessageSize)").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  Napi::Uint8Array buf = info[0].As<Napi::Uint8Array>();
  Napi::Int32Array out = info[3].As<Napi::Int32Array>();
  int64_t offset = info[1].As<Napi::Number>().Int64Value();
  int64_t end = info[2].As<Napi::Number>().Int64Value();
  int64_t maxSize = info[4].As<Napi::Number>().Int64Value();
  const int64_t len = static_cast<int64_t>(buf.ByteLength());
  if (offset < 0 || end > len || offset > end || out.ElementLength() < 2) {
    Napi::RangeError::New(env, "scanFrames: bad range").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  const uint8_t* p = buf.Data();
  int32_t* o = out.Data();
  const int64_t cap = (static_cast<int64_t>(out.ElementLength()) - 2) / 3;
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
  return Napi::Number::New(env, static_cast<double>(count));
}

}  // namespace tidepool
