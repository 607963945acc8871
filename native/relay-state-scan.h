// Twin of src/pooler/session-state/state-scan.ts: finds, in a client's Query and Parse texts, the words of session
// state that cannot move to another server (LISTEN, session advisory locks, temporary tables, WITH HOLD cursors,
// SQL PREPARE, LOAD). Its own framing, so it follows every byte a client sends whatever reads cut it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace tidepool {
namespace relay {

enum StateKind : uint32_t {
  kStateListen = 1,
  kStateAdvisoryLock = 2,
  kStateTempTable = 4,
  kStateHoldCursor = 8,
  kStateSqlPrepare = 16,
  kStateLoad = 32,
};

constexpr uint32_t kStateDiscardAll = kStateListen | kStateAdvisoryLock | kStateTempTable | kStateHoldCursor | kStateSqlPrepare;

/** See state-scan.ts: `flags` gets the kinds named, `cleared` those a clean-up statement drops (UNLISTEN *, DISCARD
 *  ALL|TEMP, CLOSE ALL, DEALLOCATE ALL opening a statement; pg_advisory_unlock_all anywhere). */
struct StateScan {
  static constexpr size_t kMaxWord = 32;
  enum Pending : uint8_t { kNone = 0, kUnlisten = 1, kDiscard = 2, kClose = 3, kDeallocate = 4 };
  uint32_t flags = 0;
  uint32_t cleared = 0;
  uint8_t header[5];
  uint8_t headerLen = 0;
  uint32_t left = 0;
  bool text = false;
  char word[kMaxWord];
  size_t wordLen = 0;
  bool atStatement = true;
  bool wordOpens = false;
  Pending pending = kNone;

  static bool WordByte(uint8_t c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '$' || c >= 0x80; }
  static bool Space(uint8_t c) { return c == ' ' || (c >= 0x09 && c <= 0x0d); }

  /** The kinds named and cleared since the last take: flags | cleared << 8. */
  uint32_t Take() {
    uint32_t both = flags | (cleared << 8);
    flags = 0;
    cleared = 0;
    return both;
  }

  void EndWord() {
    size_t n = wordLen;
    wordLen = 0;
    Pending p = pending;
    pending = kNone;
    if (p != kNone && n == 3 && word[0] == 'a' && word[1] == 'l' && word[2] == 'l') {
      if (p == kDiscard) cleared |= kStateDiscardAll;
      else if (p == kClose) cleared |= kStateHoldCursor;
      else if (p == kDeallocate) cleared |= kStateSqlPrepare;
      return;
    }
    if (n < 4 || n > 27) return;
    char f = word[0];
    if (f != 'l' && f != 'p' && f != 't' && f != 'h' && f != 'u' && f != 'd' && f != 'c') return;
    auto is = [&](const char* w) { return std::strlen(w) == n && std::memcmp(word, w, n) == 0; };
    if (p == kDiscard && (is("temp") || is("temporary"))) {
      cleared |= kStateTempTable;
      return;
    }
    if (wordOpens) {
      Pending opener = is("unlisten") ? kUnlisten : is("discard") ? kDiscard : is("close") ? kClose : is("deallocate") ? kDeallocate : kNone;
      if (opener != kNone) {
        pending = opener;
        return;
      }
    }
    if (is("pg_advisory_unlock_all")) cleared |= kStateAdvisoryLock;
    else if (is("listen")) flags |= kStateListen;
    else if (is("pg_advisory_lock") || is("pg_advisory_lock_shared") || is("pg_try_advisory_lock") || is("pg_try_advisory_lock_shared")) flags |= kStateAdvisoryLock;
    else if (is("temp") || is("temporary") || is("pg_temp")) flags |= kStateTempTable;
    else if (is("hold")) flags |= kStateHoldCursor;
    else if (is("prepare")) flags |= kStateSqlPrepare;
    else if (is("load")) flags |= kStateLoad;
  }

  void ScanText(const uint8_t* buf, size_t from, size_t to) {
    size_t n = wordLen;
    for (size_t i = from; i < to; i++) {
      uint8_t c = buf[i];
      if (c >= 'A' && c <= 'Z') c |= 0x20;
      if (WordByte(c)) {
        if (n == 0) {
          wordOpens = atStatement;
          atStatement = false;
        }
        if (n < kMaxWord) word[n] = static_cast<char>(c);
        if (n <= kMaxWord) n++;
        continue;
      }
      if (n > 0) {
        wordLen = n;
        EndWord();
        n = 0;
      }
      if (Space(c)) continue;
      if (pending == kUnlisten && c == '*') cleared |= kStateListen;
      pending = kNone;
      atStatement = c == ';' || c == 0;
    }
    wordLen = n;
  }

  void Feed(const uint8_t* buf, size_t len) {
    size_t pos = 0;
    while (pos < len) {
      if (left > 0) {
        size_t take = len - pos < left ? len - pos : left;
        if (text) ScanText(buf, pos, pos + take);
        pos += take;
        left -= static_cast<uint32_t>(take);
        if (left == 0 && text) {
          if (wordLen > 0) EndWord();
          pending = kNone;
        }
        continue;
      }
      header[headerLen++] = buf[pos++];
      if (headerLen < 5) continue;
      headerLen = 0;
      uint32_t l = (uint32_t(header[1]) << 24) | (uint32_t(header[2]) << 16) | (uint32_t(header[3]) << 8) | header[4];
      left = l > 4 ? l - 4 : 0;
      text = left > 0 && (header[0] == 'Q' || header[0] == 'P');
      wordLen = 0;
      atStatement = true;
      pending = kNone;
    }
  }
};

}  // namespace relay
}  // namespace tidepool
