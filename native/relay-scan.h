// The relay's message-boundary scan and transaction accounting, free of sockets, clocks and statistics: the relay
// (relay-stream.cc) runs every read through these, and relayScan (relay.cc) runs the shared test vectors
// (test/fixtures/relay-vectors.ts) through the same functions that src/pooler/transaction-tracker.ts must pass.
//
// Frontend side: a sync point is a Query, a Sync outside COPY IN, or a FunctionCall, and each is answered by one
// ReadyForQuery; extended-protocol messages after the last Sync leave the server "unsynced"; a client that began
// COPY IN (the server sent CopyInResponse) ends it with CopyDone or CopyFail, and its Syncs meanwhile are not sync
// points. A server is between transactions when its ReadyForQuery says idle and the client has nothing in flight.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace tidepool {
namespace relay {

constexpr size_t kCarryMax = 8;

/** Reads the ASCII letters at buf[pos, end) lower-cased into word (at most cap - 1 of them, NUL-terminated) and
 *  returns the position after the last one read. */
inline size_t LowerWord(const uint8_t* buf, size_t pos, size_t end, char* word, size_t cap) {
  size_t n = 0;
  while (pos < end && n < cap - 1) {
    uint8_t ch = buf[pos];
    if (ch >= 'A' && ch <= 'Z') ch = static_cast<uint8_t>(ch - 'A' + 'a');
    if (ch < 'a' || ch > 'z') break;
    word[n++] = static_cast<char>(ch);
    pos++;
  }
  word[n] = 0;
  return pos;
}

// Frontend message types.
constexpr uint8_t kQuery = 'Q', kSync = 'S', kFunctionCall = 'F', kExecute = 'E', kParse = 'P', kBind = 'B',
                  kDescribe = 'D', kClose = 'C', kFlush = 'H', kCopyData = 'd', kCopyDone = 'c', kCopyFail = 'f',
                  kTerminate = 'X';
// Backend message types.
constexpr uint8_t kReadyForQuery = 'Z', kCopyInResponse = 'G', kErrorResponse = 'E';
constexpr uint8_t kIdle = 'I';

/** One direction's framing: bytes left of the current message, and a partial header held back until whole
 *  (never forwarded before it is: a header cut by a read stays here, not on the peer). */
struct Framing {
  bool server = false;
  uint32_t remaining = 0;
  uint8_t carry[kCarryMax];
  uint8_t carryLen = 0;
  uint32_t maxMessage = 0;

