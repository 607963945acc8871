// relayScan: the relay's own scan (relay-scan.h) run on bytes given from JavaScript, so the shared test vectors hold
// the native scan and its TypeScript twin to the same events.
#include <cstring>
#include <vector>

#include "relay-napi.h"
#include "relay-scan.h"

namespace tidepool {
namespace {

using relay::Framing;

/** Slots of relayScan's state (Int32Array): per side remaining, carry length, carry bytes; then the client's
 *  accounting, the server's last status and both sides' largest message. */
enum ScanState : size_t {
  kClientFraming = 0,   // remaining, carryLen, carry[8]
  kServerFraming = 10,  // remaining, carryLen, carry[8]
  kSyncs = 20, kUnsynced, kCopyIn, kQueryCount, kTxStatus, kClientMax, kServerMax,
  kStateLength
};

void LoadFraming(Framing& f, const int32_t* s, bool server, int32_t max) {
  f.server = server;
  f.remaining = static_cast<uint32_t>(s[0]);
  f.carryLen = static_cast<uint8_t>(s[1] < 0 ? 0 : s[1] > static_cast<int32_t>(relay::kCarryMax) ? relay::kCarryMax : s[1]);
  for (size_t i = 0; i < relay::kCarryMax; i++) f.carry[i] = static_cast<uint8_t>(s[2 + i]);
  f.maxMessage = static_cast<uint32_t>(max);
}

void StoreFraming(const Framing& f, int32_t* s) {
  s[0] = static_cast<int32_t>(f.remaining);
  s[1] = f.carryLen;
  for (size_t i = 0; i < relay::kCarryMax; i++) s[2 + i] = i < f.carryLen ? f.carry[i] : 0;
}

/** relayScan(state: Int32Array(27), side: 0 client | 1 server, chunk: Uint8Array, out: Int32Array) -> events.
 *  Runs one read through ScanClientChunk or ScanServerChunk as the relay does for a linked pair.
 *  out[0] status (0 ok, 1 bad length, 2 terminate), out[1] bytes passed on counted from the chunk's start
 *  (negative: carried bytes held back), out[2] the bad length, out[3] carried bytes before the chunk; then
 *  events of four slots: (1, type, offset from the chunk's start, length) per header, (2, status, transaction
 *  ended, may release) per ReadyForQuery. Returns the number of events (only those that fit are written). */
Napi::Value RelayScan(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int32_t* state = nullptr;
  int32_t* out = nullptr;
  uint8_t* chunk = nullptr;
  size_t nState = 0, nOut = 0, nChunk = 0;
  if (info.Length() < 4 || !Typed(info[0], napi_int32_array, &state, &nState) || nState < kStateLength || !info[1].IsNumber() ||
      !Typed(info[2], napi_uint8_array, &chunk, &nChunk) || !Typed(info[3], napi_int32_array, &out, &nOut) || nOut < 4) {
    Napi::TypeError::New(env, "relayScan(state: Int32Array(27), side: 0 | 1, chunk: Uint8Array, out: Int32Array(>= 4))").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  const bool server = info[1].As<Napi::Number>().Int32Value() == 1;
  Framing client, srv;
  LoadFraming(client, state + kClientFraming, false, state[kClientMax]);
  LoadFraming(srv, state + kServerFraming, true, state[kServerMax]);
  relay::TxCount tx;
  tx.syncs = state[kSyncs];
  tx.unsynced = state[kUnsynced] != 0;
  tx.copyIn = state[kCopyIn] != 0;
  tx.queryCount = state[kQueryCount];
  uint8_t txStatus = static_cast<uint8_t>(state[kTxStatus]);

  Framing& f = server ? srv : client;
  const size_t carried = f.carryLen;
  std::vector<uint8_t> buf(carried + nChunk);
  if (carried) std::memcpy(buf.data(), f.carry, carried);
  if (nChunk) std::memcpy(buf.data() + carried, chunk, nChunk);
  size_t events = 0;
  auto event = [&](int32_t kind, int32_t a, int32_t b, int32_t c) {
    size_t at = 4 + events * 4;
    if (at + 4 <= nOut) {
      out[at] = kind;
      out[at + 1] = a;
      out[at + 2] = b;
      out[at + 3] = c;
    }
    events++;
  };
  auto header = [&](uint8_t type, size_t offset, uint32_t length) {
    event(1, type, static_cast<int32_t>(offset) - static_cast<int32_t>(carried), static_cast<int32_t>(length));
  };
  relay::ChunkResult r = server
      ? relay::ScanServerChunk(
            srv, txStatus, &tx, buf.data(), buf.size(),
            [&](uint8_t status, bool ended) { event(2, status, ended ? 1 : 0, ended && relay::MayRelease(client) ? 1 : 0); },
            [] {}, header)
      : relay::ScanClientChunk(client, tx, buf.data(), buf.size(), [] {}, header);
  out[0] = !r.ok ? 1 : r.terminate ? 2 : 0;
  out[1] = static_cast<int32_t>(r.cut) - static_cast<int32_t>(carried);
  out[2] = static_cast<int32_t>(r.badLength);
  out[3] = static_cast<int32_t>(carried);

  StoreFraming(client, state + kClientFraming);
  StoreFraming(srv, state + kServerFraming);
  state[kSyncs] = tx.syncs;
  state[kUnsynced] = tx.unsynced ? 1 : 0;
  state[kCopyIn] = tx.copyIn ? 1 : 0;
  state[kQueryCount] = static_cast<int32_t>(tx.queryCount);
  state[kTxStatus] = txStatus;
  return Napi::Number::New(env, static_cast<double>(events));
}

}  // namespace

void InitRelayScan(Napi::Env env, Napi::Object exports) {
  exports.Set("relayScan", Napi::Function::New(env, RelayScan, "relayScan"));
}

}  // namespace tidepool
