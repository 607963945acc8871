// The document indexer's state and scan (see doc-indexer.cc for its N-API entry points): a batch of NDJSON documents
// into the active fraction's token ids, against the fraction's only dictionary ((field, token) -> id, path -> field).
#pragma once
#include <cmath>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

#include "byte-table.h"
#include "doc-scan.h"

namespace tidepool::docindex {


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
    // Pipelined by one document: a document's tokens are made and their hash slots prefetched (plan), and looked up
    // only after the next document has been scanned (apply), so the cache misses of large dictionaries (a client
    // address per document) overlap other work. Ids come out in the same order as without the pipeline.
    int64_t pending = -1;  // the planned document not yet applied
    int slot = 0;
    for (uint32_t i = 0; i < count; i++) {
      bool ok = ScanDoc(buf + offs[2 * i], static_cast<size_t>(offs[2 * i + 1]), &doc_) && Check(now, &times[i]);
      if (!ok) times[i] = NAN;
      if (ok && !HasNewField()) {
        Plan(&plans_[slot], &planBytes_[slot]);
        if (pending >= 0) Apply(static_cast<uint32_t>(pending), plans_[slot ^ 1], planBytes_[slot ^ 1]);
        pending = i;
        slot ^= 1;
        continue;
      }
      if (pending >= 0) Apply(static_cast<uint32_t>(pending), plans_[slot ^ 1], planBytes_[slot ^ 1]);
      pending = -1;
      if (ok) Commit();  // a document that makes a field: at once, in order
      ends[i] = static_cast<uint32_t>(toks.size());
      colEnds[i] = static_cast<uint32_t>(cols.size() / 2);
    }
    if (pending >= 0) Apply(static_cast<uint32_t>(pending), plans_[slot ^ 1], planBytes_[slot ^ 1]);
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

  // Frees the dictionary and the scratch of a sealed fraction now: the External's finalizer runs only after a
  // collection and a turn of the event loop, which a busy shard thread may not take for many seals.
  void Release() {
    std::vector<Field>().swap(fields_);
    paths_ = ByteTable(0, 16);
    std::vector<ByteTable>().swap(tokens_);
    std::vector<uint32_t>().swap(lastDoc_);
    std::vector<double>().swap(times);
    for (std::vector<uint32_t>* v : {&ends, &toks, &colEnds, &cols, &newTokFields}) std::vector<uint32_t>().swap(*v);
    std::vector<std::string>().swap(newFields);
    doc_ = ScannedDoc();
    std::vector<int32_t>().swap(leafField_);
    std::vector<uint64_t>().swap(leafHash_);
    std::string().swap(tok_);
    for (int k = 0; k < 2; k++) {
      std::vector<Planned>().swap(plans_[k]);
      std::string().swap(planBytes_[k]);
    }
    released_ = true;
  }

  bool Released() const { return released_; }

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
  bool released_ = false;
  uint32_t stamp_ = 0;
  ScannedDoc doc_;
  std::vector<int32_t> leafField_;
  std::vector<uint64_t> leafHash_;
  std::string tok_;

  // A token of a planned document: its field, its bytes (lowercased, cut at maxTok_) in the plan's byte buffer,
  // their hash, and what to do with it; an `_exists_` token is known already (its id in `off`).
  enum : uint32_t { kPlanExists = 0, kPlanToken = 1, kPlanKeyword = 2 };
  struct Planned {
    uint32_t field, off, len, kind;
    uint64_t hash;
  };
  std::vector<Planned> plans_[2];
  std::string planBytes_[2];

  bool HasNewField() const {
    for (int32_t f : leafField_)
      if (f == kNewField) return true;
    return false;
  }

  // Appends n bytes lowercased (ASCII A-Z) to *bytes; returns where they start.
  static uint32_t AppendLower(std::string* bytes, const char* v, uint32_t n) {
    uint32_t off = static_cast<uint32_t>(bytes->size());
    bytes->append(v, n);
    char* s = bytes->data() + off;
    for (uint32_t i = 0; i < n; i++)
      if (s[i] >= 'A' && s[i] <= 'Z') s[i] += 32;
    return off;
  }

  void PlanToken(std::vector<Planned>* out, const std::string& bytes, uint32_t f, uint32_t off, uint32_t len, uint32_t kind) {
    uint64_t h = HashBytes(bytes.data() + off, len, f);
    out->push_back({f, off, len, kind, h});
    tokens_[f].Prefetch(h);
  }

  // The tokens of the scanned document (every leaf's field known), as Commit makes them, their slots prefetched.
  void Plan(std::vector<Planned>* out, std::string* bytes) {
    out->clear();
    bytes->clear();
    const size_t n = doc_.leaves.size();
    for (size_t i = 0; i < n; i++) {
      int32_t f = leafField_[i];
      if (f == kNotIndexed) continue;
      const Leaf& l = doc_.leaves[i];
      const Field& fs = fields_[f];
      out->push_back({0, static_cast<uint32_t>(fs.existsTok), 0, kPlanExists, 0});
      const char* v = doc_.values.data() + l.valOff;
      const uint32_t vn = l.valLen;
      const uint32_t uf = static_cast<uint32_t>(f);
      for (char type : fs.types) {
        if (type == 'k') {
          uint32_t len = vn > maxTok_ ? maxTok_ : vn;
          PlanToken(out, *bytes, uf, AppendLower(bytes, v, len), len, kPlanKeyword);
        } else if (type == 't') {
          uint32_t base = AppendLower(bytes, v, vn);
          uint32_t start = 0;
          bool in = false;
          for (uint32_t k = 0; k <= vn; k++) {
            char c = k < vn ? (*bytes)[base + k] : ' ';
            bool word = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
            if (word) {
              if (!in) start = k, in = true;
            } else if (in) {
              uint32_t len = k - start > maxTok_ ? maxTok_ : k - start;
              PlanToken(out, *bytes, uf, base + start, len, kPlanToken);
              in = false;
            }
          }
        } else if (type == 'p') {
          uint32_t base = AppendLower(bytes, v, vn);
          auto emit = [&](uint32_t len) { PlanToken(out, *bytes, uf, base, len > maxTok_ ? maxTok_ : len, kPlanToken); };
          for (uint32_t k = 1; k < vn; k++)
            if ((*bytes)[base + k] == '/') emit(k);
          if (vn > 0 && (*bytes)[base + vn - 1] != '/') emit(vn);
          else if (vn > 1) emit(vn - 1);
        }
      }
    }
  }

  // Adds a planned document as Commit would have, and closes it (its ends).
  void Apply(uint32_t doc, const std::vector<Planned>& plan, const std::string& bytes) {
    stamp_++;
    for (const Planned& p : plan) {
      if (p.kind == kPlanExists) {
        Add(static_cast<int32_t>(p.off));
        continue;
      }
      int32_t t = TokenHashed(p.field, bytes.data() + p.off, p.len, p.hash);
      Add(t);
      if (p.kind == kPlanKeyword) {
        Field& fs = fields_[p.field];
        if (fs.colStamp != stamp_) {
          fs.colStamp = stamp_;
          cols.push_back(p.field);
          cols.push_back(static_cast<uint32_t>(t));
        }
      }
    }
    ends[doc] = static_cast<uint32_t>(toks.size());
    colEnds[doc] = static_cast<uint32_t>(cols.size() / 2);
  }

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
  int32_t Token(uint32_t field, const char* p, uint32_t n) { return TokenHashed(field, p, n, HashBytes(p, n, field)); }

  int32_t TokenHashed(uint32_t field, const char* p, uint32_t n, uint64_t h) {
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

}  // namespace tidepool::docindex
