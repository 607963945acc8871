// Document indexer: a batch of NDJSON documents (the bulk's source lines) into the active fraction's token ids in
// one call: no JSON.parse, no object walk, no JavaScript string per token. It keeps the fraction's only dictionary
// ((field, token) -> id, path -> field): src/logstore/storage/active-index.ts numbers the fields and tokens it
// adds, tells it the ones the JavaScript path makes, and reads tokens back from it. Twin: src/native/doc-indexer.ts.
#include "doc-indexer.h"

#include <cmath>
#include <cstring>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "byte-table.h"
#include "dict-sort.h"
#include "doc-scan.h"
#include "wtf8.h"

namespace tidepool {

namespace {

constexpr int32_t kMissing = ByteTable::kMissing;
constexpr int32_t kNotIndexed = -1;
constexpr int32_t kJsOnly = -2;  // a path the JavaScript path handles (Object.prototype names, _exists_)
constexpr int32_t kNewField = -3;

struct Field {
  std::string types;  // 'k' keyword, 't' text, 'p' path, 'e' exists, in mapping order
  bool keywordOnly;
  int32_t existsTok;
  uint32_t colStamp;  // the last document that set this field's keyword column
};

class DocIndexer {
 public:
  DocIndexer(std::unordered_map<std::string, std::string> mapped, bool autoMap, uint32_t maxTok)
      : mapped_(std::move(mapped)), auto_(autoMap), maxTok_(maxTok) {
    fields_.push_back({"k", true, -1, 0});  // 0: _exists_ (its tokens are the field names)
    tokens_.emplace_back();
    for (const char* name : {"_exists_", "__proto__", "constructor", "hasOwnProperty", "isPrototypeOf",
                             "propertyIsEnumerable", "toLocaleString", "toString", "valueOf", "__defineGetter__",
                             "__defineSetter__", "__lookupGetter__", "__lookupSetter__"}) {
      uint32_t n = static_cast<uint32_t>(std::strlen(name));
      paths_.Insert(0, name, n, HashBytes(name, n, 0), kJsOnly);
    }
  }

  // Output of one Index call.
  std::vector<double> times;
  std::vector<uint32_t> ends, toks, colEnds, cols, newTokFields;
  std::vector<std::string> newFields;

  void Index(const uint8_t* buf, const int32_t* offs, uint32_t count, double now) {
    times.assign(count, NAN);
    ends.assign(count, 0);
    colEnds.assign(count, 0);
    toks.clear();
    cols.clear();
    newTokFields.clear();
    newFields.clear();
    for (uint32_t i = 0; i < count; i++) {
      if (ScanDoc(buf + offs[2 * i], static_cast<size_t>(offs[2 * i + 1]), &doc_) && Check(now, &times[i])) Commit();
      else times[i] = NAN;
      ends[i] = static_cast<uint32_t>(toks.size());
      colEnds[i] = static_cast<uint32_t>(cols.size() / 2);
    }
  }

  // A field the JavaScript path made: numbered as there; a path it keeps for itself stays with it.
  int32_t LearnField(const std::string& name) {
    static const std::string kNone;
    const std::string* types = TypesOf(name.data(), name.size());
    return NewField(name.data(), static_cast<uint32_t>(name.size()), types ? types : &kNone);
  }

  int32_t LearnToken(uint32_t field, const std::string& text) {
    uint32_t n = static_cast<uint32_t>(text.size());
    uint64_t h = HashBytes(text.data(), n, field);
    if (field >= tokens_.size()) return -1;
    int32_t t = tokens_[field].Find(field, text.data(), n, h);
    if (t != kMissing) return t;
    t = nextTok_++;
    tokens_[field].Insert(field, text.data(), n, h, t);
    lastDoc_.push_back(0);
    return t;
  }

  // The id of (field, WTF-8 bytes), or -1.
  int32_t Find(uint32_t field, const std::string& key) const {
    if (field >= tokens_.size()) return -1;
    const uint32_t n = static_cast<uint32_t>(key.size());
    int32_t t = tokens_[field].Find(field, key.data(), n, HashBytes(key.data(), n, field));
    return t == kMissing ? -1 : t;
  }

  const ByteTable* Tokens(uint32_t field) const { return field < tokens_.size() ? &tokens_[field] : nullptr; }

  size_t Bytes() const {
    size_t toks = 0;
    for (const ByteTable& t : tokens_) toks += t.Bytes();
    return paths_.Bytes() + toks + lastDoc_.capacity() * 4 + fields_.capacity() * sizeof(Field);
  }

