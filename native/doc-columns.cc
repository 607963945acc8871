// Column-wise document blocks of sealed fractions (formats 4 and 5), made and decoded back into their documents'
// bytes: the seal's and the reads' hot halves of src/logstore/storage/doc-columns.ts (encodeDocBlockTs and decodeDocBlockTs are
// the twins and the reference: the encoder writes the same bytes). The decoder answers null for anything it does not
// take as written there (a damaged block, a time before 1970), and the twin then decides, so the two give the same
// bytes or the same error. Every length and index is checked before it is used.
#include "doc-columns.h"
#include "iso-time.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

namespace tidepool {

namespace {

constexpr uint8_t kVersion = 1;
constexpr uint8_t kVersionRefs = 2;
constexpr uint8_t kString = 0;
constexpr uint8_t kInteger = 1;
constexpr uint8_t kTime = 2;
constexpr uint8_t kRaw = 3;
constexpr uint8_t kIpv4 = 4;
constexpr uint8_t kColumn = 5;
constexpr uint8_t kColumnBare = 6;
constexpr uint32_t kNoToken = 0xffffffff;

// A keyword column's tokens by document (twin: ColumnTokens): document i's token is table[starts[o], starts[o + 1])
// for o = ords[i]. Nothing in it is trusted: every index is checked where it is used.
struct ColTokens {
  const uint8_t* table = nullptr;
  size_t tableLen = 0;
  const uint32_t* starts = nullptr;
  size_t startsLen = 0;
  const uint32_t* ords = nullptr;
  size_t ordsLen = 0;

  // Documents first .. first + resolved.size() - 1 looked up ahead (Resolve): their token's start and length, or
  // kNone.
  std::vector<uint64_t> resolved;
  size_t resolvedFirst = 0;
  static constexpr uint64_t kNone = ~uint64_t{0};

  static ColTokens Of(const uint8_t* table, size_t tableLen, const uint32_t* starts, size_t startsLen,
                      const uint32_t* ords, size_t ordsLen) {
    ColTokens t;
    t.table = table;
    t.tableLen = tableLen;
    t.starts = starts;
    t.startsLen = startsLen;
    t.ords = ords;
    t.ordsLen = ordsLen;
    return t;
  }

  // Looks up the tokens of documents first .. first + count - 1 in one pass before decoding: the lookups are
  // independent there, so the processor overlaps their cache misses (a large column's table is read at random), and
  // the token bytes are prefetched.
  void Resolve(size_t first, size_t count) {
    resolved.resize(count);
    resolvedFirst = first;
    for (size_t i = 0; i < count; i++) {
      size_t at = 0, len = 0;
      if (TokenAt(first + i, &at, &len)) {
        resolved[i] = (static_cast<uint64_t>(at) << 32) | len;
        __builtin_prefetch(table + at);
      } else {
        resolved[i] = kNone;
      }
    }
  }

  // The token of document d: false when it has none or the table does not hold it.
  bool Token(size_t d, size_t* at, size_t* len) const {
    if (d >= resolvedFirst && d - resolvedFirst < resolved.size()) {
      const uint64_t r = resolved[d - resolvedFirst];
      if (r == kNone) return false;
      *at = static_cast<size_t>(r >> 32);
      *len = static_cast<size_t>(r & 0xffffffff);
      return true;
    }
    return TokenAt(d, at, len);
  }

  bool TokenAt(size_t d, size_t* at, size_t* len) const {
    if (d >= ordsLen) return false;
    const uint32_t o = ords[d];
    if (o == kNoToken || static_cast<size_t>(o) + 1 >= startsLen) return false;
    const uint32_t s = starts[o];
    const uint32_t e = starts[o + 1];
    if (s > e || e > tableLen) return false;
    *at = s;
    *len = e - s;
    return true;
  }
};
constexpr double kMaxIsoTime = 253402300799999.0;

struct Reader {
  const uint8_t* b;
  size_t p;
  size_t end;
  bool ok = true;

  // An unsigned LEB128 varint of at most 8 bytes (as the twin reads them).
  uint64_t Varint() {
    uint64_t v = 0;
    for (int shift = 0;; shift += 7) {
      if (p >= end || shift > 49) {
        ok = false;
        return 0;
      }
      const uint8_t c = b[p++];
      v |= static_cast<uint64_t>(c & 0x7f) << shift;
      if (c < 0x80) return v;
    }
  }

  // A varint length and that many bytes: where they start (p is then after them).
  bool Span(size_t* at, size_t* len) {
    const uint64_t l = Varint();
    if (!ok || l > end - p) return ok = false;
    *at = p;
    *len = static_cast<size_t>(l);
    p += *len;
    return true;
  }

