// The relay's read side: one recv into the shared buffer, the scan and accounting of relay-scan.h with the
// clock and the pool statistics around it, and forwarding to the linked peer.
#include "relay-engine.h"

#include <errno.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cstring>

namespace tidepool {
namespace relay {

ssize_t Relay::Receive(Endpoint* ep, uint8_t* into, size_t size) {
  ssize_t n;
  do n = recv(ep->fd, into, size, 0);
  while (n < 0 && errno == EINTR);
  if (n < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
    Lost(ep, 1);
    return -1;
  }
  if (n == 0) {
    Lost(ep, 0);
    return -1;
  }
  return n;
}

void Relay::OnReadable(Endpoint* ep) {
  uint8_t* buf = readBuf_.data();
  size_t carry = ep->carryLen;
  if (carry) std::memcpy(buf, ep->carry, carry);
  ssize_t n = Receive(ep, buf + carry, kReadSize);
  if (n <= 0 || ep->closing) return;  // nothing yet, lost, or discarding until EOF
  size_t total = carry + static_cast<size_t>(n);
  if (ep->login) {
    LoginBytes(ep, buf, total);
    return;
  }
  if (ep->server) OnServerBytes(ep, buf, total);
  else OnClientBytes(ep, buf, total);
}

void Relay::OnClientBytes(Endpoint* c, const uint8_t* buf, size_t total) {
  // The carried partial header (buf's first carryLen bytes) was fed with the read it came in.
  if (c->pinMask != 0) c->Scans().stateScan.Feed(buf + c->carryLen, total - c->carryLen);
  if (c->paramTailLeft > 0) {
    // The rest of a Query or Parse cut by the last read (no carried header: it is mid-message).
    const size_t n = c->paramTailLeft < total ? c->paramTailLeft : total;
    c->paramTailLeft -= n;
    if (ParamWords(buf, 0, n, false)) {
      c->paramTailLeft = 0;
      NoteParams(c, 2, nullptr, 0);
    }
  }
  if (c->queryTailLeft > 0) {
    // The rest of a Query cut by the last read.
    const size_t n = c->queryTailLeft < total ? c->queryTailLeft : total;
    c->Scans().queryPrint.Feed(buf, n);
    c->queryTailLeft -= static_cast<uint32_t>(n);
    if (c->queryTailLeft == 0) QueryTextEnd(c);
  }
  double now = 0;
  const bool startMid = c->remaining > 0;
  size_t divertAt = SIZE_MAX;
  int syncsBefore = 0;
  ChunkResult r = ScanClientChunk(
      *c, *c, buf, total,
      [&] {
        if (now == 0) now = NowUs();
        c->syncStart = now;
        if (!c->xactOpen) {
          c->xactOpen = true;
          c->xactStart = now;
        }
      },
      [&](uint8_t type, size_t offset, uint32_t len) {
        size_t textAt = 0, textLen = 0;
        if (const int k = ParamStatement(type, buf, offset, len, total, &textAt, &textLen, &c->paramTailLeft)) NoteParams(c, k, buf + textAt, textLen);
        if (c->queryPool != 0 && queryStats_.on() && (type == kQuery || type == kSync || type == kFunctionCall)) NoteSyncPoint(c, type, buf, offset, len, total);
        if (c->divert && !c->intercept && divertAt == SIZE_MAX && WantsRewrite(type, buf, offset, len, total)) {
          divertAt = offset;
          syncsBefore = c->syncs;
        }
      });
  if (!r.ok) {
    // A bad length: nothing of this read is passed on; JavaScript answers 08P01 and closes.
    c->stopped = true;
    UpdatePoll(c);
    Emit(kBadLength, c->id, static_cast<int32_t>(r.badLength));
    return;
  }
  const size_t cut = r.cut;
  c->bytesReceived += cut;
  if (c->app) c->app[kRecv] += cut;
  // Bytes before the first message the rewriter must see are forwarded here; from it on, JavaScript gets them.
  const size_t direct = c->intercept ? 0 : (divertAt < cut ? divertAt : cut);
  if (direct > 0) {
    if (c->stats) c->stats[kRecv] += direct;
    if (c->peer) {
      c->parked = false;
      c->peer->bytesSent += direct;
      if (!Write(c->peer, buf, direct)) return;
    } else {
      c->pendingIn.append(reinterpret_cast<const char*>(buf), direct);
      if (!c->needServerSent) {
        c->needServerSent = true;
        Emit(kNeedServer, c->id);
      }
      if (c->pendingIn.size() > kHighWater) UpdatePoll(c);
    }
  }
  if (direct < cut) {
    const bool first = !c->intercept;
    c->intercept = true;
    if (c->stats) c->stats[kRecv] += cut - direct;
    if (!first && !r.terminate) {
      // The native lane: a linked client's read of cache hits only is rewritten here; while the rewriter waits
      // idle, bytes read without a server wait for the table the link brings.
      if (c->peer && c->lane.on && !c->switchPending && !startMid && c->atBoundary() && LaneSend(c, buf, cut)) return;
      if (!c->peer && c->laneIdle) {
        c->pendingIn.append(reinterpret_cast<const char*>(buf), cut);
        if (!c->needServerSent) {
          c->needServerSent = true;
          Emit(kNeedServer, c->id);
        }
        if (c->pendingIn.size() > kHighWater) UpdatePoll(c);
        return;
      }
    }
    c->parked = false;
    if (first) {
      if (!c->peer) c->pendingRaw = c->pendingIn.size();
      c->interceptIn.append(reinterpret_cast<const char*>(buf + direct), cut - direct);
      if (c->peer && !c->peer->atBoundary()) {
        // Replies to earlier queries are coming in pieces: JavaScript may take over only at their next boundary.
        c->switchPending = true;
        c->pendingEarlier = syncsBefore;
      } else if (!c->dataQueued) {
        c->dataQueued = true;
        Emit(kClientData, c->id, syncsBefore);
      }
    } else {
      LaneToJs(c, buf + direct, cut - direct);
    }
    if (!c->peer && !c->needServerSent) {
      c->needServerSent = true;
      Emit(kNeedServer, c->id);
    }
  }
  if (r.terminate) CloseClient(c, 1);
}

bool Relay::PinAtEnd(Endpoint* c, Endpoint* s) {
  const uint32_t both = c->Scans().stateScan.Take();
  const uint32_t named = both & c->pinMask;
  const uint32_t cleared = (both >> 8) & c->pinMask;
  if (c->pinned == 0) {
    if (!c->transactionMode || named == 0) return false;
    // Session state that must stay with this server: the pair is kept, as in session mode.
    c->transactionMode = false;
    c->parked = false;
    c->pinned = named;
    Emit(kPin, c->id, s->id, static_cast<int32_t>(named));
    return false;
  }
  const uint32_t remaining = (c->pinned & ~cleared) | named;
  if (remaining == c->pinned) return false;
  c->pinned = remaining;
  Emit(kPin, c->id, s->id, static_cast<int32_t>(remaining));
  if (remaining != 0) return false;
  // The client dropped what kept it here: a transaction-mode client again, split at this transaction's end.
  c->transactionMode = true;
  return true;
}

void Relay::NoteParams(Endpoint* c, int kind, const uint8_t* text, size_t len) {
  Endpoint* target = c->peer ? c->peer : c;
  if (kind == 1 && target->paramText.size() + len < kParamTextMax) {
    target->paramText.append(reinterpret_cast<const char*>(text), len);
    target->paramText.push_back('\0');
    target->paramFlags |= 1;
  } else {
    target->paramFlags |= 2;
  }
}

void Relay::NoteSyncPoint(Endpoint* c, uint8_t type, const uint8_t* buf, size_t offset, uint32_t len, size_t total) {
  if (type == kSync && c->copyIn) return;
  ClientScans& sc = c->Scans();
  sc.queryRing.Push();
  if (type != kQuery) return;
  sc.queryPrint.Start();
  const size_t bodyEnd = offset + 1 + static_cast<size_t>(len);
  const size_t from = offset + 5;
  const size_t end = bodyEnd < total ? bodyEnd : total;
  if (end > from) sc.queryPrint.Feed(buf + from, end - from);
  if (bodyEnd <= total) QueryTextEnd(c);
  else c->queryTailLeft = static_cast<uint32_t>(bodyEnd - total);
}

void Relay::QueryTextEnd(Endpoint* c) {
  ClientScans& sc = c->Scans();
  sc.queryPrint.Finish();
  uint32_t slot, gen;
  if (queryStats_.Find(sc.queryPrint, c->queryPool, &slot, &gen)) sc.queryRing.SetLast(slot, gen);
}

void Relay::ObserveHist(double* s, int off, double us) {
  double sec = us / 1e6;
  size_t nb = layout_.bounds.size();
  s[off + nb] += 1;
  s[off + nb + 1] += sec;
  for (size_t i = 0; i < nb; i++) {
    if (sec <= layout_.bounds[i]) {
      s[off + i] += 1;
      return;
    }
  }
}

void Relay::LogAdd(double* s, int off, double us) {
  int i = 0;
  if (us >= 1) {
    uint64_t bits;
    std::memcpy(&bits, &us, sizeof bits);
    i = 1 + (static_cast<int>((bits >> 52) & 0x7ff) - 1023) * 8 + static_cast<int>((bits >> 49) & 7);
    if (i >= layout_.logBuckets) i = layout_.logBuckets - 1;
  }
  s[off + i] += 1;
}

void Relay::OnServerBytes(Endpoint* s, const uint8_t* buf, size_t total) {
  s->bytesReceived += total - s->carryLen;
  // A parked server's bytes (a NOTICE, or the FATAL of pg_terminate_backend) are dropped as an idle
  // server's would be: the client is between transactions and asked for nothing.
  Endpoint* c = s->peer && !s->peer->parked ? s->peer : nullptr;
  // The lane answers its fast groups (and passes what comes unasked while it is on); JavaScript the rest.
  const bool pending = c && c->switchPending;
  const bool laneReplies = c && c->intercept && !pending && (c->lane.on || !c->lane.groups.empty());
  const bool intercepted = c && c->intercept && !pending && !laneReplies;
  std::string& laneOut = laneReplyOut_;
  laneOut.clear();
  size_t copied = 0;
  size_t handAt = SIZE_MAX;
  bool release = false;
  bool dropsAll = false;
  bool schema = false;
  bool captureReady = false;
  ChunkResult r = ScanServerChunk(
      *s, s->txStatus, c, buf, total,
      [&](uint8_t, bool ended) {
        if (pending && c->pendingEarlier > 0) c->pendingEarlier--;  // an earlier reply, passed on as it is
        if (c) {
          double now = NowUs();
          double us = now - c->syncStart;
          c->syncStart = now;
          if (c->stats) {
            c->stats[kQueryTime] += us;
            LogAdd(c->stats, layout_.qLog, us);
            ObserveHist(c->stats, layout_.qHist, us);
          }
          if (c->app) c->app[kQueryTime] += us;
          if (c->scans && !c->scans->queryRing.Empty()) {
            uint32_t slot, gen;
            if (c->scans->queryRing.Pop(&slot, &gen) && slot != kNoEntry) queryStats_.Observe(slot, gen, us);
            // Nothing in flight: whatever the ring still holds belongs to no query.
            if (c->syncs == 0) c->scans->queryRing.Clear();
          }
          if (ended) {
            double xus = now - c->xactStart;
            double queries = c->queryCount - c->countedQueries;
            c->countedQueries = c->queryCount;
            if (c->stats) {
              c->stats[kXact] += 1;
              c->stats[kXactTime] += xus;
              c->stats[kQueries] += queries;
              LogAdd(c->stats, layout_.xLog, xus);
              ObserveHist(c->stats, layout_.xHist, xus);
            }
            if (c->app) {
              c->app[kXact] += 1;
              c->app[kXactTime] += xus;
              c->app[kQueries] += queries;
            }
            c->xacts += 1;
            c->xactTimeUs += xus;
            s->xacts += 1;
            s->queries += queries;
            c->xactOpen = false;
            const bool unpinned = c->pinMask != 0 && PinAtEnd(c, s);
            const bool jsOwes = c->intercept && !(c->lane.on && c->lane.groups.empty() && handAt == SIZE_MAX && c->interceptIn.empty() && !c->dataQueued);
            if (c->transactionMode && c->pendingIn.empty() && MayRelease(*c) && !jsOwes) {
              // A transaction that may have changed a session parameter is not parked: JavaScript reads it back.
              if (!unpinned && c->stats && layout_.parkable >= 0 && c->stats[layout_.parkable] == 1 && s->paramFlags == 0) MarkParked(c);
              else release = true;
            }
          }
        } else if (s->wantReady) {
          s->wantReady = false;
          Emit(kServerReady, s->id, s->sawError ? 1 : 0, s->txStatus);
          s->sawError = false;
          captureReady = true;
        }
      },
      [&] {
        if (c) {
          c->errors += 1;
          if (c->stats) c->stats[kErrors] += 1;
          if (c->app) c->app[kErrors] += 1;
        } else {
          s->sawError = true;
        }
      },
      [&](uint8_t type, size_t offset, uint32_t len) {
        s->toldClient = c && type == kErrorResponse && EndsSession(buf + offset, len, total - offset);
        if (c && type == kErrorResponse && c->stats) CountSqlState(c->stats, layout_.sqlStates, layout_.sqlStateSlots, SqlStateCode(buf + offset, len, total - offset));
        if (type == 'S' && c) s->paramFlags |= 4;
        if (type == 'C' && s->divert) {
          if (DropsAllStatements(buf + offset, len, total - offset)) dropsAll = true;
          else if (ChangesSchema(buf + offset, len, total - offset)) schema = true;
        }
        if (laneReplies && handAt == SIZE_MAX && !LaneReply(c, buf, offset, laneOut, copied)) {
          handAt = offset;
          LaneHandOver(c, s->txStatus);
        }
      });
  const size_t cut = r.cut;
  if (c && cut > 0) {
    c->bytesSent += cut;
    if (c->app) c->app[kSent] += cut;
  }
  if (laneReplies && cut > 0) {
    const size_t upto = handAt < cut ? handAt : cut;
    if (upto > copied) laneOut.append(reinterpret_cast<const char*>(buf + copied), upto - copied);
    if (handAt < cut) {
      if (c->stats) c->stats[kSent] += cut - handAt;
      s->interceptIn.append(reinterpret_cast<const char*>(buf + handAt), cut - handAt);
      if (!s->dataQueued) {
        s->dataQueued = true;
        Emit(kServerData, s->id, c->id);
      }
    }
  }
  // What the client gets from here: the read as it is, or with the lane's ParseCompletes (up to a hand-over).
  const uint8_t* out = laneReplies ? reinterpret_cast<const uint8_t*>(laneOut.data()) : buf;
  const size_t outLen = laneReplies ? laneOut.size() : cut;
  if (intercepted && cut > 0) {
    // The rewriter decides what the client gets (and when the pair splits).
    if (c->stats) c->stats[kSent] += cut;
    s->interceptIn.append(reinterpret_cast<const char*>(buf), cut);
    if (!s->dataQueued) {
      s->dataQueued = true;
      Emit(kServerData, s->id, c->id);
    }
  }
  if (!c && s->capture && r.cut > 0) {
    // A query of the pooler's own (relayWatchReady with capture): its replies are JavaScript's.
    s->interceptIn.append(reinterpret_cast<const char*>(buf), r.cut);
    if (captureReady) s->capture = false;
  }
  if (dropsAll && !intercepted && !laneReplies) Emit(kServerDiscarded, s->id);
  if (schema) {
    // Every client's lane stops answering Parses itself; JavaScript moves the pool's statements to a new epoch.
    schemaGen_++;
    Emit(kServerSchema, s->id);
  }
  if (!r.ok) {
    if (c && outLen > 0 && !intercepted) Write(c, out, outLen);
    Lost(s, 2);
    return;
  }
  if (c && outLen > 0 && !intercepted) {
    if (c->stats) c->stats[kSent] += handAt < cut ? handAt : cut;
    if (!Write(c, out, outLen)) {
      return;
    }
  }
  if (pending && s->peer == c && s->atBoundary()) {
    c->switchPending = false;
    if (!c->dataQueued) {
      c->dataQueued = true;
      Emit(kClientData, c->id, c->pendingEarlier);
    }
  }
  if (release && s->peer == c && c) {
    Unlink(c);
    EmitRelease(c, s);
  }
}

}  // namespace relay
}  // namespace tidepool
