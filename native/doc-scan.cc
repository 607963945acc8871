// Scans one NDJSON document into leaves and reads its time the way src/logstore/doc-time.ts does.
// Strict JSON (what JSON.parse accepts, or less): anything else is left to the JavaScript path.
// Twin: src/native/doc-indexer-ts.ts (scanDoc, scannedDocTime).
#include "doc-scan.h"

#include "doc-scan-time.h"

#include <cmath>
#include <cstdlib>
#include <cstring>

namespace tidepool {

namespace {

constexpr int kMaxDepth = 64;
constexpr size_t kMaxKeys = 256;
const char* const kTimeFields[4] = {"timestamp", "time", "ts", "@timestamp"};

class Scanner {
 public:
  Scanner(const uint8_t* p, size_t n, ScannedDoc* out)
      : p_(p), end_(p + n), out_(out), path_(out->path), keys_(out->keys), keyEnds_(out->keyEnds) {
    path_.clear();
    keys_.clear();
    keyEnds_.clear();
  }

  bool Run() {
    SkipWs();
    if (p_ >= end_ || *p_ != '{') return false;
    if (!Object(1)) return false;
    SkipWs();
    return p_ == end_;
  }

 private:
  const uint8_t* p_;
  const uint8_t* end_;
  ScannedDoc* out_;
  std::string& path_;
  // Keys of the objects being scanned (a stack: each object's keys after its parent's).
  std::string& keys_;
  std::vector<uint32_t>& keyEnds_;

  void SkipWs() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) p_++;
  }

  static int Hex(uint8_t c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }

  // A string at p_ (the opening quote) decoded onto `into`; `ascii` false when any byte is 0x80 or above or a \u
  // escape names such a character (those are not decoded: the caller must not use the bytes then).
  bool String(std::string* into, bool* ascii) {
    p_++;
    *ascii = true;
    for (;;) {
      const uint8_t* s = p_;
      while (p_ < end_ && *p_ != '"' && *p_ != '\\' && *p_ >= 0x20) {
        if (*p_ >= 0x80) *ascii = false;
        p_++;
      }
      into->append(reinterpret_cast<const char*>(s), p_ - s);
      if (p_ >= end_ || *p_ < 0x20) return false;
      if (*p_ == '"') {
        p_++;
        return true;
      }
      if (++p_ >= end_) return false;
      switch (*p_++) {
        case '"': into->push_back('"'); break;
        case '\\': into->push_back('\\'); break;
        case '/': into->push_back('/'); break;
        case 'b': into->push_back('\b'); break;
        case 'f': into->push_back('\f'); break;
        case 'n': into->push_back('\n'); break;
        case 'r': into->push_back('\r'); break;
        case 't': into->push_back('\t'); break;
        case 'u': {
          if (end_ - p_ < 4) return false;
          int cp = 0;
          for (int i = 0; i < 4; i++) {
            int h = Hex(p_[i]);
            if (h < 0) return false;
            cp = cp * 16 + h;
          }
          p_ += 4;
          if (cp < 0x80) into->push_back(static_cast<char>(cp));
          else *ascii = false;
          break;
        }
        default: return false;
      }
    }
  }

  // A JSON number at p_; `canon` when its text is JavaScript's own spelling of its value.
  bool Number(bool* canon) {
    const uint8_t* s = p_;
    bool neg = false;
    if (*p_ == '-') {
      neg = true;
      p_++;
    }
    if (p_ >= end_) return false;
    const uint8_t* intStart = p_;
    if (*p_ == '0') p_++;
    else if (*p_ >= '1' && *p_ <= '9') while (p_ < end_ && *p_ >= '0' && *p_ <= '9') p_++;
    else return false;
    size_t intLen = p_ - intStart;
    size_t fracLen = 0, fracZeros = 0;
    bool fracEndsZero = false, exp = false;
    if (p_ < end_ && *p_ == '.') {
      p_++;
      const uint8_t* f = p_;
      while (p_ < end_ && *p_ >= '0' && *p_ <= '9') p_++;
      fracLen = p_ - f;
      if (fracLen == 0) return false;
      fracEndsZero = p_[-1] == '0';
      while (fracZeros < fracLen && f[fracZeros] == '0') fracZeros++;
    }
    if (p_ < end_ && (*p_ == 'e' || *p_ == 'E')) {
      exp = true;
      p_++;
      if (p_ < end_ && (*p_ == '+' || *p_ == '-')) p_++;
      const uint8_t* e = p_;
      while (p_ < end_ && *p_ >= '0' && *p_ <= '9') p_++;
      if (p_ == e) return false;
    }
    // Up to 15 significant digits always print back as written (no exponent, no trailing zero, no "-0").
    bool zeroInt = intLen == 1 && *intStart == '0';
    size_t sig = zeroInt ? (fracLen - fracZeros) : intLen + fracLen;
    *canon = !exp && !fracEndsZero && sig <= 15 && !(zeroInt && fracLen > 0 && fracZeros > 5) &&
             !(neg && zeroInt && fracLen == 0);
    out_->values.append(reinterpret_cast<const char*>(s), p_ - s);
    return true;
  }

  bool Literal(const char* word, size_t n) {
    if (static_cast<size_t>(end_ - p_) < n || std::memcmp(p_, word, n) != 0) return false;
    p_ += n;
    return true;
  }

  void AddLeaf(uint8_t kind, uint32_t valOff, bool ascii, bool canon) {
    Leaf l;
    l.pathOff = static_cast<uint32_t>(out_->paths.size());
    l.pathLen = static_cast<uint32_t>(path_.size());
    out_->paths.append(path_);
    l.valOff = valOff;
    l.valLen = static_cast<uint32_t>(out_->values.size()) - valOff;
    l.kind = kind;
    l.ascii = ascii;
    l.canon = canon;
    out_->leaves.push_back(l);
  }