  bool Sub(Reader* out) {
    size_t at = 0;
    size_t len = 0;
    if (!Span(&at, &len)) return false;
    *out = Reader{b, at, at + len};
    return true;
  }
};

struct Column {
  const ColTokens* ct = nullptr;
  Reader kinds, refs, strs, ints, raws, ips;
  std::vector<size_t> strAt, strLen;
};

inline size_t Octet(uint8_t* p, int v) {
  size_t n = 0;
  if (v >= 100) p[n++] = static_cast<uint8_t>('0' + v / 100);
  if (v >= 10) p[n++] = static_cast<uint8_t>('0' + (v / 10) % 10);
  p[n++] = static_cast<uint8_t>('0' + v % 10);
  return n;
}

// The decimal digits of v (below 2^53) written backwards into tmp; returns how many.
inline size_t Digits(uint64_t v, uint8_t* tmp) {
  size_t n = 0;
  do {
    tmp[n++] = static_cast<uint8_t>('0' + v % 10);
    v /= 10;
  } while (v != 0);
  return n;
}

// Decodes into out (total bytes) and offsets (count + 1); false for anything the twin must look at.
bool Decode(const uint8_t* b, size_t len, const double* times, size_t timesLen, size_t first, uint8_t* out,
            size_t total, uint32_t* offsets, size_t count, Reader head, size_t fieldCount,
            const std::vector<const ColTokens*>& fieldCols) {
  const uint64_t shapes = head.Varint();
  // Each shape takes two bytes at least: a larger count is damage (and no vector is sized by it).
  if (!head.ok || shapes > len) return false;
  const size_t shapeCount = static_cast<size_t>(shapes);
  Reader shapesIn{};
  if (!head.Sub(&shapesIn)) return false;
  std::vector<uint32_t> slotFields;
  std::vector<size_t> litAt, litLen;
  std::vector<size_t> shapeSlot(shapeCount), shapeSlots(shapeCount), shapeLit(shapeCount);
  for (size_t s = 0; s < shapeCount; s++) {
    const uint64_t n = shapesIn.Varint();
    if (!shapesIn.ok || n > shapesIn.end - shapesIn.p) return false;
    shapeSlot[s] = slotFields.size();
    shapeSlots[s] = static_cast<size_t>(n);
    for (uint64_t k = 0; k < n; k++) {
      const uint64_t f = shapesIn.Varint();
      if (!shapesIn.ok || f >= fieldCount) return false;
      slotFields.push_back(static_cast<uint32_t>(f));
    }
    shapeLit[s] = litAt.size();
    for (uint64_t k = 0; k <= n; k++) {
      size_t at = 0, l = 0;
      if (!shapesIn.Span(&at, &l)) return false;
      litAt.push_back(at);
      litLen.push_back(l);
    }
  }
  Reader perDoc{}, verbatim{};
  if (!head.Sub(&perDoc) || !head.Sub(&verbatim)) return false;
  std::vector<Column> cols(fieldCount);
  for (size_t f = 0; f < fieldCount && f < fieldCols.size(); f++) cols[f].ct = fieldCols[f];
  for (auto& c : cols) {
    if (!head.Sub(&c.kinds) || !head.Sub(&c.refs) || !head.Sub(&c.strs) || !head.Sub(&c.ints) ||
        !head.Sub(&c.raws) || !head.Sub(&c.ips))
      return false;
  }
  size_t p = 0;
  uint8_t tmp[24];
  for (size_t i = 0; i < count; i++) {
    offsets[i] = static_cast<uint32_t>(p);
    const uint64_t sh = perDoc.Varint();
    if (!perDoc.ok) return false;
    if (sh == 0) {
      size_t at = 0, l = 0;
      if (!verbatim.Span(&at, &l) || l > total - p) return false;
      std::memcpy(out + p, b + at, l);
      p += l;
      continue;
    }
    if (sh > shapeCount) return false;
    const size_t slots = shapeSlots[sh - 1];
    const uint32_t* fields = slotFields.data() + shapeSlot[sh - 1];
    const size_t lit = shapeLit[sh - 1];
    for (size_t k = 0;; k++) {
      const size_t ll = litLen[lit + k];
      if (ll > total - p) return false;
      std::memcpy(out + p, b + litAt[lit + k], ll);
      p += ll;
      if (k == slots) break;
      Column& col = cols[fields[k]];
      if (col.kinds.p >= col.kinds.end) return false;
      const uint8_t kind = b[col.kinds.p++];
      if (kind == kString) {
        const uint64_t ref = col.refs.Varint();
        if (!col.refs.ok) return false;
        size_t at = 0, l = 0;
        if (ref == 0) {
          if (!col.strs.Span(&at, &l)) return false;
          col.strAt.push_back(at);
          col.strLen.push_back(l);
        } else {
          if (ref > col.strAt.size()) return false;
          at = col.strAt[ref - 1];
          l = col.strLen[ref - 1];
        }
        if (l + 2 > total - p) return false;
        out[p++] = '"';
        std::memcpy(out + p, b + at, l);
        p += l;
        out[p++] = '"';
      } else if (kind == kInteger) {
        const uint64_t z = col.ints.Varint();
        if (!col.ints.ok || z >= (uint64_t{1} << 53)) return false;
        const bool neg = (z & 1) != 0;
        const uint64_t v = neg ? (z + 1) / 2 : z / 2;
        const size_t n = Digits(v, tmp);
        if (n + (neg ? 1 : 0) > total - p) return false;
        if (neg) out[p++] = '-';
        for (size_t d = 0; d < n; d++) out[p++] = tmp[n - 1 - d];
      } else if (kind == kTime) {
        if (first + i >= timesLen) return false;
        const double t = times[first + i];
        if (!(t >= 0 && t <= kMaxIsoTime) || t != std::floor(t) || 26 > total - p) return false;
        out[p++] = '"';
        iso::Write(static_cast<int64_t>(t), out + p);
        p += 24;
        out[p++] = '"';
      } else if (kind == kRaw) {
        size_t at = 0, l = 0;
        if (!col.raws.Span(&at, &l) || l > total - p) return false;
        std::memcpy(out + p, b + at, l);
        p += l;
      } else if (kind == kIpv4) {
        if (col.ips.end - col.ips.p < 4) return false;
        const uint8_t* o = b + col.ips.p;
        size_t n = 2 + 3;
        for (int q = 0; q < 4; q++) n += o[q] >= 100 ? 3 : o[q] >= 10 ? 2 : 1;
        if (n > total - p) return false;
        out[p++] = '"';
        for (int q = 0; q < 4; q++) {
          if (q) out[p++] = '.';
          p += Octet(out + p, o[q]);
        }
        out[p++] = '"';
        col.ips.p += 4;
      } else if (kind == kColumn || kind == kColumnBare) {
        size_t at = 0, l = 0;
        if (col.ct == nullptr || !col.ct->Token(first + i, &at, &l)) return false;
        const size_t q = kind == kColumn ? 2 : 0;
        if (l + q > total - p) return false;
        if (q) out[p++] = '"';
        std::memcpy(out + p, col.ct->table + at, l);
        p += l;
        if (q) out[p++] = '"';
      } else {
        return false;
      }
    }
  }
  offsets[count] = static_cast<uint32_t>(p);
  return p == total;
}


// ---- encoding (twin: encodeDocBlockTs) ----

struct Out {
  std::vector<uint8_t> v;
  void Byte(uint8_t b) { v.push_back(b); }
  void Varint(uint64_t x) {
    while (x >= 0x80) {
      v.push_back(static_cast<uint8_t>((x & 0x7f) | 0x80));
      x >>= 7;
    }
    v.push_back(static_cast<uint8_t>(x));
  }
  void Bytes(const uint8_t* b, size_t n) {
    Varint(n);
    v.insert(v.end(), b, b + n);
  }
  void Section(const Out& o) { Bytes(o.v.data(), o.v.size()); }
};

// A field whose values may refer to a keyword column (twin: DocColumnRef); ords by document of the block.
struct EncRef {
  std::string key;
  uint32_t column = 0;
  ColTokens tokens;
};

struct EncColumn {
  const EncRef* ref = nullptr;
  Out kinds, refs, strs, ints, raws, ips;
  std::unordered_map<std::string, uint32_t> strings;
  bool dedupe = true;
  uint32_t values = 0;
  uint32_t hits = 0;
};

struct Shape {
  uint32_t id;
  std::vector<uint32_t> fields;
  std::vector<std::string> lits;
};

inline bool Space(uint8_t c) { return c == 0x20 || c == 0x0a || c == 0x0d || c == 0x09; }

inline size_t SkipSpace(const uint8_t* b, size_t p, size_t e) {
  while (p < e && Space(b[p])) p++;
  return p;
}

// End (after the closing quote) of the string whose opening quote is at p, or SIZE_MAX.
size_t StringEnd(const uint8_t* b, size_t p, size_t e) {
  for (size_t i = p + 1; i < e; i++) {
    if (b[i] == '\\') i++;
    else if (b[i] == '"') return i + 1;
  }
  return SIZE_MAX;
}

size_t ValueEnd(const uint8_t* b, size_t p, size_t e) {
  const uint8_t c = b[p];
  if (c == '"') return StringEnd(b, p, e);
  if (c == '{' || c == '[') {
    int64_t depth = 0;
    for (size_t i = p; i < e; i++) {
      const uint8_t d = b[i];
      if (d == '"') {
        const size_t s = StringEnd(b, i, e);
        if (s == SIZE_MAX) return SIZE_MAX;
        i = s - 1;
      } else if (d == '{' || d == '[') {
        depth++;
      } else if (d == '}' || d == ']') {
        if (--depth == 0) return i + 1;
      }
    }
    return SIZE_MAX;
  }
  size_t i = p;
  while (i < e) {
    const uint8_t d = b[i];
    if (d == ',' || d == '}' || d == ']' || d == ':' || d == '"' || Space(d)) break;
    i++;
  }
  return i > p ? i : SIZE_MAX;
}

// Slots of the document b[s, e) into spans (key start, key end, value start, value end each); -1 when not split.
int64_t Split(const uint8_t* b, size_t s, size_t e, std::vector<size_t>& spans) {
  spans.clear();
  size_t p = SkipSpace(b, s, e);
  if (p >= e || b[p] != '{') return -1;
  p = SkipSpace(b, p + 1, e);
  int64_t n = 0;
  if (p < e && b[p] == '}') {
    p++;
  } else {
    for (;;) {
      if (p >= e || b[p] != '"') return -1;
      const size_t ke = StringEnd(b, p, e);
      if (ke == SIZE_MAX) return -1;
      const size_t ks = p + 1;
      p = SkipSpace(b, ke, e);
      if (p >= e || b[p] != ':') return -1;
      p = SkipSpace(b, p + 1, e);
      if (p >= e) return -1;
      const size_t ve = ValueEnd(b, p, e);
      if (ve == SIZE_MAX) return -1;
      spans.push_back(ks);
      spans.push_back(ke - 1);
      spans.push_back(p);
      spans.push_back(ve);
      n++;
      p = SkipSpace(b, ve, e);
      if (p < e && b[p] == ',') {
        p = SkipSpace(b, p + 1, e);
        continue;
      }
      if (p >= e || b[p] != '}') return -1;
      p++;
      break;
    }
  }
  return SkipSpace(b, p, e) == e ? n : -1;
}

// The value of b[s, e) when it is the shortest decimal of an integer of at most 15 digits (twin: canonicalInt).
bool CanonicalInt(const uint8_t* b, size_t s, size_t e, int64_t* out) {
  size_t p = s;
  const bool neg = b[p] == '-';
  if (neg) p++;
  const size_t digits = e - p;
  if (digits < 1 || digits > 15) return false;
  if (b[p] == '0' && (digits > 1 || neg)) return false;
  int64_t v = 0;
  for (; p < e; p++) {
    if (b[p] < '0' || b[p] > '9') return false;
    v = v * 10 + (b[p] - '0');
  }
  *out = neg ? -v : v;
  return true;
}

// Appends the four octets of b[s, e) when it is a dotted quad without leading zeros (twin: ipv4).
bool Ipv4(const uint8_t* b, size_t s, size_t e, Out& out) {
  size_t p = s;
  uint8_t o[4];
  for (int k = 0; k < 4; k++) {
    const size_t from = p;
    int v = 0;
    while (p < e && b[p] >= '0' && b[p] <= '9' && p - from < 3) v = v * 10 + (b[p++] - '0');
    const size_t len = p - from;
    if (len == 0 || v > 255 || (len > 1 && b[from] == '0')) return false;
    if (k < 3) {
      if (p >= e || b[p] != '.') return false;
      p++;
    }
    o[k] = static_cast<uint8_t>(v);
  }
  if (p != e) return false;
  for (int k = 0; k < 4; k++) out.Byte(o[k]);
  return true;
}


std::vector<uint8_t> Encode(const uint8_t* raw, const uint32_t* offs, size_t count, const double* times,
                            const std::vector<EncRef>& refs) {
  std::unordered_map<std::string, uint32_t> fieldIds;
  std::vector<std::string> fieldKeys;
  std::vector<EncColumn> cols;
  std::unordered_map<std::string, Shape> shapeIds;
  Out shapes, perDoc, verbatim;
  std::vector<size_t> spans;
  std::vector<uint32_t> slotFields;
  const Shape* last = nullptr;
  uint64_t total = 0;
  std::string key;
  for (size_t i = 0; i < count; i++) {
    const size_t s = offs[i];
    const size_t e = offs[i + 1];
    total += e - s;
    const int64_t n = Split(raw, s, e, spans);
    if (n < 0) {
      perDoc.Varint(0);
      verbatim.Bytes(raw + s, e - s);
      continue;
    }
    const Shape* shape = nullptr;
    if (last != nullptr && last->fields.size() == static_cast<size_t>(n)) {
      bool same = true;
      size_t at = s;
      for (int64_t k = 0; k <= n && same; k++) {
        const size_t to = k < n ? spans[4 * k + 2] : e;
        const std::string& lit = last->lits[k];
        same = lit.size() == to - at && std::memcmp(lit.data(), raw + at, to - at) == 0;
        if (k < n) at = spans[4 * k + 3];
      }
      if (same) shape = last;
    }
    if (shape == nullptr) {
      key.clear();
      slotFields.clear();
      size_t at = s;
      for (int64_t k = 0; k < n; k++) {
        std::string name(reinterpret_cast<const char*>(raw + spans[4 * k]), spans[4 * k + 1] - spans[4 * k]);
        auto it = fieldIds.find(name);
        uint32_t f;
        if (it == fieldIds.end()) {
          f = static_cast<uint32_t>(fieldKeys.size());
          fieldIds.emplace(name, f);
          cols.emplace_back();
          for (const auto& r : refs) {
            if (r.key == name) {
              cols.back().ref = &r;
              break;
            }
          }
          fieldKeys.push_back(std::move(name));
        } else {
          f = it->second;
        }
        slotFields.push_back(f);
        const size_t vs = spans[4 * k + 2];
        key.append(reinterpret_cast<const char*>(&f), 4);
        const uint64_t ll = vs - at;
        key.append(reinterpret_cast<const char*>(&ll), 8);
        key.append(reinterpret_cast<const char*>(raw + at), vs - at);
        at = spans[4 * k + 3];
      }
      const uint64_t ll = e - at;
      key.append(reinterpret_cast<const char*>(&ll), 8);
      key.append(reinterpret_cast<const char*>(raw + at), e - at);
      auto found = shapeIds.find(key);
      if (found == shapeIds.end()) {
        Shape sh;
        sh.id = static_cast<uint32_t>(shapeIds.size());
        sh.fields = slotFields;
        shapes.Varint(static_cast<uint64_t>(n));
        for (int64_t k = 0; k < n; k++) shapes.Varint(slotFields[k]);
        size_t from = s;
        for (int64_t k = 0; k <= n; k++) {
          const size_t to = k < n ? spans[4 * k + 2] : e;
          sh.lits.emplace_back(reinterpret_cast<const char*>(raw + from), to - from);
          shapes.Bytes(raw + from, to - from);
          if (k < n) from = spans[4 * k + 3];
        }
        found = shapeIds.emplace(key, std::move(sh)).first;
      }
      shape = &found->second;
      last = shape;
    }
    perDoc.Varint(shape->id + 1);
    int timeOk = -1;
    uint8_t iso[24];
    for (int64_t k = 0; k < n; k++) {
      EncColumn& col = cols[shape->fields[k]];
      const size_t vs = spans[4 * k + 2];
      const size_t ve = spans[4 * k + 3];
      const uint8_t c = raw[vs];
      if (col.ref != nullptr) {
        size_t at = 0, l = 0;
        const size_t q = c == '"' ? 1 : 0;
        if (col.ref->tokens.Token(i, &at, &l) && ve - vs - 2 * q == l &&
            std::memcmp(raw + vs + q, col.ref->tokens.table + at, l) == 0) {
          col.kinds.Byte(q ? kColumn : kColumnBare);
          continue;
        }
      }
      if (c == '"') {
        if (ve - vs == 26) {
          if (timeOk < 0) {
            const double t = times[i];
            timeOk = t == std::floor(t) && t >= -62167219200000.0 && t <= kMaxIsoTime ? 1 : 0;
            if (timeOk) iso::Write(static_cast<int64_t>(t), iso);
          }
          if (timeOk == 1 && std::memcmp(iso, raw + vs + 1, 24) == 0) {
            col.kinds.Byte(kTime);
            continue;
          }
        }
        if (ve - vs <= 17 && ve - vs >= 9 && Ipv4(raw, vs + 1, ve - 1, col.ips)) {
          col.kinds.Byte(kIpv4);
          continue;
        }
        col.kinds.Byte(kString);
        if (col.dedupe) {
          std::string text(reinterpret_cast<const char*>(raw + vs + 1), ve - vs - 2);
          col.values++;
          auto it = col.strings.find(text);
          if (it != col.strings.end()) {
            col.refs.Varint(it->second);
            col.hits++;
            continue;
          }
          const uint32_t next = static_cast<uint32_t>(col.strings.size()) + 1;
          col.strings.emplace(std::move(text), next);
          if (col.values == 64 && col.hits < 8) {
            col.dedupe = false;
            col.strings.clear();
          }
        }
        col.refs.Varint(0);
        col.strs.Bytes(raw + vs + 1, ve - vs - 2);
        continue;
      }
      if (c == '-' || (c >= '0' && c <= '9')) {
        int64_t v = 0;
        if (CanonicalInt(raw, vs, ve, &v)) {
          col.kinds.Byte(kInteger);
          col.ints.Varint(v < 0 ? static_cast<uint64_t>(-2 * v - 1) : static_cast<uint64_t>(2 * v));
          continue;
        }
      }
      col.kinds.Byte(kRaw);
      col.raws.Bytes(raw + vs, ve - vs);
    }
  }
  Out out;
  out.v.reserve(total / 3 + 64);
  out.Byte(refs.empty() ? kVersion : kVersionRefs);
  out.Varint(count);
  out.Varint(total);
  out.Varint(fieldKeys.size());
  for (const auto& k : fieldKeys) out.Bytes(reinterpret_cast<const uint8_t*>(k.data()), k.size());
  if (!refs.empty())
    for (const auto& col : cols) out.Varint(col.ref == nullptr ? 0 : uint64_t{col.ref->column} + 1);
  out.Varint(shapeIds.size());
  out.Section(shapes);
  out.Section(perDoc);
  out.Section(verbatim);
  for (const auto& col : cols) {
    out.Section(col.kinds);
    out.Section(col.refs);
    out.Section(col.strs);
    out.Section(col.ints);
    out.Section(col.raws);
    out.Section(col.ips);
  }
  return std::move(out.v);
}

}  // namespace

Napi::Value DecodeDocBlock(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 3 || !info[0].IsTypedArray() || !info[1].IsTypedArray() || !info[2].IsNumber()) {
    Napi::TypeError::New(env, "decodeDocBlock(block, times, first)").ThrowAsJavaScriptException();
    return env.Null();
  }
  Napi::TypedArray bt = info[0].As<Napi::TypedArray>();
  Napi::TypedArray tt = info[1].As<Napi::TypedArray>();
  if (bt.TypedArrayType() != napi_uint8_array || tt.TypedArrayType() != napi_float64_array) {
    Napi::TypeError::New(env, "decodeDocBlock: a Uint8Array and a Float64Array").ThrowAsJavaScriptException();
    return env.Null();
  }
  const double firstD = info[2].As<Napi::Number>().DoubleValue();
  if (!(firstD >= 0 && firstD <= 4294967295.0) || firstD != std::floor(firstD)) return env.Null();
  Napi::Uint8Array block = bt.As<Napi::Uint8Array>();
  Napi::Float64Array times = tt.As<Napi::Float64Array>();
  const uint8_t* b = block.Data();
  const size_t len = block.ElementLength();
  if (len < 1 || (b[0] != kVersion && b[0] != kVersionRefs)) return env.Null();
  Reader head{b, 1, len};
  const uint64_t count = head.Varint();
  const uint64_t total = head.Varint();
  if (!head.ok || count > static_cast<uint64_t>(len) * 8 + 1 || total > (uint64_t{1} << 31)) return env.Null();
  const uint64_t fieldCount = head.Varint();
  if (!head.ok || fieldCount > len) return env.Null();
  for (uint64_t f = 0; f < fieldCount; f++) {
    size_t at = 0, l = 0;
    if (!head.Span(&at, &l)) return env.Null();
  }
  // Version 2: each field's keyword column, from the columns given (info[3]: per column [table, starts, ords] or
  // undefined); a reference to a column not given is left to the twin, which throws.
  std::vector<ColTokens> given;
  std::vector<const ColTokens*> fieldCols;
  if (b[0] == kVersionRefs) {
    Napi::Array columns = info.Length() > 3 && info[3].IsArray() ? info[3].As<Napi::Array>() : Napi::Array::New(env);
    given.resize(columns.Length());
    std::vector<bool> have(columns.Length(), false), used(columns.Length(), false);
    for (uint32_t c = 0; c < columns.Length(); c++) {
      Napi::Value v = columns.Get(c);
      if (!v.IsArray()) continue;
      Napi::Array a = v.As<Napi::Array>();
      if (a.Length() < 3) continue;
      Napi::Value t = a.Get(uint32_t{0}), s = a.Get(uint32_t{1}), o = a.Get(uint32_t{2});
      if (!t.IsTypedArray() || !s.IsTypedArray() || !o.IsTypedArray()) continue;
      Napi::TypedArray tt2 = t.As<Napi::TypedArray>(), st = s.As<Napi::TypedArray>(), ot = o.As<Napi::TypedArray>();
      if (tt2.TypedArrayType() != napi_uint8_array || st.TypedArrayType() != napi_uint32_array ||
          ot.TypedArrayType() != napi_uint32_array)
        continue;
      given[c] = ColTokens::Of(t.As<Napi::Uint8Array>().Data(), tt2.ElementLength(), s.As<Napi::Uint32Array>().Data(),
                           st.ElementLength(), o.As<Napi::Uint32Array>().Data(), ot.ElementLength());
      have[c] = true;
    }
    for (uint64_t f = 0; f < fieldCount; f++) {
      const uint64_t c = head.Varint();
      if (!head.ok) return env.Null();
      if (c == 0) {
        fieldCols.push_back(nullptr);
        continue;
      }
      if (c - 1 >= given.size() || !have[c - 1]) return env.Null();
      fieldCols.push_back(&given[c - 1]);
      used[c - 1] = true;
    }
    for (size_t c = 0; c < given.size(); c++)
      if (used[c]) given[c].Resolve(static_cast<size_t>(firstD), static_cast<size_t>(count));
  }
  Napi::Buffer<uint8_t> raw = Napi::Buffer<uint8_t>::New(env, static_cast<size_t>(total));
  Napi::Uint32Array offsets = Napi::Uint32Array::New(env, static_cast<size_t>(count) + 1);
  if (!Decode(b, len, times.Data(), times.ElementLength(), static_cast<size_t>(firstD), raw.Data(),
              static_cast<size_t>(total), offsets.Data(), static_cast<size_t>(count), head,
              static_cast<size_t>(fieldCount), fieldCols))
    return env.Null();
  Napi::Array result = Napi::Array::New(env, 2);
  result.Set(uint32_t{0}, raw);
  result.Set(uint32_t{1}, offsets);
  return result;
}

