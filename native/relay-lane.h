// The prepared-statement rewriter's native lane: cache hits rewritten by the relay itself, no JavaScript per
// transaction. JavaScript (src/pooler/prepared/) stays the authority: at each link it hands the relay a table of
// the client's statement names that the linked server has prepared and confirmed (a Bind of such a name becomes a
// Bind of the pooler's name; an unnamed Parse of the exact text the client's unnamed statement already has is
// answered with the pooler's own ParseComplete). A client read made only of such messages, in whole groups ending
// with Sync, is rewritten here; the replies to those groups get the pooler's ParseCompletes in PostgreSQL's order.
// Anything else (another message type, an ErrorResponse or an unexpected reply to a fast group) ends the lane:
// the fast groups still unanswered go to JavaScript as "already sent" (it rebuilds its reply queue from them,
// marks how many replies were delivered, and takes over with the server's bytes from that reply on), so errors,
// renames and the 0A000 retry stay in one place. The rewrite below is exactly what rewriter.ts sends for a hit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace tidepool {
namespace relay {

/** What each fast message is owed, mirroring the reply slots rewriter.ts makes for the same message. */
enum LaneSlot : uint8_t { kSlotOwnParse = 1, kSlotBound = 2, kSlotDescribed = 3, kSlotExecuted = 4, kSlotReady = 5 };

struct LaneEntry {
  std::string client;  // the client's statement name ('' is the unnamed one)
  std::string server;  // the pooler's name for it, prepared on the linked server
  std::string parse;   // unnamed only: the Parse body after its name (query NUL types) that re-parses the same text
  double uses = 0;     // Binds of it in answered fast groups (JavaScript counts them into its statistics)
  double executions = 0, execUs = 0;  // Executes of portals bound to it, and their time from sending to the answer
};

struct LaneGroup {
  std::string original;  // the client's bytes, for JavaScript should the lane end before the group is answered
  std::vector<uint8_t> slots;
  size_t done = 0;       // slots answered (the pooler's own replies included)
  double parseHits = 0;
  std::vector<uint16_t> binds;  // entry of each Bind
  std::vector<uint16_t> execs;  // entry of each Execute (its portal was bound in the group)
  size_t execsDone = 0;
  double sentAt = 0;            // NowUs() when the group went to the server
  std::vector<double> execTimes;  // per answered Execute, in order (added to the entries when the group is answered)
};

/** Fast groups in flight, oldest first: a vector, as there are few at a time. Not a std::deque, whose empty instance
 *  holds some 600 bytes of heap in libstdc++ (its map and a first block): every endpoint has a Lane, and with ten
 *  thousand idle clients that alone was most of the relay's memory per client. */
struct LaneGroups : std::vector<LaneGroup> {
  void pop_front() { erase(begin()); }
};

struct Lane {
  bool on = false;  // a table for the linked server: fast reads are rewritten
  std::vector<LaneEntry> entries;
  LaneGroups groups;  // fast groups sent and not answered yet, oldest first
  double parseHits = 0;          // of answered fast groups
  bool held = false;             // client bytes for JavaScript wait until `groups` are answered
  uint64_t schemaGen = 0;        // Relay::schemaGen_ when the table was given: a schema change since voids its Parse body
};

inline uint32_t ReadU32(const uint8_t* p) {
  return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | p[3];
}

inline void AppendU32(std::string& out, uint32_t v) {
  const char b[4] = {char(v >> 24), char(v >> 16), char(v >> 8), char(v)};
  out.append(b, 4);
}

/** JavaScript's table: u16 count; per entry u8 flags (1: a Parse body follows), client name NUL, server name NUL,
 *  and with flag 1 a u32 length and the body. False when malformed. */
inline bool LaneParseTable(const uint8_t* p, size_t n, std::vector<LaneEntry>* out) {
  out->clear();
  if (n < 2) return false;
  size_t count = (size_t(p[0]) << 8) | p[1];
  size_t pos = 2;
  for (size_t i = 0; i < count; i++) {
    if (pos >= n) return false;
    const uint8_t flags = p[pos++];
    LaneEntry e;
    for (std::string* s : {&e.client, &e.server}) {
      const void* nul = std::memchr(p + pos, 0, n - pos);
      if (!nul) return false;
      const size_t len = static_cast<const uint8_t*>(nul) - (p + pos);
      s->assign(reinterpret_cast<const char*>(p + pos), len);
      pos += len + 1;
    }
    if (flags & 1) {
      if (n - pos < 4) return false;
      const uint32_t len = ReadU32(p + pos);
      pos += 4;
      if (n - pos < len) return false;
      e.parse.assign(reinterpret_cast<const char*>(p + pos), len);
      pos += len;
    }
    out->push_back(std::move(e));
  }
  return pos == n;
}

inline int LaneFind(const std::vector<LaneEntry>& entries, const uint8_t* name, size_t len) {
  for (size_t i = 0; i < entries.size(); i++) {
    const std::string& c = entries[i].client;
    if (c.size() == len && std::memcmp(c.data(), name, len) == 0) return static_cast<int>(i);
  }
  return -1;
}

/** Rewrites buf[0, len) when it is made only of whole fast messages (Parse of the unnamed statement's own text,
 *  Bind of a name in the table, Describe of a portal, Execute, Flush) in groups that each end with Sync: appends
 *  what goes to the server to *out and the groups to *groups. False, with both as they were, otherwise. A Parse is
 *  answered by the pooler only where the transaction is known not to have failed (rewriter.ts, onParse): in the
 *  read's first group, with nothing in flight (`groups` empty) and a last ReadyForQuery other than 'E'. */
inline bool LaneRewrite(const std::vector<LaneEntry>& entries, const uint8_t* buf, size_t len, std::string* out, LaneGroups* groups, uint8_t txStatus) {
  const bool parseOk = groups->empty() && txStatus != 'E';
  // Written straight into *out and *groups, both cut back to where they were when the read does not qualify.
  const size_t outStart = out->size();
  const size_t groupsStart = groups->size();
  std::string& o = *out;
  LaneGroup* g = nullptr;  // the group being read, last in *groups
  // Portals bound in the group so far (the statement's entry): an Execute is timed into the statement, as rewriter.ts does.
  std::vector<std::pair<std::string, uint16_t>> portals;
  size_t pos = 0, groupStart = 0;
  const auto refuse = [&]() {
    out->resize(outStart);
    groups->resize(groupsStart);
    return false;
  };
  while (pos < len) {
    if (len - pos < 5) return refuse();
    const uint8_t type = buf[pos];
    const uint32_t mlen = ReadU32(buf + pos + 1);
    const size_t end = pos + 1 + static_cast<size_t>(mlen);
    if (mlen < 4 || end > len) return refuse();
    const uint8_t* body = buf + pos + 5;
    const size_t blen = mlen - 4;
    if (!g) {
      groups->emplace_back();
      g = &groups->back();
      g->slots.reserve(8);  // Parse, Bind, Describe, Execute, Sync: one allocation, not four
    }
    switch (type) {
      case 'P': {
        // Only the unnamed statement, re-parsed with the text (and types) it already has.
        if (!parseOk || groupStart != 0 || blen < 1 || body[0] != 0) return refuse();
        const int i = LaneFind(entries, body, 0);
        if (i < 0 || entries[i].parse.size() != blen - 1 || std::memcmp(entries[i].parse.data(), body + 1, blen - 1) != 0) return refuse();
        g->slots.push_back(kSlotOwnParse);
        g->parseHits++;
        break;
      }
      case 'B': {
        const uint8_t* portalEnd = static_cast<const uint8_t*>(std::memchr(body, 0, blen));
        if (!portalEnd) return refuse();
        const uint8_t* stmt = portalEnd + 1;
        const uint8_t* stmtEnd = static_cast<const uint8_t*>(std::memchr(stmt, 0, body + blen - stmt));
        if (!stmtEnd) return refuse();
        const int i = LaneFind(entries, stmt, stmtEnd - stmt);
        if (i < 0) return refuse();
        const std::string& name = entries[i].server;
        const size_t portalLen = portalEnd - body + 1;
        const size_t restLen = body + blen - (stmtEnd + 1);
        o.push_back('B');
        AppendU32(o, static_cast<uint32_t>(4 + portalLen + name.size() + 1 + restLen));
        o.append(reinterpret_cast<const char*>(body), portalLen);
        o.append(name);
        o.push_back('\0');
        o.append(reinterpret_cast<const char*>(stmtEnd + 1), restLen);
        g->slots.push_back(kSlotBound);
        g->binds.push_back(static_cast<uint16_t>(i));
        portals.emplace_back(std::string(reinterpret_cast<const char*>(body), portalLen - 1), static_cast<uint16_t>(i));
        break;
      }
      case 'D':
        if (blen < 2 || body[0] != 'P') return refuse();
        o.append(reinterpret_cast<const char*>(buf + pos), end - pos);
        g->slots.push_back(kSlotDescribed);
        break;
      case 'E': {
        // Only a portal this group bound: anything else is the rewriter's to time (or PostgreSQL's to refuse).
        const uint8_t* nameEnd = static_cast<const uint8_t*>(std::memchr(body, 0, blen));
        if (!nameEnd) return refuse();
        const size_t nameLen = nameEnd - body;
        int found = -1;
        for (size_t k = portals.size(); k-- > 0;) {
          if (portals[k].first.size() == nameLen && std::memcmp(portals[k].first.data(), body, nameLen) == 0) {
            found = portals[k].second;
            break;
          }
        }
        if (found < 0) return refuse();
        o.append(reinterpret_cast<const char*>(buf + pos), end - pos);
        g->slots.push_back(kSlotExecuted);
        g->execs.push_back(static_cast<uint16_t>(found));
        break;
      }
      case 'H':
        o.append(reinterpret_cast<const char*>(buf + pos), end - pos);
        break;
      case 'S':
        o.append(reinterpret_cast<const char*>(buf + pos), end - pos);
        g->slots.push_back(kSlotReady);
        g->original.assign(reinterpret_cast<const char*>(buf + groupStart), end - groupStart);
        g = nullptr;
        portals.clear();
        groupStart = end;
        break;
      default:
        return refuse();
    }
    pos = end;
  }
  if (groupStart != len || groups->size() == groupsStart) return refuse();
  return true;
}

/** Whether a server message of `type` completes `slot`. */
inline bool LaneEnds(uint8_t slot, uint8_t type) {
  switch (slot) {
    case kSlotBound: return type == '2';
    case kSlotDescribed: return type == 'T' || type == 'n';
    case kSlotExecuted: return type == 'C' || type == 'I' || type == 's';
    case kSlotReady: return type == 'Z';
    default: return false;
  }
}

/** Server messages that pass inside a fast group without completing anything. */
inline bool LanePasses(uint8_t type) { return type == 'D' || type == 'N' || type == 'S' || type == 'A'; }

}  // namespace relay
}  // namespace tidepool
