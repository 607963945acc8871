// Scans one NDJSON document into leaves and reads its time the way src/logstore/doc-time.ts does.
// Strict JSON (what JSON.parse accepts, or less): anything else is left to the JavaScript path.
// Twin: src/native/doc-indexer-ts.ts (scanDoc, scannedDocTime).
#include "doc-scan.h"

#include <cmath>
#include <cstdlib>
#include <cstring>

namespace tidepool {

namespace {

constexpr int kMaxDepth = 64;
constexpr size_t kMaxKeys = 256;
constexpr double kMinTimeMs = 31536000000.0;     // Date.UTC(1971, 0, 1)
constexpr double kMaxFutureMs = 24 * 3600000.0;  // MAX_FUTURE_MS
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

double JsRound(double x) {
  double f = std::floor(x);
  return x - f >= 0.5 ? f + 1 : f;
}

double EpochMs(double x) {
  if (!std::isfinite(x) || x < 0) return NAN;
  double ms = x < 1e11 ? JsRound(x * 1000) : x < 1e14 ? JsRound(x) : x < 1e17 ? JsRound(x / 1000) : JsRound(x / 1e6);
  return ms < kMinTimeMs ? NAN : ms;
}

int Digits(const char* v, int at, int n) {
  int x = 0;
  for (int i = at; i < at + n; i++) {
    int d = v[i] - '0';
    if (d < 0 || d > 9) return -1;
    x = x * 10 + d;
  }
  return x;
}

// Date.UTC(y, mo - 1, d) in ms for a valid day (years 0..99 are 1900..1999, as Date.UTC reads them); NaN when
// the day does not exist in that month.
double UtcDay(int y, int mo, int d) {
  if (y >= 0 && y <= 99) y += 1900;
  static const int kDays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  if (d > kDays[mo - 1] + (mo == 2 && leap ? 1 : 0)) return NAN;
  // Days from civil (H. Hinnant).
  int yy = mo <= 2 ? y - 1 : y;
  int era = (yy >= 0 ? yy : yy - 399) / 400;
  int yoe = yy - era * 400;
  int doy = (153 * (mo + (mo > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  int doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return (static_cast<double>(era) * 146097 + doe - 719468) * 86400000.0;
}

// fastIso of doc-time.ts: "YYYY-MM-DDTHH:MM:SS.mmmZ" in integer arithmetic.
double FastIso(const char* v) {
  int y = Digits(v, 0, 4), mo = Digits(v, 5, 2), d = Digits(v, 8, 2);
  if (y < 0 || mo < 1 || mo > 12 || d < 1 || d > 31 || v[7] != '-') return NAN;
  double day = UtcDay(y, mo, d);
  if (std::isnan(day)) return NAN;
  int h = Digits(v, 11, 2), mi = Digits(v, 14, 2), s = Digits(v, 17, 2), ms = Digits(v, 20, 3);
  if (h < 0 || h > 23 || mi < 0 || mi > 59 || s < 0 || s > 59 || ms < 0 || v[13] != ':' || v[16] != ':') return NAN;
  return day + ((h * 60 + mi) * 60 + s) * 1000.0 + ms;
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// The RFC 3339 pattern of doc-time.ts, by hand.
double Rfc3339(const char* v, int n) {
  static const char kShape[] = "dddd-dd-ddTdd:dd:dd";
  for (int i = 0; i < 19; i++) {
    char k = kShape[i];
    if (k == 'd' ? !IsDigit(v[i]) : k == 'T' ? (v[i] != 'T' && v[i] != 't' && v[i] != ' ') : v[i] != k) return NAN;
  }
  int pos = 19;
  char frac[5] = {'.', '0', '0', '0', 0};
  bool hasFrac = false;
  if (pos < n && v[pos] == '.') {
    int f = pos + 1;
    while (f < n && IsDigit(v[f])) f++;
    int count = f - pos - 1;
    if (count < 1 || count > 9) return NAN;
    for (int i = 0; i < 3 && i < count; i++) frac[1 + i] = v[pos + 1 + i];
    hasFrac = true;
    pos = f;
  }
  double zoneMin = 0;
  if (pos < n) {
    char z = v[pos];
    if (z == 'Z' || z == 'z') pos++;
    else if (z == '+' || z == '-') {
      int q = pos + 1;
      if (q + 2 > n || !IsDigit(v[q]) || !IsDigit(v[q + 1])) return NAN;
      int hh = (v[q] - '0') * 10 + (v[q + 1] - '0');
      q += 2;
      if (q < n && v[q] == ':') q++;
      if (q + 2 > n || !IsDigit(v[q]) || !IsDigit(v[q + 1])) return NAN;
      int mm = (v[q] - '0') * 10 + (v[q + 1] - '0');
      zoneMin = (z == '-' ? -1 : 1) * (hh * 60 + mm);
      pos = q + 2;
    } else return NAN;
  }
  if (pos != n) return NAN;
  int mo = Digits(v, 5, 2), d = Digits(v, 8, 2), h = Digits(v, 11, 2), mi = Digits(v, 14, 2), sec = Digits(v, 17, 2);
  if (mo < 1 || mo > 12 || d < 1 || h > 23 || mi > 59 || sec > 59) return NAN;
  double day = UtcDay(Digits(v, 0, 4), mo, d);
  if (std::isnan(day)) return NAN;
  double fracMs = hasFrac ? std::floor(std::strtod(frac, nullptr) * 1000) : 0;
  double ms = day + ((h * 60 + mi) * 60 + sec) * 1000.0 + fracMs;
  return ms - zoneMin * 60000;
}

// parseDocTime of doc-time.ts for a string value (ASCII, at most 40 bytes are looked at).
double StringTime(const char* v, size_t len) {
  int n = static_cast<int>(len);
  if (n < 19 && n > 0 && IsDigit(v[0])) {
    // /^\d{1,20}(\.\d{1,9})?$/
    int i = 0;
    while (i < n && IsDigit(v[i])) i++;
    bool ok = i <= 20;
    if (ok && i < n) {
      int f = i + 1;
      int j = f;
      while (j < n && IsDigit(v[j])) j++;
      ok = v[i] == '.' && j == n && j - f >= 1 && j - f <= 9;
    }
    if (ok) {
      char buf[20];
      std::memcpy(buf, v, n);
      buf[n] = 0;
      return EpochMs(std::strtod(buf, nullptr));
    }
  }
  if (n < 19 || n > 40) return NAN;
  if (n == 24 && v[10] == 'T' && v[23] == 'Z' && v[19] == '.' && v[4] == '-') {
    double t = FastIso(v);
    if (!std::isnan(t)) return t;
  }
  return Rfc3339(v, n);
}

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
