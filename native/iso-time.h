// Date.prototype.toISOString for whole milliseconds in years 0000-9999 (negative times too): 24 bytes,
// YYYY-MM-DDTHH:MM:SS.mmmZ. One copy for the hit writer and the document-column codec.
#pragma once

#include <cstdint>

namespace tidepool {
namespace iso {

inline void Two(uint8_t* p, int v) {
  p[0] = static_cast<uint8_t>('0' + v / 10);
  p[1] = static_cast<uint8_t>('0' + v % 10);
}

// Days to a civil date: H. Hinnant's algorithm. The caller keeps t within years 0000-9999.
inline void Write(int64_t t, uint8_t* p) {
  int64_t days = t / 86400000;
  int64_t r = t % 86400000;
  if (r < 0) {
    r += 86400000;
    days--;
  }
  const int64_t z = days + 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const int64_t doe = z - era * 146097;
  const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const int64_t mp = (5 * doy + 2) / 153;
  const int d = static_cast<int>(doy - (153 * mp + 2) / 5 + 1);
  const int m = static_cast<int>(mp < 10 ? mp + 3 : mp - 9);
  const int y = static_cast<int>(yoe + era * 400 + (m <= 2 ? 1 : 0));
  Two(p, y / 100);
  Two(p + 2, y % 100);
  p[4] = '-';
  Two(p + 5, m);
  p[7] = '-';
  Two(p + 8, d);
  p[10] = 'T';
  Two(p + 11, static_cast<int>(r / 3600000));
  r %= 3600000;
  p[13] = ':';
  Two(p + 14, static_cast<int>(r / 60000));
  r %= 60000;
  p[16] = ':';
  Two(p + 17, static_cast<int>(r / 1000));
  r %= 1000;
  p[19] = '.';
  p[20] = static_cast<uint8_t>('0' + r / 100);
  Two(p + 21, static_cast<int>(r % 100));
  p[23] = 'Z';
}

}  // namespace iso
}  // namespace tidepool
