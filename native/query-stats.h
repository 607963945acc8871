// Twin of src/pooler/query-stats/table.ts: the bounded per-pooler table of simple-protocol query fingerprints
// (query-fingerprint.h) with their counts and times, and the per-client ring that matches each sync point to its
// ReadyForQuery.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "query-fingerprint.h"

namespace tidepool {
namespace relay {

constexpr uint32_t kNoEntry = 0xffffffffu;

/** A client's sync points in flight, oldest first: the table entry of each Query (kNoEntry for a Sync, a FunctionCall,
 *  or a Query not recorded). Past kSlots, sync points are only counted (never recorded). */
struct QueryRing {
  static constexpr uint8_t kSlots = 8;
  uint32_t slot[kSlots];
  uint32_t gen[kSlots];
  uint8_t head = 0, len = 0;
  bool lastInRing = false;
  uint32_t overflow = 0;

  void Push() {
    lastInRing = overflow == 0 && len < kSlots;
    if (!lastInRing) {
      overflow++;
      return;
    }
    const uint8_t i = static_cast<uint8_t>((head + len) % kSlots);
    slot[i] = kNoEntry;
    gen[i] = 0;
    len++;
  }
  /** The entry of the sync point pushed last (a Query whose text just ended). */
  void SetLast(uint32_t s, uint32_t g) {
    if (!lastInRing || len == 0) return;
    const uint8_t i = static_cast<uint8_t>((head + len - 1) % kSlots);
    slot[i] = s;
    gen[i] = g;
  }
  bool Pop(uint32_t* s, uint32_t* g) {
    if (len > 0) {
      *s = slot[head];
      *g = gen[head];
      head = static_cast<uint8_t>((head + 1) % kSlots);
      len--;
      return true;
    }
    if (overflow > 0) overflow--;
    return false;
  }
  bool Empty() const { return len == 0 && overflow == 0; }
  void Clear() {
    head = len = 0;
    overflow = 0;
    lastInRing = false;
  }
};

/** At most `cap` fingerprints (per pool) with their completed queries and total time. A new fingerprint in a full
 *  table replaces the entry with the lowest count (the first such); `gen` tells a ring's reference to a replaced one. */
class QueryStatsTable {
 public:
  struct Entry {
    uint64_t hash = 0;
    int32_t pool = 0;
    uint32_t gen = 0;
    double count = 0, timeUs = 0;
    std::string text;
  };

  bool on() const { return cap_ > 0; }
  size_t cap() const { return cap_; }
  const std::vector<Entry>& entries() const { return entries_; }

  /** A new size empties the table (0: recording off). */
  void Resize(size_t n) {
    if (n == cap_) return;
    cap_ = n;
    entries_.clear();
    entries_.shrink_to_fit();
    index_.clear();
    if (n > 0) {
      entries_.reserve(n);
      index_.reserve(n);
    }
    gen_++;
  }

  /** The entry of a finished fingerprint, added (or replacing the least counted) when new. */
  bool Find(const QueryFingerprint& q, int32_t pool, uint32_t* slot, uint32_t* gen) {
    if (cap_ == 0) return false;
    const uint64_t key = Key(q.hash, pool);
    auto it = index_.find(key);
    if (it != index_.end()) {
      const Entry& e = entries_[it->second];
      if (e.hash != q.hash || e.pool != pool) return false;  // two keys folded into one: not recorded
      *slot = it->second;
      *gen = e.gen;
      return true;
    }
    uint32_t s;
    if (entries_.size() < cap_) {
      s = static_cast<uint32_t>(entries_.size());
      entries_.emplace_back();
    } else {
      s = 0;
      for (uint32_t i = 1; i < entries_.size(); i++) {
        if (entries_[i].count < entries_[s].count) s = i;
      }
      index_.erase(Key(entries_[s].hash, entries_[s].pool));
    }
    Entry& e = entries_[s];
    e.hash = q.hash;
    e.pool = pool;
    e.gen = ++gen_;
    e.count = 0;
    e.timeUs = 0;
    e.text.assign(q.text);
    index_[key] = s;
    *slot = s;
    *gen = e.gen;
    return true;
  }

  void Observe(uint32_t slot, uint32_t gen, double us) {
    if (slot >= entries_.size() || entries_[slot].gen != gen) return;
    entries_[slot].count += 1;
    entries_[slot].timeUs += us;
  }

 private:
  static uint64_t Key(uint64_t hash, int32_t pool) { return hash ^ (static_cast<uint64_t>(static_cast<uint32_t>(pool)) * 0x9e3779b97f4a7c15ULL); }
  size_t cap_ = 0;
  uint32_t gen_ = 0;
  std::vector<Entry> entries_;
  std::unordered_map<uint64_t, uint32_t> index_;
};

}  // namespace relay
}  // namespace tidepool