  bool atBoundary() const { return remaining == 0 && carryLen == 0; }
};

/** What a client has in flight; the same accounting as src/pooler/transaction-tracker.ts. */
struct TxCount {
  /** Sync points sent whose ReadyForQuery has not come back. */
  int syncs = 0;
  /** Extended-protocol messages (or a type PostgreSQL refuses) sent after the last Sync. */
  bool unsynced = false;
  /** The server answered CopyInResponse and the client has not ended the copy. */
  bool copyIn = false;
  /** Query and Execute messages sent. */
  double queryCount = 0;
};

/** Message types PostgreSQL takes from a frontend after login (postgres.c SocketBackend); any other ends the
 *  backend's connection with "invalid frontend message type", so a client's one must never reach a server. */
inline bool FrontendType(uint8_t t) {
  switch (t) {
    case 'B': case 'C': case 'D': case 'E': case 'F': case 'H': case 'P': case 'Q': case 'S': case 'X': case 'c': case 'd': case 'f':
      return true;
    default:
      return false;
  }
}

/** A client's message type no server takes, as *badLength reports it: -1 - type as an int32 (kBadLength). */
inline uint32_t BadTypeLength(uint8_t t) { return 0xFFFFFFFFu - t; }

/** Scans whole headers of buf[0, total) (which starts with the carried partial header, if any), calling
 *  onMessage(type, message, offset) for each; a partial header at the end is carried. Returns false on a bad
 *  length (*badLength, *cut at its header); true otherwise, with *cut where the handler stopped (it returned
 *  false) or at the start of the carried bytes. */
template <typename OnMessage>
bool Scan(Framing& f, const uint8_t* buf, size_t total, size_t* cut, uint32_t* badLength, OnMessage onMessage) {
  size_t pos = 0;
  while (pos < total) {
    if (f.remaining > 0) {
      size_t take = total - pos < f.remaining ? total - pos : f.remaining;
      pos += take;
      f.remaining -= static_cast<uint32_t>(take);
      continue;
    }
    size_t need = 5;
    if (f.server && buf[pos] == kReadyForQuery) need = 6;
    if (total - pos < need) break;
    uint32_t len = (uint32_t(buf[pos + 1]) << 24) | (uint32_t(buf[pos + 2]) << 16) | (uint32_t(buf[pos + 3]) << 8) | buf[pos + 4];
    if (len < 4 || len > f.maxMessage || (need == 6 && len < 5)) {
      *badLength = len;
      *cut = pos;
      return false;
    }
    if (!f.server && !FrontendType(buf[pos])) {
      *badLength = BadTypeLength(buf[pos]);
      *cut = pos;
      return false;
    }
    if (!onMessage(buf[pos], buf + pos, pos)) {
      *cut = pos;
      return true;
    }
    f.remaining = len + 1;
  }
  *cut = pos;
  size_t rest = total - pos;
  f.carryLen = static_cast<uint8_t>(rest);
  if (rest) std::memcpy(f.carry, buf + pos, rest);
  return true;
}

enum class ClientStep { kCounted, kFirstSyncPoint, kTerminate };

/** Counts one client message. kFirstSyncPoint: a sync point with none before it in flight (the caller starts
 *  timing); kTerminate: the client is leaving, nothing from here on goes to the server. */
inline ClientStep CountClientMessage(TxCount& tx, uint8_t type) {
  switch (type) {
    case kQuery:
      tx.queryCount++;
      return tx.syncs++ == 0 ? ClientStep::kFirstSyncPoint : ClientStep::kCounted;
    case kSync:
      tx.unsynced = false;
      if (tx.copyIn) return ClientStep::kCounted;
      return tx.syncs++ == 0 ? ClientStep::kFirstSyncPoint : ClientStep::kCounted;
    case kFunctionCall:
      return tx.syncs++ == 0 ? ClientStep::kFirstSyncPoint : ClientStep::kCounted;
    case kExecute:
      tx.queryCount++;
      tx.unsynced = true;
      return ClientStep::kCounted;
    case kParse:
    case kBind:
    case kDescribe:
    case kClose:
    case kFlush:
      tx.unsynced = true;
      return ClientStep::kCounted;
    case kCopyDone:
    case kCopyFail:
      tx.copyIn = false;
      return ClientStep::kCounted;
    case kTerminate:
      return ClientStep::kTerminate;
    case kCopyData:
      return ClientStep::kCounted;
    default:
      // A type PostgreSQL does not take after login (it answers FATAL and closes): the server's state is
      // unknown until a Sync is answered, so it must not go back to the pool.
      tx.unsynced = true;
      return ClientStep::kCounted;
  }
}

/** A ReadyForQuery with `status` answered one sync point: true when the transaction ended (the server is idle
 *  and the client has nothing in flight). */
inline bool CountReadyForQuery(TxCount& tx, uint8_t status) {
  if (tx.syncs > 0) tx.syncs--;
  return status == kIdle && tx.syncs == 0 && !tx.unsynced;
}

/** After a ReadyForQuery that ended a transaction: the server may serve another client only between whole
 *  client messages (one the client has begun must end on the server that got its first bytes). */
inline bool MayRelease(const Framing& client) { return client.remaining == 0; }

/** Whether a client message must go through the prepared-statement rewriter: Parse, Bind, Describe, Close, or a
 *  Query whose first word is PREPARE, EXECUTE, DEALLOCATE or DISCARD (when that word is not all in this read,
 *  it might be: yes). */
inline bool WantsRewrite(uint8_t type, const uint8_t* buf, size_t offset, uint32_t len, size_t total) {
  if (type == kParse || type == kBind || type == kDescribe || type == kClose) return true;
  if (type != kQuery) return false;
  const size_t bodyEnd = offset + 1 + len;
  const size_t end = bodyEnd < total ? bodyEnd : total;
  size_t pos = offset + 5;
  while (pos < end && (buf[pos] == ' ' || buf[pos] == '\t' || buf[pos] == '\n' || buf[pos] == '\r')) pos++;
  char word[12];
  pos = LowerWord(buf, pos, end, word, sizeof(word));
  if (pos == end && end < bodyEnd) return true;  // cut by the read
  return std::strcmp(word, "prepare") == 0 || std::strcmp(word, "execute") == 0 || std::strcmp(word, "deallocate") == 0 ||
         std::strcmp(word, "discard") == 0;
}

/** Session parameters: whether buf[pos, end) holds a statement start (at pos when `atStart`, else after a ';') whose
 *  first word is SET, RESET or DISCARD, or the name set_config anywhere. */
inline bool ParamWords(const uint8_t* buf, size_t pos, size_t end, bool atStart) {
  const size_t from = pos;
  if (!atStart) {
    const void* semi = std::memchr(buf + pos, ';', end - pos);
    pos = semi ? static_cast<size_t>(static_cast<const uint8_t*>(semi) - buf) + 1 : end;
  }
  while (pos < end) {
    while (pos < end && (buf[pos] == ' ' || buf[pos] == '\t' || buf[pos] == '\n' || buf[pos] == '\r' || buf[pos] == '(')) pos++;
    char word[8];
    pos = LowerWord(buf, pos, end, word, sizeof(word));
    const bool wordEnds = pos == end || !((buf[pos] | 0x20) >= 'a' && (buf[pos] | 0x20) <= 'z');
    if (wordEnds && (std::strcmp(word, "set") == 0 || std::strcmp(word, "reset") == 0 || std::strcmp(word, "discard") == 0)) return true;
    const void* semi = std::memchr(buf + pos, ';', end - pos);
    if (!semi) break;
    pos = static_cast<size_t>(static_cast<const uint8_t*>(semi) - buf) + 1;
  }
  for (size_t u = from; u + 7 <= end;) {
    const void* us = std::memchr(buf + u, '_', end - u);
    if (!us) break;
    u = static_cast<size_t>(static_cast<const uint8_t*>(us) - buf);
    if (u + 7 <= end && u >= from + 3) {
      static const char kSet[] = "set", kConfig[] = "config";
      bool match = true;
      for (int k = 0; k < 3 && match; k++) match = (buf[u - 3 + k] | 0x20) == kSet[k];
      for (int k = 0; k < 6 && match; k++) match = (buf[u + 1 + k] | 0x20) == kConfig[k];
      if (match) return true;
    }
    u++;
  }
  return false;
}

/** Session parameters (src/pooler/session-state/): whether the text of a Query or Parse may change one (ParamWords;
 *  a false hit costs a read-back, never a wrong answer). 0: no (for a message cut by the read, not in what is here:
 *  *tailLeft gets how many of its bytes are still to come, for ParamWords on them as they come); 1: yes and
 *  buf[textAt, textAt + textLen) holds the whole query text (no NUL); 2: yes, but the message is cut by the read. */
inline int ParamStatement(uint8_t type, const uint8_t* buf, size_t offset, uint32_t len, size_t total, size_t* textAt, size_t* textLen, size_t* tailLeft) {
  if (type != kQuery && type != kParse) return 0;
  const size_t bodyEnd = offset + 1 + len;
  const bool whole = bodyEnd <= total;
  const size_t end = whole ? bodyEnd : total;
  size_t pos = offset + 5;
  if (type == kParse) {
    const void* nul = std::memchr(buf + pos, 0, end > pos ? end - pos : 0);
    if (!nul) {
      // The statement name is not all here: its text will be (a name never holds ';', so ParamWords skips to one).
      if (!whole) *tailLeft = bodyEnd - total;
      return 0;
    }
    pos = static_cast<size_t>(static_cast<const uint8_t*>(nul) - buf) + 1;
  }
  const size_t start = pos;
  const void* textNul = pos < end ? std::memchr(buf + pos, 0, end - pos) : nullptr;
  const size_t textEnd = textNul ? static_cast<size_t>(static_cast<const uint8_t*>(textNul) - buf) : end;
  const bool found = ParamWords(buf, start, textEnd, true);
  if (!whole) {
    if (found) return 2;
    if (!textNul) *tailLeft = bodyEnd - total;
    return 0;
  }
  if (!found || !textNul) return 0;
  *textAt = start;
  *textLen = textEnd - start;
  return 1;
}

/** A CommandComplete whose tag says the server dropped every prepared statement. */
inline bool DropsAllStatements(const uint8_t* m, uint32_t len, size_t available) {
  if (available < 1 + static_cast<size_t>(len)) return false;
  const char* tag = reinterpret_cast<const char*>(m + 5);
  return (len == 16 && std::memcmp(tag, "DISCARD ALL", 12) == 0) || (len == 19 && std::memcmp(tag, "DEALLOCATE ALL", 15) == 0);
}

/** A CommandComplete whose tag says the schema may have changed: a Parse of a cached text may now infer other types. */
inline bool ChangesSchema(const uint8_t* m, uint32_t len, size_t available) {
  if (available < 1 + static_cast<size_t>(len) || len < 7) return false;
  const char* tag = reinterpret_cast<const char*>(m + 5);
  const size_t n = len - 5;  // the tag without its NUL
  auto starts = [&](const char* word, size_t wlen) { return n >= wlen && std::memcmp(tag, word, wlen) == 0; };
  return starts("CREATE ", 7) || starts("ALTER ", 6) || starts("DROP ", 5) || (n == 2 && std::memcmp(tag, "DO", 2) == 0) ||
         starts("IMPORT FOREIGN SCHEMA", 21);
}

/** Whether the ErrorResponse at m (header included, `len` its length field, `available` bytes of it here) ends the
 *  session: severity FATAL or PANIC, after which PostgreSQL closes the connection. Reads V, which lc_messages does not
 *  translate, else S; as src/protocol/reader.ts endsSession. An error whose severity is not all in this read counts as
 *  one: the answer matters only when the server closes right after it, which it does after FATAL alone. */
inline bool EndsSession(const uint8_t* m, uint32_t len, size_t available) {
  const size_t whole = 1 + static_cast<size_t>(len);
  const size_t end = available < whole ? available : whole;
  const uint8_t* severity = nullptr;
  size_t severityLen = 0;
  bool v = false;
  for (size_t pos = 5; pos < end && m[pos] != 0 && !v;) {
    const void* nul = pos + 1 < end ? std::memchr(m + pos + 1, 0, end - pos - 1) : nullptr;
    if (!nul) break;
    const size_t nulAt = static_cast<size_t>(static_cast<const uint8_t*>(nul) - m);
    if (m[pos] == 'V' || m[pos] == 'S') {
      v = m[pos] == 'V';
      severity = m + pos + 1;
      severityLen = nulAt - pos - 1;
    }
    pos = nulAt + 1;
  }
  if (!v && end < whole) return true;
  return severityLen == 5 && (std::memcmp(severity, "FATAL", 5) == 0 || std::memcmp(severity, "PANIC", 5) == 0);
}

/** The SQLSTATE (field C) of the ErrorResponse at m (header included, `len` its length field, `available` bytes of
 *  it here) as src/pooler/stats.ts encodeSqlState: base 36 plus 1; 0 when it is not in this read or not five of 0-9, A-Z. */
inline double SqlStateCode(const uint8_t* m, uint32_t len, size_t available) {
  const size_t whole = 1 + static_cast<size_t>(len);
  const size_t end = available < whole ? available : whole;
  for (size_t pos = 5; pos < end && m[pos] != 0;) {
    const void* nul = pos + 1 < end ? std::memchr(m + pos + 1, 0, end - pos - 1) : nullptr;
    if (!nul) return 0;
    const size_t nulAt = static_cast<size_t>(static_cast<const uint8_t*>(nul) - m);
    if (m[pos] == 'C') {
      if (nulAt - pos - 1 != 5) return 0;
      double n = 0;
      for (size_t i = pos + 1; i < nulAt; i++) {
        const uint8_t ch = m[i];
        int d;
        if (ch >= '0' && ch <= '9') d = ch - '0';
        else if (ch >= 'A' && ch <= 'Z') d = ch - 'A' + 10;
        else return 0;
        n = n * 36 + d;
      }
      return n + 1;
    }
    pos = nulAt + 1;
  }
  return 0;
}

/** Counts one error under `code` in the (code, count) slots at stats[off] (src/pooler/stats.ts countSqlState, its
 *  twin): the slot holding it, else the first empty one; the count after the slots when none is free or code is 0. */
inline void CountSqlState(double* stats, int off, int slots, double code) {
  if (!stats || off < 0) return;
  if (code > 0) {
    for (int i = 0; i < slots; i++) {
      double* slot = stats + off + 2 * i;
      if (slot[0] == code) {
        slot[1] += 1;
        return;
      }
      if (slot[0] == 0) {
        slot[0] = code;
        slot[1] = 1;
        return;
      }
    }
  }
  stats[off + 2 * slots] += 1;
}

struct ChunkResult {
  bool ok = true;           // false: a bad length at `cut`
  bool terminate = false;   // a Terminate at `cut`
  size_t cut = 0;           // bytes of the buffer to pass on
  uint32_t badLength = 0;
};

/** One read of client bytes, buf = the carried partial header + what was read. onFirstSyncPoint() runs when a
 *  sync point starts the clock; onHeader(type, offset, length) for each message header (may be empty). */
template <typename OnFirstSyncPoint, typename OnHeader>
ChunkResult ScanClientChunk(Framing& f, TxCount& tx, const uint8_t* buf, size_t total, OnFirstSyncPoint onFirstSyncPoint, OnHeader onHeader) {
  ChunkResult r;
  const bool midMessage = f.remaining > 0;
  f.carryLen = 0;
  r.ok = Scan(f, buf, total, &r.cut, &r.badLength, [&](uint8_t type, const uint8_t* m, size_t offset) {
    onHeader(type, offset, (uint32_t(m[1]) << 24) | (uint32_t(m[2]) << 16) | (uint32_t(m[3]) << 8) | m[4]);
    ClientStep step = CountClientMessage(tx, type);
    if (step == ClientStep::kTerminate) {
      r.terminate = true;
      return false;
    }
    if (step == ClientStep::kFirstSyncPoint) onFirstSyncPoint();
    return true;
  });
  if (!r.ok) {
    // Nothing of this read is passed on. When it began with the rest of a message the server already has the
    // start of, that server is not reusable.
    if (midMessage) tx.unsynced = true;
    f.carryLen = 0;
  }
  return r;
}

/** One read of server bytes, buf = the carried partial header + what was read. `tx` is the linked client's
 *  accounting, or null when no client is listening (unlinked, or parked between transactions).
 *  onReady(status, ended) for each ReadyForQuery (ended: CountReadyForQuery, false without a client),
 *  onError() for each ErrorResponse, onHeader(type, offset, length) for each message header. */
template <typename OnReady, typename OnError, typename OnHeader>
ChunkResult ScanServerChunk(Framing& f, uint8_t& txStatus, TxCount* tx, const uint8_t* buf, size_t total, OnReady onReady, OnError onError, OnHeader onHeader) {
  ChunkResult r;
  f.carryLen = 0;
  r.ok = Scan(f, buf, total, &r.cut, &r.badLength, [&](uint8_t type, const uint8_t* m, size_t offset) {
    onHeader(type, offset, (uint32_t(m[1]) << 24) | (uint32_t(m[2]) << 16) | (uint32_t(m[3]) << 8) | m[4]);
    if (type == kReadyForQuery) {
      txStatus = m[5];
      onReady(txStatus, tx ? CountReadyForQuery(*tx, txStatus) : false);
    } else if (type == kCopyInResponse) {
      if (tx) tx->copyIn = true;
    } else if (type == kErrorResponse) {
      onError();
    }
    return true;
  });
  return r;
}

}  // namespace relay
}  // namespace tidepool
