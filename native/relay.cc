// Byte forwarding between clients and PostgreSQL servers on Node's own event loop, with no JavaScript per
// message: every socket after login is a file descriptor polled here (uv_poll), read into one scratch
// buffer, scanned for message boundaries, and written straight to its peer with send(); only what does
// not fit in the peer's socket buffer is copied into that peer's pending output.
//
// JavaScript keeps every decision: it is told, in one batch per loop iteration, when a client with no
// server has bytes (NEED_SERVER), when a transaction-mode transaction ended and the pair was split
// (RELEASE), when a socket closed, when a client sent a bad length, and when an unlinked server sent
// ReadyForQuery it was asked to watch for (after DISCARD ALL). It links pairs, writes its own messages
// (errors, reset queries, Terminate) and closes sockets through the methods of the Relay object.
//
// The transaction accounting is the same as src/pooler/transaction-tracker.ts (sync points, unsynced
// extended messages, COPY IN), and the pool statistics are written into the pool's Float64Array block
// whose layout src/pooler/stats.ts defines and passes in.
#include "relay.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace tidepool {
namespace {

constexpr size_t kReadSize = 64 * 1024;
constexpr size_t kCarryMax = 8;
/** A peer with this much unsent output stops its source from being read. */
constexpr size_t kHighWater = 1024 * 1024;
constexpr size_t kLowWater = 128 * 1024;

enum EventKind : int32_t {
  kNeedServer = 1,     // client
  kRelease = 2,        // client, server
  kClientClosed = 3,   // client, reason (0 eof, 1 terminate, 2 error), server or 0, clean
  kServerClosed = 4,   // server, client or 0, at boundary, reason (0 eof, 1 error, 2 malformed)
  kServerReady = 5,    // server, saw error, status
  kBadLength = 6,      // client, length
};

// Frontend message types.
constexpr uint8_t kQuery = 'Q', kSync = 'S', kFunctionCall = 'F', kExecute = 'E', kParse = 'P', kBind = 'B',
                  kDescribe = 'D', kClose = 'C', kFlush = 'H', kCopyDone = 'c', kCopyFail = 'f', kTerminate = 'X';
// Backend message types.
constexpr uint8_t kReadyForQuery = 'Z', kCopyInResponse = 'G', kErrorResponse = 'E';
constexpr uint8_t kIdle = 'I';

double NowUs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

struct StatsLayout {
  int qHist = 0, xHist = 0, qRing = 0, xRing = 0, ringSize = 0;
  int parkable = -1;  // slot JavaScript sets to 1 while the pool has no waiters and is not paused or draining
  std::vector<double> bounds;  // seconds
};

enum Totals { kXact = 0, kQueries = 1, kRecv = 2, kSent = 3, kXactTime = 4, kQueryTime = 5, kWait = 6, kErrors = 7 };

class Relay;

struct Endpoint {
  Relay* relay = nullptr;
  int32_t id = 0;
  int fd = -1;
  bool server = false;
  uv_poll_t poll;
  int events = 0;
  bool pollActive = false;
  Endpoint* peer = nullptr;
  // Output to this socket that did not fit in its send buffer.
  std::string out;
  size_t outOff = 0;
  // Inbound framing: bytes left of the current message, and a partial header held back until whole.
  uint32_t remaining = 0;
  uint8_t carry[kCarryMax];
  uint8_t carryLen = 0;
  uint32_t maxMessage = 0;
  // Lifecycle.
  bool dead = false;       // removed from the id map: JavaScript no longer knows it
  bool closing = false;    // flush, shut down writes, discard reads until EOF
  bool shutDown = false;
  bool stopped = false;    // reads stopped for good (bad length)
  int closedFd = -1;
  // Client side.
  std::string pendingIn;   // bytes read while no server is linked
  bool needServerSent = false;
  bool transactionMode = true;
  // Between transactions but still linked: the pool had nobody waiting, so the pair was kept instead of
  // split; the client's next bytes go straight to the same server, and JavaScript reclaims the server
  // (relayReclaim) whenever it needs it.
  bool parked = false;
  int syncs = 0;
  bool unsynced = false;
  bool copyIn = false;
  double queryCount = 0, countedQueries = 0;
  double syncStart = 0, xactStart = 0;
  double xacts = 0, errors = 0, queries = 0;
  double* stats = nullptr;
  napi_ref statsRef = nullptr;
  // Server side.
  uint8_t txStatus = kIdle;
  bool wantReady = false;
  bool sawError = false;
  double bytesSent = 0, bytesReceived = 0;

