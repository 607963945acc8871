// The relay engine: endpoints, polling, writing with backpressure, events to JavaScript, linking and closing.
// See relay-engine.h for the design; reading and the protocol scan are in relay-stream.cc.
#include "relay-engine.h"

#include <errno.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cstring>

#include <openssl/ssl.h>

#include "relay-auth.h"

namespace tidepool {
namespace relay {

double NowUs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

Relay::Relay(napi_env env, uv_loop_t* loop) : env_(env), loop_(loop) {
  uv_check_init(loop_, &check_);
  check_.data = this;
  uv_check_start(&check_, [](uv_check_t* h) {
    Relay* r = static_cast<Relay*>(h->data);
    r->Flush();
    r->Bury();
  });
  uv_unref(reinterpret_cast<uv_handle_t*>(&check_));
  readBuf_.resize(kCarryMax + kReadSize);
  tlsIn_.resize(kReadSize);
}

Endpoint* Relay::Find(int32_t id) {
  auto it = byId_.find(id);
  return it == byId_.end() ? nullptr : it->second;
}

Endpoint* Relay::Add(int fd, bool server) {
  auto* ep = new Endpoint();
  ep->relay = this;
  // Past the last id the count starts over, skipping ids still in use: an endpoint that outlived a billion others
  // keeps its id to itself.
  do {
    ep->id = nextId_++;
    if (nextId_ >= kCancelPidBit) nextId_ = 1;
  } while (byId_.count(ep->id) != 0);
  ep->fd = fd;
  ep->server = server;
  // A stopped handle left by the descriptor's last holder (Destroy) saves uv_poll_init's check of the descriptor
  // (an epoll add and delete) and its ioctl: a connection per transaction pays for neither.
  uv_poll_t* h = nullptr;
  if (static_cast<size_t>(fd) < spare_.size()) std::swap(h, spare_[fd]);
  if (!h) {
    h = new uv_poll_t;
    uv_poll_init(loop_, h, fd);
    pollHandlesMade_++;
  }
  h->data = ep;
  ep->poll = h;
  byId_[ep->id] = ep;
  UpdatePoll(ep);
  return ep;
}

void Relay::Configure(Endpoint* c, const ClientOptions& o) {
  c->maxMessage = o.maxMessage;
  c->stats = o.stats;
  c->statsHold = o.statsHold;
  c->app = o.app;
  c->appHold = o.appHold;
  c->divert = o.divert;
  c->pinMask = o.pinMask;
  c->queryPool = o.queryPool;
  c->xactStart = NowUs();
}

bool Relay::WantRead(Endpoint* ep) const {
  if (ep->dead && !ep->closing) return false;
  if (ep->stopped) return false;
  if (ep->closing) return true;  // discard until EOF
  if (ep->login && ep->interceptIn.size() > kHighWater) return false;  // until JavaScript takes them
  if (ep->peer && ep->peer->pendingOut() > kHighWater) return false;
  if (!ep->server && !ep->peer && ep->pendingIn.size() > kHighWater) return false;
  return true;
}

void Relay::UpdatePoll(Endpoint* ep) {
  if (ep->fd < 0) return;
  int want = (WantRead(ep) ? UV_READABLE : 0) | (ep->pendingOut() > 0 ? UV_WRITABLE : 0);
  if (want == ep->events && (want != 0) == ep->pollActive) return;
  ep->events = want;
  if (want == 0) {
    uv_poll_stop(ep->poll);
    ep->pollActive = false;
  } else {
    uv_poll_start(ep->poll, want, OnPoll);
    ep->pollActive = true;
  }
}

void Relay::OnPoll(uv_poll_t* h, int status, int events) {
  auto* ep = static_cast<Endpoint*>(h->data);
  if (!ep || ep->fd < 0) return;
  Relay* r = ep->relay;
  if (status < 0) {
    r->Lost(ep, 1);
    return;
  }
  if (events & UV_WRITABLE) {
    if (!r->FlushOut(ep)) return;
  }
  if ((events & UV_READABLE) && ep->fd >= 0) {
    if (ep->ssl) r->OnTlsReadable(ep);
    else r->OnReadable(ep);
  }
}

bool Relay::Write(Endpoint* ep, const uint8_t* data, size_t len) {
  if (ep->ssl) return TlsWrite(ep, data, len);
  return RawWrite(ep, data, len);
}

bool Relay::RawWrite(Endpoint* ep, const uint8_t* data, size_t len) {
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
bool Relay::FlushOut(Endpoint* ep) {
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

void Relay::LoginBytes(Endpoint* ep, const uint8_t* buf, size_t len) {
  // A held login (relay-lend.cc Hold) is reported at its first bytes, and JavaScript adopts it and takes them; a
  // Terminate alone ends it here, unreported.
  if (ep->relayOnly && ep->interceptIn.empty()) {
    if (len == 5 && buf[0] == 'X' && ReadU32(buf + 1) == 4) return CloseClient(ep, 1);
    Materialize(ep);
  }
  if (ep->exchange) {
    NativeLogin(ep, buf, len);
    return;
  }
  ep->interceptIn.append(reinterpret_cast<const char*>(buf), len);
  if (!ep->dataQueued) {
    ep->dataQueued = true;
    Emit(kLoginData, ep->id);
  }
  if (ep->interceptIn.size() > kHighWater) UpdatePoll(ep);
}

void Relay::Unlink(Endpoint* c) {
  Endpoint* s = c->peer;
  c->parked = false;
  if (c->switchPending) {
    // The server is gone mid-message or the pair is split: JavaScript gets the diverted bytes now.
    c->switchPending = false;
    if (!c->dataQueued) {
      c->dataQueued = true;
      Emit(kClientData, c->id, c->pendingEarlier);
    }
  }
  // The lane's table was for this server; bytes it held for JavaScript go now.
  c->lane.on = false;
  c->lane.groups.clear();
  if (c->lane.held) {
    c->lane.held = false;
    if (!c->dataQueued && !c->interceptIn.empty()) {
      c->dataQueued = true;
      Emit(kClientData, c->id, -1, 0, 0);
    }
  }
  if (!s) return;
  c->peer = nullptr;
  s->peer = nullptr;
  UpdatePoll(c);
  UpdatePoll(s);
}

bool Relay::Clean(Endpoint* c, Endpoint* s) const {
  return s->between() && c->syncs == 0 && !c->unsynced && s->atBoundary() && c->remaining == 0;
}

/** A socket failed or reached EOF (reason 0 eof, 1 error, 2 malformed from a server). */
void Relay::Lost(Endpoint* ep, int reason) {
  if (ep->dead) {
    Destroy(ep);
    return;
  }
  if (ep->server) {
    Endpoint* c = ep->peer;
    bool boundary = ep->atBoundary();
    bool parked = c && c->parked;
    if (c) Unlink(c);
    // at boundary: 1; 2 when the pair was parked (the client is between transactions and lives on); 3 when PostgreSQL's
    // own FATAL was the last thing the client got (it says why the connection ends).
    const int how = parked ? 2 : !boundary ? 0 : c && ep->toldClient ? 3 : 1;
    Emit(kServerClosed, ep->id, c ? c->id : 0, how, reason);
    if (!ep->interceptIn.empty()) orphans_[ep->id].swap(ep->interceptIn);
  } else {
    CloseClient(ep, reason == 0 ? 0 : reason == kCloseTls ? kCloseTls : 2);
    return;
  }
  Destroy(ep);
}

void Relay::CloseClient(Endpoint* c, int reason) {
  if (c->exchange && NativeLoginGone(c)) return;
  if (c->relayOnly && CloseLent(c)) return;
  Endpoint* s = c->peer;
  bool clean = s ? Clean(c, s) : true;
  if (s) Unlink(c);
  Emit(kClientClosed, c->id, reason, s ? s->id : 0, clean ? 1 : 0);
  if (!c->interceptIn.empty()) orphans_[c->id].swap(c->interceptIn);
  // The lane's counts, for relayLaneTake after the close report.
  if (!c->lane.entries.empty() || c->lane.parseHits > 0) {
    if (laneOrphans_.size() >= 4096) laneOrphans_.clear();  // never taken: statistics only, keep it bounded
    laneOrphans_[c->id] = std::move(c->lane);
  }
  Destroy(c);
}

/** Stops polling and closes the descriptor; the memory goes at the end of this loop iteration (Bury), as callers
 *  up the stack may still look at the endpoint. */
void Relay::Destroy(Endpoint* ep) {
  parked_.erase(ep);
  lentClients_.erase(ep);
  if (ep->fd < 0) return;
  if (ep->lend) DropLend(ep);
  if (ep->relayOnly) {
    // Not through CloseClient: JavaScript hears of the client, and of its close, all the same.
    Materialize(ep);
    Emit(kClientClosed, ep->id, 2, 0, 0);
  }
  if (ep->peer) {
    ep->peer->peer = nullptr;
    UpdatePoll(ep->peer);
    ep->peer = nullptr;
  }
  byId_.erase(ep->id);
  ep->dead = true;
  const int fd = ep->fd;
  ep->fd = -1;
  ep->carryLen = 0;
  ep->out.clear();
  ep->outOff = 0;
  ep->pendingIn.clear();
  ep->pendingRaw = 0;
  // Stopped before the descriptor closes: libuv drops its events still pending in this iteration, and the handle
  // waits, stopped, for the next socket that gets the same descriptor number (Add).
  uv_poll_t* h = ep->poll;
  ep->poll = nullptr;
  h->data = nullptr;
  if (ep->pollActive) uv_poll_stop(h);
  ep->pollActive = false;
  ep->events = 0;
  close(fd);
  const size_t n = static_cast<size_t>(fd);
  if (n < kSpareHandles) {
    if (spare_.size() <= n) spare_.resize(n + 1, nullptr);
    spare_[n] = h;
  } else {
    uv_close(reinterpret_cast<uv_handle_t*>(h), [](uv_handle_t* closed) { delete reinterpret_cast<uv_poll_t*>(closed); });
  }
  graveyard_.push_back(ep);
}

void Relay::Bury() {
  for (Endpoint* e : graveyard_) {
    if (e->ssl) SSL_free(e->ssl);  // its BIOs with it
    if (e->exchange) DeleteExchange(e->exchange);
    delete e;  // its holds on the stats arrays with it
  }
  graveyard_.clear();
}

/** JavaScript closes: pending output is sent, writes are shut down, reads discarded until EOF. */
void Relay::CloseGracefully(Endpoint* ep) {
  if (ep->peer) Unlink(ep->server ? ep->peer : ep);
  ep->dead = true;  // no more events; stays findable for a forced Destroy
  ep->closing = true;
  ep->stopped = false;
  ep->pendingIn.clear();
  ep->pendingRaw = 0;
  if (ep->ssl) {
    TlsShutdown(ep);
    if (ep->fd < 0) return;
  }
  if (ep->pendingOut() == 0) {
    shutdown(ep->fd, SHUT_WR);
    ep->shutDown = true;
  }
  UpdatePoll(ep);
}

}  // namespace relay
}  // namespace tidepool
