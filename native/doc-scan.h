// One NDJSON document scanned into its leaf values (dotted path, kind, decoded bytes) and its time field values.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tidepool {

enum LeafKind : uint8_t { kLeafString, kLeafNumber, kLeafTrue, kLeafFalse };

struct Leaf {
  uint32_t pathOff, pathLen;  // in ScannedDoc::paths
  uint32_t valOff, valLen;    // in ScannedDoc::values (a number's source text, a string's decoded bytes)
  uint8_t kind;
  bool ascii;  // every decoded byte below 0x80 (and no \u escape above it)
  bool canon;  // a number whose text is what JavaScript's String(Number(text)) gives
};

struct ScannedDoc {
  std::string paths;
  std::string values;
  std::vector<Leaf> leaves;
  // Per time field (timestamp, time, ts, @timestamp): its leaf, -1 when absent, -2 when not a string or number.
  int timeLeaf[4];
  // Scratch space of the scan, kept between documents.
  std::string path, keys;
  std::vector<uint32_t> keyEnds;
  void Clear() {
    paths.clear();
    values.clear();
    leaves.clear();
    for (int& t : timeLeaf) t = -1;
  }
};

// Scans document bytes (valid UTF-8). False when the document takes the JavaScript path: not JSON, not an object,
// or a case the scan does not reproduce exactly (duplicate or integer-like keys, `_id`, deep nesting, bad escapes).
bool ScanDoc(const uint8_t* p, size_t n, ScannedDoc* out);

// The document time (docTime in src/logstore/doc-time.ts) in ms; NaN when it must be clamped to `now` (the
// JavaScript path records the original value); `now` when no time field holds a time.
double ScannedDocTime(const ScannedDoc& doc, double now);

}  // namespace tidepool