  size_t pendingOut() const { return out.size() - outOff; }
  bool atBoundary() const { return remaining == 0 && carryLen == 0; }
  bool between() const { return txStatus == kIdle; }
};

class Relay {
 public:
  Relay(napi_env env, uv_loop_t* loop) : env_(env), loop_(loop) {
    uv_check_init(loop_, &check_);
    check_.data = this;
    uv_check_start(&check_, [](uv_check_t* h) { static_cast<Relay*>(h->data)->Flush(); });
    uv_unref(reinterpret_cast<uv_handle_t*>(&check_));
    readBuf_.resize(kCarryMax + kReadSize);
  }

  napi_env env_;
  uv_loop_t* loop_;
  uv_check_t check_;
  napi_ref callback_ = nullptr;
  napi_ref eventsRef_ = nullptr;
  int32_t* events_ = nullptr;
  size_t eventCap_ = 0;  // in int32 slots
  size_t eventLen_ = 0;
  StatsLayout layout_;
  std::unordered_map<int32_t, Endpoint*> byId_;
  int32_t nextId_ = 1;
  std::vector<uint8_t> readBuf_;
  std::vector<int32_t> deferred_;
  bool flushing_ = false;

  Endpoint* Find(int32_t id) {
    auto it = byId_.find(id);
    return it == byId_.end() ? nullptr : it->second;
  }

  Endpoint* Add(int fd, bool server) {
    auto* ep = new Endpoint();
    ep->relay = this;
    ep->id = nextId_++;
    if (nextId_ >= 0x7fffffff) nextId_ = 1;
    ep->fd = fd;
    ep->server = server;
    uv_poll_init(loop_, &ep->poll, fd);
    ep->poll.data = ep;
    byId_[ep->id] = ep;
    UpdatePoll(ep);
    return ep;
  }

  // ---- events ----

  void Emit(int32_t kind, int32_t a, int32_t b = 0, int32_t c = 0, int32_t d = 0) {
    if (flushing_) {
      // JavaScript is reading the shared buffer: later events wait here and go in the next round.
      deferred_.insert(deferred_.end(), {kind, a, b, c, d});
      return;
    }
    if (eventLen_ + 5 > eventCap_) {
      // Full: never call into JavaScript from here (this may run inside a call from JavaScript).
      deferred_.insert(deferred_.end(), {kind, a, b, c, d});
      uv_ref(reinterpret_cast<uv_handle_t*>(&check_));
      return;
    }
    int32_t* e = events_ + eventLen_;
    e[0] = kind;
    e[1] = a;
    e[2] = b;
    e[3] = c;
    e[4] = d;
    eventLen_ += 5;
    uv_ref(reinterpret_cast<uv_handle_t*>(&check_));
  }

  void Flush() {
    if (flushing_ || !callback_) return;
    while (eventLen_ > 0 || !deferred_.empty()) {
      FlushOnce();
      size_t take = deferred_.size() < eventCap_ ? deferred_.size() : eventCap_ - eventCap_ % 5;
      if (take) {
        std::memcpy(events_, deferred_.data(), take * sizeof(int32_t));
        deferred_.erase(deferred_.begin(), deferred_.begin() + take);
        eventLen_ = take;
      }
    }
    uv_unref(reinterpret_cast<uv_handle_t*>(&check_));
  }

