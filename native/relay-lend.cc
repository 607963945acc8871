// Lent servers and relay-only clients. JavaScript lends the relay idle servers of a transaction-mode pool
// (relayLend) together with the options it would give a client of that pool. A native login of that pool whose
// session parameters match a lent server's (`kind`: application_name and whether client_encoding was named) takes
// the server parked, as JavaScript's prelink would, and is not reported: it is relay-only. Its transactions go to
// the server with no JavaScript at all, and when it leaves between transactions (Terminate or EOF, nothing owed, no
// statement that may change a parameter, nothing pinned or diverted) the server goes back to the lent list and the
// login is only counted (the pooler's slots [4] and [5]).
//
// Anything else about such a client reports it first (Materialize): kAccepted, kLoginOk flagged lent and kLent,
// side by side, then the event. JavaScript materializes them itself (relayMaterialize) before it needs its pools'
// real state, and takes its lent servers back (relayUnlend).

#include <algorithm>
#include <cstring>
#include <map>
#include <vector>

#include "relay-auth.h"
#include "relay-engine.h"
#include "relay-napi.h"

namespace tidepool {
namespace relay {

bool Relay::Lend(Endpoint* c, int32_t entry, int32_t kind, const int32_t accepted[5], const int32_t ok[5], std::shared_ptr<const AuthTable> table) {
  if (lendable_.empty() || !table || !table->lending) return false;
  Endpoint* s = nullptr;
  // The most recently lent first (the end of the list), as the pool's idle stack gives its most recently used.
  for (size_t i = lendable_.size(); i-- > 0;) {
    Endpoint* e = lendable_[i];
    if (e->lend->owner != table->slots || e->lend->entry != entry || e->lend->kind != kind || e->dead || e->fd < 0 || e->peer) continue;
    // Not while its pool could not park (someone waits, PAUSE, RECONNECT...): JavaScript wants its servers back.
    if (layout_.parkable >= 0 && e->lend->opts.stats[layout_.parkable] != 1) continue;
    s = e;
    lendable_.erase(lendable_.begin() + static_cast<std::ptrdiff_t>(i));
    break;
  }
  if (!s) return false;
  LendInfo* l = s->lend;
  l->client = c;
  // What relayAdopt does, with the pool's options.
  c->login = false;
  if (c->exchange) {
    DeleteExchange(c->exchange);
    c->exchange = nullptr;
  }
  Configure(c, l->opts);  // the client shares the lent server's holds on the stats arrays
  c->interceptIn.clear();
  c->dataQueued = false;
  // What relayLink does for a prelinked client: parked, as between transactions.
  c->peer = s;
  s->peer = c;
  s->wantReady = false;
  s->capture = false;
  c->transactionMode = true;
  c->needServerSent = false;
  MarkParked(c);
  c->relayOnly = true;
  std::memcpy(c->held, accepted, 5 * sizeof(int32_t));
  std::memcpy(c->held + 5, ok, 5 * sizeof(int32_t));
  c->held[8] |= 2;
  c->lentServer = s;
  c->lentTable = std::move(table);
  c->lentTable->slots[4]++;
  relayOnly_++;
  lentClients_.insert(c);
  UpdatePoll(c);
  UpdatePoll(s);
  return true;
}

bool Relay::Hold(Endpoint* c, const AuthUser& u, const int32_t accepted[5], const int32_t ok[5], std::shared_ptr<const AuthTable> table) {
  if (!table || !table->holding || table->slots[6] != 1 || c->fd < 0) return false;
  // An idle server of the pool in JavaScript: JavaScript links it to this client at once (ClientSession.prelink), so
  // that its first query needs no trip into JavaScript. A server lent for another kind of login (another
  // application_name or client_encoding: Lend found none of this kind) does not stop the hold: a session's prelink
  // takes only JavaScript's idle servers, so the login would be a session with no server, for as long as that server
  // stays lent (all logins of a kind the pool's last clients were not). Its first query takes a lent one back
  // (Pool.findIdle).
  if (u.idle && u.idle[0] > 0) return false;
  // Still in login (relayAdopt takes it); its exchange is kept only for the ClientKey a SCRAM login proved
  // (relayLoginKey), without what the exchange no longer needs.
  LoginExchange* x = c->exchange;
  if (x && !x->hasClientKey) {
    DeleteExchange(x);
    c->exchange = nullptr;
  } else if (x) {
    std::string().swap(x->in);
    std::string().swap(x->clientFirstBare);
    std::string().swap(x->serverFirst);
    std::string().swap(x->nonce);
  }
  c->dataQueued = true;
  c->relayOnly = true;
  std::memcpy(c->held, accepted, 5 * sizeof(int32_t));
  std::memcpy(c->held + 5, ok, 5 * sizeof(int32_t));
  c->lentServer = nullptr;
  c->lentTable = std::move(table);
  c->lentTable->slots[4]++;
  relayOnly_++;
  return true;
}

void Relay::Materialize(Endpoint* c, int32_t* out) {
  if (!c->relayOnly) return;
  c->relayOnly = false;
  relayOnly_--;
  lentClients_.erase(c);
  int32_t* slots = c->lentTable->slots;
  slots[4]--;
  slots[3]++;  // reported: JavaScript counts it in [1]
  c->lentTable.reset();
  Endpoint* s = c->lentServer;
  c->lentServer = nullptr;
  int32_t server = 0;
  if (s && s->lend && s->lend->client == c) {
    // The server is JavaScript's again, as its client's.
    server = s->id;
    s->lend->client = nullptr;
    DropLend(s);
  }
  // A held login (Hold) was never lent a server: its kAccepted and kLoginOk as the relay would have sent them, then
  // JavaScript adopts it (relayAdopt); in `out` the third event's place is kind 0, which JavaScript skips.
  const bool lent = (c->held[8] & 2) != 0;
  int32_t group[5 * kLongestEventGroup];
  std::memcpy(group, c->held, 10 * sizeof(int32_t));
  group[10] = lent ? kLent : 0;
  group[11] = lent ? c->id : 0;
  group[12] = server;
  group[13] = 0;
  group[14] = 0;
  if (out) std::memcpy(out, group, sizeof group);
  else EmitGroup(group, lent ? kLongestEventGroup : 2);
}

void Relay::MaterializeFor(int32_t kind, int32_t a, int32_t b) {
  int32_t id = 0;
  switch (kind) {
    case kNeedServer:
    case kRelease:
    case kClientClosed:
    case kBadLength:
    case kClientData:
    case kPin:
      id = a;
      break;
    case kServerClosed:
    case kServerData:
      id = b;
      break;
    case kServerReady:
    case kServerDiscarded: {
      Endpoint* s = Find(a);
      if (s && s->peer) id = s->peer->id;
      break;
    }
    default:
      return;
  }
  if (id == 0) return;
  Endpoint* c = Find(id);
  if (c && c->relayOnly) Materialize(c);
}

bool Relay::CloseLent(Endpoint* c) {
  Endpoint* s = c->peer;
  if (!s && !c->lentServer && c->login && c->interceptIn.empty()) {
    // A held login leaving: counted, as a relay-only login that left unreported.
    c->relayOnly = false;
    relayOnly_--;
    int32_t* slots = c->lentTable->slots;
    slots[4]--;
    slots[5]++;
    c->lentTable.reset();
    Destroy(c);
    return true;
  }
  if (!s || s != c->lentServer || !s->lend || s->lend->client != c || s->dead || s->fd < 0) return false;
  // Someone waits for a server of the pool (or it is paused, draining...): JavaScript takes this one, through the report.
  if (layout_.parkable >= 0 && c->stats && c->stats[layout_.parkable] != 1) return false;
  if (!Clean(c, s) || s->paramFlags != 0 || !s->paramText.empty() || c->paramFlags != 0 || c->pinned != 0 || c->intercept ||
      c->switchPending || c->lane.held || !c->interceptIn.empty() || !c->pendingIn.empty() || s->pendingOut() > 0) {
    return false;
  }
  c->peer = nullptr;
  s->peer = nullptr;
  c->parked = false;
  c->relayOnly = false;
  relayOnly_--;
  lentClients_.erase(c);
  int32_t* slots = c->lentTable->slots;
  slots[4]--;
  slots[5]++;
  c->lentTable.reset();
  c->lentServer = nullptr;
  s->lend->client = nullptr;
  lendable_.push_back(s);
  UpdatePoll(s);
  Destroy(c);
  return true;
}

void Relay::DropLend(Endpoint* s) {
  LendInfo* l = s->lend;
  if (!l) return;
  if (l->client && l->client->relayOnly) {
    // A server going away under a relay-only client: JavaScript learns the client (with its server) first.
    Materialize(l->client);
    l = s->lend;
    if (!l) return;
  }
  s->lend = nullptr;
  for (size_t i = 0; i < lendable_.size(); i++) {
    if (lendable_[i] == s) {
      lendable_.erase(lendable_.begin() + static_cast<std::ptrdiff_t>(i));
      break;
    }
  }
  delete l;  // the arrays stay held while a client that took this server still uses them
}

}  // namespace relay

using relay::Endpoint;
using relay::Relay;

namespace {

/** A pool's stats block (or null: every pool) as info[0], and an Int32Array to write to as info[outAt]. */
struct PoolAndOut {
  bool all = false;
  double* stats = nullptr;
  int32_t* out = nullptr;
  size_t nOut = 0;
};

bool ReadPoolAndOut(const Napi::CallbackInfo& info, size_t outAt, PoolAndOut* a) {
  size_t nStats = 0;
  a->all = info.Length() > 0 && info[0].IsNull();
  if (!a->all && !Typed(info[0], napi_float64_array, &a->stats, &nStats)) return false;
  return info.Length() > outAt && Typed(info[outAt], napi_int32_array, &a->out, &a->nOut);
}

/** relayLend(server, entry, kind, stats: Float64Array, app: Float64Array(8) | null, pinMask, queryPool, divert,
 *  maxMessage, slots: Int32Array) -> false when the server cannot be lent (gone, linked, mid-transaction, parameters
 *  not taken). `slots`: the lending pooler's (relayAuthSet), whose logins of pool `entry` may take it. */
Napi::Value RelayLend(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Relay* r = CurrentRelay(info);
  if (!r) return env.Undefined();
  double* stats = nullptr;
  size_t n = 0;
  int32_t* owner = nullptr;
  size_t nOwner = 0;
  if (info.Length() < 10 || !info[0].IsNumber() || !Typed(info[3], napi_float64_array, &stats, &n) || !Typed(info[9], napi_int32_array, &owner, &nOwner)) {
    Napi::TypeError::New(env, "relayLend(server, entry, kind, Float64Array, app, pinMask, queryPool, divert, maxMessage, Int32Array)").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  Endpoint* s = r->Find(info[0].As<Napi::Number>().Int32Value());
  if (!s || !s->server || s->dead || s->fd < 0 || s->peer || s->lend || s->wantReady || !s->between() || s->pendingOut() > 0 ||
      s->paramFlags != 0 || !s->paramText.empty() || !s->interceptIn.empty()) {
    return Napi::Boolean::New(env, false);
  }
  auto* l = new relay::LendInfo();
  l->owner = owner;
  l->entry = info[1].As<Napi::Number>().Int32Value();
  l->kind = info[2].As<Napi::Number>().Int32Value();
  relay::ClientOptions& o = l->opts;
  o.stats = stats;
  o.statsHold = std::make_shared<const relay::ArrayRef>(env, info[3]);
  double* app = nullptr;
  size_t nApp = 0;
  if (Typed(info[4], napi_float64_array, &app, &nApp) && nApp >= 8) {
    o.app = app;
    o.appHold = std::make_shared<const relay::ArrayRef>(env, info[4]);
  }
  o.pinMask = info[5].As<Napi::Number>().Uint32Value();
  o.queryPool = info[6].As<Napi::Number>().Int32Value();
  o.divert = info[7].ToBoolean().Value();
  o.maxMessage = static_cast<uint32_t>(info[8].As<Napi::Number>().Int64Value());
  s->lend = l;
  r->lendable_.push_back(s);
  return Napi::Boolean::New(env, true);
}

/** relayUnlend(stats: Float64Array | null, out: Int32Array) -> n: takes back the lent servers no client uses (of the
 *  pool that counts into `stats`, or all) and writes their ids to `out` (at most its length). */
Napi::Value RelayUnlend(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Relay* r = CurrentRelay(info);
  if (!r) return env.Undefined();
  PoolAndOut a;
  if (!ReadPoolAndOut(info, 1, &a)) {
    Napi::TypeError::New(env, "relayUnlend(Float64Array | null, Int32Array)").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  size_t n = 0;
  // The most recently lent first: with a short `out`, the one the pool would have given last.
  for (size_t i = r->lendable_.size(); i-- > 0 && n < a.nOut;) {
    Endpoint* s = r->lendable_[i];
    if (!a.all && s->lend->opts.stats != a.stats) continue;
    a.out[n++] = s->id;
    r->DropLend(s);  // removes it from lendable_ (at i: the ones before it stay where they are)
  }
  return Napi::Number::New(env, static_cast<double>(n));
}

/** relayMaterialize(stats: Float64Array | null, id, out: Int32Array) -> ints written: reports relay-only clients (of the
 *  pool that counts into `stats`, or all; with id > 0 only that client) into `out`, 15 ints each (kAccepted,
 *  kLoginOk flagged lent, kLent), as many as fit. */
Napi::Value RelayMaterialize(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Relay* r = CurrentRelay(info);
  if (!r) return env.Undefined();
  PoolAndOut a;
  if (!info[1].IsNumber() || !ReadPoolAndOut(info, 2, &a)) {
    Napi::TypeError::New(env, "relayMaterialize(Float64Array | null, id, Int32Array)").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  const int32_t id = info[1].As<Napi::Number>().Int32Value();
  size_t n = 0;
  if (r->relayOnly_ == 0) return Napi::Number::New(env, 0);
  if (id > 0) {
    Endpoint* c = r->Find(id);
    if (c && c->relayOnly && a.nOut >= 15) {
      r->Materialize(c, a.out);
      n = 15;
    }
    return Napi::Number::New(env, static_cast<double>(n));
  }
  if (a.all) {
    for (auto& [cid, c] : r->byId_) {
      if (n + 15 > a.nOut) break;
      if (!c->relayOnly) continue;
      r->Materialize(c, a.out + n);
      n += 15;
    }
    return Napi::Number::New(env, static_cast<double>(n));
  }
  // One pool's: only clients on lent servers have its stats (a held login has none), and Materialize drops each from
  // the set, so the walk restarts after each.
  for (bool found = true; found && n + 15 <= a.nOut;) {
    found = false;
    for (Endpoint* c : r->lentClients_) {
      if (c->stats != a.stats) continue;
      r->Materialize(c, a.out + n);
      n += 15;
      found = true;
      break;
    }
  }
  return Napi::Number::New(env, static_cast<double>(n));
}

/** The held logins (Relay::Hold: relay-only, no server) of the pooler whose slots (relayAuthSet) are info[0]. */
bool HeldOf(const Napi::CallbackInfo& info, Relay* r, std::vector<Endpoint*>* out) {
  int32_t* slots = nullptr;
  size_t nSlots = 0;
  if (info.Length() < 1 || !Typed(info[0], napi_int32_array, &slots, &nSlots)) return false;
  if (r->relayOnly_ == 0) return true;
  for (auto& [id, c] : r->byId_) {
    if (c->relayOnly && !c->lentServer && !c->dead && c->lentTable && c->lentTable->slots == slots) out->push_back(c);
  }
  return true;
}

/** relayHeldCounts(slots: Int32Array, out: Int32Array) -> pairs: the pooler's held logins counted by pool entry and
 *  application_name id, written to `out` as (entry, app id, count) triples, as many as fit; the return value is how
 *  many pairs there are (a caller whose `out` was short asks again with a longer one). Reports nothing: a snapshot
 *  counts held logins with this without making them sessions. */
Napi::Value RelayHeldCounts(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Relay* r = CurrentRelay(info);
  if (!r) return env.Undefined();
  std::vector<Endpoint*> held;
  int32_t* out = nullptr;
  size_t nOut = 0;
  if (!HeldOf(info, r, &held) || info.Length() < 2 || !Typed(info[1], napi_int32_array, &out, &nOut)) {
    Napi::TypeError::New(env, "relayHeldCounts(Int32Array, Int32Array)").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  std::map<std::pair<int32_t, int32_t>, int32_t> counts;
  for (const Endpoint* c : held) counts[{c->held[7], c->held[8] >> 2}]++;
  size_t n = 0;
  for (const auto& [key, count] : counts) {
    if (n + 3 > nOut) break;
    out[n++] = key.first;
    out[n++] = key.second;
    out[n++] = count;
  }
  return Napi::Number::New(env, static_cast<double>(counts.size()));
}

/** Doubles per row of relayHeldRows. */
constexpr size_t kHeldRow = 8;

/** relayHeldRows(slots: Int32Array, nextId, out: Float64Array) -> rows: the pooler's held logins in accept order, as
 *  many as fit, kHeldRow doubles each: client id, pool entry, application_name id, port, listener << 1 | 1 for IPv4,
 *  IPv4 address, milliseconds since accepted, relay id. A login listed for the first time takes the next client id
 *  from `nextId` on and keeps it (relayListedId). Reports nothing. */
Napi::Value RelayHeldRows(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Relay* r = CurrentRelay(info);
  if (!r) return env.Undefined();
  std::vector<Endpoint*> held;
  double* out = nullptr;
  size_t nOut = 0;
  if (!HeldOf(info, r, &held) || info.Length() < 3 || !info[1].IsNumber() || !Typed(info[2], napi_float64_array, &out, &nOut)) {
    Napi::TypeError::New(env, "relayHeldRows(Int32Array, nextId, Float64Array)").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  int32_t next = info[1].As<Napi::Number>().Int32Value();
  std::sort(held.begin(), held.end(), [](const Endpoint* a, const Endpoint* b) { return a->id < b->id; });
  const uint64_t now = uv_now(r->loop_);
  size_t n = 0;
  for (Endpoint* c : held) {
    if ((n + 1) * kHeldRow > nOut) break;
    if (c->listedId == 0) c->listedId = next++;
    double* row = out + n * kHeldRow;
    row[0] = c->listedId;
    row[1] = c->held[7];
    row[2] = c->held[8] >> 2;
    row[3] = c->held[2];
    row[4] = c->held[3];
    row[5] = static_cast<double>(static_cast<uint32_t>(c->held[4]));
    row[6] = c->acceptedAt > 0 && now > c->acceptedAt ? static_cast<double>(now - c->acceptedAt) : 0;
    row[7] = c->id;
    n++;
  }
  return Napi::Number::New(env, static_cast<double>(n));
}

/** relayListedId(id) -> the client id a held login was listed with (relayHeldRows), 0 when never listed or unknown. */
Napi::Value RelayListedId(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Relay* r = CurrentRelay(info);
  if (!r) return env.Undefined();
  Endpoint* c = info.Length() > 0 && info[0].IsNumber() ? r->Find(info[0].As<Napi::Number>().Int32Value()) : nullptr;
  return Napi::Number::New(env, c ? c->listedId : 0);
}

}  // namespace

void InitRelayLend(Napi::Env env, Napi::Object exports) {
  exports.Set("relayLend", Napi::Function::New(env, RelayLend, "relayLend"));
  exports.Set("relayUnlend", Napi::Function::New(env, RelayUnlend, "relayUnlend"));
  exports.Set("relayMaterialize", Napi::Function::New(env, RelayMaterialize, "relayMaterialize"));
  exports.Set("relayHeldCounts", Napi::Function::New(env, RelayHeldCounts, "relayHeldCounts"));
  exports.Set("relayHeldRows", Napi::Function::New(env, RelayHeldRows, "relayHeldRows"));
  exports.Set("relayListedId", Napi::Function::New(env, RelayListedId, "relayListedId"));
}

}  // namespace tidepool
