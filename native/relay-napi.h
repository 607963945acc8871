// What the relay's N-API bindings (relay.cc, relay-lane.cc, relay-state-bind.cc, relay-tls.cc) share: the thread's relay and typed-array access.
#pragma once

#include <napi.h>

#include "relay-engine.h"

namespace tidepool {

/** The relay relayInit started on this thread; throws (and returns null) when there is none. */
relay::Relay* CurrentRelay(const Napi::CallbackInfo& info);

/** Registers relayLaneTake (relay-lane.cc). */
void InitRelayLane(Napi::Env env, Napi::Object exports);

/** Registers relayScan (relay-scan-napi.cc). */
void InitRelayScan(Napi::Env env, Napi::Object exports);

/** Registers relayStateScan (relay-state-bind.cc). */
void InitRelayStateScan(Napi::Env env, Napi::Object exports);

/** Registers relayQueryStatsSize, relayQueryStats and queryFingerprint (query-stats-napi.cc). */
void InitQueryStats(Napi::Env env, Napi::Object exports);

/** Registers relayTlsContext, relayAddTlsClient, relayStartTls, relayAdopt, relayTlsInfo and relayTlsError (relay-tls-napi.cc). */
void InitRelayTls(Napi::Env env, Napi::Object exports);

/** Registers relayListen, relayUnlisten, relayListenerFd and relayPeer (relay-login.cc). */
void InitRelayLogin(Napi::Env env, Napi::Object exports);

/** Registers relayLend, relayUnlend, relayMaterialize, relayHeldCounts, relayHeldRows and relayListedId (relay-lend.cc). */
void InitRelayLend(Napi::Env env, Napi::Object exports);

/** Registers relayAuthSet, relayAppName, relayLoginError and relayLoginKey (relay-auth.cc). */
void InitRelayAuth(Napi::Env env, Napi::Object exports);

/** The relayed-client options relayAddClient and relayAdopt share, from info[1..7] (stats: Float64Array, maxMessage,
 *  initial?, divert?, app?: Float64Array(8), pinMask?, queryPool?): false when stats or maxMessage is missing. */
bool ReadClientOptions(const Napi::CallbackInfo& info, relay::ClientOptions* o);
/** Gives `c` the options read by ReadClientOptions, with references of its own to the arrays. */
void ApplyClientOptions(const Napi::CallbackInfo& info, relay::Relay* r, relay::Endpoint* c, relay::ClientOptions o);

/** A non-blocking, close-on-exec duplicate of the descriptor JavaScript passed, or -1. */
int DupFd(const Napi::Value& v);

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

}  // namespace tidepool