  void FlushOnce() {
    if (eventLen_ == 0) return;
    flushing_ = true;
    napi_handle_scope scope;
    napi_open_handle_scope(env_, &scope);
    napi_value cb, global, argv[1];
    napi_get_reference_value(env_, callback_, &cb);
    napi_get_global(env_, &global);
    napi_create_int32(env_, static_cast<int32_t>(eventLen_ / 5), &argv[0]);
    napi_value result;
    napi_async_context ctx = nullptr;
    // make_callback drains the microtask queue afterwards, as any I/O callback into JavaScript does.
    if (napi_make_callback(env_, ctx, global, cb, 1, argv, &result) != napi_ok) {
      bool pending = false;
      napi_is_exception_pending(env_, &pending);
      if (pending) {
        napi_value ex;
        napi_get_and_clear_last_exception(env_, &ex);
        napi_fatal_exception(env_, ex);
      }
    }
    napi_close_handle_scope(env_, scope);
    eventLen_ = 0;
    flushing_ = false;
  }

  // ---- polling ----

  bool WantRead(Endpoint* ep) const {
    if (ep->dead && !ep->closing) return false;
    if (ep->stopped) return false;
    if (ep->closing) return true;  // discard until EOF
    if (ep->peer && ep->peer->pendingOut() > kHighWater) return false;
    if (!ep->server && !ep->peer && ep->pendingIn.size() > kHighWater) return false;
    return true;
  }

  void UpdatePoll(Endpoint* ep) {
    if (ep->fd < 0) return;
    int want = (WantRead(ep) ? UV_READABLE : 0) | (ep->pendingOut() > 0 ? UV_WRITABLE : 0);
    if (want == ep->events && (want != 0) == ep->pollActive) return;
    ep->events = want;
    if (want == 0) {
      uv_poll_stop(&ep->poll);
      ep->pollActive = false;
    } else {
      uv_poll_start(&ep->poll, want, OnPoll);
      ep->pollActive = true;
    }
  }

  static void OnPoll(uv_poll_t* h, int status, int events) {
    auto* ep = static_cast<Endpoint*>(h->data);
    Relay* r = ep->relay;
    if (ep->fd < 0) return;
    if (status < 0) {
      r->Lost(ep, 1);
      return;
    }
    if (events & UV_WRITABLE) {
      if (!r->FlushOut(ep)) return;
    }
    if ((events & UV_READABLE) && ep->fd >= 0) r->OnReadable(ep);
  }

  // ---- writing ----

  /** Sends or queues bytes for `ep`; false when the socket failed (it is then closed). */
  bool Write(Endpoint* ep, const uint8_t* data, size_t len) {
    if (ep->fd < 0 || len == 0) return ep->fd >= 0;
    if (ep->pendingOut() == 0) {
      ssize_t n;
      do n = send(ep->fd, data, len, MSG_NOSIGNAL | MSG_DONTWAIT);
      while (n < 0 && errno == EINTR);
      if (n < 0) {
        if (errno != EAGAIN && errno != EWOULDBLOCK) {
          Lost(ep, 1);
          return false;
        }
        n = 0;
      }
      if (static_cast<size_t>(n) == len) return true;
      data += n;
      len -= n;
      ep->out.clear();
      ep->outOff = 0;
    }
    ep->out.append(reinterpret_cast<const char*>(data), len);
    UpdatePoll(ep);
    if (ep->peer && ep->pendingOut() > kHighWater) UpdatePoll(ep->peer);
    return true;
  }

  /** Writable: sends pending output; false when the endpoint is gone. */
  bool FlushOut(Endpoint* ep) {
    while (ep->pendingOut() > 0) {
      ssize_t n = send(ep->fd, ep->out.data() + ep->outOff, ep->pendingOut(), MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) break;
        Lost(ep, 1);
        return false;
      }
      ep->outOff += n;
    }
    if (ep->pendingOut() == 0) {
      ep->out.clear();
      ep->outOff = 0;
      if (ep->closing && !ep->shutDown) {
        shutdown(ep->fd, SHUT_WR);
        ep->shutDown = true;
      }
    } else if (ep->outOff > (1 << 20) && ep->outOff * 2 > ep->out.size()) {
      ep->out.erase(0, ep->outOff);
      ep->outOff = 0;
    }
    UpdatePoll(ep);
    if (ep->peer && ep->pendingOut() <= kLowWater) UpdatePoll(ep->peer);
    return true;
  }

  // ---- reading ----

