// Document times as src/logstore/doc-time.ts reads them, for the document scan (native/doc-scan.cc).
#pragma once
#include <cstddef>

namespace tidepool {

constexpr double kMinTimeMs = 31536000000.0;     // Date.UTC(1971, 0, 1)
constexpr double kMaxFutureMs = 24 * 3600000.0;  // MAX_FUTURE_MS

// epochMs: milliseconds from an epoch number by its size, NaN when it is no time.
double EpochMs(double x);
// parseDocTime of a string (ASCII): an epoch text, RFC 3339 or "YYYY-MM-DD HH:MM:SS", else NaN.
double StringTime(const char* v, size_t len);

}  // namespace tidepool
