// The relay's reports to JavaScript (relay-engine.h EventKind): five Int32 slots per event in the buffer JavaScript
// shares, handed over in one call per loop iteration (Flush, from the check handle), with what comes while JavaScript
// reads it, or while it is full, queued behind in order.

#include <cstring>

#include "relay-engine.h"

namespace tidepool {
namespace relay {

void Relay::Emit(int32_t kind, int32_t a, int32_t b, int32_t c, int32_t d) {
  if (relayOnly_ > 0) MaterializeFor(kind, a, b);
  if (flushing_) {
    // JavaScript is reading the shared buffer: later events wait here and go in the next round.
    deferred_.insert(deferred_.end(), {kind, a, b, c, d});
    return;
  }
  if (eventLen_ + 5 > eventCap_ || !deferred_.empty()) {
    // Full (or events wait already, which go first): never call into JavaScript from here (this may run inside a
    // call from JavaScript).
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

void Relay::EmitRelease(Endpoint* c, Endpoint* s) {
  // 1: no session-parameter texts wait on the server, so JavaScript's check-in need not ask (relayParams).
  const int32_t noParams = s->paramFlags == 0 ? 1 : 0;
  Lane& lane = c->lane;
  const size_t n = lane.entries.size();
  // Only when the report goes into events_ now (as Emit would put it), so the counts are read in the same round.
  if (n == 0 || relayOnly_ > 0 || flushing_ || !deferred_.empty() || eventLen_ + 5 > eventCap_ || !laneOut_ ||
      laneOutLen_ + 2 + 3 * n > laneOutCap_) {
    Emit(kRelease, c->id, s->id, noParams);
    return;
  }
  const size_t at = laneOutLen_;
  double* out = laneOut_ + at;
  out[0] = static_cast<double>(n);
  out[1] = lane.parseHits;
  for (size_t i = 0; i < n; i++) {
    out[2 + 3 * i] = lane.entries[i].uses;
    out[3 + 3 * i] = lane.entries[i].executions;
    out[4 + 3 * i] = lane.entries[i].execUs;
  }
  laneOutLen_ += 2 + 3 * n;
  // As relayLaneTake: the counts are taken, and the table goes with the link it was for (Unlink turned it off).
  lane.parseHits = 0;
  if (lane.on) {
    for (auto& e : lane.entries) e.uses = e.executions = e.execUs = 0;
  } else {
    lane.entries.clear();
  }
  Emit(kRelease, c->id, s->id, noParams, static_cast<int32_t>(at + 1));
}

void Relay::EmitPair(const int32_t first[5], const int32_t second[5]) {
  int32_t both[10];
  std::memcpy(both, first, 5 * sizeof(int32_t));
  std::memcpy(both + 5, second, 5 * sizeof(int32_t));
  EmitGroup(both, 2);
}

void Relay::EmitGroup(const int32_t* events, size_t n) {
  if (flushing_ || eventLen_ + 5 * n > eventCap_ || !deferred_.empty()) {
    deferred_.insert(deferred_.end(), events, events + 5 * n);
    if (!flushing_) uv_ref(reinterpret_cast<uv_handle_t*>(&check_));
    return;
  }
  std::memcpy(events_ + eventLen_, events, 5 * n * sizeof(int32_t));
  eventLen_ += 5 * n;
  uv_ref(reinterpret_cast<uv_handle_t*>(&check_));
}

void Relay::Flush() {
  if (flushing_ || !callback_) return;
  while (eventLen_ > 0 || !deferred_.empty()) {
    FlushOnce();
    size_t take = deferred_.size() < eventCap_ ? deferred_.size() : eventCap_ - eventCap_ % 5;
    // A native login's kAccepted stays with the events after it (EmitPair, EmitGroup: kLoginOk or kLoginFailed, kLent).
    while (take < deferred_.size() && take >= 5 && (deferred_[take] == kLoginOk || deferred_[take] == kLoginFailed || deferred_[take] == kLent) &&
           deferred_[take + 1] == deferred_[take - 4]) take -= 5;
    if (take) {
      std::memcpy(events_, deferred_.data(), take * sizeof(int32_t));
      deferred_.erase(deferred_.begin(), deferred_.begin() + take);
      eventLen_ = take;
    }
  }
  uv_unref(reinterpret_cast<uv_handle_t*>(&check_));
}

void Relay::FlushOnce() {
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
  laneOutLen_ = 0;
  flushing_ = false;
}

}  // namespace relay
}  // namespace tidepool