  void OnReadable(Endpoint* ep) {
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

  /** Scans whole headers; returns the end of the bytes to pass on (a partial header is carried). */
  template <typename OnMessage>
  bool Scan(Endpoint* ep, const uint8_t* buf, size_t total, size_t* cut, uint32_t* badLength, OnMessage onMessage) {
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

  void SyncPoint(Endpoint* c, double now) {
    if (c->syncs++ == 0) c->syncStart = now;
  }

  void OnClientBytes(Endpoint* c, const uint8_t* buf, size_t total) {
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
        default:
          break;
      }
      return true;
    });
    if (!ok) {
      // A bad length: nothing of this read is passed on; JavaScript answers 08P01 and closes.
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

  void ObserveHist(double* s, int off, double us) {
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

  void RingAdd(double* s, int off, double us) {
    int size = layout_.ringSize;
    int n = static_cast<int>(s[off]);
    int i = static_cast<int>(s[off + 1]);
    s[off + 2 + i] = us;
    s[off + 1] = (i + 1) % size;
    if (n < size) s[off] = n + 1;
  }

  void OnServerBytes(Endpoint* s, const uint8_t* buf, size_t total) {
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
            if (c->transactionMode && c->pendingIn.empty()) {
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

  // ---- linking ----

  void Unlink(Endpoint* c) {
    Endpoint* s = c->peer;
    c->parked = false;
    if (!s) return;
    c->peer = nullptr;
    s->peer = nullptr;
    UpdatePoll(c);
    UpdatePoll(s);
  }

  bool Clean(Endpoint* c, Endpoint* s) const {
    return s->between() && c->syncs == 0 && !c->unsynced && s->atBoundary() && c->remaining == 0;
  }

  // ---- closing ----

  /** A socket failed or reached EOF (reason 0 eof, 1 error, 2 malformed from a server). */
  void Lost(Endpoint* ep, int reason) {
    if (ep->dead) {
      Destroy(ep);
      return;
    }
    if (ep->server) {
      Endpoint* c = ep->peer;
      bool boundary = ep->atBoundary();
      bool parked = c && c->parked;
      if (c) Unlink(c);
      // at boundary: 1; 2 when the pair was parked (the client is between transactions and lives on).
      Emit(kServerClosed, ep->id, c ? c->id : 0, parked ? 2 : boundary ? 1 : 0, reason);
    } else {
      CloseClient(ep, reason == 0 ? 0 : 2);
      return;
    }
    Destroy(ep);
  }

  void CloseClient(Endpoint* c, int reason) {
    Endpoint* s = c->peer;
    bool clean = s ? Clean(c, s) : true;
    if (s) Unlink(c);
    Emit(kClientClosed, c->id, reason, s ? s->id : 0, clean ? 1 : 0);
    Destroy(c);
  }

  /** Stops polling and closes the descriptor; the memory goes when libuv is done with the handle. */
  void Destroy(Endpoint* ep) {
    if (ep->fd < 0) return;
    if (ep->peer) {
      ep->peer->peer = nullptr;
      UpdatePoll(ep->peer);
      ep->peer = nullptr;
    }
    byId_.erase(ep->id);
    ep->dead = true;
    ep->closedFd = ep->fd;
    ep->fd = -1;
    ep->carryLen = 0;
    ep->out.clear();
    ep->outOff = 0;
    ep->pendingIn.clear();
    uv_close(reinterpret_cast<uv_handle_t*>(&ep->poll), [](uv_handle_t* h) {
      auto* e = static_cast<Endpoint*>(h->data);
      close(e->closedFd);
      if (e->statsRef) napi_delete_reference(e->relay->env_, e->statsRef);
      delete e;
    });
  }

  /** JavaScript closes: pending output is sent, writes are shut down, reads discarded until EOF. */
  void CloseGracefully(Endpoint* ep) {
    if (ep->peer) Unlink(ep->server ? ep->peer : ep);
    ep->dead = true;  // no more events; stays findable for a forced Destroy
    ep->closing = true;
    ep->stopped = false;
    ep->pendingIn.clear();
    if (ep->pendingOut() == 0) {
      shutdown(ep->fd, SHUT_WR);
      ep->shutDown = true;
    }
    UpdatePoll(ep);
  }
};

// ---- bindings: one relay per environment (the main thread's), created by relayInit ----

// Per thread: worker threads load the addon too but never start a relay.
thread_local Relay* tRelay = nullptr;

Relay* Get(const Napi::CallbackInfo& info) {
  Relay* r = tRelay;
  if (!r) Napi::Error::New(info.Env(), "relayInit was not called").ThrowAsJavaScriptException();
  return r;
}

template <typename T>
bool Typed(const Napi::Value& v, napi_typedarray_type want, T** data, size_t* length) {
  if (!v.IsTypedArray()) return false;
  auto ta = v.As<Napi::TypedArray>();
  if (ta.TypedArrayType() != want) return false;
  napi_typedarray_type type;
  void* d = nullptr;
  size_t len = 0;
  napi_get_typedarray_info(v.Env(), v, &type, &len, &d, nullptr, nullptr);
  *data = static_cast<T*>(d);
  *length = len;
  return true;
}

/** relayInit(onEvents(count), events: Int32Array, layout: Int32Array [qHist, xHist, qRing, xRing, ringSize], bounds: Float64Array) */
Napi::Value RelayInit(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (tRelay) return Napi::Boolean::New(env, false);
  int32_t* events = nullptr;
  int32_t* layout = nullptr;
  double* bounds = nullptr;
  size_t nEvents = 0, nLayout = 0, nBounds = 0;
  if (info.Length() < 4 || !info[0].IsFunction() || !Typed(info[1], napi_int32_array, &events, &nEvents) ||
      !Typed(info[2], napi_int32_array, &layout, &nLayout) || nLayout < 5 || !Typed(info[3], napi_float64_array, &bounds, &nBounds)) {
    Napi::TypeError::New(env, "relayInit(onEvents, Int32Array, Int32Array(5), Float64Array)").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  uv_loop_t* loop = nullptr;
  napi_get_uv_event_loop(env, &loop);
  auto* r = new Relay(env, loop);
  napi_create_reference(env, info[0], 1, &r->callback_);
  napi_create_reference(env, info[1], 1, &r->eventsRef_);
  r->events_ = events;
  r->eventCap_ = nEvents - nEvents % 5;
  r->layout_.qHist = layout[0];
  r->layout_.xHist = layout[1];
  r->layout_.qRing = layout[2];
  r->layout_.xRing = layout[3];
  r->layout_.ringSize = layout[4];
  if (nLayout > 5) r->layout_.parkable = layout[5];
  r->layout_.bounds.assign(bounds, bounds + nBounds);
  // The relay lives as long as the process; its handles are unref'd or belong to open sockets.
  tRelay = r;
  return Napi::Boolean::New(env, true);
}

int DupFd(const Napi::Value& v) {
  int fd = v.As<Napi::Number>().Int32Value();
  int copy = fcntl(fd, F_DUPFD_CLOEXEC, 3);
  if (copy < 0) return -1;
  int fl = fcntl(copy, F_GETFL);
  if (!(fl & O_NONBLOCK)) fcntl(copy, F_SETFL, fl | O_NONBLOCK);
  return copy;
}

/** relayAddClient(fd, stats: Float64Array, maxMessage, initial?: Uint8Array) -> id; the fd is duplicated. */
Napi::Value RelayAddClient(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Relay* r = Get(info);
  if (!r) return env.Undefined();
  double* stats = nullptr;
  size_t nStats = 0;
  if (info.Length() < 3 || !info[0].IsNumber() || !Typed(info[1], napi_float64_array, &stats, &nStats) || !info[2].IsNumber()) {
    Napi::TypeError::New(env, "relayAddClient(fd, Float64Array, maxMessage, initial?)").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  int fd = DupFd(info[0]);
  if (fd < 0) {
    Napi::Error::New(env, std::string("dup: ") + strerror(errno)).ThrowAsJavaScriptException();
    return env.Undefined();
  }
  Endpoint* c = r->Add(fd, false);
  c->maxMessage = static_cast<uint32_t>(info[2].As<Napi::Number>().Int64Value());
  c->stats = stats;
  napi_create_reference(env, info[1], 1, &c->statsRef);
  c->xactStart = NowUs();
  if (info.Length() > 3 && info[3].IsTypedArray()) {
    uint8_t* data = nullptr;
    size_t len = 0;
    if (Typed(info[3], napi_uint8_array, &data, &len) && len > 0) {
      // Bytes JavaScript read before the handoff: scanned and queued as if just read.
      std::vector<uint8_t> copy(data, data + len);
      r->OnClientBytes(c, copy.data(), copy.size());
    }
  }
  return Napi::Number::New(env, c->id);
}

/** relayAddServer(fd, maxMessage) -> id */
Napi::Value RelayAddServer(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Relay* r = Get(info);
  if (!r) return env.Undefined();
  int fd = DupFd(info[0]);
  if (fd < 0) {
    Napi::Error::New(env, std::string("dup: ") + strerror(errno)).ThrowAsJavaScriptException();
    return env.Undefined();
  }
  Endpoint* s = r->Add(fd, true);
  s->maxMessage = static_cast<uint32_t>(info[1].As<Napi::Number>().Int64Value());
  return Napi::Number::New(env, s->id);
}

/** relayLink(client, server, transactionMode) -> false when either is gone. */
Napi::Value RelayLink(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Relay* r = Get(info);
  if (!r) return env.Undefined();
  Endpoint* c = r->Find(info[0].As<Napi::Number>().Int32Value());
  Endpoint* s = r->Find(info[1].As<Napi::Number>().Int32Value());
  if (!c || !s || c->dead || s->dead || c->server || !s->server || c->peer || s->peer) return Napi::Boolean::New(env, false);
  c->peer = s;
  s->peer = c;
  s->wantReady = false;
  c->transactionMode = info[2].ToBoolean().Value();
  c->needServerSent = false;
  c->xactStart = NowUs();
  if (!c->pendingIn.empty()) {
    // Written from the buffer and then cleared, which keeps its capacity for the next transaction.
    s->bytesSent += c->pendingIn.size();
    r->Write(s, reinterpret_cast<const uint8_t*>(c->pendingIn.data()), c->pendingIn.size());
    c->pendingIn.clear();
  }
  if (c->fd >= 0) r->UpdatePoll(c);
  if (s->fd >= 0) r->UpdatePoll(s);
  return Napi::Boolean::New(env, true);
}

/** relayUnlink(client) -> 1 clean, 0 not clean, -1 not linked. */
Napi::Value RelayUnlink(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Relay* r = Get(info);
  if (!r) return env.Undefined();
  Endpoint* c = r->Find(info[0].As<Napi::Number>().Int32Value());
  if (!c || c->server || !c->peer) return Napi::Number::New(env, -1);
  bool clean = r->Clean(c, c->peer);
  r->Unlink(c);
  return Napi::Number::New(env, clean ? 1 : 0);
}

/** relayWrite(id, Uint8Array) -> false when the socket is gone. */
Napi::Value RelayWrite(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Relay* r = Get(info);
  if (!r) return env.Undefined();
  Endpoint* ep = r->Find(info[0].As<Napi::Number>().Int32Value());
  uint8_t* data = nullptr;
  size_t len = 0;
  if (!ep || ep->fd < 0 || !Typed(info[1], napi_uint8_array, &data, &len)) return Napi::Boolean::New(env, false);
  return Napi::Boolean::New(env, r->Write(ep, data, len));
}

/** relayClose(id): graceful (pending output first); relayDestroy(id): now. Neither reports an event. */
Napi::Value RelayClose(const Napi::CallbackInfo& info) {
  Relay* r = Get(info);
  if (!r) return info.Env().Undefined();
  Endpoint* ep = r->Find(info[0].As<Napi::Number>().Int32Value());
  if (ep && ep->fd >= 0) r->CloseGracefully(ep);
  return info.Env().Undefined();
}

Napi::Value RelayDestroy(const Napi::CallbackInfo& info) {
  Relay* r = Get(info);
  if (!r) return info.Env().Undefined();
  Endpoint* ep = r->Find(info[0].As<Napi::Number>().Int32Value());
  if (ep) {
    if (ep->peer) r->Unlink(ep->server ? ep->peer : ep);
    ep->dead = true;
    r->Destroy(ep);
  }
  return info.Env().Undefined();
}

/** relayWatchReady(server): report the next ReadyForQuery of this unlinked server (SERVER_READY). */
Napi::Value RelayWatchReady(const Napi::CallbackInfo& info) {
  Relay* r = Get(info);
  if (!r) return info.Env().Undefined();
  Endpoint* s = r->Find(info[0].As<Napi::Number>().Int32Value());
  if (s && s->server && !s->peer) {
    s->wantReady = true;
    s->sawError = false;
  }
  return Napi::Boolean::New(info.Env(), s != nullptr);
}

/** relayReclaim(stats: Float64Array, out: Int32Array) -> n: splits every parked pair of the pool that
 *  counts into `stats` and writes the clients' ids to `out` (at most its length). */
Napi::Value RelayReclaim(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Relay* r = Get(info);
  if (!r) return env.Undefined();
  double* stats = nullptr;
  int32_t* out = nullptr;
  size_t nStats = 0, nOut = 0;
  if (!Typed(info[0], napi_float64_array, &stats, &nStats) || !Typed(info[1], napi_int32_array, &out, &nOut)) {
    Napi::TypeError::New(env, "relayReclaim(Float64Array, Int32Array)").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  size_t n = 0;
  for (auto& [id, ep] : r->byId_) {
    if (n >= nOut) break;
    if (ep->server || !ep->parked || ep->stats != stats || ep->dead) continue;
    r->Unlink(ep);
    out[n++] = id;
  }
  return Napi::Number::New(env, static_cast<double>(n));
}

/** relayInfo(id, out: Float64Array(10)) -> false when gone. out: transactions, queries, errors, bytes sent,
 *  bytes received, tx status, syncs, unsynced, pending out, linked peer id. */
Napi::Value RelayInfo(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Relay* r = Get(info);
  if (!r) return env.Undefined();
  Endpoint* ep = r->Find(info[0].As<Napi::Number>().Int32Value());
  double* out = nullptr;
  size_t n = 0;
  if (!ep || !Typed(info[1], napi_float64_array, &out, &n) || n < 10) return Napi::Boolean::New(env, false);
  out[0] = ep->xacts;
  out[1] = ep->server ? ep->queries : ep->queryCount;
  out[2] = ep->errors;
  out[3] = ep->bytesSent;
  out[4] = ep->bytesReceived;
  out[5] = ep->txStatus;
  out[6] = ep->syncs;
  out[7] = ep->unsynced ? 1 : 0;
  out[8] = static_cast<double>(ep->pendingOut());
  out[9] = ep->peer ? ep->peer->id : 0;
  return Napi::Boolean::New(env, true);
}

}  // namespace

void InitRelay(Napi::Env env, Napi::Object exports) {
  exports.Set("relayInit", Napi::Function::New(env, RelayInit, "relayInit"));
  exports.Set("relayAddClient", Napi::Function::New(env, RelayAddClient, "relayAddClient"));
  exports.Set("relayAddServer", Napi::Function::New(env, RelayAddServer, "relayAddServer"));
  exports.Set("relayLink", Napi::Function::New(env, RelayLink, "relayLink"));
  exports.Set("relayUnlink", Napi::Function::New(env, RelayUnlink, "relayUnlink"));
  exports.Set("relayWrite", Napi::Function::New(env, RelayWrite, "relayWrite"));
  exports.Set("relayClose", Napi::Function::New(env, RelayClose, "relayClose"));
  exports.Set("relayDestroy", Napi::Function::New(env, RelayDestroy, "relayDestroy"));
  exports.Set("relayWatchReady", Napi::Function::New(env, RelayWatchReady, "relayWatchReady"));
  exports.Set("relayInfo", Napi::Function::New(env, RelayInfo, "relayInfo"));
  exports.Set("relayReclaim", Napi::Function::New(env, RelayReclaim, "relayReclaim"));
}

}  // namespace tidepool
