// Byte forwarding between clients and PostgreSQL servers on Node's own event loop, with no JavaScript per
// message: every socket after login is a file descriptor polled here (uv_poll), read into one scratch
// buffer, scanned for message boundaries, and written straight to its peer with send(); only what does
// not fit in the peer's socket buffer is copied into that peer's pending output.
//
// JavaScript keeps every decision: it is told, in one batch per loop iteration, when a client with no
// server has bytes (NEED_SERVER), when a transaction-mode transaction ended and the pair was split
// (RELEASE), when a socket closed, when a client sent a bad length, and when an unlinked server sent
// ReadyForQuery it was asked to watch for (after DISCARD ALL). It links pairs, writes its own messages
// (errors, reset queries, Terminate) and closes sockets through the methods of the Relay object.
//
// The boundary scan and the transaction accounting (sync points, unsynced extended messages, COPY IN) are
// the pure functions of relay-scan.h, checked against the same test vectors as src/pooler/transaction-tracker.ts;
// the pool statistics are written into the pool's Float64Array block whose layout src/pooler/stats.ts defines.
#pragma once

#include <napi.h>
#include <uv.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "relay-lane.h"
#include "relay-scan.h"
#include "relay-state-scan.h"
#include "query-stats.h"

struct ssl_st;
struct bio_st;

namespace tidepool {
namespace relay {

constexpr size_t kReadSize = 64 * 1024;
/** A peer with this much unsent output stops its source from being read. */
constexpr size_t kHighWater = 1024 * 1024;
constexpr size_t kLowWater = 128 * 1024;
/** Endpoint ids stay below this: a login the relay runs gets its id with this bit as its BackendKeyData pid
 *  (relay-auth.cc), above any backend's pid and apart from JavaScript's own (src/pooler/cancel-keys.ts). */
constexpr int32_t kCancelPidBit = 0x40000000;
/** Descriptor numbers below this keep their stopped poll handle for reuse; above it a handle is closed. */
constexpr size_t kSpareHandles = 1 << 16;

enum EventKind : int32_t {
  kNeedServer = 1,     // client
  kRelease = 2,        // client, server, 1 when the server has no session-parameter texts (relayParams), lane counts (EmitRelease)
  kClientClosed = 3,   // client, reason (0 eof, 1 terminate, 2 error), server or 0, clean
  kServerClosed = 4,   // server, client or 0, how (0 mid-message, 1 at a boundary, 2 parked, 3 at a boundary after
                       // PostgreSQL's FATAL reached the client), reason (0 eof, 1 error, 2 malformed)
  kServerReady = 5,    // server, saw error, status
  kBadLength = 6,      // client, length
  kClientData = 7,     // client, in-flight sync points before its first intercepted message (or -1), bytes JavaScript
                       // must take as already sent (the lane's unanswered groups), lane info (status | delivered << 8)
  kServerData = 8,     // server, client
  kServerDiscarded = 9,  // server: it answered DISCARD ALL or DEALLOCATE ALL (its prepared statements are gone)
  kPin = 10,           // client, server, kinds of session state it holds (relay-state-scan.h); 0: none left, it is split again at this end
  kTlsReady = 11,        // client: its TLS handshake is done (relayTlsInfo tells the outcome)
  kLoginData = 12,       // client in login: its bytes (decrypted under TLS) wait for relayTake
  kAccepted = 13,        // client in login accepted on one of the relay's listeners (relay-login.cc): port,
                         // listener id << 1 | 1 for IPv4, IPv4 address (host order; relayPeer names an IPv6 one)
  // A login the relay ran itself (relay-auth.cc) is reported as kAccepted immediately followed by one of these two:
  kLoginOk = 14,         // client, pool entry, application_name id (relayAppName) << 2 | 2 when lent (kLent follows) | 1 when client_encoding was sent, BackendKeyData secret
  kLoginFailed = 15,     // client, pool entry, SQLSTATE index (relayLoginError tells the message)
  kLoginGone = 16,       // client, listener: it left (or sent Terminate) before its login was reported
  // A relay-only client (relay-lend.cc) is reported as kAccepted, kLoginOk (its application_name field flagged lent)
  // and this, side by side:
  kLent = 17,            // client, server it is linked to, parked (0: that server is gone)
  kServerSchema = 18,    // server: a CommandComplete tag of a schema change (CREATE, ALTER, DROP, DO...): statements
                         // cached under the old schema must be parsed anew (prepared/schema-epoch.ts)
};

/** CloseClient reasons: 0 EOF (or close_notify), 1 Terminate, 2 socket error, 3 TLS error (relayTlsError says which). */
constexpr int kCloseTls = 3;
constexpr size_t kParamTextMax = 64 * 1024;

/** Monotonic clock in microseconds, for query and transaction durations. */
double NowUs();

struct StatsLayout {
  int qHist = 0, xHist = 0, qLog = 0, xLog = 0, logBuckets = 0;
  int parkable = -1;  // slot JavaScript sets to 1 while the pool has no waiters and is not paused or draining
  int sqlStates = -1, sqlStateSlots = 0;  // errors by SQLSTATE (src/pooler/stats.ts STATS_LAYOUT.sqlStates)
  std::vector<double> bounds;  // seconds
};

enum Totals { kXact = 0, kQueries = 1, kRecv = 2, kSent = 3, kXactTime = 4, kQueryTime = 5, kWait = 6, kErrors = 7 };


/** The most events EmitGroup sends side by side (a relay-only login reported: kAccepted, kLoginOk, kLent); the shared
 *  buffer holds at least that many (relayInit). */
constexpr size_t kLongestEventGroup = 3;

class Relay;
struct Listener;
struct LoginExchange;
struct AuthTable;
struct AuthUser;
struct Endpoint;

/** A reference that keeps a JavaScript array (a stats block) alive while native code writes to its memory. Shared:
 *  a lent server's options and every relay-only client that takes the server hold the same one, and the reference
 *  goes with its last holder (on the main thread: Relay::Bury, Relay::DropLend). */
class ArrayRef {
 public:
  ArrayRef(napi_env env, napi_value array) : env_(env) { napi_create_reference(env, array, 1, &ref_); }
  ~ArrayRef() {
    if (ref_) napi_delete_reference(env_, ref_);
  }
  ArrayRef(const ArrayRef&) = delete;
  ArrayRef& operator=(const ArrayRef&) = delete;