Napi::Value EncodeDocBlock(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 3 || !info[0].IsTypedArray() || !info[1].IsTypedArray() || !info[2].IsTypedArray()) {
    Napi::TypeError::New(env, "encodeDocBlock(raw, offsets, times)").ThrowAsJavaScriptException();
    return env.Null();
  }
  Napi::TypedArray rt = info[0].As<Napi::TypedArray>();
  Napi::TypedArray ot = info[1].As<Napi::TypedArray>();
  Napi::TypedArray tt = info[2].As<Napi::TypedArray>();
  if (rt.TypedArrayType() != napi_uint8_array || ot.TypedArrayType() != napi_uint32_array ||
      tt.TypedArrayType() != napi_float64_array) {
    Napi::TypeError::New(env, "encodeDocBlock: a Uint8Array, a Uint32Array and a Float64Array")
        .ThrowAsJavaScriptException();
    return env.Null();
  }
  Napi::Uint8Array raw = rt.As<Napi::Uint8Array>();
  Napi::Uint32Array offs = ot.As<Napi::Uint32Array>();
  Napi::Float64Array times = tt.As<Napi::Float64Array>();
  const size_t n = offs.ElementLength();
  if (n < 1 || times.ElementLength() != n - 1) {
    Napi::RangeError::New(env, "encodeDocBlock: one time per document").ThrowAsJavaScriptException();
    return env.Null();
  }
  const uint32_t* o = offs.Data();
  for (size_t i = 0; i + 1 < n; i++) {
    if (o[i] > o[i + 1] || o[i + 1] > raw.ElementLength()) {
      Napi::RangeError::New(env, "encodeDocBlock: offsets out of order or past the bytes").ThrowAsJavaScriptException();
      return env.Null();
    }
  }
  // info[3]: fields whose values may refer to a keyword column, each [key, column, table, starts, ords (one per
  // document)].
  std::vector<EncRef> refs;
  if (info.Length() > 3 && info[3].IsArray()) {
    Napi::Array a = info[3].As<Napi::Array>();
    refs.resize(a.Length());
    for (uint32_t k = 0; k < a.Length(); k++) {
      Napi::Value v = a.Get(k);
      Napi::Array r = v.IsArray() ? v.As<Napi::Array>() : Napi::Array::New(env);
      const bool ok = r.Length() >= 5 && r.Get(uint32_t{0}).IsTypedArray() && r.Get(uint32_t{1}).IsNumber() &&
                      r.Get(uint32_t{2}).IsTypedArray() && r.Get(uint32_t{3}).IsTypedArray() &&
                      r.Get(uint32_t{4}).IsTypedArray() &&
                      r.Get(uint32_t{0}).As<Napi::TypedArray>().TypedArrayType() == napi_uint8_array &&
                      r.Get(uint32_t{2}).As<Napi::TypedArray>().TypedArrayType() == napi_uint8_array &&
                      r.Get(uint32_t{3}).As<Napi::TypedArray>().TypedArrayType() == napi_uint32_array &&
                      r.Get(uint32_t{4}).As<Napi::TypedArray>().TypedArrayType() == napi_uint32_array &&
                      r.Get(uint32_t{4}).As<Napi::TypedArray>().ElementLength() == n - 1;
      if (!ok) {
        Napi::TypeError::New(env, "encodeDocBlock: refs of [key, column, table, starts, ords (one per document)]")
            .ThrowAsJavaScriptException();
        return env.Null();
      }
      Napi::Uint8Array key = r.Get(uint32_t{0}).As<Napi::Uint8Array>();
      Napi::Uint8Array table = r.Get(uint32_t{2}).As<Napi::Uint8Array>();
      Napi::Uint32Array starts = r.Get(uint32_t{3}).As<Napi::Uint32Array>();
      Napi::Uint32Array ords = r.Get(uint32_t{4}).As<Napi::Uint32Array>();
      refs[k].key.assign(reinterpret_cast<const char*>(key.Data()), key.ElementLength());
      refs[k].column = static_cast<uint32_t>(r.Get(uint32_t{1}).As<Napi::Number>().Uint32Value());
      refs[k].tokens = ColTokens::Of(table.Data(), table.ElementLength(), starts.Data(), starts.ElementLength(),
                                 ords.Data(),  ords.ElementLength());
    }
  }
  std::vector<uint8_t> out = Encode(raw.Data(), o, n - 1, times.Data(), refs);
  return Napi::Buffer<uint8_t>::Copy(env, out.data(), out.size());
}