 private:
  std::unordered_map<std::string, std::string> mapped_;
  bool auto_;
  uint32_t maxTok_;
  std::vector<Field> fields_;
  ByteTable paths_{0, 64};  // path -> field number, kNotIndexed or kJsOnly
  std::vector<ByteTable> tokens_;  // per field: token -> id (one table each keeps the small ones in cache)
  int32_t nextTok_ = 0;
  std::vector<uint32_t> lastDoc_;  // per token: the last document it was added for
  uint32_t stamp_ = 0;
  ScannedDoc doc_;
  std::vector<int32_t> leafField_;
  std::vector<uint64_t> leafHash_;
  std::string tok_;

  const std::string* TypesOf(const char* p, size_t n) const {
    static const std::string kKeyword = "k";
    auto it = mapped_.find(std::string(p, n));
    if (it != mapped_.end()) return &it->second;
    return auto_ ? &kKeyword : nullptr;
  }

  int32_t NewField(const char* name, uint32_t n, const std::string* types) {
    int32_t f = static_cast<int32_t>(fields_.size());
    fields_.push_back({*types, *types == "k", -1, 0});
    tokens_.emplace_back(static_cast<uint32_t>(f));
    uint64_t h = HashBytes(name, n, 0);
    if (paths_.Find(0, name, n, h) == kMissing) paths_.Insert(0, name, n, h, f);
    fields_[f].existsTok = Token(0, name, n);
    return f;
  }

  // The token id of (field, bytes), made (and reported) when new.
  int32_t Token(uint32_t field, const char* p, uint32_t n) {
    uint64_t h = HashBytes(p, n, field);
    ByteTable& table = tokens_[field];
    int32_t t = table.Find(field, p, n, h);
    if (t != kMissing) return t;
    t = nextTok_++;
    table.Insert(field, p, n, h, t);
    lastDoc_.push_back(0);
    newTokFields.push_back(field);
    return t;
  }

  void Add(int32_t t) {
    if (lastDoc_[t] == stamp_) return;
    lastDoc_[t] = stamp_;
    toks.push_back(static_cast<uint32_t>(t));
  }

  // Whether every leaf can be indexed here exactly as ActiveIndex.visit would; resolves their fields.
  bool Check(double now, double* time) {
    double t = ScannedDocTime(doc_, now);
    if (std::isnan(t)) return false;
    *time = t;
    const size_t n = doc_.leaves.size();
    leafField_.resize(n);
    leafHash_.resize(n);
    bool ok = true;
    for (size_t i = 0; i < n && ok; i++) {
      const Leaf& l = doc_.leaves[i];
      const char* path = doc_.paths.data() + l.pathOff;
      uint64_t h = HashBytes(path, l.pathLen, 0);
      leafHash_[i] = h;
      int32_t f = paths_.Find(0, path, l.pathLen, h);
      const std::string* types = nullptr;
      if (f == kMissing) {
        types = TypesOf(path, l.pathLen);
        if (!types) {
          paths_.Insert(0, path, l.pathLen, h, kNotIndexed);
          f = kNotIndexed;
        } else f = kNewField;
      } else if (f >= 0) types = &fields_[f].types;
      if (f == kJsOnly) ok = false;
      leafField_[i] = f;
      if (types && ok) ok = LeafOk(l, *types);
    }
    return ok;
  }

  // Whether a leaf's value can be tokenized here (ASCII text, a number spelled as JavaScript spells it).
  static bool LeafOk(const Leaf& l, const std::string& types) {
    if (types.find_first_of("ktp") == std::string::npos) return true;
    if (l.kind == kLeafString && !l.ascii) return false;
    if (l.kind == kLeafNumber && !l.canon) return false;
    return true;
  }

  void Keyword(uint32_t f, const char* v, uint32_t n) {
    uint32_t len = n > maxTok_ ? maxTok_ : n;
    tok_.assign(v, len);
    for (char& c : tok_)
      if (c >= 'A' && c <= 'Z') c += 32;
    int32_t t = Token(f, tok_.data(), len);
    Add(t);
    Field& fs = fields_[f];
    if (fs.colStamp != stamp_) {
      fs.colStamp = stamp_;
      cols.push_back(f);
      cols.push_back(static_cast<uint32_t>(t));
    }
  }

  void Text(uint32_t f, const char* v, uint32_t n) {
    tok_.assign(v, n);
    for (char& c : tok_)
      if (c >= 'A' && c <= 'Z') c += 32;
    const char* s = tok_.data();
    uint32_t start = 0;
    bool in = false;
    for (uint32_t i = 0; i <= n; i++) {
      char c = i < n ? s[i] : ' ';
      bool word = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
      if (word) {
        if (!in) start = i, in = true;
      } else if (in) {
        uint32_t len = i - start > maxTok_ ? maxTok_ : i - start;
        Add(Token(f, s + start, len));
        in = false;
      }
    }
  }

