// Document indexer, N-API entry points (the indexer itself: doc-indexer-core.h): a batch of NDJSON documents into
// the active fraction's token ids in one call, no JSON.parse, no object walk, no JavaScript string per token. It
// keeps the fraction's only dictionary: src/logstore/storage/active-index.ts numbers the fields and tokens it adds,
// tells it the ones the JavaScript path makes, and reads tokens back from it. Twin: src/native/doc-indexer.ts.
#include "doc-indexer.h"

#include <cstring>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "dict-sort.h"
#include "doc-indexer-core.h"
#include "wtf8.h"

namespace tidepool {

namespace {

using docindex::DocIndexer;

DocIndexer* Unwrap(const Napi::Value& v) {
  if (!v.IsExternal()) return nullptr;
  return v.As<Napi::External<DocIndexer>>().Data();
}

// An indexer that still has its dictionary (calls on a released one throw instead of reading freed tables).
DocIndexer* UnwrapLive(const Napi::Value& v) {
  DocIndexer* ix = Unwrap(v);
  return ix && !ix->Released() ? ix : nullptr;
}

template <typename T>
Napi::Value Typed(Napi::Env env, const std::vector<T>& v) {
  Napi::ArrayBuffer ab = Napi::ArrayBuffer::New(env, v.size() * sizeof(T));
  if (!v.empty()) std::memcpy(ab.Data(), v.data(), v.size() * sizeof(T));
  if constexpr (std::is_same_v<T, double>) return Napi::Float64Array::New(env, v.size(), ab, 0);
  else return Napi::Uint32Array::New(env, v.size(), ab, 0);
}

void Finalize(Napi::Env env, DocIndexer* ix) {
  Napi::MemoryManagement::AdjustExternalMemory(env, -static_cast<int64_t>(ix->Bytes()));
  delete ix;
}

int64_t ReportedBytes(DocIndexer* ix, int64_t before) { return static_cast<int64_t>(ix->Bytes()) - before; }

}  // namespace

Napi::Value DocIndexerNew(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 4 || !info[0].IsArray() || !info[1].IsArray() || !info[3].IsNumber()) {
    Napi::TypeError::New(env, "docIndexerNew(fieldNames, fieldTypes, auto, maxTokenSize)").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  Napi::Array names = info[0].As<Napi::Array>();
  Napi::Array types = info[1].As<Napi::Array>();
  std::unordered_map<std::string, std::string> mapped;
  for (uint32_t i = 0; i < names.Length(); i++) {
    mapped[names.Get(i).As<Napi::String>().Utf8Value()] = types.Get(i).As<Napi::String>().Utf8Value();
  }
  int64_t max = info[3].As<Napi::Number>().Int64Value();
  auto* ix = new DocIndexer(std::move(mapped), info[2].ToBoolean().Value(), static_cast<uint32_t>(max < 1 ? 1 : max));
  Napi::MemoryManagement::AdjustExternalMemory(env, static_cast<int64_t>(ix->Bytes()));
  return Napi::External<DocIndexer>::New(env, ix, Finalize);
}

Napi::Value DocIndexerIndex(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  DocIndexer* ix = info.Length() >= 6 ? UnwrapLive(info[0]) : nullptr;
  if (!ix || !info[1].IsTypedArray() || !info[2].IsTypedArray() ||
      info[2].As<Napi::TypedArray>().TypedArrayType() != napi_int32_array) {
    Napi::TypeError::New(env, "docIndexerIndex(handle, buf, offs, first, count, now)").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  Napi::Uint8Array buf = info[1].As<Napi::Uint8Array>();
  Napi::Int32Array offs = info[2].As<Napi::Int32Array>();
  int64_t first = info[3].As<Napi::Number>().Int64Value();
  int64_t count = info[4].As<Napi::Number>().Int64Value();
  double now = info[5].As<Napi::Number>().DoubleValue();
  if (first < 0 || count < 0 || 2 * (first + count) > static_cast<int64_t>(offs.ElementLength())) {
    Napi::RangeError::New(env, "docIndexerIndex: bad range").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  const int32_t* o = offs.Data() + 2 * first;
  for (int64_t i = 0; i < count; i++) {
    if (o[2 * i] < 0 || o[2 * i + 1] < 0 || static_cast<size_t>(o[2 * i]) + o[2 * i + 1] > buf.ByteLength()) {
      Napi::RangeError::New(env, "docIndexerIndex: a document lies outside the buffer").ThrowAsJavaScriptException();
      return env.Undefined();
    }
  }
  const int64_t before = static_cast<int64_t>(ix->Bytes());
  ix->Index(buf.Data(), o, static_cast<uint32_t>(count), now);
  Napi::MemoryManagement::AdjustExternalMemory(env, ReportedBytes(ix, before));
  Napi::Object out = Napi::Object::New(env);
  out.Set("times", Typed(env, ix->times));
  out.Set("ends", Typed(env, ix->ends));
  out.Set("toks", Typed(env, ix->toks));
  out.Set("colEnds", Typed(env, ix->colEnds));
  out.Set("cols", Typed(env, ix->cols));
  Napi::Array fields = Napi::Array::New(env, ix->newFields.size());
  for (size_t i = 0; i < ix->newFields.size(); i++) fields.Set(static_cast<uint32_t>(i), Napi::String::New(env, ix->newFields[i]));
  out.Set("newFields", fields);
  out.Set("newTokFields", Typed(env, ix->newTokFields));
  return out;
}

Napi::Value DocIndexerLearnField(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  DocIndexer* ix = info.Length() >= 2 ? UnwrapLive(info[0]) : nullptr;
  if (!ix || !info[1].IsString()) {
    Napi::TypeError::New(env, "docIndexerLearnField(handle, name)").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  return Napi::Number::New(env, ix->LearnField(Wtf8FromUtf16(info[1].As<Napi::String>().Utf16Value())));
}

Napi::Value DocIndexerLearnToken(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  DocIndexer* ix = info.Length() >= 3 ? UnwrapLive(info[0]) : nullptr;
  if (!ix || !info[1].IsNumber() || !info[2].IsString()) {
    Napi::TypeError::New(env, "docIndexerLearnToken(handle, field, text)").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  const int64_t before = static_cast<int64_t>(ix->Bytes());
  int32_t t = ix->LearnToken(info[1].As<Napi::Number>().Uint32Value(), Wtf8FromUtf16(info[2].As<Napi::String>().Utf16Value()));
  Napi::MemoryManagement::AdjustExternalMemory(env, ReportedBytes(ix, before));
  return Napi::Number::New(env, t);
}

Napi::Value DocIndexerFind(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  DocIndexer* ix = info.Length() >= 3 ? UnwrapLive(info[0]) : nullptr;
  if (!ix || !info[1].IsNumber() || !info[2].IsString()) {
    Napi::TypeError::New(env, "docIndexerFind(handle, field, text)").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  return Napi::Number::New(env, ix->Find(info[1].As<Napi::Number>().Uint32Value(), Wtf8FromUtf16(info[2].As<Napi::String>().Utf16Value())));
}

Napi::Value DocIndexerFieldTokens(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  DocIndexer* ix = info.Length() >= 2 ? UnwrapLive(info[0]) : nullptr;
  const bool ranged = info.Length() >= 4;
  if (!ix || !info[1].IsNumber() || (ranged && (!info[2].IsNumber() || !info[3].IsNumber()))) {
    Napi::TypeError::New(env, "docIndexerFieldTokens(handle, field[, from, to])").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  const ByteTable* table = ix->Tokens(info[1].As<Napi::Number>().Uint32Value());
  std::vector<uint32_t> lens, ids;
  std::string bytes;
  bool ascii = true;
  auto take = [&](const char* p, uint32_t n, int32_t v) {
    for (uint32_t i = 0; i < n && ascii; i++) ascii = static_cast<uint8_t>(p[i]) < 0x80;
    bytes.append(p, n);
    lens.push_back(n);
    ids.push_back(static_cast<uint32_t>(v));
  };
  if (table && ranged) {
    // The keys whose bytes start in arena bytes [from, to): a search takes a large dictionary a range at a time.
    const double from = info[2].As<Napi::Number>().DoubleValue();
    const double to = info[3].As<Napi::Number>().DoubleValue();
    table->ForEachIn(from < 0 ? 0 : static_cast<size_t>(from), to < 0 ? 0 : static_cast<size_t>(to), take);
  } else if (table) {
    lens.reserve(table->Count());
    ids.reserve(table->Count());
    table->ForEach(take);
  }
  Napi::Object out = Napi::Object::New(env);
  out.Set("end", Napi::Number::New(env, table ? static_cast<double>(table->ArenaBytes()) : 0.0));
  if (ascii) {
    napi_value s;
    napi_create_string_latin1(env, bytes.data(), bytes.size(), &s);
    out.Set("text", Napi::Value(env, s));
  } else {
    std::u16string units;
    size_t at = 0;
    for (uint32_t& n : lens) {
      const uint32_t b = n;
      n = AppendUtf16(&units, bytes.data() + at, b);
      at += b;
    }
    // As code units: napi_create_string_utf16 turns a lone surrogate into U+FFFD (Node 20); the caller decodes them.
    Napi::ArrayBuffer ab = Napi::ArrayBuffer::New(env, units.size() * 2);
    if (!units.empty()) std::memcpy(ab.Data(), units.data(), units.size() * 2);
    out.Set("units", Napi::Uint16Array::New(env, units.size(), ab, 0));
  }
  out.Set("lens", Typed(env, lens));
  out.Set("ids", Typed(env, ids));
  return out;
}

Napi::Value DocIndexerSortedField(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  DocIndexer* ix = info.Length() >= 2 ? UnwrapLive(info[0]) : nullptr;
  if (!ix || !info[1].IsNumber()) {
    Napi::TypeError::New(env, "docIndexerSortedField(handle, field)").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  SortedDict d;
  const ByteTable* table = ix->Tokens(info[1].As<Napi::Number>().Uint32Value());
  if (table) SortDict(*table, &d);
  Napi::Object out = Napi::Object::New(env);
  out.Set("ids", Typed(env, d.ids));
  out.Set("lens", Typed(env, d.lens));
  out.Set("bytes", Napi::Buffer<char>::Copy(env, d.bytes.data(), d.bytes.size()));
  out.Set("wide", Napi::Boolean::New(env, d.wide));
  return out;
}

Napi::Value DocIndexerRelease(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  DocIndexer* ix = info.Length() >= 1 ? Unwrap(info[0]) : nullptr;
  if (!ix) {
    Napi::TypeError::New(env, "docIndexerRelease(handle)").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  const int64_t before = static_cast<int64_t>(ix->Bytes());
  ix->Release();
  Napi::MemoryManagement::AdjustExternalMemory(env, ReportedBytes(ix, before));
  return env.Undefined();
}

Napi::Value DocIndexerBytes(const Napi::CallbackInfo& info) {
  DocIndexer* ix = info.Length() >= 1 ? Unwrap(info[0]) : nullptr;
  if (!ix) {
    Napi::TypeError::New(info.Env(), "docIndexerBytes(handle)").ThrowAsJavaScriptException();
    return info.Env().Undefined();
  }
  return Napi::Number::New(info.Env(), static_cast<double>(ix->Bytes()));
}

}  // namespace tidepool