 private:
  napi_env env_;
  napi_ref ref_ = nullptr;
};
using ArrayHold = std::shared_ptr<const ArrayRef>;

/** What JavaScript gives a relayed client of its pool: relayAddClient and relayAdopt for one client, relayLend for the
 *  relay-only clients that take the lent server. The holds keep `stats` and `app` alive. */
struct ClientOptions {
  uint32_t maxMessage = 0;
  double* stats = nullptr;
  ArrayHold statsHold;
  double* app = nullptr;  // Float64Array(8), or null
  ArrayHold appHold;
  bool divert = false;
  uint32_t pinMask = 0;
  int32_t queryPool = 0;
};

/** An idle server JavaScript lent the relay (relayLend): a native login of its pool whose session parameters match
 *  (`kind`: the relay's application_name id << 1 | client_encoding named) takes it parked, with the pool's client
 *  options, and JavaScript hears of that client only when something needs it (Relay::Materialize). */
struct LendInfo {
  // The pooler that lent it (its slots: AuthTable::slots), whose pool `entry` is.
  const int32_t* owner = nullptr;
  int32_t entry = 0;
  int32_t kind = 0;
  ClientOptions opts;
  // The relay-only client using it, or null while it waits in Relay::lendable_.
  Endpoint* client = nullptr;
};

/** A client's scans of its own bytes (280 bytes), made at their first use (Endpoint::Scans): a client that logs in and
 *  stays idle, or a server, never needs them. */
struct ClientScans {
  // The session-state scan of the client's texts (relay-state-scan.h; pinMask below).
  StateScan stateScan;
  // Simple-protocol query statistics: the fingerprint of the Query being read and the sync points in flight.
  QueryFingerprint queryPrint;
  QueryRing queryRing;
};

/** A socket on the relay: its framing (Framing::server tells the side) and, for a client, what it has in flight. */
struct Endpoint : Framing, TxCount {
  Relay* relay = nullptr;
  int32_t id = 0;
  int fd = -1;
  // The descriptor's poll handle (Relay::Add); kept by the relay for the descriptor number after Destroy.
  uv_poll_t* poll = nullptr;
  int events = 0;
  bool pollActive = false;
  Endpoint* peer = nullptr;
  // Output to this socket that did not fit in its send buffer.
  std::string out;
  size_t outOff = 0;
  // Lifecycle.
  bool dead = false;       // removed from the id map: JavaScript no longer knows it
  bool closing = false;    // flush, shut down writes, discard reads until EOF
  bool shutDown = false;
  bool stopped = false;    // reads stopped for good (bad length)
  // Client side.
  std::string pendingIn;   // bytes read while no server is linked
  // The first bytes of pendingIn when the rewriter took the client over while it had no server: read before the
  // rewriter's first message, they go to the server as they are at the link, ahead of anything the rewriter sends.
  size_t pendingRaw = 0;
  bool needServerSent = false;
  bool transactionMode = true;
  // Between transactions but still linked: the pool had nobody waiting, so the pair was kept instead of
  // split; the client's next bytes go straight to the same server, and JavaScript reclaims the server
  // (relayReclaim) whenever it needs it.
  bool parked = false;
  double countedQueries = 0;
  double syncStart = 0, xactStart = 0;
  // A transaction is under way (its first sync point was read, its ending ReadyForQuery not yet): the next
  // transaction's clock starts at its own first message, not when this one ended.
  bool xactOpen = false;
  double xacts = 0, errors = 0, queries = 0;
  double* stats = nullptr;
  ArrayHold statsHold;
  // The totals of the client's application_name (the first eight slots of a stats block), or null.
  double* app = nullptr;
  ArrayHold appHold;
  double xactTimeUs = 0;
  // Prepared statements (transaction mode): from the first message a rewriter must see (`divert`: Parse, Bind,
  // Describe, Close, or a Query that may be PREPARE, EXECUTE, DEALLOCATE or DISCARD), the client's bytes and its
  // server's replies go to JavaScript (`interceptIn`, taken with relayTake) instead of to the peer, and
  // JavaScript writes what the rewriter makes of them and decides when the pair splits.
  bool divert = false;
  bool intercept = false;
  // Diverted while its server was inside a message: the server's bytes go on to the client as they are until its
  // stream reaches a message boundary, where JavaScript takes over both directions (ClientData is held until then,
  // with the sync points whose replies are still to come from before the diverted message).
  bool switchPending = false;
  int32_t pendingEarlier = 0;
  // Both sides: bytes waiting for relayTake, and whether their event is already queued.
  std::string interceptIn;
  bool dataQueued = false;
  // The native lane (relay-lane.h): JavaScript's rewriter owes nothing and waits (`laneIdle`: bytes read while
  // unlinked wait in pendingIn for the link's table), and the table for the linked server (`lane`).
  bool laneIdle = false;
  Lane lane;
  // Session state that cannot move (relay-state-scan.h): the kinds JavaScript pins for (0: none, as in session
  // mode), the scan of the client's texts, and the kinds it holds now (reported with kPin). A transaction-mode
  // client whose texts named one of them is not split from its server at the transaction's end: the pair stays
  // linked, as in session mode, until its texts clear every kind (UNLISTEN *, DISCARD ALL...) or it leaves.
  uint32_t pinMask = 0;
  uint32_t pinned = 0;
  // TLS terminated here (relay-tls.cc): ciphertext through memory BIOs, so a write never blocks inside OpenSSL.
  ssl_st* ssl = nullptr;
  bio_st* rbio = nullptr;  // owned by ssl
  bio_st* wbio = nullptr;  // owned by ssl
  bool tlsReady = false;   // handshake done
  std::string tlsPlainOut; // plaintext written before the handshake ended, or that SSL_write asked to retry
  // Login: the client is not relayed yet; every byte (decrypted under TLS) goes to JavaScript (kLoginData, relayTake),
  // which runs the startup and the password exchange, then turns the endpoint into a relayed client (relayAdopt).
  // A client accepted on the relay's own listener (relay-login.cc) starts here in plaintext; relayStartTls turns on TLS.
  bool login = false;
  // uv_now when the relay's listener accepted it (0 otherwise): client_login_timeout counts from here, across a
  // login the relay hands to JavaScript (relayAcceptedAge).
  uint64_t acceptedAt = 0;
  // The relay runs this login's password exchange itself (relay-auth.cc), until it is reported or handed to JavaScript.
  LoginExchange* exchange = nullptr;
  // A relay-only client (relay-auth.cc, Lend): logged in natively and linked parked to a server JavaScript lent, with
  // its kAccepted and kLoginOk held here until Materialize reports them; `lentTable` holds the slots it is counted in.
  bool relayOnly = false;
  int32_t held[10] = {};
  // A held login listed by a snapshot (relayHeldRows): the client id it was shown with, which its session keeps once it
  // is reported (relayListedId); 0 until listed.
  int32_t listedId = 0;
  Endpoint* lentServer = nullptr;
  std::shared_ptr<const AuthTable> lentTable;
  // Server: lent to the relay (relayLend), or null.
  LendInfo* lend = nullptr;
  // Session parameters (src/pooler/session-state/): texts of statements that may change one (ParamStatement),
  // NUL-separated, and flags (1 texts, 2 a statement not seen whole or texts past kParamTextMax, 4 a
  // ParameterStatus reached the client). A client keeps them while unlinked and hands them to the server it links
  // to; a server keeps them until JavaScript takes them (relayParams) before it serves anyone else.
  std::string paramText;
  uint8_t paramFlags = 0;
  // Client: bytes still to come of a Query or Parse cut by a read with nothing found yet (ParamStatement).
  size_t paramTailLeft = 0;
  // Simple-protocol query statistics (query-stats.h): the pool's id in the relay's table (0: not recorded), the
  // fingerprint of the Query being read, its bytes still to come (cut by a read), and the sync points in flight.
  int32_t queryPool = 0;
  uint32_t queryTailLeft = 0;
  // Server side.
  uint8_t txStatus = kIdle;
  bool wantReady = false;
  // With wantReady: the replies go to interceptIn for JavaScript (relayTake) instead of being dropped.
  bool capture = false;
  bool sawError = false;
  // The last message was PostgreSQL's FATAL (or PANIC) and went to the linked client: if the server closes now, the
  // client was told why, and JavaScript adds no error of its own (kServerClosed's 3).
  bool toldClient = false;
  // Server: bytes to and from PostgreSQL. Client: bytes to and from the client.
  double bytesSent = 0, bytesReceived = 0;