  void Path(uint32_t f, const char* v, uint32_t n) {
    tok_.assign(v, n);
    for (char& c : tok_)
      if (c >= 'A' && c <= 'Z') c += 32;
    const char* s = tok_.data();
    auto emit = [&](uint32_t len) { Add(Token(f, s, len > maxTok_ ? maxTok_ : len)); };
    for (uint32_t i = 1; i < n; i++)
      if (s[i] == '/') emit(i);
    if (n > 0 && s[n - 1] != '/') emit(n);
    else if (n > 1) emit(n - 1);
  }

  void Commit() {
    stamp_++;
    const size_t n = doc_.leaves.size();
    for (size_t i = 0; i < n; i++) {
      int32_t f = leafField_[i];
      if (f == kNotIndexed) continue;
      const Leaf& l = doc_.leaves[i];
      if (f == kNewField) {
        const char* path = doc_.paths.data() + l.pathOff;
        f = paths_.Find(0, path, l.pathLen, leafHash_[i]);
        if (f == kMissing) {
          f = NewField(path, l.pathLen, TypesOf(path, l.pathLen));
          newFields.emplace_back(path, l.pathLen);
        }
      }
      const Field& fs = fields_[f];
      Add(fs.existsTok);
      const char* v = doc_.values.data() + l.valOff;
      for (char type : fs.types) {
        if (type == 'k') Keyword(f, v, l.valLen);
        else if (type == 't') Text(f, v, l.valLen);
        else if (type == 'p') Path(f, v, l.valLen);
      }
    }
  }
};

DocIndexer* Unwrap(const Napi::Value& v) {
  if (!v.IsExternal()) return nullptr;
  return v.As<Napi::External<DocIndexer>>().Data();
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
  DocIndexer* ix = info.Length() >= 6 ? Unwrap(info[0]) : nullptr;
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
  DocIndexer* ix = info.Length() >= 2 ? Unwrap(info[0]) : nullptr;
  if (!ix || !info[1].IsString()) {
    Napi::TypeError::New(env, "docIndexerLearnField(handle, name)").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  return Napi::Number::New(env, ix->LearnField(Wtf8FromUtf16(info[1].As<Napi::String>().Utf16Value())));
}

Napi::Value DocIndexerLearnToken(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  DocIndexer* ix = info.Length() >= 3 ? Unwrap(info[0]) : nullptr;
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
  DocIndexer* ix = info.Length() >= 3 ? Unwrap(info[0]) : nullptr;
  if (!ix || !info[1].IsNumber() || !info[2].IsString()) {
    Napi::TypeError::New(env, "docIndexerFind(handle, field, text)").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  return Napi::Number::New(env, ix->Find(info[1].As<Napi::Number>().Uint32Value(), Wtf8FromUtf16(info[2].As<Napi::String>().Utf16Value())));
}

Napi::Value DocIndexerFieldTokens(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  DocIndexer* ix = info.Length() >= 2 ? Unwrap(info[0]) : nullptr;
  if (!ix || !info[1].IsNumber()) {
    Napi::TypeError::New(env, "docIndexerFieldTokens(handle, field)").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  const ByteTable* table = ix->Tokens(info[1].As<Napi::Number>().Uint32Value());
  std::vector<uint32_t> lens, ids;
  std::string bytes;
  bool ascii = true;
  if (table) {
    lens.reserve(table->Count());
    ids.reserve(table->Count());
    table->ForEach([&](const char* p, uint32_t n, int32_t v) {
      for (uint32_t i = 0; i < n && ascii; i++) ascii = static_cast<uint8_t>(p[i]) < 0x80;
      bytes.append(p, n);
      lens.push_back(n);
      ids.push_back(static_cast<uint32_t>(v));
    });
  }
  Napi::Object out = Napi::Object::New(env);
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
  DocIndexer* ix = info.Length() >= 2 ? Unwrap(info[0]) : nullptr;
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

Napi::Value DocIndexerBytes(const Napi::CallbackInfo& info) {
  DocIndexer* ix = info.Length() >= 1 ? Unwrap(info[0]) : nullptr;
  if (!ix) {
    Napi::TypeError::New(info.Env(), "docIndexerBytes(handle)").ThrowAsJavaScriptException();
    return info.Env().Undefined();
  }
  return Napi::Number::New(info.Env(), static_cast<double>(ix->Bytes()));
}

}  // namespace tidepool
