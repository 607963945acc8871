// Logins run by the relay itself (relay-auth.cc): the md5 and SCRAM-SHA-256 exchanges for users whose secret
// JavaScript pushed up front, with the pool's greeting bytes, so a login costs JavaScript one event.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <node_api.h>

#include "relay-auth-crypto.h"

namespace tidepool {
namespace relay {

/** One user of one database whose login the relay may run (a transaction-mode pool whose greeting is known). */
struct AuthUser {
  int32_t entry = 0;       // JavaScript's index of the pool
  std::string user;
  bool scram = false;
  std::string md5Inner;    // md5: the 32 hex digits of md5(password + user)
  // [0]: the pool's idle servers JavaScript holds (NativeLoginUser.idle), or null; the table holds the array.
  const int32_t* idle = nullptr;
  int32_t iterations = 0;  // SCRAM-SHA-256
  std::string saltB64;
  uint8_t storedKey[32];
  // HMAC under StoredKey and ServerKey, keyed once for all of this user's logins.
  std::unique_ptr<HmacKey> storedHmac, serverHmac;
  std::string greeting;    // AuthenticationOk and the pool's ParameterStatus messages but application_name
  bool hasEncoding = false;
  std::string clientEncoding;  // the pool's reported client_encoding: a startup packet may name it, and no other value
};

/** What a listener's logins are checked against, replaced whole by relayAuthSet (RELOAD, a pool's parameters). */
struct AuthTable {
  std::unordered_map<std::string, AuthUser> users;  // "database\0user"
  int32_t maxConnections = 0;
  bool sslRefused = false;  // client_tls_sslmode disable: an SSLRequest is answered N (else JavaScript runs TLS)
  // The pooler's Int32Array(4 or 6): [0] its client count and [1] the native logins it has counted (written by JavaScript),
  // [2] native logins under way and [3] native logins reported (written here); held by `slotsRef`.
  int32_t* slots = nullptr;
  // The slots go on: [4] relay-only clients now, [5] relay-only logins that left unreported (relay-lend.cc, written
  // here); only then may a login take a lent server.
  bool lending = false;
  // [6]: 1 while a login that finds no lent server may be held (relay-lend.cc Hold), written by JavaScript.
  bool holding = false;
  napi_env env = nullptr;
  napi_ref slotsRef = nullptr;
  std::vector<napi_ref> idleRefs;  // the users' `idle` arrays
  AuthTable() = default;
  AuthTable(const AuthTable&) = delete;
  AuthTable& operator=(const AuthTable&) = delete;
  ~AuthTable() {
    if (slotsRef) napi_delete_reference(env, slotsRef);
    for (napi_ref r : idleRefs) napi_delete_reference(env, r);
  }
};

/** One client's login while the relay runs it. Bytes are kept until the exchange has sent its first reply, so that a
 *  login the relay does not take (another startup packet, key or user) goes to JavaScript as if nothing happened. */
struct LoginExchange {
  std::shared_ptr<const AuthTable> table;
  int32_t listener = 0, port = 0, v4 = 0;
  bool isV4 = false;
  enum Phase : uint8_t { kStartup, kMd5, kScramFirst, kScramFinal, kDone } phase = kStartup;
  std::string in;
  const AuthUser* user = nullptr;
  std::string app;
  uint8_t salt[4];
  std::string clientFirstBare, serverFirst, nonce;
  uint8_t clientKey[32];
  bool hasClientKey = false;
  bool sentEncoding = false;  // the startup packet named client_encoding
  uint64_t acceptedAt = 0;    // uv_now when accepted: client_login_timeout counts from here (ExpireLogins)
};

void DeleteExchange(LoginExchange* x);

class Relay;
struct Endpoint;
/** max_connections at accept, logins in progress included: true when the client got 53300 and is gone (its exchange
 *  reported as a failed login). */
bool RefuseIfFull(Relay* r, Endpoint* ep);
/** client_login_timeout for the logins the relay runs on `listener`: those accepted `timeoutMs` or more ago are closed
 *  (silently before a startup packet was taken, with FATAL 08P01 during the password exchange). Returns how many. */
int32_t ExpireLogins(Relay* r, int32_t listener, uint64_t timeoutMs);
/** Sets the listener's table (relay-login.cc); false when there is no such listener. */
bool SetListenerAuth(Relay* r, int32_t listener, std::shared_ptr<const AuthTable> table);

}  // namespace relay
}  // namespace tidepool
