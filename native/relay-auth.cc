// Logins run by the relay on the connections it accepted (relay-login.cc): the startup packet, the md5 or
// SCRAM-SHA-256 exchange against the secrets JavaScript pushed (relayAuthSet) and the pool's greeting, with
// OpenSSL's digests and random bytes. JavaScript hears one event per login: kAccepted and then kLoginOk (the
// connection waits, logged in, for relayAdopt) or kLoginFailed (the FATAL error is sent and the connection closed).
//
// Only what JavaScript would answer the same way is taken: a protocol 3.0 startup packet naming a user of the table,
// with no parameter but user, database, application_name and the pool's own client_encoding, while max_connections has room. Anything else (TLS,
// cancel requests, other parameters, unknown users, auth_query) goes to JavaScript's login untouched, before the relay
// has said a word. Failures send the SQLSTATE and message client-auth.ts sends.

#include <cstring>
#include <string>
#include <vector>

#include "relay-auth.h"
#include "relay-auth-crypto.h"
#include "relay-engine.h"
#include "relay-napi.h"

namespace tidepool {
namespace relay {

void DeleteExchange(LoginExchange* x) { delete x; }

namespace {

constexpr uint32_t kProtocol30 = 196608;
constexpr uint32_t kSslRequest = 80877103;
constexpr uint32_t kGssEncRequest = 80877104;
constexpr uint32_t kMaxStartup = 10000;
constexpr uint32_t kMaxAuthMessage = 64 * 1024;
constexpr size_t kMaxAppNames = 4096;
/** kLoginFailed's SQLSTATE index. */
const char* const kSqlStates[] = {"28P01", "08P01", "28000", "53300"};
enum FailCode : int32_t { kInvalidPassword = 0, kProtocolViolation = 1, kInvalidAuthorization = 2, kTooManyConnections = 3 };


void PutInt32(std::string& s, uint32_t v) {
  const char b[4] = {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8), static_cast<char>(v)};
  s.append(b, 4);
}

uint32_t GetInt32(const uint8_t* p) { return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | p[3]; }

/** An Authentication message of `code` with `body` after it. */
void PutAuth(std::string& s, uint32_t code, const std::string& body) {
  s += 'R';
  PutInt32(s, static_cast<uint32_t>(8 + body.size()));
  PutInt32(s, code);
  s += body;
}

/** JavaScript's String.fromCharCode(byte), as UTF-8. */
std::string CharOf(uint8_t b) {
  if (b < 0x80) return std::string(1, static_cast<char>(b));
  return std::string{static_cast<char>(0xc0 | (b >> 6)), static_cast<char>(0x80 | (b & 0x3f))};
}

/** SCRAM attributes as scram.ts reads them: comma-separated parts whose '=' is their second character. */
bool Attr(const std::string& msg, char key, std::string* value) {
  bool found = false;
  size_t start = 0;
  while (start <= msg.size()) {
    size_t end = msg.find(',', start);
    if (end == std::string::npos) end = msg.size();
    if (end - start >= 2 && msg[start + 1] == '=' && msg.find('=', start) == start + 1 && msg[start] == key) {
      value->assign(msg, start + 2, end - start - 2);
      found = true;  // the last one wins, as with a Map
    }
    start = end + 1;
  }
  return found;
}



void Progress(const LoginExchange* x, int delta) {
  x->table->slots[2] += delta;
}

/** kAccepted as relay-login.cc reports a client accepted for JavaScript's login. */
void AcceptedEvent(const Endpoint* ep, int32_t out[5]) {
  const LoginExchange* x = ep->exchange;
  out[0] = kAccepted;
  out[1] = ep->id;
  out[2] = x->port;
  out[3] = (x->listener << 1) | (x->isV4 ? 1 : 0);
  out[4] = x->v4;
}

/** The relay does not take this login: JavaScript gets the connection and every byte read so far. */
void HandToJs(Relay* r, Endpoint* ep) {
  LoginExchange* x = ep->exchange;
  std::string bytes;
  bytes.swap(x->in);
  int32_t accepted[5];
  AcceptedEvent(ep, accepted);
  ep->exchange = nullptr;
  Progress(x, -1);
  r->Emit(accepted[0], accepted[1], accepted[2], accepted[3], accepted[4]);
  DeleteExchange(x);
  if (!bytes.empty()) r->LoginBytes(ep, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
}

/** A FATAL error as writer.ts writes it, reported, and the connection closed once it is sent. */
void Fail(Relay* r, Endpoint* ep, FailCode code, const std::string& message) {
  LoginExchange* x = ep->exchange;
  std::string e;
  std::string fields;
  fields += "SFATAL";
  fields += '\0';
  fields += "VFATAL";
  fields += '\0';
  fields += 'C';
  fields += kSqlStates[code];
  fields += '\0';
  fields += 'M';
  fields += message;
  fields += '\0';
  fields += '\0';
  e += 'E';
  PutInt32(e, static_cast<uint32_t>(4 + fields.size()));
  e += fields;
  x->phase = LoginExchange::kDone;
  Progress(x, -1);
  if (r->loginErrors_.size() >= 4096) r->loginErrors_.clear();  // read once by JavaScript; bounded all the same
  r->loginErrors_[ep->id] = message;
  int32_t accepted[5], failed[5] = {kLoginFailed, ep->id, x->user ? x->user->entry : -1, code, 0};
  AcceptedEvent(ep, accepted);
  r->EmitPair(accepted, failed);
  const bool sent = r->Write(ep, reinterpret_cast<const uint8_t*>(e.data()), e.size());
  if (!sent || ep->fd < 0) return;  // Lost: the client is gone already (its exchange was reported)
  ep->dead = true;
  if (ep->pendingOut() == 0) r->Destroy(ep);
  else r->CloseGracefully(ep);
}

/** The client proved its password: the last reply and the greeting in one send, then kLoginOk. */
void Succeed(Relay* r, Endpoint* ep, std::string reply) {
  LoginExchange* x = ep->exchange;
  const AuthUser* u = x->user;
  auto it = r->appIds_.find(x->app);
  int32_t appId;
  if (it != r->appIds_.end()) {
    appId = it->second;
  } else {
    appId = static_cast<int32_t>(r->appNames_.size());
    r->appNames_.push_back(x->app);
    r->appIds_.emplace(x->app, appId);
  }
  int32_t secret = 0;
  RandomBytes(reinterpret_cast<uint8_t*>(&secret), sizeof secret);
  reply += u->greeting;
  reply += 'S';
  PutInt32(reply, static_cast<uint32_t>(4 + sizeof "application_name" + x->app.size() + 1));
  reply.append("application_name", sizeof "application_name");
  reply += x->app;
  reply += '\0';
  reply += 'K';
  PutInt32(reply, 12);
  PutInt32(reply, static_cast<uint32_t>(ep->id | kCancelPidBit));  // never a backend's pid (kCancelPidBit)
  reply.append(reinterpret_cast<const char*>(&secret), 4);
  reply += 'Z';
  PutInt32(reply, 5);
  reply += 'I';
  x->phase = LoginExchange::kDone;
  Progress(x, -1);
  uint32_t secretBe = GetInt32(reinterpret_cast<const uint8_t*>(&secret));
  const int32_t kind = (appId << 1) | (x->sentEncoding ? 1 : 0);
  int32_t accepted[5], ok[5] = {kLoginOk, ep->id, u->entry, (appId << 2) | (x->sentEncoding ? 1 : 0), static_cast<int32_t>(secretBe)};
  AcceptedEvent(ep, accepted);
  std::string rest;
  rest.swap(x->in);
  // A lent server of the pool for this kind of login: the client is relay-only from here (relay-lend.cc), the exchange
  // is gone, and what it sent past its login goes to that server.
  if (r->Lend(ep, u->entry, kind, accepted, ok, x->table)) {
    if (!r->Write(ep, reinterpret_cast<const uint8_t*>(reply.data()), reply.size()) || ep->fd < 0) return;
    if (!rest.empty()) r->OnClientBytes(ep, reinterpret_cast<const uint8_t*>(rest.data()), rest.size());
    return;
  }
  // No server to lend, nothing sent past the login: the client waits here, unreported, until it sends something
  // (relay-lend.cc Hold); an idle client then costs JavaScript nothing.
  if (rest.empty() && r->Hold(ep, *u, accepted, ok, x->table)) {
    r->Write(ep, reinterpret_cast<const uint8_t*>(reply.data()), reply.size());
    return;
  }
  x->table->slots[3]++;
  r->EmitPair(accepted, ok);
  if (!r->Write(ep, reinterpret_cast<const uint8_t*>(reply.data()), reply.size()) || ep->fd < 0) return;
  x->in.swap(rest);
  // What the client sent past its login waits for relayAdopt (no kLoginData: JavaScript has nothing to read).
  if (!x->in.empty()) {
    ep->interceptIn.append(x->in);
    x->in.clear();
  }
  ep->dataQueued = true;
}

/** The startup packet: true when the relay takes the login (its first reply is sent). */
bool Startup(Relay* r, Endpoint* ep, const uint8_t* p, uint32_t len) {
  LoginExchange* x = ep->exchange;
  if (len < 8 || GetInt32(p + 4) != kProtocol30) return false;
  std::string user, database, app, encoding;
  bool hasUser = false, hasDatabase = false, hasApp = false, hasEncoding = false;
  size_t at = 8;
  for (;;) {
    if (at >= len) return false;
    if (p[at] == 0) {
      if (at + 1 != len) return false;
      break;
    }
    const void* kz = std::memchr(p + at, 0, len - at);
    if (!kz) return false;
    const size_t kEnd = static_cast<const uint8_t*>(kz) - p;
    const void* vz = kEnd + 1 < len ? std::memchr(p + kEnd + 1, 0, len - kEnd - 1) : nullptr;
    if (!vz) return false;
    const size_t vEnd = static_cast<const uint8_t*>(vz) - p;
    const std::string key(reinterpret_cast<const char*>(p + at), kEnd - at);
    std::string value(reinterpret_cast<const char*>(p + kEnd + 1), vEnd - kEnd - 1);
    bool* seen = key == "user" ? &hasUser : key == "database" ? &hasDatabase : key == "application_name" ? &hasApp : key == "client_encoding" ? &hasEncoding : nullptr;
    if (!seen || *seen) return false;
    *seen = true;
    (key == "user" ? user : key == "database" ? database : key == "application_name" ? app : encoding) = std::move(value);
    at = vEnd + 1;
  }
  if (user.empty()) return false;
  if (database.empty()) database = user;
  const std::string k = database + '\0' + user;
  auto it = x->table->users.find(k);
  if (it == x->table->users.end()) return false;
  // client_encoding as the pool's servers report it changes nothing in the greeting; any other value does.
  if (hasEncoding && (!it->second.hasEncoding || encoding != it->second.clientEncoding)) return false;
  x->sentEncoding = hasEncoding;
  if (r->appIds_.find(app) == r->appIds_.end() && r->appNames_.size() >= kMaxAppNames) return false;
  // max_connections: JavaScript's clients and the logins reported that it has not counted yet.
  const int32_t* slots = x->table->slots;
  if (slots[0] + (slots[3] - slots[1]) + (x->table->lending ? slots[4] : 0) >= x->table->maxConnections) return false;
  x->user = &it->second;
  x->app = std::move(app);
  std::string out;
  if (x->user->scram) {
    static const std::string kMechanisms("SCRAM-SHA-256\0\0", 15);
    PutAuth(out, 10, kMechanisms);
    x->phase = LoginExchange::kScramFirst;
  } else {
    RandomBytes(x->salt, 4);
    PutAuth(out, 5, std::string(reinterpret_cast<const char*>(x->salt), 4));
    x->phase = LoginExchange::kMd5;
  }
  r->Write(ep, reinterpret_cast<const uint8_t*>(out.data()), out.size());
  return true;
}

/** A C string at `*at` of the body, as BodyReader.cstring reads it; false when it is not terminated. */
bool CString(const uint8_t* body, size_t n, size_t* at, std::string* out) {
  const void* z = *at < n ? std::memchr(body + *at, 0, n - *at) : nullptr;
  if (!z) return false;
  const size_t end = static_cast<const uint8_t*>(z) - body;
  out->assign(reinterpret_cast<const char*>(body + *at), end - *at);
  *at = end + 1;
  return true;
}

const char kMalformed[] = "malformed authentication message: ";

void Md5Password(Relay* r, Endpoint* ep, const uint8_t* body, size_t n) {
  LoginExchange* x = ep->exchange;
  size_t at = 0;
  std::string answer;
  if (!CString(body, n, &at, &answer)) return Fail(r, ep, kProtocolViolation, std::string(kMalformed) + "string not terminated");
  const std::string expected = "md5" + Md5Hex(x->user->md5Inner + std::string(reinterpret_cast<const char*>(x->salt), 4));
  if (answer.size() != expected.size() || !ConstantEqual(reinterpret_cast<const uint8_t*>(answer.data()), reinterpret_cast<const uint8_t*>(expected.data()), expected.size())) {
    return Fail(r, ep, kInvalidPassword, "password authentication failed for user \"" + x->user->user + "\"");
  }
  Succeed(r, ep, std::string());
}

void ScramFirst(Relay* r, Endpoint* ep, const uint8_t* body, size_t n) {
  LoginExchange* x = ep->exchange;
  size_t at = 0;
  std::string mechanism;
  if (!CString(body, n, &at, &mechanism)) return Fail(r, ep, kProtocolViolation, std::string(kMalformed) + "string not terminated");
  if (at + 4 > n) return Fail(r, ep, kProtocolViolation, std::string(kMalformed) + "message too short");
  const int32_t dataLen = static_cast<int32_t>(GetInt32(body + at));
  at += 4;
  std::string data;
  if (dataLen >= 0) {
    if (at + static_cast<size_t>(dataLen) > n) return Fail(r, ep, kProtocolViolation, std::string(kMalformed) + "message too short");
    data.assign(reinterpret_cast<const char*>(body + at), static_cast<size_t>(dataLen));
  }
  if (mechanism != "SCRAM-SHA-256") return Fail(r, ep, kInvalidAuthorization, "unsupported SASL mechanism \"" + mechanism + "\"");
  // ^([ny]|p=[^,]*),([^,]*),(.*)$ of scram.ts, whose '.' takes no line break.
  const size_t c1 = data.find(',');
  const size_t c2 = c1 == std::string::npos ? std::string::npos : data.find(',', c1 + 1);
  const std::string gs2 = c1 == std::string::npos ? std::string() : data.substr(0, c1);
  const bool gs2Ok = gs2 == "n" || gs2 == "y" || gs2.compare(0, 2, "p=") == 0;
  if (c2 == std::string::npos || !gs2Ok || data.find_first_of("\r\n") != std::string::npos) {
    return Fail(r, ep, kProtocolViolation, std::string(kMalformed) + "malformed SCRAM client-first-message");
  }
  if (gs2[0] == 'p') return Fail(r, ep, kProtocolViolation, std::string(kMalformed) + "SCRAM channel binding is not supported");
  x->clientFirstBare = data.substr(c2 + 1);
  std::string cnonce;
  if (!Attr(x->clientFirstBare, 'r', &cnonce) || cnonce.empty()) {
    return Fail(r, ep, kProtocolViolation, std::string(kMalformed) + "SCRAM client-first-message has no nonce");
  }
  uint8_t rnd[18];
  RandomBytes(rnd, sizeof rnd);
  x->nonce = cnonce + Base64(rnd, sizeof rnd);
  x->serverFirst = "r=" + x->nonce + ",s=" + x->user->saltB64 + ",i=" + std::to_string(x->user->iterations);
  std::string out;
  PutAuth(out, 11, x->serverFirst);
  x->phase = LoginExchange::kScramFinal;
  r->Write(ep, reinterpret_cast<const uint8_t*>(out.data()), out.size());
}

void ScramFinal(Relay* r, Endpoint* ep, const uint8_t* body, size_t n) {
  LoginExchange* x = ep->exchange;
  const std::string final(reinterpret_cast<const char*>(body), n);
  std::string proofB64, nonce, proof;
  const size_t cut = final.rfind(",p=");
  if (!Attr(final, 'p', &proofB64) || proofB64.empty() || !Attr(final, 'r', &nonce) || nonce != x->nonce || cut == std::string::npos ||
      !Unbase64(proofB64, &proof) || proof.size() != 32) {
    return Fail(r, ep, kProtocolViolation, std::string(kMalformed) + "malformed SCRAM client-final-message");
  }
  const std::string authMessage = x->clientFirstBare + "," + x->serverFirst + "," + final.substr(0, cut);
  const AuthUser* u = x->user;
  uint8_t signature[32], clientKey[32], stored[32];
  u->storedHmac->Sign(authMessage, signature);
  for (int i = 0; i < 32; i++) clientKey[i] = static_cast<uint8_t>(proof[i]) ^ signature[i];
  Sha256(clientKey, 32, stored);
  if (!ConstantEqual(stored, u->storedKey, 32)) return Fail(r, ep, kInvalidPassword, "password authentication failed for user \"" + u->user + "\"");
  std::memcpy(x->clientKey, clientKey, 32);
  x->hasClientKey = true;
  uint8_t serverSignature[32];
  u->serverHmac->Sign(authMessage, serverSignature);
  std::string reply;
  PutAuth(reply, 12, "v=" + Base64(serverSignature, 32));
  Succeed(r, ep, std::move(reply));
}

}  // namespace

bool RefuseIfFull(Relay* r, Endpoint* ep) {
  LoginExchange* x = ep->exchange;
  const int32_t* slots = x->table->slots;
  // JavaScript's clients and logins ([0]), native logins it has not counted yet, the relay's logins under way ([2],
  // this one included) and relay-only clients: PgBouncer's max_client_conn counts every accepted socket.
  const int32_t total = slots[0] + (slots[3] - slots[1]) + slots[2] + (x->table->lending ? slots[4] : 0);
  if (total <= x->table->maxConnections) return false;
  Fail(r, ep, kTooManyConnections, "sorry, too many clients already (max_connections = " + std::to_string(x->table->maxConnections) + ")");
  return true;
}

int32_t ExpireLogins(Relay* r, int32_t listener, uint64_t timeoutMs) {
  const uint64_t now = uv_now(r->loop_);
  // One pass over the endpoints, a few nanoseconds each: a periodic sweep costs less than a timer per login, and
  // closing changes byId_, so the expired are collected first.
  std::vector<int32_t> expired;
  for (const auto& [id, ep] : r->byId_) {
    const LoginExchange* x = ep->exchange;
    if (x && x->phase != LoginExchange::kDone && x->listener == listener && ep->fd >= 0 && now - x->acceptedAt >= timeoutMs) expired.push_back(id);
  }
  for (const int32_t id : expired) {
    Endpoint* ep = r->Find(id);
    if (!ep || !ep->exchange || ep->fd < 0) continue;
    // Before a startup packet the client has not spoken the protocol: PostgreSQL closes without a word there too.
    if (ep->exchange->phase == LoginExchange::kStartup) r->NativeLoginGone(ep);
    else Fail(r, ep, kProtocolViolation, "canceling authentication due to timeout");
  }
  return static_cast<int32_t>(expired.size());
}

void Relay::NativeLogin(Endpoint* ep, const uint8_t* buf, size_t len) {
  LoginExchange* x = ep->exchange;
  if (x->phase == LoginExchange::kDone) {
    ep->interceptIn.append(reinterpret_cast<const char*>(buf), len);
    if (ep->interceptIn.size() > kHighWater) UpdatePoll(ep);
    return;
  }
  x->in.append(reinterpret_cast<const char*>(buf), len);
  if (x->phase == LoginExchange::kStartup) {
    // SSLRequest (libpq's sslmode=prefer) and GSSENCRequest are answered N, as client-login.ts answers them when the
    // pooler has no TLS; with TLS configured, JavaScript runs the handshake.
    while (x->in.size() >= 8 && GetInt32(reinterpret_cast<const uint8_t*>(x->in.data())) == 8) {
      const uint32_t code = GetInt32(reinterpret_cast<const uint8_t*>(x->in.data()) + 4);
      if (code != kGssEncRequest && (code != kSslRequest || !x->table->sslRefused)) break;
      x->in.erase(0, 8);
      if (!Write(ep, reinterpret_cast<const uint8_t*>("N"), 1) || ep->fd < 0) return;
    }
    if (x->in.size() < 4) return;
    const uint8_t* p = reinterpret_cast<const uint8_t*>(x->in.data());
    const uint32_t plen = GetInt32(p);
    // JavaScript answers every odd length (and TLS hellos) with its own words.
    if (plen < 8 || plen > kMaxStartup) return HandToJs(this, ep);
    if (x->in.size() < plen) return;
    if (x->in.size() > plen || !Startup(this, ep, p, plen)) return HandToJs(this, ep);
    x->in.clear();
    return;
  }
  // Password messages, whole, one at a time.
  while (ep->exchange == x && x->phase != LoginExchange::kDone && ep->fd >= 0 && x->in.size() >= 5) {
    const uint8_t* p = reinterpret_cast<const uint8_t*>(x->in.data());
    const uint8_t type = p[0];
    const uint32_t mlen = GetInt32(p + 1);
    if (mlen < 4 || mlen > kMaxAuthMessage) return Fail(this, ep, kProtocolViolation, "invalid message length " + std::to_string(mlen) + " during authentication");
    if (x->in.size() < 1 + static_cast<size_t>(mlen)) return;
    std::string msg = x->in.substr(0, 1 + mlen);
    x->in.erase(0, 1 + mlen);
    if (type == 'X') {
      // Terminate: the client gives up; JavaScript hears that it left.
      NativeLoginGone(ep);
      return;
    }
    if (type != 'p') return Fail(this, ep, kProtocolViolation, "expected a password message, got \"" + CharOf(type) + "\"");
    const uint8_t* body = reinterpret_cast<const uint8_t*>(msg.data()) + 5;
    const size_t n = mlen - 4;
    switch (x->phase) {
      case LoginExchange::kMd5: Md5Password(this, ep, body, n); break;
      case LoginExchange::kScramFirst: ScramFirst(this, ep, body, n); break;
      case LoginExchange::kScramFinal: ScramFinal(this, ep, body, n); break;
      default: break;
    }
  }
}

bool Relay::NativeLoginGone(Endpoint* ep) {
  LoginExchange* x = ep->exchange;
  if (x->phase == LoginExchange::kDone) return false;  // reported: JavaScript hears the close as usual
  x->phase = LoginExchange::kDone;
  Progress(x, -1);
  Emit(kLoginGone, ep->id, x->listener);
  Destroy(ep);
  return true;
}

}  // namespace relay
}  // namespace tidepool
