// Posting lists: ascending uint32 local doc ids; on disk delta varints (7 bits a byte, high bit = more).
// Arguments are validated by the TypeScript loader; the checks here only keep misuse from crashing.
#include "postings.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

namespace tidepool {

namespace {

Napi::Uint32Array Make(Napi::Env env, const uint32_t* data, size_t n) {
  Napi::Uint32Array out = Napi::Uint32Array::New(env, n);
  if (n) std::memcpy(out.Data(), data, n * sizeof(uint32_t));
  return out;
}

bool TwoLists(const Napi::CallbackInfo& info, Napi::Uint32Array* a, Napi::Uint32Array* b) {
  if (info.Length() < 2 || !info[0].IsTypedArray() || !info[1].IsTypedArray() ||
      info[0].As<Napi::TypedArray>().TypedArrayType() != napi_uint32_array ||
      info[1].As<Napi::TypedArray>().TypedArrayType() != napi_uint32_array) {
    Napi::TypeError::New(info.Env(), "expected two Uint32Arrays").ThrowAsJavaScriptException();
    return false;
  }
  *a = info[0].As<Napi::Uint32Array>();
  *b = info[1].As<Napi::Uint32Array>();
  return true;
}

size_t LowerBound(const uint32_t* p, size_t n, uint64_t x) {
  return static_cast<size_t>(std::lower_bound(p, p + n, x, [](uint32_t v, uint64_t k) { return v < k; }) - p);
}

}  // namespace

Napi::Value DecodePostings(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 4 || !info[0].IsTypedArray()) {
    Napi::TypeError::New(env, "decodePostings(buf, offset, length, count)").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  Napi::Uint8Array buf = info[0].As<Napi::Uint8Array>();
  int64_t offset = info[1].As<Napi::Number>().Int64Value();
  int64_t length = info[2].As<Napi::Number>().Int64Value();
  int64_t count = info[3].As<Napi::Number>().Int64Value();
  const int64_t size = static_cast<int64_t>(buf.ByteLength());
  if (offset < 0 || length < 0 || count < 0 || offset + length > size || count > (int64_t{1} << 32)) {
    Napi::RangeError::New(env, "decodePostings: bad range").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  std::vector<uint32_t> out(static_cast<size_t>(count));
  const uint8_t* p = buf.Data() + offset;
  const uint8_t* end = p + length;
  uint32_t prev = 0;
  size_t n = 0;
  while (n < out.size() && p < end) {
    uint32_t v = 0;
    int shift = 0;
    uint8_t b;
    do {
      b = *p++;
      v |= static_cast<uint32_t>(b & 0x7f) << shift;
      shift += 7;
    } while ((b & 0x80) && p < end && shift < 35);
    prev += v;
    out[n++] = prev;
  }
  return Make(env, out.data(), n);
}

Napi::Value IntersectPostings(const Napi::CallbackInfo& info) {
  Napi::Uint32Array a, b;
  if (!TwoLists(info, &a, &b)) return info.Env().Undefined();
  const uint32_t* x = a.Data();
  const uint32_t* y = b.Data();
  size_t nx = a.ElementLength(), ny = b.ElementLength();
  if (nx > ny) { std::swap(x, y); std::swap(nx, ny); }
  std::vector<uint32_t> out;
  out.reserve(nx);
  if (nx * 32 < ny) {
    // Galloping: the short list probes the long one.
    size_t j = 0;
    for (size_t i = 0; i < nx && j < ny; i++) {
      j += LowerBound(y + j, ny - j, x[i]);
      if (j < ny && y[j] == x[i]) out.push_back(x[i]);
    }
  } else {
    size_t i = 0, j = 0;
    while (i < nx && j < ny) {
      if (x[i] < y[j]) i++;
      else if (y[j] < x[i]) j++;
      else { out.push_back(x[i]); i++; j++; }
    }
  }
  return Make(info.Env(), out.data(), out.size());
}

Napi::Value UnionPostings(const Napi::CallbackInfo& info) {
  Napi::Uint32Array a, b;
  if (!TwoLists(info, &a, &b)) return info.Env().Undefined();
  const uint32_t* x = a.Data();
  const uint32_t* y = b.Data();
  const size_t nx = a.ElementLength(), ny = b.ElementLength();
  std::vector<uint32_t> out(nx + ny);
  const size_t n = static_cast<size_t>(std::set_union(x, x + nx, y, y + ny, out.begin()) - out.begin());
  return Make(info.Env(), out.data(), n);
}

Napi::Value DifferencePostings(const Napi::CallbackInfo& info) {
  Napi::Uint32Array a, b;
  if (!TwoLists(info, &a, &b)) return info.Env().Undefined();
  const uint32_t* x = a.Data();
  const uint32_t* y = b.Data();
  const size_t nx = a.ElementLength(), ny = b.ElementLength();
  std::vector<uint32_t> out(nx);
  const size_t n = static_cast<size_t>(std::set_difference(x, x + nx, y, y + ny, out.begin()) - out.begin());
  return Make(info.Env(), out.data(), n);
}

Napi::Value UnionManyPostings(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 2 || !info[0].IsArray()) {
    Napi::TypeError::New(env, "unionManyPostings(lists, universe)").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  Napi::Array lists = info[0].As<Napi::Array>();
  const int64_t universe = info[1].As<Napi::Number>().Int64Value();
  if (universe < 0 || universe > (int64_t{1} << 32)) {
    Napi::RangeError::New(env, "unionManyPostings: bad universe").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  std::vector<uint8_t> bits(static_cast<size_t>(universe), 0);
  size_t total = 0;
  for (uint32_t k = 0; k < lists.Length(); k++) {
    Napi::Value v = lists.Get(k);
    if (!v.IsTypedArray() || v.As<Napi::TypedArray>().TypedArrayType() != napi_uint32_array) {
      Napi::TypeError::New(env, "unionManyPostings: lists must be Uint32Arrays").ThrowAsJavaScriptException();
      return env.Undefined();
    }
    Napi::Uint32Array l = v.As<Napi::Uint32Array>();
    const uint32_t* p = l.Data();
    const size_t n = l.ElementLength();
    for (size_t i = 0; i < n; i++) {
      const uint32_t x = p[i];
      if (static_cast<int64_t>(x) < universe && !bits[x]) { bits[x] = 1; total++; }
    }
  }
  Napi::Uint32Array out = Napi::Uint32Array::New(env, total);
  uint32_t* o = out.Data();
  size_t n = 0;
  for (int64_t x = 0; x < universe && n < total; x++) if (bits[static_cast<size_t>(x)]) o[n++] = static_cast<uint32_t>(x);
  return out;
}

Napi::Value CountInRange(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 3 || !info[0].IsTypedArray()) {
    Napi::TypeError::New(env, "countInRange(ids, lo, hi)").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  Napi::Uint32Array ids = info[0].As<Napi::Uint32Array>();
  const double lo = info[1].As<Napi::Number>().DoubleValue();
  const double hi = info[2].As<Napi::Number>().DoubleValue();
  const uint64_t l = lo <= 0 ? 0 : static_cast<uint64_t>(lo);
  const uint64_t h = hi <= 0 ? 0 : static_cast<uint64_t>(hi);
  const size_t a = LowerBound(ids.Data(), ids.ElementLength(), l);
  const size_t b = LowerBound(ids.Data(), ids.ElementLength(), h);
  return Napi::Number::New(env, b > a ? static_cast<double>(b - a) : 0);
}

Napi::Value RangeOfIds(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 2) {
    Napi::TypeError::New(env, "rangeOfIds(lo, hi)").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  const int64_t lo = info[0].As<Napi::Number>().Int64Value();
  const int64_t hi = info[1].As<Napi::Number>().Int64Value();
  const int64_t n = hi > lo ? hi - lo : 0;
  if (lo < 0 || hi > (int64_t{1} << 32)) {
    Napi::RangeError::New(env, "rangeOfIds: bad range").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  Napi::Uint32Array out = Napi::Uint32Array::New(env, static_cast<size_t>(n));
  uint32_t* o = out.Data();
  for (int64_t i = 0; i < n; i++) o[i] = static_cast<uint32_t>(lo + i);
  return out;
}

}  // namespace tidepool
