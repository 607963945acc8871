// One field of the active fraction's dictionary in sorted order, for the seal: JavaScript's `<` order on strings
// (UTF-16 code units), written as dict.bin stores it (see src/logstore/storage/token-dict.ts).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "byte-table.h"

namespace tidepool {

struct SortedDict {
  std::vector<uint32_t> ids;   // token ids in sorted order
  std::vector<uint32_t> lens;  // length of each in UTF-16 code units, in sorted order
  std::string bytes;           // their code units in sorted order: one byte each, or UTF-16LE when `wide`
  bool wide = false;           // some code unit is above 0xff
};

// Sorts the keys of `table` (WTF-8 bytes) as JavaScript sorts the strings they stand for.
void SortDict(const ByteTable& table, SortedDict* out);

}  // namespace tidepool