namespace {
// A varint of the dictionary's prefixes: at most 5 bytes, as token-dict.ts reads them.
bool DictVarint(const uint8_t* b, size_t* p, size_t end, uint64_t* v) {
  uint64_t x = 0;
  for (int shift = 0;; shift += 7) {
    if (*p >= end || shift > 28) return false;
    const uint8_t c = b[(*p)++];
    x |= static_cast<uint64_t>(c & 0x7f) << shift;
    if (c < 0x80) {
      *v = x;
      return true;
    }
  }
}
}  // namespace

Napi::Value DictTokenTable(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 6 || !info[0].IsTypedArray()) {
    Napi::TypeError::New(env, "dictTokenTable(dict, lensAt, lensEnd, restAt, count, units)").ThrowAsJavaScriptException();
    return env.Null();
  }
  Napi::TypedArray dt = info[0].As<Napi::TypedArray>();
  if (dt.TypedArrayType() != napi_uint8_array) {
    Napi::TypeError::New(env, "dictTokenTable: a Uint8Array").ThrowAsJavaScriptException();
    return env.Null();
  }
  const uint8_t* b = dt.As<Napi::Uint8Array>().Data();
  const size_t len = dt.ElementLength();
  size_t arg[5];
  for (int i = 0; i < 5; i++) {
    if (!info[i + 1].IsNumber()) return env.Null();
    const double d = info[i + 1].As<Napi::Number>().DoubleValue();
    if (!(d >= 0 && d <= static_cast<double>(len)) || d != std::floor(d)) return env.Null();
    arg[i] = static_cast<size_t>(d);
  }
  const size_t lensAt = arg[0], lensEnd = arg[1], restAt = arg[2], n = arg[3], units = arg[4];
  if (lensAt > lensEnd || lensEnd > len || restAt > len || units > len - restAt || n > lensEnd - lensAt)
    return env.Null();
  for (size_t k = restAt; k < restAt + units; k++)
    if (b[k] >= 0x80) return env.Null();
  // First pass: lengths checked and summed (what asciiTable checks; any doubt goes to the twin), the starts written
  // straight into the array returned.
  Napi::Uint32Array st = Napi::Uint32Array::New(env, n + 1);
  uint32_t* starts = st.Data();
  size_t p = lensAt;
  uint64_t total = 0, restUnits = 0, prevLen = 0;
  for (size_t t = 0; t < n; t++) {
    uint64_t shared = 0, rest = 0;
    if (!DictVarint(b, &p, lensEnd, &shared) || !DictVarint(b, &p, lensEnd, &rest)) return env.Null();
    if (shared > prevLen || restUnits + rest > units) return env.Null();
    starts[t] = static_cast<uint32_t>(total);
    prevLen = shared + rest;
    total += prevLen;
    restUnits += rest;
    if (total > (uint64_t{1} << 31)) return env.Null();
  }
  if (p != lensEnd || restUnits != units) return env.Null();
  starts[n] = static_cast<uint32_t>(total);
  // Second pass over the (checked) varints: each token's shared prefix from the one before, then its rest.
  Napi::Buffer<uint8_t> table = Napi::Buffer<uint8_t>::New(env, static_cast<size_t>(total));
  uint8_t* out = table.Data();
  const uint8_t* from = b + restAt;
  size_t prevAt = 0;
  p = lensAt;
  for (size_t t = 0; t < n; t++) {
    uint64_t shared = 0, rest = 0;
    DictVarint(b, &p, lensEnd, &shared);
    DictVarint(b, &p, lensEnd, &rest);
    const size_t at = starts[t];
    // The shared prefix is the start of the token just written, which ends at `at`: no overlap.
    if (shared) std::memcpy(out + at, out + prevAt, shared);
    if (rest) std::memcpy(out + at + shared, from, rest);
    from += rest;
    prevAt = at;
  }
  Napi::Array result = Napi::Array::New(env, 2);
  result.Set(uint32_t{0}, table);
  result.Set(uint32_t{1}, st);
  return result;
}

}  // namespace tidepool
