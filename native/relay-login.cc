// The pooler's listening socket run by the relay: clients are accepted here, start as endpoints in login mode (their
// bytes go to JavaScript, which runs the startup and the password exchange and answers through relayWrite), and are
// relayed on the same endpoint once JavaScript adopts them (relayAdopt). No Node socket is ever made for them.
//
// JavaScript opens the socket with net.Server (address resolution, port 0, errors), hands a duplicate of its
// descriptor here (relayListen) and closes its own server; each accepted client is reported as kAccepted (port,
// family, IPv4 address; relayPeer names an IPv6 one). relayUnlisten stops accepting (shutdown); relayListenerFd names the descriptor a takeover passes on.
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "relay-auth.h"
#include "relay-engine.h"
#include "relay-napi.h"

namespace tidepool {
namespace relay {

/** The listening socket, its poll and the pause after a failed accept (no descriptors left, say). */
struct Listener {
  Relay* relay = nullptr;
  int32_t id = 0;
  int fd = -1;
  uv_poll_t poll;
  uv_timer_t retry;
  bool noDelay = true;
  int keepAliveSecs = 0;
  // Linux gives an accepted socket the listening socket's TCP_NODELAY and keepalive settings: set there once (see
  // RelayListen), they cost no system call per client. -1 until the first client shows whether they came along.
  int inherited = -1;
  bool closing = false;
  int open = 2;  // handles not yet closed (poll, retry): the memory goes with the last
  // The logins the relay runs itself (relay-auth.cc), null when JavaScript runs every login.
  std::shared_ptr<const AuthTable> auth;
  // A descriptor held in reserve (/dev/null): with none left (EMFILE), it is closed to accept the waiting client and
  // close it at once, so the queue drains instead of filling up while every new client hangs (libuv does the same
  // for net.Server). -1 when it could not be opened again yet.
  int spare = -1;
  // Clients accepted and closed that way, taken by relayAcceptRefused.
  double refused = 0;
};

bool SetListenerAuth(Relay* r, int32_t listener, std::shared_ptr<const AuthTable> table) {
  auto it = r->listeners_.find(listener);
  if (it == r->listeners_.end()) return false;
  it->second->auth = std::move(table);
  return true;
}

namespace {

/** Clients accepted per readiness report: the rest wait for the next loop iteration, so the relayed clients are
 *  served between bursts of connections. */
constexpr int kAcceptBurst = 64;

void OnListenPoll(uv_poll_t* h, int status, int events);

void Resume(uv_timer_t* t) {
  auto* l = static_cast<Listener*>(t->data);
  if (!l->closing) uv_poll_start(&l->poll, UV_READABLE, OnListenPoll);
}

void SetSocketOptions(const Listener* l, int fd) {
  const int one = 1;
  if (l->noDelay) setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (l->keepAliveSecs > 0) {
    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &l->keepAliveSecs, sizeof l->keepAliveSecs);
  }
}

bool HasOption(int fd, int level, int name, int want) {
  int v = 0;
  socklen_t len = sizeof v;
  return getsockopt(fd, level, name, &v, &len) == 0 && (want ? v == want : v == 0);
}

void ConfigureClient(Listener* l, int fd) {
  if (l->inherited == 1) return;
  if (l->inherited == -1) {
    bool same = HasOption(fd, IPPROTO_TCP, TCP_NODELAY, l->noDelay ? 1 : 0);
    if (l->keepAliveSecs > 0) same = same && HasOption(fd, SOL_SOCKET, SO_KEEPALIVE, 1) && HasOption(fd, IPPROTO_TCP, TCP_KEEPIDLE, l->keepAliveSecs);
    l->inherited = same ? 1 : 0;
    if (same) return;
  }
  SetSocketOptions(l, fd);
}

void OnListenPoll(uv_poll_t* h, int status, int) {
  auto* l = static_cast<Listener*>(h->data);
  Relay* r = l->relay;
  if (l->closing || status < 0) return;
  for (int i = 0; i < kAcceptBurst; i++) {
    sockaddr_storage addr;
    socklen_t addrLen = sizeof addr;
    const int fd = accept4(l->fd, reinterpret_cast<sockaddr*>(&addr), &addrLen, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      if ((errno == EMFILE || errno == ENFILE) && l->spare >= 0) {
        close(l->spare);
        l->spare = -1;
        const int victim = accept4(l->fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (victim >= 0) {
          close(victim);
          l->refused++;
        }
        l->spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (victim >= 0) continue;
      }
      // EMFILE, ENFILE, ENOBUFS...: the pending connection stays queued; accepting resumes after a pause instead of
      // spinning on a socket that stays readable.
      uv_poll_stop(&l->poll);
      uv_timer_start(&l->retry, Resume, 100, 0);
      return;
    }
    ConfigureClient(l, fd);
    Endpoint* c = r->Add(fd, false);
    c->login = true;
    c->acceptedAt = uv_now(r->loop_);
    int32_t port = 0, v4 = 0;
    bool isV4 = false;
    if (addr.ss_family == AF_INET) {
      const auto* a = reinterpret_cast<const sockaddr_in*>(&addr);
      port = ntohs(a->sin_port);
      isV4 = true;
      v4 = static_cast<int32_t>(ntohl(a->sin_addr.s_addr));
    } else if (addr.ss_family == AF_INET6) {
      port = ntohs(reinterpret_cast<const sockaddr_in6*>(&addr)->sin6_port);
    }
    if (l->auth) {
      // The relay runs the login (relay-auth.cc): JavaScript hears of the client when it is in, refused, or handed on.
      auto* x = new LoginExchange();
      x->table = l->auth;
      x->listener = l->id;
      x->port = port;
      x->isV4 = isV4;
      x->v4 = v4;
      x->acceptedAt = c->acceptedAt;
      c->exchange = x;
      l->auth->slots[2]++;
      if (RefuseIfFull(r, c)) continue;
    } else {
      r->Emit(kAccepted, c->id, port, (l->id << 1) | (isV4 ? 1 : 0), v4);
    }
    // The startup packet usually came with the connection: read it now rather than after another poll.
    r->OnReadable(c);
  }
}

void CloseListener(Listener* l) {
  l->closing = true;
  uv_timer_stop(&l->retry);
  auto closed = [](uv_handle_t* h) {
    auto* done = static_cast<Listener*>(h->data);
    if (--done->open > 0) return;
    close(done->fd);
    if (done->spare >= 0) close(done->spare);
    delete done;
  };
  uv_close(reinterpret_cast<uv_handle_t*>(&l->retry), closed);
  uv_close(reinterpret_cast<uv_handle_t*>(&l->poll), closed);
}

/** relayListen(fd, noDelay: boolean, keepAliveSecs: number, deferAcceptSecs?: number) -> listener id: the relay accepts
 *  clients on a duplicate of the listening descriptor `fd` from now on (the caller closes its own); kAccepted names the
 *  listener. deferAcceptSecs > 0 sets TCP_DEFER_ACCEPT on the listening socket (PgBouncer's tcp_defer_accept): the
 *  kernel wakes the relay for a client once its first bytes arrived (or after that many seconds), so the accept and
 *  the read of the startup packet take one wake-up instead of two. */
Napi::Value RelayListen(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Relay* r = CurrentRelay(info);
  if (!r) return env.Undefined();
  if (info.Length() < 3 || !info[0].IsNumber()) {
    Napi::TypeError::New(env, "relayListen(fd, noDelay, keepAliveSecs)").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  const int fd = DupFd(info[0]);
  if (fd < 0) {
    Napi::Error::New(env, std::string("dup: ") + strerror(errno)).ThrowAsJavaScriptException();
    return env.Undefined();
  }
  auto* l = new Listener();
  l->relay = r;
  l->id = r->nextListenerId_++;
  l->fd = fd;
  l->noDelay = info[1].ToBoolean().Value();
  l->keepAliveSecs = info[2].ToNumber().Int32Value();
  l->spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
  SetSocketOptions(l, fd);
  const int deferSecs = info.Length() > 3 && info[3].IsNumber() ? info[3].As<Napi::Number>().Int32Value() : 0;
  // Only ever set, never cleared: the socket is new, and a failure (not Linux) leaves the ordinary accept.
  if (deferSecs > 0) setsockopt(fd, IPPROTO_TCP, TCP_DEFER_ACCEPT, &deferSecs, sizeof deferSecs);
  uv_poll_init(r->loop_, &l->poll, fd);
  l->poll.data = l;
  uv_timer_init(r->loop_, &l->retry);
  l->retry.data = l;
  uv_unref(reinterpret_cast<uv_handle_t*>(&l->retry));
  uv_poll_start(&l->poll, UV_READABLE, OnListenPoll);
  r->listeners_[l->id] = l;
  return Napi::Number::New(env, l->id);
}

/** relayUnlisten(listener id): stops accepting there and closes the listening descriptor (connected clients stay). */
Napi::Value RelayUnlisten(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Relay* r = CurrentRelay(info);
  if (!r) return env.Undefined();
  auto it = info.Length() > 0 && info[0].IsNumber() ? r->listeners_.find(info[0].As<Napi::Number>().Int32Value()) : r->listeners_.end();
  if (it != r->listeners_.end()) {
    CloseListener(it->second);
    r->listeners_.erase(it);
  }
  return env.Undefined();
}

/** relayListenerFd(listener id) -> the listening descriptor the relay accepts on, -1 when there is none: a takeover
 *  (src/pooler/takeover.ts) passes it to the next process, then relayUnlisten closes this process's copy only. */
Napi::Value RelayListenerFd(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Relay* r = CurrentRelay(info);
  if (!r) return env.Undefined();
  auto it = info.Length() > 0 && info[0].IsNumber() ? r->listeners_.find(info[0].As<Napi::Number>().Int32Value()) : r->listeners_.end();
  return Napi::Number::New(env, it == r->listeners_.end() || it->second->closing ? -1 : it->second->fd);
}

/** relayPeer(id) -> the client's address as text ('' when unknown or gone): for IPv6 clients, which kAccepted does not
 *  carry. */
Napi::Value RelayPeer(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Relay* r = CurrentRelay(info);
  if (!r) return env.Undefined();
  Endpoint* c = info.Length() > 0 && info[0].IsNumber() ? r->Find(info[0].As<Napi::Number>().Int32Value()) : nullptr;
  if (!c || c->fd < 0) return Napi::String::New(env, "");
  sockaddr_storage addr;
  socklen_t len = sizeof addr;
  if (getpeername(c->fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return Napi::String::New(env, "");
  char text[INET6_ADDRSTRLEN] = "";
  if (addr.ss_family == AF_INET6) inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&addr)->sin6_addr, text, sizeof text);
  else if (addr.ss_family == AF_INET) inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&addr)->sin_addr, text, sizeof text);
  return Napi::String::New(env, text);
}

/** relayExpireLogins(listener id, timeoutMs) -> how many of the logins the relay runs there were closed for
 *  client_login_timeout (relay-auth.cc ExpireLogins). */
Napi::Value RelayExpireLogins(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Relay* r = CurrentRelay(info);
  if (!r) return env.Undefined();
  if (info.Length() < 2 || !info[0].IsNumber() || !info[1].IsNumber()) {
    Napi::TypeError::New(env, "relayExpireLogins(listener, timeoutMs)").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  const double ms = info[1].As<Napi::Number>().DoubleValue();
  if (!(ms > 0)) return Napi::Number::New(env, 0);
  return Napi::Number::New(env, ExpireLogins(r, info[0].As<Napi::Number>().Int32Value(), static_cast<uint64_t>(ms)));
}

/** relayAcceptedAge(id) -> milliseconds since the relay's listener accepted the client (-1: not one of its clients). */
Napi::Value RelayAcceptedAge(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Relay* r = CurrentRelay(info);
  if (!r) return env.Undefined();
  Endpoint* c = info.Length() > 0 && info[0].IsNumber() ? r->Find(info[0].As<Napi::Number>().Int32Value()) : nullptr;
  if (!c || c->acceptedAt == 0) return Napi::Number::New(env, -1);
  return Napi::Number::New(env, static_cast<double>(uv_now(r->loop_) - c->acceptedAt));
}

/** relayAcceptRefused(listener id) -> clients accepted and closed at once for want of descriptors since the last call. */
Napi::Value RelayAcceptRefused(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Relay* r = CurrentRelay(info);
  if (!r) return env.Undefined();
  auto it = info.Length() > 0 && info[0].IsNumber() ? r->listeners_.find(info[0].As<Napi::Number>().Int32Value()) : r->listeners_.end();
  if (it == r->listeners_.end()) return Napi::Number::New(env, 0);
  const double n = it->second->refused;
  it->second->refused = 0;
  return Napi::Number::New(env, n);
}

}  // namespace
}  // namespace relay

void InitRelayLogin(Napi::Env env, Napi::Object exports) {
  exports.Set("relayListen", Napi::Function::New(env, relay::RelayListen, "relayListen"));
  exports.Set("relayUnlisten", Napi::Function::New(env, relay::RelayUnlisten, "relayUnlisten"));
  exports.Set("relayPeer", Napi::Function::New(env, relay::RelayPeer, "relayPeer"));
  exports.Set("relayListenerFd", Napi::Function::New(env, relay::RelayListenerFd, "relayListenerFd"));
  exports.Set("relayExpireLogins", Napi::Function::New(env, relay::RelayExpireLogins, "relayExpireLogins"));
  exports.Set("relayAcceptedAge", Napi::Function::New(env, relay::RelayAcceptedAge, "relayAcceptedAge"));
  exports.Set("relayAcceptRefused", Napi::Function::New(env, relay::RelayAcceptRefused, "relayAcceptRefused"));
}

}  // namespace tidepool