  // The scans (ClientScans), null until the first use.
  std::unique_ptr<ClientScans> scans;
  ClientScans& Scans() {
    if (!scans) scans = std::make_unique<ClientScans>();
    return *scans;
  }

  size_t pendingOut() const { return out.size() - outOff; }
  bool between() const { return txStatus == kIdle; }
};

class Relay {
 public:
  Relay(napi_env env, uv_loop_t* loop);
  Endpoint* Find(int32_t id);
  Endpoint* Add(int fd, bool server);
  /** A client of a pool from now on, with its options (the references in `o` become the client's). */
  void Configure(Endpoint* c, const ClientOptions& o);
  void Emit(int32_t kind, int32_t a, int32_t b = 0, int32_t c = 0, int32_t d = 0);
  /** kRelease for a client just unlinked from `s`: its lane's counts go with the report when it reaches JavaScript in
   *  this round (the report's last slot: their offset in laneOut_ + 1), else they wait for relayLaneTake (0). */
  void EmitRelease(Endpoint* c, Endpoint* s);
  /** Schema-change tags seen so far (kServerSchema): a lane table remembers it (see Lane::schemaGen). */
  uint64_t SchemaGen() const { return schemaGen_; }
  // Lending (relay-lend.cc).
  /** A native login that just succeeded takes a lent server of its pool and kind, parked: true when it did (its
   *  events are then held, not emitted). */
  bool Lend(Endpoint* c, int32_t entry, int32_t kind, const int32_t accepted[5], const int32_t ok[5], std::shared_ptr<const AuthTable> table);
  /** A native login that just succeeded while no lent server suits it, when the table allows holding (slots[6] == 1)
   *  and the user's pool has no idle server, lent for another kind of login or in JavaScript (whose session would link
   *  one at login): true when it is held, relay-only with no server and its events kept, until it sends bytes or
   *  JavaScript asks. */
  bool Hold(Endpoint* c, const AuthUser& u, const int32_t accepted[5], const int32_t ok[5], std::shared_ptr<const AuthTable> table);
  /** Reports a relay-only client to JavaScript: its held kAccepted and kLoginOk (flagged lent), emitted, or written to
   *  `out` (10 ints) when given. */
  void Materialize(Endpoint* c, int32_t* out = nullptr);
  /** Before an event about `a` (and `b`, for the kinds that name a second endpoint): a relay-only client it concerns is
   *  materialized first, so JavaScript knows the client before it hears of it. */
  void MaterializeFor(int32_t kind, int32_t a, int32_t b);
  /** A relay-only client closing: false when it must be reported (not clean, or its server must go through
   *  JavaScript); true when its server went back to the lent list and the client is gone. */
  bool CloseLent(Endpoint* c);
  /** A server being destroyed: out of the lent list, its lend info freed. */
  void DropLend(Endpoint* s);
  void Flush();
  void FlushOnce();
  bool WantRead(Endpoint* ep) const;
  void UpdatePoll(Endpoint* ep);
  static void OnPoll(uv_poll_t* h, int status, int events);
  /** Sends or queues bytes for `ep` (encrypted first on a TLS endpoint); false when the socket failed (it is then closed). */
  bool Write(Endpoint* ep, const uint8_t* data, size_t len);
  /** Sends or queues bytes as they are. */
  bool RawWrite(Endpoint* ep, const uint8_t* data, size_t len);
  // TLS (relay-tls.cc).
  /** A TLS endpoint is readable: one recv of ciphertext, then the handshake or decrypted bytes to their reader. */
  void OnTlsReadable(Endpoint* ep);
  /** Ciphertext from the socket (or read by JavaScript before the handoff) into the endpoint's TLS session. */
  void TlsIngest(Endpoint* ep, const uint8_t* data, size_t len);
  bool TlsWrite(Endpoint* ep, const uint8_t* data, size_t len);
  /** Moves what OpenSSL wrote (records, alerts, KeyUpdate answers) to the socket; false when the socket failed. */
  bool TlsFlush(Endpoint* ep);
  /** OpenSSL refused the session: the reason is kept for relayTlsError and the client closed. */
  void TlsFail(Endpoint* ep);
  /** close_notify before a graceful close. */
  void TlsShutdown(Endpoint* ep);
  /** Writable: sends pending output; false when the endpoint is gone. */
  bool FlushOut(Endpoint* ep);
  void OnReadable(Endpoint* ep);
  // One recv into `into` (EINTR retried): the byte count, 0 when nothing is there yet, -1 after Lost (error or EOF).
  ssize_t Receive(Endpoint* ep, uint8_t* into, size_t size);
  /** Bytes of a client in login (plaintext, or decrypted): kept for JavaScript's relayTake, one kLoginData per take. */
  void LoginBytes(Endpoint* ep, const uint8_t* buf, size_t len);
  // Native logins (relay-auth.cc).
  /** Bytes of a login the relay runs: the startup packet, the password messages, then what waits for relayAdopt. */
  void NativeLogin(Endpoint* ep, const uint8_t* buf, size_t len);
  /** The client left during a native login: reported as kLoginGone (false when JavaScript already knows it). */
  bool NativeLoginGone(Endpoint* ep);
  /** kAccepted and a second event, never split between two batches. */
  void EmitPair(const int32_t first[5], const int32_t second[5]);
  /** `n` events (5 ints each, n <= kLongestEventGroup) that go to JavaScript side by side. */
  void EmitGroup(const int32_t* events, size_t n);
  void OnClientBytes(Endpoint* c, const uint8_t* buf, size_t total);
  void ObserveHist(double* s, int off, double us);
  /** One observation in the log histogram at `off` (src/pooler/log-histogram.ts computes the same bucket). */
  void LogAdd(double* s, int off, double us);
  void OnServerBytes(Endpoint* s, const uint8_t* buf, size_t total);
  void Unlink(Endpoint* c);
  /** Links `c` parked with its server (between transactions) and remembers it for relayReclaim. */
  void MarkParked(Endpoint* c) {
    c->parked = true;
    parked_.insert(c);
  }
  /** At the end of a transaction of `c` on `s`: pins it when its texts named state it must keep, reports the kinds
   *  of a pinned client that changed (kPin, 0 when none is left), and returns true when it has just been unpinned. */
  bool PinAtEnd(Endpoint* c, Endpoint* s);
  /** A client sync point (Query, Sync outside COPY IN, FunctionCall) while query statistics are on: its ring slot, and
   *  a Query's text fingerprinted as far as this read holds it. */
  void NoteSyncPoint(Endpoint* c, uint8_t type, const uint8_t* buf, size_t offset, uint32_t len, size_t total);
  /** A Query's text is all read: its table entry goes to its ring slot. */
  void QueryTextEnd(Endpoint* c);
  /** A client message that may change a session parameter: its text goes with the server it reaches. */
  void NoteParams(Endpoint* c, int kind, const uint8_t* text, size_t len);
  // The native lane (relay-lane.cc).
  /** Rewrites and sends a linked lane client's whole read; false when it is not all fast (nothing sent). */
  bool LaneSend(Endpoint* c, const uint8_t* buf, size_t len);
  /** Client bytes for JavaScript: the lane ends; they wait while fast groups are unanswered. */
  void LaneToJs(Endpoint* c, const uint8_t* buf, size_t len);
  /** At a server message header while fast groups are unanswered: false when JavaScript must take over here. */
  bool LaneReply(Endpoint* c, const uint8_t* buf, size_t offset, std::string& out, size_t& copied);
  /** JavaScript takes over the unanswered fast groups (sent already) with the server's bytes from this reply on. */
  void LaneHandOver(Endpoint* c, uint8_t status);
  bool Clean(Endpoint* c, Endpoint* s) const;
  /** A socket failed or reached EOF (reason 0 eof, 1 error, 2 malformed from a server). */
  void Lost(Endpoint* ep, int reason);
  void CloseClient(Endpoint* c, int reason);
  /** Stops polling and closes the descriptor; the memory goes at the end of the loop iteration (Bury). */
  void Destroy(Endpoint* ep);
  /** Frees the endpoints destroyed since the last call (the check phase, after Flush). */
  void Bury();
  /** JavaScript closes: pending output is sent, writes are shut down, reads discarded until EOF. */
  void CloseGracefully(Endpoint* ep);