  // A value at p_ under path_; leaves for scalars (none for null), nested objects and arrays walked.
  bool Value(int depth) {
    if (p_ >= end_) return false;
    uint8_t c = *p_;
    uint32_t off = static_cast<uint32_t>(out_->values.size());
    if (c == '{') return Object(depth + 1);
    if (c == '[') return Array(depth + 1);
    if (c == '"') {
      bool ascii;
      if (!String(&out_->values, &ascii)) return false;
      AddLeaf(kLeafString, off, ascii, false);
      return true;
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
      bool canon;
      if (!Number(&canon)) return false;
      AddLeaf(kLeafNumber, off, true, canon);
      return true;
    }
    if (c == 't') {
      if (!Literal("true", 4)) return false;
      out_->values.append("true");
      AddLeaf(kLeafTrue, off, true, false);
      return true;
    }
    if (c == 'f') {
      if (!Literal("false", 5)) return false;
      out_->values.append("false");
      AddLeaf(kLeafFalse, off, true, false);
      return true;
    }
    if (c == 'n') return Literal("null", 4);
    return false;
  }

  bool Array(int depth) {
    if (depth > kMaxDepth) return false;
    p_++;
    SkipWs();
    if (p_ < end_ && *p_ == ']') {
      p_++;
      return true;
    }
    for (;;) {
      SkipWs();
      if (!Value(depth)) return false;
      SkipWs();
      if (p_ >= end_) return false;
      if (*p_ == ']') {
        p_++;
        return true;
      }
      if (*p_++ != ',') return false;
    }
  }

  bool Object(int depth) {
    if (depth > kMaxDepth) return false;
    p_++;
    SkipWs();
    if (p_ < end_ && *p_ == '}') {
      p_++;
      return true;
    }
    const size_t base = path_.size();
    // This object's keys, as [start, end) in keys_ from keyBase: a repeated key is left to JSON.parse (the last
    // value wins).
    const size_t keysBase = keys_.size();
    const size_t endsBase = keyEnds_.size();
    for (;;) {
      SkipWs();
      if (p_ >= end_ || *p_ != '"') return false;
      if (base > 0) path_.push_back('.');
      const size_t keyStart = path_.size();
      bool ascii;
      const uint8_t* raw = p_;
      if (!String(&path_, &ascii)) return false;
      // Bytes above 0x7f are exact UTF-8 when no escape is involved; an escaped one is not decoded here.
      if (!ascii) {
        for (const uint8_t* q = raw + 1; q < p_ - 1; q++)
          if (*q == '\\' && q[1] == 'u') return false;
      }
      const char* key = path_.data() + keyStart;
      const size_t keyLen = path_.size() - keyStart;
      // JSON.parse orders integer-like keys first, and `_id` is refused at the top: both go the JavaScript way.
      if (keyLen > 0) {
        size_t digits = 0;
        while (digits < keyLen && key[digits] >= '0' && key[digits] <= '9') digits++;
        if (digits == keyLen) return false;
      }
      if (depth == 1 && keyLen == 3 && std::memcmp(key, "_id", 3) == 0) return false;
      uint32_t prev = static_cast<uint32_t>(keysBase);
      for (size_t k = endsBase; k < keyEnds_.size(); k++) {
        uint32_t e = keyEnds_[k];
        if (e - prev == keyLen && std::memcmp(keys_.data() + prev, key, keyLen) == 0) return false;
        prev = e;
      }
      if (keyEnds_.size() - endsBase >= kMaxKeys) return false;
      keys_.append(key, keyLen);
      keyEnds_.push_back(static_cast<uint32_t>(keys_.size()));
      // A top-level time field: which leaf holds its value (or that it is not a string or a number).
      int timeField = -1;
      if (depth == 1) {
        for (int i = 0; i < 4; i++)
          if (std::strlen(kTimeFields[i]) == keyLen && std::memcmp(kTimeFields[i], key, keyLen) == 0) timeField = i;
      }
      SkipWs();
      if (p_ >= end_ || *p_++ != ':') return false;
      SkipWs();
      const size_t leavesBefore = out_->leaves.size();
      const bool scalar = p_ < end_ && *p_ != '{' && *p_ != '[' && *p_ != 'n' && *p_ != 't' && *p_ != 'f';
      if (!Value(depth)) return false;
      if (timeField >= 0) out_->timeLeaf[timeField] = scalar ? static_cast<int>(leavesBefore) : -2;
      path_.resize(base);
      SkipWs();
      if (p_ >= end_) return false;
      if (*p_ == '}') {
        p_++;
        keys_.resize(keysBase);
        keyEnds_.resize(endsBase);
        return true;
      }
      if (*p_++ != ',') return false;
    }
  }
};

}  // namespace

bool ScanDoc(const uint8_t* p, size_t n, ScannedDoc* out) {
  out->Clear();
  return Scanner(p, n, out).Run();
}

double ScannedDocTime(const ScannedDoc& doc, double now) {
  for (int f = 0; f < 4; f++) {
    int li = doc.timeLeaf[f];
    if (li < 0) continue;
    const Leaf& l = doc.leaves[li];
    const char* v = doc.values.data() + l.valOff;
    double t = NAN;
    if (l.kind == kLeafNumber) {
      std::string text(v, l.valLen);
      t = EpochMs(std::strtod(text.c_str(), nullptr));
    } else if (l.kind == kLeafString && l.ascii) {
      t = StringTime(v, l.valLen);
    }
    if (std::isnan(t)) continue;
    if (t > now + kMaxFutureMs || t < kMinTimeMs) return NAN;
    return t;
  }
  return now;
}

}  // namespace tidepool
