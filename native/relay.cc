// N-API bindings of the pooler's byte relay (relay-engine.h): one relay per thread that starts one
// (the main thread), methods taking the ids the relay hands out.
#include "relay.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "relay-engine.h"
#include "relay-napi.h"

namespace tidepool {
namespace {

using relay::Endpoint;
using relay::NowUs;
using relay::Relay;


// ---- bindings: one relay per environment (the main thread's), created by relayInit ----

// Per thread: worker threads load the addon too but never start a relay.
thread_local Relay* tRelay = nullptr;

Relay* Get(const Napi::CallbackInfo& info) { return CurrentRelay(info); }

/** relayInit(onEvents(count), events: Int32Array, layout: Int32Array [qHist, xHist, qLog, xLog, logBuckets, parkable, sqlStates,
 *  sqlStateSlots], bounds: Float64Array, laneOut?: Float64Array) `laneOut`: where kRelease reports carry the lane's
 *  counts (Relay::EmitRelease). */
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
  // A login's group of events (kAccepted, kLoginOk, kLent) reaches JavaScript in one round (relay-events.cc): the
  // buffer must hold the longest group, or the flush could never hand it over.
  if (nEvents < 5 * relay::kLongestEventGroup) {
    Napi::RangeError::New(env, "relayInit: the events buffer must hold at least 3 events (15 Int32 slots)").ThrowAsJavaScriptException();
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
  r->layout_.qLog = layout[2];
  r->layout_.xLog = layout[3];
  r->layout_.logBuckets = layout[4];
  if (nLayout > 5) r->layout_.parkable = layout[5];
  if (nLayout > 7 && layout[6] >= 0 && layout[7] >= 0) {
    r->layout_.sqlStates = layout[6];
    r->layout_.sqlStateSlots = layout[7];
  }
  r->layout_.bounds.assign(bounds, bounds + nBounds);
  double* laneOut = nullptr;
  size_t nLaneOut = 0;
  if (info.Length() > 4 && Typed(info[4], napi_float64_array, &laneOut, &nLaneOut)) {
    napi_create_reference(env, info[4], 1, &r->laneOutRef_);
    r->laneOut_ = laneOut;
    r->laneOutCap_ = nLaneOut;
  }
  // The relay lives as long as the process; its handles are unref'd or belong to open sockets.
  tRelay = r;
  return Napi::Boolean::New(env, true);
}

/** relayAddClient(fd, stats: Float64Array, maxMessage, initial?: Uint8Array, divert?: boolean, app?: Float64Array(8),
 *  pinMask?: number) -> id; the fd is duplicated. `pinMask`: the kinds of session state (relay-state-scan.h) that keep
 *  a transaction-mode client on its server. */
Napi::Value RelayAddClient(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Relay* r = Get(info);
  if (!r) return env.Undefined();
  relay::ClientOptions opts;
  if (!info[0].IsNumber() || !ReadClientOptions(info, &opts)) {
    Napi::TypeError::New(env, "relayAddClient(fd, Float64Array, maxMessage, initial?, divert?, app?, pinMask?)").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  int fd = DupFd(info[0]);
  if (fd < 0) {
    Napi::Error::New(env, std::string("dup: ") + strerror(errno)).ThrowAsJavaScriptException();
    return env.Undefined();
  }
  Endpoint* c = r->Add(fd, false);
  ApplyClientOptions(info, r, c, opts);
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
  // divert: its pool rewrites prepared statements (a DISCARD ALL it answers unseen by the rewriter is reported).
  s->divert = info.Length() > 2 && info[2].IsBoolean() && info[2].As<Napi::Boolean>().Value();
  return Napi::Number::New(env, s->id);
}

/** relayTake(id) -> Uint8Array: the bytes held for JavaScript since the last take (see Endpoint::intercept). */
Napi::Value RelayTake(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Relay* r = Get(info);
  if (!r) return env.Undefined();
  const int32_t id = info.Length() > 0 && info[0].IsNumber() ? info[0].As<Napi::Number>().Int32Value() : 0;
  Endpoint* ep = r->Find(id);
  if (!ep) {
    auto it = r->orphans_.find(id);
    if (it == r->orphans_.end()) return Napi::Buffer<uint8_t>::New(env, 0);
    Napi::Buffer<uint8_t> out = Napi::Buffer<uint8_t>::Copy(env, reinterpret_cast<const uint8_t*>(it->second.data()), it->second.size());
    r->orphans_.erase(it);
    return out;
  }
  Napi::Buffer<uint8_t> out = Napi::Buffer<uint8_t>::Copy(env, reinterpret_cast<const uint8_t*>(ep->interceptIn.data()), ep->interceptIn.size());
  ep->interceptIn.clear();
  ep->dataQueued = false;
  // A login's reads stop while JavaScript has a lot to take (relay-tls.cc): they go on now.
  if (ep->login) r->UpdatePoll(ep);
  return out;
}

/** relayLink(client, server, transactionMode, lane?: Uint8Array, park?: boolean) -> false when either is gone. `lane`:
 *  the rewriter's table for this server (relay-lane.h); a client whose rewriter waits idle has its bytes sent through
 *  it. `park`: a client with nothing sent yet is linked parked, as between transactions (JavaScript reclaims the
 *  server whenever it needs it), so its first transaction goes to the server with no trip into JavaScript. */
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
  s->capture = false;
  if (c->paramFlags) {
    // Statements read while unlinked run on this server.
    if (s->paramText.size() + c->paramText.size() < relay::kParamTextMax) s->paramText += c->paramText;
    else if (!c->paramText.empty()) s->paramFlags |= 2;
    s->paramFlags |= c->paramFlags;
    c->paramText.clear();
    c->paramFlags = 0;
  }
  c->transactionMode = info[2].ToBoolean().Value();
  c->needServerSent = false;
  c->xactStart = NowUs();
  // Query and transaction times are the server's: the time spent waiting for it counts as wait time.
  if (c->syncs > 0) c->syncStart = c->xactStart;
  uint8_t* table = nullptr;
  size_t tableLen = 0;
  if (info.Length() > 3 && Typed(info[3], napi_uint8_array, &table, &tableLen)) {
    c->lane.on = relay::LaneParseTable(table, tableLen, &c->lane.entries);
    c->lane.schemaGen = r->SchemaGen();
  }
  const bool nothingSent = c->pendingIn.empty() && c->syncs == 0 && !c->xactOpen && !c->intercept;
  if (c->pendingRaw > 0) {
    // Bytes from before the rewriter's first message: the server gets them first (JavaScript writes its own after).
    s->bytesSent += c->pendingRaw;
    r->Write(s, reinterpret_cast<const uint8_t*>(c->pendingIn.data()), c->pendingRaw);
    c->pendingIn.erase(0, c->pendingRaw);
    c->pendingRaw = 0;
  }
  if (!c->pendingIn.empty() && c->intercept) {
    std::string pending;
    pending.swap(c->pendingIn);
    const uint8_t* p = reinterpret_cast<const uint8_t*>(pending.data());
    if (!(c->atBoundary() && r->LaneSend(c, p, pending.size()))) r->LaneToJs(c, p, pending.size());
  } else if (!c->pendingIn.empty()) {
    // Written from the buffer and then cleared, which keeps its capacity for the next transaction.
    s->bytesSent += c->pendingIn.size();
    r->Write(s, reinterpret_cast<const uint8_t*>(c->pendingIn.data()), c->pendingIn.size());
    c->pendingIn.clear();
  }
  if (info.Length() > 4 && info[4].ToBoolean().Value() && c->transactionMode && nothingSent) r->MarkParked(c);
  if (c->fd >= 0) r->UpdatePoll(c);
  if (s->fd >= 0) r->UpdatePoll(s);
  return Napi::Boolean::New(env, true);
}

/** relayUnlink(client, laneIdle?) -> 1 clean, 0 not clean, -1 not linked. `laneIdle`: the client's rewriter owes
 *  nothing, so its next bytes may wait for the next link's lane table. */
Napi::Value RelayUnlink(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Relay* r = Get(info);
  if (!r) return env.Undefined();
  Endpoint* c = r->Find(info[0].As<Napi::Number>().Int32Value());
  if (!c || c->server || !c->peer) return Napi::Number::New(env, -1);
  if (info.Length() > 1 && c->intercept) c->laneIdle = info[1].ToBoolean().Value();
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

/** relayRelease(id) -> { fd, pending } | undefined: a server between transactions (pending always empty), or a client
 *  between transactions, leaves the relay without a word to
 *  it (a pooler takeover moves it to the next process, src/pooler/takeover-clients.ts): a duplicate of its descriptor,
 *  the caller's to close, and the bytes it sent that no server got (they begin at a message boundary). Only an
 *  unlinked plaintext client with nothing unsent and nothing held for JavaScript; undefined otherwise (it stays). The
 *  endpoint goes without an event, and closing it leaves the connection open: the duplicate holds it. */
Napi::Value RelayRelease(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Relay* r = Get(info);
  if (!r || info.Length() < 1 || !info[0].IsNumber()) return env.Undefined();
  Endpoint* c = r->Find(info[0].As<Napi::Number>().Int32Value());
  if (c && c->server) {
    // A server moves only unlinked, not lent, plaintext, idle (ReadyForQuery 'I'), between whole messages, with nothing
    // unsent, nothing held for JavaScript and no ReadyForQuery awaited: its session is then exactly what JavaScript
    // knows of it (src/pooler/takeover-servers.ts).
    if (c->fd < 0 || c->dead || c->closing || c->peer || c->lend || c->ssl || c->wantReady || !c->between() ||
        !c->atBoundary() || c->pendingOut() > 0 || !c->interceptIn.empty() || c->dataQueued || !c->pendingIn.empty())
      return env.Undefined();
    const int sfd = fcntl(c->fd, F_DUPFD_CLOEXEC, 0);
    if (sfd < 0) return env.Undefined();
    Napi::Object out = Napi::Object::New(env);
    out.Set("fd", Napi::Number::New(env, sfd));
    out.Set("pending", Napi::Buffer<uint8_t>::New(env, 0));
    c->dead = true;
    r->Destroy(c);
    return out;
  }
  if (!c || c->server || c->fd < 0 || c->dead || c->closing || c->stopped || c->login || c->exchange || c->ssl ||
      c->peer || c->relayOnly || c->switchPending || c->pendingOut() > 0 || !c->interceptIn.empty() ||
      c->dataQueued || !c->tlsPlainOut.empty())
    return env.Undefined();
  const int fd = fcntl(c->fd, F_DUPFD_CLOEXEC, 0);
  if (fd < 0) return env.Undefined();
  Napi::Object out = Napi::Object::New(env);
  out.Set("fd", Napi::Number::New(env, fd));
  out.Set("pending", Napi::Buffer<uint8_t>::Copy(env, reinterpret_cast<const uint8_t*>(c->pendingIn.data()), c->pendingIn.size()));
  c->dead = true;
  r->Destroy(c);
  return out;
}

/** relayReleasePair(client) -> { fd, serverFd, toClient, pinned } | undefined: a client linked to its server between
 *  transactions (session mode, or pinned: src/pooler/session-state/pins.ts) leaves the relay with that server, for a
 *  takeover to move the pair to the next process (src/pooler/takeover-clients.ts): duplicates of both descriptors,
 *  the caller's to close, the bytes read from the server that the client has not been sent yet (whole messages:
 *  the new process writes them to the client first) and the kinds of session state the client is pinned for. Only
 *  plaintext, with the server idle (ReadyForQuery 'I'), both streams between whole messages, no sync point in
 *  flight, nothing unsent to the server and nothing held for JavaScript; undefined otherwise (both stay). Both
 *  endpoints go without an event, and the connections stay open: the duplicates hold them. */
Napi::Value RelayReleasePair(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Relay* r = Get(info);
  if (!r || info.Length() < 1 || !info[0].IsNumber()) return env.Undefined();
  Endpoint* c = r->Find(info[0].As<Napi::Number>().Int32Value());
  if (!c || c->server || !c->peer) return env.Undefined();
  Endpoint* s = c->peer;
  if (c->fd < 0 || c->dead || c->closing || c->stopped || c->login || c->exchange || c->ssl || c->relayOnly ||
      c->transactionMode || c->parked || c->switchPending || !c->pendingIn.empty() || !c->interceptIn.empty() ||
      c->dataQueued || !c->tlsPlainOut.empty() || !c->atBoundary() || c->syncs != 0 || c->unsynced || c->copyIn ||
      !c->lane.groups.empty() || c->lane.held)
    return env.Undefined();
  if (s->fd < 0 || s->dead || s->closing || s->lend || s->ssl || s->wantReady || !s->between() || !s->atBoundary() ||
      s->pendingOut() > 0 || !s->interceptIn.empty() || s->dataQueued)
    return env.Undefined();
  const int cfd = fcntl(c->fd, F_DUPFD_CLOEXEC, 0);
  if (cfd < 0) return env.Undefined();
  const int sfd = fcntl(s->fd, F_DUPFD_CLOEXEC, 0);
  if (sfd < 0) {
    close(cfd);
    return env.Undefined();
  }
  Napi::Object out = Napi::Object::New(env);
  out.Set("fd", Napi::Number::New(env, cfd));
  out.Set("serverFd", Napi::Number::New(env, sfd));
  out.Set("toClient", Napi::Buffer<uint8_t>::Copy(env, reinterpret_cast<const uint8_t*>(c->out.data()) + c->outOff,
                                                   c->pendingOut()));
  out.Set("pinned", Napi::Number::New(env, c->pinned));
  c->peer = nullptr;
  s->peer = nullptr;
  c->dead = true;
  s->dead = true;
  r->Destroy(c);
  r->Destroy(s);
  return out;
}

/** relaySetPinned(client, kinds): a linked client a takeover moved here pinned (relayReleasePair on the old process)
 *  is pinned for `kinds` again, as PinAtEnd left it there: the pair splits once its texts clear them all. */
Napi::Value RelaySetPinned(const Napi::CallbackInfo& info) {
  Relay* r = Get(info);
  if (!r || info.Length() < 2 || !info[0].IsNumber() || !info[1].IsNumber()) return info.Env().Undefined();
  Endpoint* c = r->Find(info[0].As<Napi::Number>().Int32Value());
  const uint32_t kinds = info[1].As<Napi::Number>().Uint32Value() & 0xff;
  if (c && !c->server && c->peer && kinds != 0 && c->pinMask != 0) {
    c->pinned = kinds & c->pinMask;
    c->transactionMode = c->pinned == 0;
    c->parked = false;
  }
  return Napi::Boolean::New(info.Env(), c != nullptr);
}

/** relayWatchReady(server): report the next ReadyForQuery of this unlinked server (SERVER_READY). */
Napi::Value RelayWatchReady(const Napi::CallbackInfo& info) {
  Relay* r = Get(info);
  if (!r) return info.Env().Undefined();
  Endpoint* s = r->Find(info[0].As<Napi::Number>().Int32Value());
  if (s && s->server && !s->peer) {
    s->wantReady = true;
    s->sawError = false;
    s->capture = info.Length() > 1 && info[1].ToBoolean().Value();
    if (s->capture) s->interceptIn.clear();
  }
  return Napi::Boolean::New(info.Env(), s != nullptr);
}

/** relayParams(server) -> Uint8Array | undefined: undefined, or the flags byte of Endpoint::paramFlags followed by the
 *  NUL-separated statement texts gathered since the last call (which clears them). */
Napi::Value RelayParams(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Relay* r = Get(info);
  if (!r) return env.Undefined();
  Endpoint* ep = r->Find(info.Length() > 0 && info[0].IsNumber() ? info[0].As<Napi::Number>().Int32Value() : 0);
  if (!ep || ep->paramFlags == 0) return env.Undefined();  // every release asks: no allocation when nothing
  Napi::Buffer<uint8_t> out = Napi::Buffer<uint8_t>::New(env, 1 + ep->paramText.size());
  out.Data()[0] = ep->paramFlags;
  if (!ep->paramText.empty()) std::memcpy(out.Data() + 1, ep->paramText.data(), ep->paramText.size());
  ep->paramText.clear();
  ep->paramFlags = 0;
  return out;
}

/** relayReclaim(stats: Float64Array, out: Int32Array, skipRelayOnly?: boolean) -> n: splits every parked pair of the
 *  pool that counts into `stats` (but relay-only clients' with skipRelayOnly) and writes the clients' ids to `out` (at
 *  most its length). */
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
  const bool skipRelayOnly = info.Length() > 2 && info[2].ToBoolean().Value();
  size_t n = 0;
  for (auto it = r->parked_.begin(); it != r->parked_.end();) {
    Endpoint* ep = *it;
    if (!ep->parked || ep->dead || ep->server) {
      it = r->parked_.erase(it);
      continue;
    }
    if (n >= nOut) break;
    if (ep->stats != stats || (skipRelayOnly && ep->relayOnly)) {
      ++it;
      continue;
    }
    r->Unlink(ep);
    out[n++] = ep->id;
    it = r->parked_.erase(it);
  }
  return Napi::Number::New(env, static_cast<double>(n));
}

/** relayInfo(id, out: Float64Array(13)) -> false when gone. out: transactions, queries, errors, bytes sent,
 *  bytes received, tx status, syncs, unsynced, pending out, linked peer id, transaction time (us), age of the
 *  query in flight (us, 0 when none), age of the transaction under way (us, 0 when none). */
Napi::Value RelayInfo(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Relay* r = Get(info);
  if (!r) return env.Undefined();
  Endpoint* ep = r->Find(info[0].As<Napi::Number>().Int32Value());
  double* out = nullptr;
  size_t n = 0;
  if (!ep || !Typed(info[1], napi_float64_array, &out, &n) || n < 13) return Napi::Boolean::New(env, false);
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
  out[10] = ep->xactTimeUs;
  const double now = NowUs();
  out[11] = !ep->server && ep->syncs > 0 ? now - ep->syncStart : 0;
  out[12] = !ep->server && ep->xactOpen ? now - ep->xactStart : 0;
  return Napi::Boolean::New(env, true);
}

}  // namespace

bool ReadClientOptions(const Napi::CallbackInfo& info, relay::ClientOptions* o) {
  size_t n = 0;
  if (info.Length() < 3 || !Typed(info[1], napi_float64_array, &o->stats, &n) || !info[2].IsNumber()) return false;
  o->maxMessage = static_cast<uint32_t>(info[2].As<Napi::Number>().Int64Value());
  o->divert = info.Length() > 4 && info[4].IsBoolean() && info[4].As<Napi::Boolean>().Value();
  size_t nApp = 0;
  if (!(info.Length() > 5 && Typed(info[5], napi_float64_array, &o->app, &nApp) && nApp >= 8)) o->app = nullptr;
  if (info.Length() > 6 && info[6].IsNumber()) o->pinMask = info[6].As<Napi::Number>().Uint32Value();
  if (info.Length() > 7 && info[7].IsNumber()) o->queryPool = info[7].As<Napi::Number>().Int32Value();
  return true;
}

void ApplyClientOptions(const Napi::CallbackInfo& info, Relay* r, Endpoint* c, relay::ClientOptions o) {
  o.statsHold = std::make_shared<const relay::ArrayRef>(info.Env(), info[1]);
  if (o.app) o.appHold = std::make_shared<const relay::ArrayRef>(info.Env(), info[5]);
  r->Configure(c, o);
}

int DupFd(const Napi::Value& v) {
  int fd = v.As<Napi::Number>().Int32Value();
  int copy = fcntl(fd, F_DUPFD_CLOEXEC, 3);
  if (copy < 0) return -1;
  int fl = fcntl(copy, F_GETFL);
  if (!(fl & O_NONBLOCK)) fcntl(copy, F_SETFL, fl | O_NONBLOCK);
  return copy;
}

relay::Relay* CurrentRelay(const Napi::CallbackInfo& info) {
  Relay* r = tRelay;
  if (!r) Napi::Error::New(info.Env(), "relayInit was not called").ThrowAsJavaScriptException();
  return r;
}

/** relayPollHandles() -> poll handles made so far (a closed descriptor's handle serves the next socket on its number). */
Napi::Value RelayPollHandles(const Napi::CallbackInfo& info) {
  Relay* r = Get(info);
  if (!r) return info.Env().Undefined();
  return Napi::Number::New(info.Env(), r->pollHandlesMade_);
}

/** relayClosingClients() -> client sockets JavaScript closed that are still open: their last bytes (a FATAL) are sent
 *  or on the way, and the relay discards what they send until their EOF (CloseGracefully). A process that exits
 *  before would reset them, and a reset can drop that FATAL before the client reads it. */
Napi::Value RelayClosingClients(const Napi::CallbackInfo& info) {
  Relay* r = Get(info);
  if (!r) return info.Env().Undefined();
  double n = 0;
  for (const auto& [id, ep] : r->byId_) {
    if (!ep->server && ep->closing && ep->fd >= 0) n++;
  }
  return Napi::Number::New(info.Env(), n);
}

void InitRelay(Napi::Env env, Napi::Object exports) {
  exports.Set("relayPollHandles", Napi::Function::New(env, RelayPollHandles, "relayPollHandles"));
  exports.Set("relayClosingClients", Napi::Function::New(env, RelayClosingClients, "relayClosingClients"));
  exports.Set("relayInit", Napi::Function::New(env, RelayInit, "relayInit"));
  exports.Set("relayAddClient", Napi::Function::New(env, RelayAddClient, "relayAddClient"));
  exports.Set("relayAddServer", Napi::Function::New(env, RelayAddServer, "relayAddServer"));
  exports.Set("relayLink", Napi::Function::New(env, RelayLink, "relayLink"));
  exports.Set("relayUnlink", Napi::Function::New(env, RelayUnlink, "relayUnlink"));
  exports.Set("relayWrite", Napi::Function::New(env, RelayWrite, "relayWrite"));
  exports.Set("relayClose", Napi::Function::New(env, RelayClose, "relayClose"));
  exports.Set("relayDestroy", Napi::Function::New(env, RelayDestroy, "relayDestroy"));
  exports.Set("relayRelease", Napi::Function::New(env, RelayRelease, "relayRelease"));
  exports.Set("relayReleasePair", Napi::Function::New(env, RelayReleasePair, "relayReleasePair"));
  exports.Set("relaySetPinned", Napi::Function::New(env, RelaySetPinned, "relaySetPinned"));
  exports.Set("relayWatchReady", Napi::Function::New(env, RelayWatchReady, "relayWatchReady"));
  exports.Set("relayInfo", Napi::Function::New(env, RelayInfo, "relayInfo"));
  exports.Set("relayReclaim", Napi::Function::New(env, RelayReclaim, "relayReclaim"));
  exports.Set("relayTake", Napi::Function::New(env, RelayTake, "relayTake"));
  exports.Set("relayParams", Napi::Function::New(env, RelayParams, "relayParams"));
  InitRelayLane(env, exports);
  InitRelayScan(env, exports);
  InitRelayStateScan(env, exports);
  InitQueryStats(env, exports);
  InitRelayTls(env, exports);
  InitRelayLogin(env, exports);
  InitRelayAuth(env, exports);
  InitRelayLend(env, exports);
}

}  // namespace tidepool
