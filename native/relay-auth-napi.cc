// The relay's login table and per-login answers for JavaScript (relay-auth.cc): relayAuthSet, relayAppName,
// relayLoginError, relayLoginKey.
#include <cstring>
#include <memory>
#include <string>

#include "relay-auth.h"
#include "relay-auth-crypto.h"
#include "relay-engine.h"
#include "relay-napi.h"

namespace tidepool {
namespace relay {

namespace {

bool Key32(const Napi::Value& v, uint8_t out[32]) {
  uint8_t* d = nullptr;
  size_t n = 0;
  if (!Typed(v, napi_uint8_array, &d, &n) || n != 32) return false;
  std::memcpy(out, d, 32);
  return true;
}

/** relayAuthSet(listener, maxConnections, slots: Int32Array(4), users: Array | null, sslRefused: boolean): the logins
 *  the relay runs on
 *  `listener` from now on (null: none). Each user: { entry, database, user, greeting: Uint8Array, clientEncoding?: string
 *  (the pool's reported value, the only one a startup packet may name), md5?: string (32 hex
 *  digits of md5(password + user)) } or with scram: { iterations, salt: Uint8Array, storedKey, serverKey (32 bytes) }.
 *  `sslRefused`: an SSLRequest is answered N here (the pooler has no client TLS). Logins under way keep the table they
 *  started with. */
Napi::Value RelayAuthSet(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Relay* r = CurrentRelay(info);
  if (!r) return env.Undefined();
  int32_t* slots = nullptr;
  size_t nSlots = 0;
  if (info.Length() < 4 || !info[0].IsNumber() || !info[1].IsNumber() || !Typed(info[2], napi_int32_array, &slots, &nSlots) || nSlots < 4) {
    Napi::TypeError::New(env, "relayAuthSet(listener, maxConnections, Int32Array(4), users | null)").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  const int32_t listener = info[0].As<Napi::Number>().Int32Value();
  if (!info[3].IsArray()) return Napi::Boolean::New(env, SetListenerAuth(r, listener, nullptr));
  auto table = std::make_shared<AuthTable>();
  table->slots = slots;
  table->lending = nSlots >= 6;
  table->holding = nSlots >= 7;
  table->env = env;
  napi_create_reference(env, info[2], 1, &table->slotsRef);
  table->maxConnections = info[1].As<Napi::Number>().Int32Value();
  table->sslRefused = info.Length() > 4 && info[4].ToBoolean().Value();
  Napi::Array users = info[3].As<Napi::Array>();
  for (uint32_t i = 0; i < users.Length(); i++) {
    Napi::Value v = users.Get(i);
    if (!v.IsObject()) continue;
    Napi::Object o = v.As<Napi::Object>();
    AuthUser u;
    u.entry = o.Get("entry").ToNumber().Int32Value();
    u.user = o.Get("user").ToString().Utf8Value();
    const std::string database = o.Get("database").ToString().Utf8Value();
    uint8_t* g = nullptr;
    size_t gLen = 0;
    if (!Typed(o.Get("greeting"), napi_uint8_array, &g, &gLen)) continue;
    u.greeting.assign(reinterpret_cast<const char*>(g), gLen);
    Napi::Value encoding = o.Get("clientEncoding");
    if (encoding.IsString()) {
      u.hasEncoding = true;
      u.clientEncoding = encoding.As<Napi::String>().Utf8Value();
    }
    int32_t* idle = nullptr;
    size_t nIdle = 0;
    Napi::Value idleArray = o.Get("idle");
    if (Typed(idleArray, napi_int32_array, &idle, &nIdle) && nIdle >= 1) {
      napi_ref ref = nullptr;
      napi_create_reference(env, idleArray, 1, &ref);
      table->idleRefs.push_back(ref);
      u.idle = idle;
    }
    Napi::Value md5 = o.Get("md5");
    if (md5.IsString()) {
      u.md5Inner = md5.As<Napi::String>().Utf8Value();
      if (u.md5Inner.size() != 32) continue;
    } else {
      uint8_t* salt = nullptr;
      size_t saltLen = 0;
      uint8_t serverKey[32];
      if (!Typed(o.Get("salt"), napi_uint8_array, &salt, &saltLen) || !Key32(o.Get("storedKey"), u.storedKey) || !Key32(o.Get("serverKey"), serverKey)) continue;
      u.scram = true;
      u.storedHmac = std::make_unique<HmacKey>(u.storedKey);
      u.serverHmac = std::make_unique<HmacKey>(serverKey);
      u.iterations = o.Get("iterations").ToNumber().Int32Value();
      u.saltB64 = Base64(salt, saltLen);
    }
    table->users[database + '\0' + u.user] = std::move(u);
  }
  return Napi::Boolean::New(env, SetListenerAuth(r, listener, table));
}

/** relayAppName(id) -> the application_name of kLoginOk's id. */
Napi::Value RelayAppName(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Relay* r = CurrentRelay(info);
  if (!r) return env.Undefined();
  const int32_t id = info.Length() > 0 && info[0].IsNumber() ? info[0].As<Napi::Number>().Int32Value() : -1;
  if (id < 0 || static_cast<size_t>(id) >= r->appNames_.size()) return Napi::String::New(env, "");
  return Napi::String::New(env, r->appNames_[id]);
}

/** relayLoginError(id) -> the message kLoginFailed sent to the client, once ('' when unknown). */
Napi::Value RelayLoginError(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Relay* r = CurrentRelay(info);
  if (!r) return env.Undefined();
  auto it = info.Length() > 0 && info[0].IsNumber() ? r->loginErrors_.find(info[0].As<Napi::Number>().Int32Value()) : r->loginErrors_.end();
  if (it == r->loginErrors_.end()) return Napi::String::New(env, "");
  Napi::String s = Napi::String::New(env, it->second);
  r->loginErrors_.erase(it);
  return s;
}

/** relayLoginKey(id) -> the SCRAM ClientKey the client proved (32 bytes), or undefined: for logging in to PostgreSQL
 *  with the client's key when the pooler has only the user's SCRAM secret. Until relayAdopt. */
Napi::Value RelayLoginKey(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Relay* r = CurrentRelay(info);
  if (!r) return env.Undefined();
  Endpoint* ep = info.Length() > 0 && info[0].IsNumber() ? r->Find(info[0].As<Napi::Number>().Int32Value()) : nullptr;
  if (!ep || !ep->exchange || !ep->exchange->hasClientKey) return env.Undefined();
  return Napi::Buffer<uint8_t>::Copy(env, ep->exchange->clientKey, 32);
}

}  // namespace
}  // namespace relay

void InitRelayAuth(Napi::Env env, Napi::Object exports) {
  exports.Set("relayAuthSet", Napi::Function::New(env, relay::RelayAuthSet, "relayAuthSet"));
  exports.Set("relayAppName", Napi::Function::New(env, relay::RelayAppName, "relayAppName"));
  exports.Set("relayLoginError", Napi::Function::New(env, relay::RelayLoginError, "relayLoginError"));
  exports.Set("relayLoginKey", Napi::Function::New(env, relay::RelayLoginKey, "relayLoginKey"));
}

}  // namespace tidepool
