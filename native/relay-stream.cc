// The relay's read side: one recv into the shared buffer, the message-boundary scan, the transaction
// accounting of src/pooler/transaction-tracker.ts, and forwarding to the linked peer.
#include "relay-engine.h"

#include <errno.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cstring>

namespace tidepool {
namespace relay {

/** Scans whole headers; returns the end of the bytes to pass on (a partial header is carried). */
template <typename OnMessage>
static bool Scan(Endpoint* ep, const uint8_t* buf, size_t total, size_t* cut, uint32_t* badLength, OnMessage onMessage) {
  size_t pos = 0;
  while (pos < total) {
    if (ep->remaining > 0) {
      size_t take = total - pos < ep->remaining ? total - pos : ep->remaining;
      pos += take;
      ep->remaining -= static_cast<uint32_t>(take);
      continue;
    }
    size_t need = 5;
    if (ep->server && buf[pos] == kReadyForQuery) need = 6;
    if (total - pos < need) break;
    uint32_t len = (uint32_t(buf[pos + 1]) << 24) | (uint32_t(buf[pos + 2]) << 16) | (uint32_t(buf[pos + 3]) << 8) | buf[pos + 4];
    if (len < 4 || len > ep->maxMessage || (need == 6 && len < 5)) {
      *badLength = len;
      *cut = pos;
      return false;
    }
    if (!onMessage(buf[pos], buf + pos, pos)) {
      *cut = pos;
      return true;  // stopped by the handler (Terminate)
    }
    ep->remaining = len + 1;
  }
  *cut = pos;
  size_t rest = total - pos;
  ep->carryLen = static_cast<uint8_t>(rest);
  if (rest) std::memcpy(ep->carry, buf + pos, rest);
  return true;
}

void Relay::OnReadable(Endpoint* ep) {
  uint8_t* buf = readBuf_.data();
  size_t carry = ep->carryLen;
  if (carry) std::memcpy(buf, ep->carry, carry);
  ssize_t n;
  do n = recv(ep->fd, buf + carry, kReadSize, 0);
  while (n < 0 && errno == EINTR);
  if (n < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK) return;
    Lost(ep, 1);
    return;
  }
  if (n == 0) {
    Lost(ep, 0);
    return;
  }
  if (ep->closing) return;  // discarding until EOF
  size_t total = carry + static_cast<size_t>(n);
  if (ep->server) OnServerBytes(ep, buf, total);
  else OnClientBytes(ep, buf, total);
}

void Relay::SyncPoint(Endpoint* c, double now) {
  if (c->syncs++ == 0) c->syncStart = now;
}

void Relay::OnClientBytes(Endpoint* c, const uint8_t* buf, size_t total) {
  const bool midMessage = c->remaining > 0;
  size_t cut = 0;
  uint32_t bad = 0;
  bool terminate = false;
  double now = 0;
  c->carryLen = 0;
  bool ok = Scan(c, buf, total, &cut, &bad, [&](uint8_t type, const uint8_t*, size_t) {
    switch (type) {
      case kQuery:
        c->queryCount++;
        if (now == 0) now = NowUs();
        SyncPoint(c, now);
        break;
      case kSync:
        if (!c->copyIn) {
          if (now == 0) now = NowUs();
          SyncPoint(c, now);
        }
        c->unsynced = false;
        break;
      case kFunctionCall:
        if (now == 0) now = NowUs();
        SyncPoint(c, now);
        break;
      case kExecute:
        c->queryCount++;
        c->unsynced = true;
        break;
      case kParse:
      case kBind:
      case kDescribe:
      case kClose:
      case kFlush:
        c->unsynced = true;
        break;
      case kCopyDone:
      case kCopyFail:
        c->copyIn = false;
        break;
      case kTerminate:
        terminate = true;
        return false;
      case kCopyData:
        break;
      default:
        // A type PostgreSQL does not take after login (it answers FATAL and closes): the server's state is
        // unknown until a Sync is answered, so it must not go back to the pool (as transaction-tracker.ts).
        c->unsynced = true;
        break;
    }
    return true;
  });
  if (!ok) {
    // A bad length: nothing of this read is passed on; JavaScript answers 08P01 and closes. When the read
    // began with the rest of a message the server already has the start of, that server is not reusable.
    if (midMessage) c->unsynced = true;
    c->stopped = true;
    c->carryLen = 0;
    UpdatePoll(c);
    Emit(kBadLength, c->id, static_cast<int32_t>(bad));
    return;
  }
  if (cut > 0) {
    if (c->stats) c->stats[kRecv] += cut;
    if (c->peer) {
      c->parked = false;
      c->peer->bytesSent += cut;
      if (!Write(c->peer, buf, cut)) return;
    } else {
      c->pendingIn.append(reinterpret_cast<const char*>(buf), cut);
      if (!c->needServerSent) {
        c->needServerSent = true;
        Emit(kNeedServer, c->id);
      }
      if (c->pendingIn.size() > kHighWater) UpdatePoll(c);
    }
  }
  if (terminate) CloseClient(c, 1);
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

void Relay::RingAdd(double* s, int off, double us) {
  int size = layout_.ringSize;
  int n = static_cast<int>(s[off]);
  int i = static_cast<int>(s[off + 1]);
  s[off + 2 + i] = us;
  s[off + 1] = (i + 1) % size;
  if (n < size) s[off] = n + 1;
}

void Relay::OnServerBytes(Endpoint* s, const uint8_t* buf, size_t total) {
  s->bytesReceived += total - s->carryLen;
  // A parked server's bytes (a NOTICE, or the FATAL of pg_terminate_backend) are dropped as an idle
  // server's would be: the client is between transactions and asked for nothing.
  Endpoint* c = s->peer && !s->peer->parked ? s->peer : nullptr;
  bool release = false;
  size_t cut = 0;
  uint32_t bad = 0;
  s->carryLen = 0;
  bool ok = Scan(s, buf, total, &cut, &bad, [&](uint8_t type, const uint8_t* m, size_t) {
    if (type == kReadyForQuery) {
      s->txStatus = m[5];
      if (c) {
        double now = NowUs();
        if (c->syncs > 0) c->syncs--;
        double us = now - c->syncStart;
        c->syncStart = now;
        if (c->stats) {
          c->stats[kQueryTime] += us;
          RingAdd(c->stats, layout_.qRing, us);
          ObserveHist(c->stats, layout_.qHist, us);
        }
        if (s->txStatus == kIdle && c->syncs == 0 && !c->unsynced) {
          double xus = now - c->xactStart;
          double queries = c->queryCount - c->countedQueries;
          c->countedQueries = c->queryCount;
          if (c->stats) {
            c->stats[kXact] += 1;
            c->stats[kXactTime] += xus;
            c->stats[kQueries] += queries;
            RingAdd(c->stats, layout_.xRing, xus);
            ObserveHist(c->stats, layout_.xHist, xus);
          }
          c->xacts += 1;
          s->xacts += 1;
          s->queries += queries;
          c->xactStart = now;
          // Only between whole client messages: a message the client has begun (say CopyData outside COPY,
          // which PostgreSQL answers with nothing) must end on the server that got its first bytes.
          if (c->transactionMode && c->pendingIn.empty() && c->remaining == 0) {
            if (c->stats && layout_.parkable >= 0 && c->stats[layout_.parkable] == 1) c->parked = true;
            else release = true;
          }
        }
      } else if (s->wantReady) {
        s->wantReady = false;
        Emit(kServerReady, s->id, s->sawError ? 1 : 0, s->txStatus);
        s->sawError = false;
      }
    } else if (type == kCopyInResponse) {
      if (c) c->copyIn = true;
    } else if (type == kErrorResponse) {
      if (c) {
        c->errors += 1;
        if (c->stats) c->stats[kErrors] += 1;
      } else {
        s->sawError = true;
      }
    }
    return true;
  });
  if (!ok) {
    if (c && cut > 0) Write(c, buf, cut);
    Lost(s, 2);
    return;
  }
  if (c && cut > 0) {
    if (c->stats) c->stats[kSent] += cut;
    if (!Write(c, buf, cut)) {
      return;
    }
  }
  if (release && s->peer == c && c) {
    Unlink(c);
    Emit(kRelease, c->id, s->id);
  }
}

}  // namespace relay
}  // namespace tidepool
