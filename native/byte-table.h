// Byte-keyed hash table for the document indexer's dictionaries: (seed, bytes) -> int32 by open addressing,
// the keys kept in one arena; and the hash it uses.
#pragma once
#include <climits>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace tidepool {

// A 64-bit hash of n bytes at p under a seed (the field number).
inline uint64_t HashBytes(const char* p, size_t n, uint64_t seed) {
  uint64_t h = (seed + 1) * 0x9E3779B97F4A7C15ULL ^ n;
  while (n >= 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    h = (h ^ v) * 0xff51afd7ed558ccdULL;
    h ^= h >> 32;
    p += 8;
    n -= 8;
  }
  uint64_t v = 0;
  std::memcpy(&v, p, n);
  // murmur3's finalizer: every input bit reaches the low bits the table indexes by.
  h ^= v;
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ULL;
  h ^= h >> 33;
  return h;
}

// Open addressing: (tag, bytes) -> int32, the keys in one arena.
class ByteTable {
 public:
  static constexpr int32_t kMissing = INT32_MIN;  // Find's answer for a key not in the table

  explicit ByteTable(uint32_t tag = 0, size_t slots = 16) : slots_(slots), tag_(tag) {}

  int32_t Find(uint32_t tag, const char* p, uint32_t n, uint64_t h) const {
    (void)tag;
    size_t mask = slots_.size() - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
      const Slot& s = slots_[i];
      if (s.value == kMissing) return kMissing;
      if (s.hash == static_cast<uint32_t>(h >> 32) && s.len == n && std::memcmp(arena_.data() + s.off, p, n) == 0) return s.value;
    }
  }

  // Starts loading the slot where a key of hash h is looked for first (a large table's slot is a cache miss).
  void Prefetch(uint64_t h) const { __builtin_prefetch(&slots_[h & (slots_.size() - 1)]); }

  void Insert(uint32_t tag, const char* p, uint32_t n, uint64_t h, int32_t value) {
    (void)tag;
    if ((count_ + 1) * 4 > slots_.size() * 3) Grow();
    Slot s{static_cast<uint32_t>(h >> 32), static_cast<uint32_t>(arena_.size()), n, value};
    arena_.append(p, n);
    Place(slots_, s, h);
    count_++;
  }

  // Calls f(bytes, length, value) for every key, in slot order.
  template <typename F>
  void ForEach(F&& f) const {
    for (const Slot& s : slots_)
      if (s.value != kMissing) f(arena_.data() + s.off, s.len, s.value);
  }

  // Calls f(bytes, length, value) for every key whose bytes start at arena offset [from, to), in slot order. A key's
  // offset never changes (keys are appended to the arena, never moved within it or removed), so a reader can take a
  // table a range at a time while keys are added between the ranges (they start at ArenaBytes() or later).
  template <typename F>
  void ForEachIn(size_t from, size_t to, F&& f) const {
    for (const Slot& s : slots_)
      if (s.value != kMissing && s.off >= from && s.off < to) f(arena_.data() + s.off, s.len, s.value);
  }

  // Bytes of the keys added so far: the next key's arena offset.
  size_t ArenaBytes() const { return arena_.size(); }

  size_t Count() const { return count_; }

  size_t Bytes() const { return slots_.size() * sizeof(Slot) + arena_.capacity(); }

 private:
  struct Slot {  // 16 bytes: the big tables (client addresses) stay as small as they can in cache
    uint32_t hash = 0;
    uint32_t off = 0, len = 0;
    int32_t value = kMissing;
  };
  std::vector<Slot> slots_;
  uint32_t tag_;  // the seed of every key's hash (the field), to rehash from the arena when growing
  std::string arena_;
  size_t count_ = 0;

  // The slot index comes from the hash's low half, the stored check from its high half.
  static void Place(std::vector<Slot>& slots, const Slot& s, uint64_t h) {
    size_t mask = slots.size() - 1;
    size_t i = h & mask;
    while (slots[i].value != kMissing) i = (i + 1) & mask;
    slots[i] = s;
  }

  void Grow() {
    std::vector<Slot> next(slots_.size() * 2);
    for (const Slot& s : slots_)
      if (s.value != kMissing) Place(next, s, HashBytes(arena_.data() + s.off, s.len, tag_));
    slots_.swap(next);
  }
};

}  // namespace tidepool