  napi_env env_;
  uv_loop_t* loop_;
  uv_check_t check_;
  napi_ref callback_ = nullptr;
  napi_ref eventsRef_ = nullptr;
  int32_t* events_ = nullptr;
  size_t eventCap_ = 0;  // in int32 slots
  size_t eventLen_ = 0;
  // The lane's counts that ride with kRelease reports in events_ (EmitRelease): [n, Parse hits, then per entry its
  // Binds, Executes, microseconds] at the offset the report names; emptied with events_.
  napi_ref laneOutRef_ = nullptr;
  double* laneOut_ = nullptr;
  size_t laneOutCap_ = 0;
  size_t laneOutLen_ = 0;
  StatsLayout layout_;
  std::unordered_map<int32_t, Endpoint*> byId_;
  // Stopped poll handles by descriptor number, for the next endpoint on that number (Add, Destroy), and the
  // endpoints destroyed in this loop iteration (Bury).
  std::vector<uv_poll_t*> spare_;
  std::vector<Endpoint*> graveyard_;
  // Poll handles made by uv_poll_init so far (relayPollHandles): stays near the most descriptors open at once.
  double pollHandlesMade_ = 0;
  int32_t nextId_ = 1;
  std::vector<uint8_t> readBuf_;
  std::vector<int32_t> deferred_;
  // Intercepted bytes of endpoints that closed before JavaScript took them (relayTake reads them once).
  std::unordered_map<int32_t, std::string> orphans_;
  // Lane counts of clients that closed before JavaScript took them (relayLaneTake reads them once).
  std::unordered_map<int32_t, Lane> laneOrphans_;
  bool flushing_ = false;
  std::vector<uint8_t> tlsIn_;  // ciphertext of one recv
  // Why OpenSSL refused a client (relayTlsError reads each once; bounded).
  std::unordered_map<int32_t, std::string> tlsErrors_;
  std::string laneScratch_;   // LaneSend's output
  uint64_t schemaGen_ = 0;    // schema-change tags seen: a lane made before the last one answers no Parse itself
  std::string laneReplyOut_;  // a server read with the pooler's ParseCompletes placed in it
  // Listening sockets on which the relay accepts clients itself (relay-login.cc), by id (one per pooler).
  std::unordered_map<int32_t, Listener*> listeners_;
  int32_t nextListenerId_ = 1;
  // Native logins (relay-auth.cc): application_name ids, and failure messages (relayLoginError).
  std::unordered_map<std::string, int32_t> appIds_;
  std::vector<std::string> appNames_;
  std::unordered_map<int32_t, std::string> loginErrors_;
  // Simple-protocol queries by fingerprint (relayQueryStats, relayQueryStatsSize).
  QueryStatsTable queryStats_;
  // Lent servers no client uses now (relayLend), in lending order.
  std::vector<Endpoint*> lendable_;
  // Relay-only clients now (Lend or Hold .. Materialize or CloseLent): Emit looks for them only while there are some.
  int32_t relayOnly_ = 0;
  // The relay-only clients on a lent server (Lend .. Materialize or CloseLent), which relayMaterialize of one pool
  // visits: held logins (no server) can be thousands, and a checkout that finds no idle server reports these.
  std::unordered_set<Endpoint*> lentClients_;
  // Clients marked parked (MarkParked), so that relayReclaim visits them and not every endpoint: with 10 000 idle
  // clients a scan of all of them ran on every checkout that found no idle server. An entry whose client is no
  // longer parked is dropped when visited; Destroy drops a client's own.
  std::unordered_set<Endpoint*> parked_;
};

}  // namespace relay
}  // namespace tidepool
