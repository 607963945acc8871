// Document times as src/logstore/doc-time.ts reads them (parseDocTime, epochMs), for the document scan.
// Twin: the same functions in src/native/doc-scan-time.ts.
#include "doc-scan-time.h"

#include <cmath>
#include <cstdlib>
#include <cstring>

namespace tidepool {

namespace {

double JsRound(double x) {
  double f = std::floor(x);
  return x - f >= 0.5 ? f + 1 : f;
}

}  // namespace

double EpochMs(double x) {
  if (!std::isfinite(x) || x < 0) return NAN;
  double ms = x < 1e11 ? JsRound(x * 1000) : x < 1e14 ? JsRound(x) : x < 1e17 ? JsRound(x / 1000) : JsRound(x / 1e6);
  return ms < kMinTimeMs ? NAN : ms;
}

namespace {

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

}  // namespace

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


}  // namespace tidepool
