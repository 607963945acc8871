// The native lane of the prepared-statement rewriter inside the relay engine: fast client reads rewritten and sent,
// the pooler's ParseCompletes placed in the replies, the hand-over to JavaScript (see relay-lane.h), and relayLaneTake.
#include "relay-engine.h"
#include "relay-napi.h"

namespace tidepool {
namespace relay {

namespace {
const char kParseComplete[5] = {'1', 0, 0, 0, 4};
}  // namespace

bool Relay::LaneSend(Endpoint* c, const uint8_t* buf, size_t len) {
  Endpoint* s = c->peer;
  if (!s || !c->lane.on) return false;
  if (c->lane.schemaGen != schemaGen_) {
    // The schema changed since the table was made: a Parse must reach JavaScript, which parses it anew.
    for (LaneEntry& e : c->lane.entries) e.parse.clear();
    c->lane.schemaGen = schemaGen_;
  }
  laneScratch_.clear();
  const size_t before = c->lane.groups.size();
  if (!LaneRewrite(c->lane.entries, buf, len, &laneScratch_, &c->lane.groups, s->txStatus)) return false;
  const double now = NowUs();
  for (size_t i = before; i < c->lane.groups.size(); i++) c->lane.groups[i].sentAt = now;
  c->parked = false;
  s->bytesSent += laneScratch_.size();
  Write(s, reinterpret_cast<const uint8_t*>(laneScratch_.data()), laneScratch_.size());
  return true;
}

void Relay::LaneToJs(Endpoint* c, const uint8_t* buf, size_t len) {
  c->laneIdle = false;
  c->lane.on = false;
  c->interceptIn.append(reinterpret_cast<const char*>(buf), len);
  if (c->switchPending) return;  // JavaScript gets these with the first diverted bytes (relay-stream.cc)
  // JavaScript must not send before the fast groups are answered: their replies come first, and should one fail
  // it takes them over as its own, in front of these bytes.
  if (!c->lane.groups.empty()) {
    c->lane.held = true;
    return;
  }
  if (!c->dataQueued) {
    c->dataQueued = true;
    Emit(kClientData, c->id, -1, 0, 0);
  }
}

bool Relay::LaneReply(Endpoint* c, const uint8_t* buf, size_t offset, std::string& out, size_t& copied) {
  Lane& lane = c->lane;
  if (lane.groups.empty()) return true;
  const uint8_t type = buf[offset];
  if (type == kErrorResponse) return false;
  LaneGroup& g = lane.groups.front();
  // The pooler's own ParseCompletes due before this reply go first, as rewriter.ts queues them.
  while (g.done < g.slots.size() && g.slots[g.done] == kSlotOwnParse) {
    out.append(reinterpret_cast<const char*>(buf + copied), offset - copied);
    copied = offset;
    out.append(kParseComplete, sizeof(kParseComplete));
    g.done++;
  }
  if (LanePasses(type)) return true;
  if (g.done >= g.slots.size() || !LaneEnds(g.slots[g.done], type)) return false;
  const uint8_t slot = g.slots[g.done++];
  if (slot == kSlotExecuted) g.execTimes.push_back(NowUs() - g.sentAt);
  if (slot != kSlotReady) return true;
  for (uint16_t i : g.binds) {
    if (i < lane.entries.size()) lane.entries[i].uses += 1;
  }
  for (size_t k = 0; k < g.execTimes.size() && k < g.execs.size(); k++) {
    if (g.execs[k] >= lane.entries.size()) continue;
    lane.entries[g.execs[k]].executions += 1;
    lane.entries[g.execs[k]].execUs += g.execTimes[k];
  }
  lane.parseHits += g.parseHits;
  lane.groups.pop_front();
  if (lane.groups.empty() && lane.held) {
    lane.held = false;
    if (!c->dataQueued) {
      c->dataQueued = true;
      Emit(kClientData, c->id, -1, 0, buf[offset + 5]);
    }
  }
  return true;
}

void Relay::LaneHandOver(Endpoint* c, uint8_t status) {
  Lane& lane = c->lane;
  std::string sent;
  for (const LaneGroup& g : lane.groups) sent += g.original;
  const int32_t delivered = lane.groups.empty() ? 0 : static_cast<int32_t>(lane.groups.front().done);
  lane.groups.clear();
  lane.on = false;
  lane.held = false;
  c->laneIdle = false;
  c->interceptIn.insert(0, sent);
  c->dataQueued = true;
  Emit(kClientData, c->id, -1, static_cast<int32_t>(sent.size()), static_cast<int32_t>(status) | (delivered << 8));
}

}  // namespace relay
}  // namespace tidepool

namespace tidepool {
namespace {

/** relayLaneTake(client, out: Float64Array) -> n: what the lane's answered groups used since the last take
 *  (out[0] Parses answered by the pooler; for each of n table entries i, out[1 + 3i] its Binds, out[2 + 3i] the
 *  Executes of portals bound to it and out[3 + 3i] their microseconds), and forgets the table once the lane is off. */
Napi::Value RelayLaneTake(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  relay::Relay* r = CurrentRelay(info);
  if (!r) return env.Undefined();
  const int32_t id = info[0].As<Napi::Number>().Int32Value();
  relay::Endpoint* c = r->Find(id);
  double* out = nullptr;
  size_t nOut = 0;
  if ((c && c->server) || !Typed(info[1], napi_float64_array, &out, &nOut) || nOut == 0) return Napi::Number::New(env, 0);
  relay::Lane closed;
  if (!c) {
    auto it = r->laneOrphans_.find(id);
    if (it == r->laneOrphans_.end()) return Napi::Number::New(env, 0);
    closed = std::move(it->second);
    r->laneOrphans_.erase(it);
  }
  relay::Lane& lane = c ? c->lane : closed;
  const size_t room = (nOut - 1) / 3;
  const size_t n = lane.entries.size() < room ? lane.entries.size() : room;
  out[0] = lane.parseHits;
  for (size_t i = 0; i < n; i++) {
    out[1 + 3 * i] = lane.entries[i].uses;
    out[2 + 3 * i] = lane.entries[i].executions;
    out[3 + 3 * i] = lane.entries[i].execUs;
  }
  lane.parseHits = 0;
  for (auto& e : lane.entries) e.uses = e.executions = e.execUs = 0;
  if (!lane.on) lane.entries.clear();
  return Napi::Number::New(env, static_cast<double>(n));
}

}  // namespace

void InitRelayLane(Napi::Env env, Napi::Object exports) {
  exports.Set("relayLaneTake", Napi::Function::New(env, RelayLaneTake, "relayLaneTake"));
}

}  // namespace tidepool
