// One client connection from its login on: born logged in (from a ClientStartup's LoginResult, a login the native
// relay ran, or a client a takeover moved here from the old process), it greets the client (the first two), then the
// relay (relay/relay.ts) carries it, with a server per transaction or session.
import type net from 'node:net';
import { SqlState, TxStatus } from '../protocol/codes.js';
import { writeErrorResponse } from '../protocol/writer.js';
import { ALL_TYPES, FrameStream, type MessageHandler } from '../protocol/frame-stream.js';
import type { SessionHost } from './hosts.js';
import type { Pool, PoolWaiter } from './pool.js';
import type { NativeLoginOk } from './relay/native.js';
import type { ServerConnection, ServerOwner } from './server-connection.js';
import { loginGreeting, type LoginResult } from './client-login.js';
import type { ChunkHandler } from './read-buffer.js';
import type { ClientEnd, ClientEvents, ClientOptions, RelayCounts, RelayKind } from './relay/relay.js';
import { PreparedPipe } from './prepared/pipe.js';
import { StatementRewriter } from './prepared/rewriter.js';
import { poolQueryId, queryStatsOn } from './query-stats/stats.js';
import { countSqlState } from './stats.js';
/** 57P01 to a client a takeover left on the old process (refused by the new one, TLS, its hand-over lost). */
export const TAKEOVER_LEFT_MESSAGE =
  'terminating connection: the pooler restarted (takeover) and this connection could not move to the new process';
/** 57P01 at shutdown_timeout to a client still on the old process of a takeover (a transaction that did not end). */
export const TAKEOVER_TIMEOUT_MESSAGE =
  'terminating connection: the pooler restarted (takeover) and this connection did not finish its transaction within shutdown_timeout';
import { pinMaskFor, releaseLeftPinned, releaseUnpinned, stateKindNames } from './session-state/pins.js';
import type { NativeTlsSocket } from './relay/native-tls.js';
import { ClientParams, startupWishes, trackedParams } from './session-state/params.js';
import { ParamSession, type ParamSessionHost } from './session-state/param-session.js';
import { serverValues } from './session-state/param-sync.js';
import { applyStartup, needsCheck, refusedStartupKey } from './session-state/startup-params.js';
import { EMPTY, discardReads, type ClientStartup, type ConnectionOwner } from './client-startup.js';
import type { MovedClient, MovedStatement } from './takeover-clients.js';
import { fdPassing } from '../native/fd-passing.js';

/** A session is born logged in: idle, waiting for a server, active on one, or closed. */
export type ClientState = 'idle' | 'waiting' | 'active' | 'closed';

const NO_PARAMS: ReadonlyMap<string, string> = new Map();

/** How the session was logged in: by client-login.ts (through its connection's ClientStartup), by the native relay,
 * which greeted the client too, or on the process a takeover moved the client from (takeover-clients.ts; greeted
 * there). */
export type SessionLogin =
  | { result: LoginResult }
  | { native: { pool: Pool; login: NativeLoginOk } }
  | { moved: { pool: Pool; client: MovedClient; server?: ServerConnection } };

export class ClientSession implements ServerOwner, PoolWaiter, ConnectionOwner {
  readonly id: number;
  /** Its place in the pooler's registry (Pooler.clients, a SlotSet), -1 outside it. */
  slot = -1;
  /** When the connection was accepted (a login the native relay began keeps the relay's time). */
  readonly connectedAt: number;
  /** The pid of the client's BackendKeyData: in transaction mode and on the admin console, one of the pooler's own
   * (cancel-keys.ts: no backend has it, and it is not the client id SHOW CLIENTS shows); in session mode, the pid of
   * the server the client keeps (so pg_backend_pid() and NotificationResponse pids match it). The secret is the
   * pooler's own either way: cancels come to the pooler, which forwards them with the server's key. */
  cancelPid: number;
  readonly cancelSecret: Buffer;
  state: ClientState = 'idle';
  readonly database: string;
  readonly user: string;
  applicationName: string;
  readonly isAdmin: boolean;
  /** Null for the admin console. */
  readonly pool: Pool | null;
  readonly protocol32: boolean;
  server: ServerConnection | null = null;
  waitingSince = 0;
  /** Peer address, kept: the native relay drops the socket object when it takes the descriptor. */
  readonly addr: string;
  cancelRequested = 0;
  /** Transaction mode: the kinds of session state (session-state/state-scan.ts) that keep this client on its server;
   * 0 while it is not pinned. */
  pinnedKinds = 0;
  /** Admin console sessions get every whole message here (see admin/console.ts). */
  onAdminMessage: MessageHandler = () => undefined;
  private adminFrames: FrameStream | null = null;
  /** Transaction mode: this client's session parameters (session-state/), or null (session mode, admin). */
  private params: ParamSession | null = null;
  private closeReason = '';
  /** The relay's side of this client after login; null before, for admin sessions, and once closed. */
  private end: ClientEnd | null = null;
  /** Transaction mode with prepared_statements: this client's statement names and pipeline (prepared/). */
  private rewriter: StatementRewriter | null = null;

  /** A native login's kind (NativeLoginOk.kind: the servers it leaves clean may be lent to logins like it), else -1. */
  private nativeKind = -1;
  /** A relay-only login reported with its lent server (NativeLoginOk.lent): kLent follows, instead of a prelink. */
  private lentLogin = false;

  /** `startup`: the client's connection, whose login succeeded (its socket events and reads come here now). */
  constructor(
    readonly core: SessionHost<ClientSession>,
    readonly startup: ClientStartup,
    login: SessionLogin,
  ) {
    startup.adopt(this);
    this.id = startup.id;
    this.connectedAt = startup.connectedAt;
    this.cancelPid = startup.cancelPid;
    this.cancelSecret = startup.cancelSecret;
    this.addr = startup.addr;
    if ('native' in login) {
      const { pool, login: ok } = login.native;
      this.user = pool.settings.user;
      this.database = pool.settings.database;
      this.applicationName = ok.applicationName;
      this.isAdmin = false;
      this.pool = pool;
      this.protocol32 = false;
      this.nativeLoggedIn(pool, ok);
      return;
    }
    if ('moved' in login) {
      const { pool, client: m, server } = login.moved;
      this.user = m.user;
      this.database = m.database;
      this.applicationName = m.applicationName;
      this.isAdmin = false;
      this.pool = pool;
      this.protocol32 = m.protocol32;
      this.movedIn(m, server);
      return;
    }
    const r = login.result;
    this.user = r.user;
    this.database = r.database;
    this.applicationName = r.applicationName;
    this.protocol32 = r.protocol32;
    this.isAdmin = r.admin;
    this.pool = r.pool;
    this.loggedIn(r);
  }

  /** The socket: the accepted one, or its TLS socket (the handshake ran before the login). */
  get socket(): net.Socket | NativeTlsSocket {
    return this.startup.socket;
  }

  /** TLS protocol and cipher as SHOW CLIENTS shows them, '' for plaintext. */
  get tls(): string {
    return this.startup.tls;
  }

  /** The socket's reads (see read-buffer.ts), which the connection delivers. */
  private set handler(h: ChunkHandler) {
    this.startup.handler = h;
  }

  /** The client proved who it is (client-login.ts): greet it, then relay. The greeting is written in the same call
   * when the pool knows its server's parameters (the login's last reply and the greeting then share one send). */
  private loggedIn(r: LoginResult): void {
    if (r.clientKey && r.scramSecret && this.pool)
      this.pool.scramCredential = { clientKey: r.clientKey, secret: r.scramSecret };
    const known = this.isAdmin ? this.core.adminParams() : this.pool!.serverParams;
    if (known) return this.greetLogin(known, r.startupParams);
    this.pool!.params().then(
      (params) => this.greetLogin(params, r.startupParams),
      (err: { message: string; sqlstate?: string }) => {
        this.fatal(err.sqlstate ?? SqlState.ConnectionFailure, err.message);
      },
    );
  }

  private greetLogin(pooled: ReadonlyMap<string, string>, startupParams: ReadonlyMap<string, string>): void {
    let params = pooled;
    if (this.socket.destroyed) return;
    if (this.isAdmin) return this.greetNow(params);
    const refused = refusedStartupKey(startupParams);
    if (refused) return this.fatal(SqlState.FeatureNotSupported, refused);
    const wishes = startupWishes(startupParams);
    // The greeting waits for the server: its BackendKeyData carries that server's pid, and the client's startup
    // parameters are applied to it (and checked by PostgreSQL) first.
    if (this.pool!.settings.mode === 'session') return this.awaitServerToGreet(pooled, wishes);
    const own = new ClientParams(params, startupParams, this.paramHost.tracked());
    this.params = new ParamSession(own, this.paramHost);
    // Parameters PostgreSQL may refuse or spell otherwise are checked on a server before the greeting, as a direct
    // connection refuses them at startup.
    if (needsCheck(wishes, pooled)) return this.awaitServerToGreet(pooled, wishes);
    params = own.greeting(params) ?? params;
    this.greetNow(params);
  }

  /** Greets with `params` and hands the connection on (to the relay, or the admin console); `registered`: the pooler
   * counts the client already (it waited for a server to check its startup parameters). */
  private greetNow(params: ReadonlyMap<string, string>, registered = false): void {
    this.socket.write(loginGreeting(params, this.applicationName, this.cancelPid, this.cancelSecret));
    if (!registered) this.core.registerClient(this);
    // The relay takes the connection once the greeting has left the socket's cork (see ClientLogin's cork).
    this.startup.whenUncorked(this.isAdmin ? () => this.serveAdmin() : () => this.handOff());
  }

  private serveAdmin(): void {
    const rest = this.startup.takeRest();
    this.adminFrames = new FrameStream(1024 * 1024, ALL_TYPES, (type, buf, start, len, complete) =>
      this.onAdminMessage(type, buf, start, len, complete),
    );
    this.handler = this.onAdminData;
    if (rest.length) this.onAdminData(rest);
  }

  private readonly onAdminData = (chunk: Buffer): boolean => {
    if (!this.adminFrames!.feed(chunk))
      this.fatal(SqlState.ProtocolViolation, `invalid message length ${this.adminFrames!.badLength}`);
    return false;
  };

  /** The relay checked the password and sent the greeting (a transaction-mode pool, no startup parameter but user,
   * database, application_name and the pool's client_encoding): what loggedIn and greetLogin would have set, then the
   * relay takes the client. */
  private nativeLoggedIn(pool: Pool, login: NativeLoginOk): void {
    this.nativeKind = login.kind;
    this.lentLogin = login.lent;
    // The parameters the greeting was made from (a RELOAD that changed the server may have cleared them since).
    const reported = pool.serverParams ?? NO_PARAMS;
    const encoding = login.clientEncoding ? reported.get('client_encoding') : undefined;
    const params = ClientParams.ofNativeLogin(
      reported,
      this.paramHost.tracked(),
      this.user,
      this.database,
      this.applicationName,
      encoding,
    );
    this.params = new ParamSession(params, this.paramHost);
    this.core.registerClient(this, true);
    this.handOff();
  }

  // ---- takeover: moving between processes (takeover-clients.ts) ----

  /** Sent to the new process, not answered yet: its relay end is gone, the descriptor is the mover's. */
  private moving = false;
  /** The new process refused it once: it stays here (as on SIGTERM, its next transaction gets 57P01). */
  private stays = false;
  /** Prepared statements it had on the process it came from (or before it came back): the rewriter takes them. */
  private movedStatements: MovedStatement[] | null = null;
  /** Bytes it sent that no server got, relayed at the handoff. */
  private pendingBytes: Buffer = EMPTY;
  /** Moved with its linked server: PostgreSQL's bytes it was not sent yet there, written to it at the handoff. */
  private toClient: Buffer = EMPTY;

  /** A client moved here by a takeover, logged in on the old process: what it had there, then the relay takes it
   * (no greeting: it has had one). */
  private movedIn(m: MovedClient, server?: ServerConnection): void {
    if (server && m.linked) return this.movedInLinked(m, server);
    this.params = new ParamSession(ClientParams.restore(m.params, m.startup), this.paramHost);
    this.movedStatements = m.statements.length > 0 ? m.statements : null;
    this.pendingBytes = m.pending;
    // Counted as moved in, not as a login: it logged in on the old process.
    this.core.registerClient(this, 'moved');
    this.handOff();
    if (this.end?.kind === 'js') this.startup.resumeReads();
  }

  /** A client moved here with the server it is linked to (session mode, or pinned; Pooler.adoptMoved made the server
   * this client's): the relay takes both, linked as on the old process, and the client gets first what PostgreSQL
   * sent there that it had not been sent. */
  private movedInLinked(m: MovedClient, s: ServerConnection): void {
    const linked = m.linked!;
    if (!linked.session) this.params = new ParamSession(ClientParams.restore(m.params, m.startup), this.paramHost);
    this.movedStatements = m.statements.length > 0 ? m.statements : null;
    this.appliedStartup = linked.appliedStartup;
    this.pinnedKinds = linked.session ? 0 : linked.pinned;
    this.server = s;
    s.owner = this;
    this.state = 'active';
    this.pendingBytes = m.pending;
    this.toClient = linked.toClient;
    this.core.registerClient(this, 'moved');
    this.handOff();
    if (this.end?.kind === 'js') this.startup.resumeReads();
  }

  /** Its protocol-level prepared statements, as the rewriter holds them (or holds them for it). */
  private statementList(): MovedStatement[] {
    if (this.rewriter)
      return [...this.rewriter.statements()].map(([name, st]) => ({ name, query: st.query, types: st.types }));
    return this.movedStatements ?? [];
  }

  /** The old process of a takeover: lets go of the connection if the client is between transactions (no server, no
   * read-back or reply under way, no TLS), with its state; a client linked to its server (session mode, pinned) goes
   * with that server when `pairs` (the new process takes pairs: moveOutLinked). Else why not. */
  moveOut(pairs = false): { client: MovedClient; fd: number; serverFd?: number } | string {
    if (this.moving) return 'on its way';
    if (this.stays) return 'refused by the new process';
    if (this.state === 'active' && this.server && (this.pinnedKinds !== 0 || this.pool?.settings.mode === 'session'))
      return pairs ? this.moveOutLinked(this.server) : 'linked to its server';
    // A client waiting for a server goes with the bytes it sent (this process's pools are paused now).
    const waiting = this.state === 'waiting';
    if (this.state !== 'idle' && !waiting) return `state ${this.state}`;
    if (this.isAdmin) return 'admin console';
    const pool = this.pool;
    if (!pool || pool.settings.mode !== 'transaction' || !this.params) return 'session mode';
    if (this.tls) return 'TLS';
    if (this.server || this.parkOnLink || this.greeting) return 'holds a server';
    if (this.pinnedKinds !== 0) return 'pinned';
    if (!this.params.idle) return 'session parameters being read back';
    if (this.rewriter && !this.rewriter.settled) return 'prepared statements in flight';
    const end = this.end;
    if (!end) return 'not relayed';
    const statements = this.statementList();
    if (waiting) pool.cancelWait(this);
    const released = end.release();
    if (!released) {
      if (waiting) pool.acquire(this);
      return 'the relay cannot let it go now';
    }
    this.state = 'idle';
    this.end = null;
    this.moving = true;
    if (this.core.log.isLevelEnabled('debug'))
      this.core.log.debug(
        { client_id: this.id, addr: this.addr, pending: released.pending.length, statements: statements.length },
        'takeover: client sent to the new process',
      );
    const values = this.params.client;
    return {
      fd: released.fd,
      client: {
        database: this.database,
        user: this.user,
        applicationName: this.applicationName,
        protocol32: this.protocol32,
        connectedAt: this.connectedAt,
        cancelPid: this.cancelPid,
        cancelSecret: this.cancelSecret,
        params: [...values.values.values],
        startup: [...values.startup],
        statements,
        pending: released.pending,
      },
    };
  }

  /** moveOut for a client linked to its server (session mode, or pinned), between transactions: both go as a pair, the
   * server as this client's, with what PostgreSQL sent that the client was not sent yet. */
  private moveOutLinked(s: ServerConnection): { client: MovedClient; fd: number; serverFd: number } | string {
    const pool = this.pool!;
    if (this.isAdmin) return 'admin console';
    if (this.tls) return 'TLS';
    if (this.greeting || this.parkOnLink) return 'logging in';
    const session = pool.settings.mode === 'session';
    if (!session && (!this.params || !this.params.idle)) return 'session parameters being read back';
    if (this.rewriter && !this.rewriter.settled) return 'prepared statements in flight';
    const end = this.end;
    if (!end) return 'not relayed';
    const server = pool.describeLinked(s);
    if (typeof server === 'string') return server;
    const statements = this.statementList();
    const released = end.releasePair();
    if (!released) return 'the relay cannot let the pair go now';
    this.rewriter?.detach();
    this.end = null;
    this.moving = true;
    if (this.core.log.isLevelEnabled('debug'))
      this.core.log.debug(
        {
          client_id: this.id,
          server_id: s.id,
          backend_pid: s.backendPid,
          pinned: released.pinned,
          to_client: released.toClient.length,
        },
        'takeover: client sent to the new process with its server',
      );
    return {
      fd: released.fd,
      serverFd: released.serverFd,
      client: {
        database: this.database,
        user: this.user,
        applicationName: this.applicationName,
        protocol32: this.protocol32,
        connectedAt: this.connectedAt,
        cancelPid: this.cancelPid,
        cancelSecret: this.cancelSecret,
        params: this.params ? [...this.params.client.values.values] : [],
        startup: this.params ? [...this.params.client.startup] : [],
        statements,
        pending: EMPTY,
        linked: {
          server,
          pinned: session ? 0 : released.pinned || this.pinnedKinds,
          session,
          appliedStartup: this.appliedStartup,
          toClient: released.toClient,
        },
      },
    };
  }

  /** Nothing keeps it here for good: it can move once what is under way settles. */
  private get mayMoveLater(): boolean {
    return !this.stays && !this.isAdmin && !this.tls && this.pool !== null;
  }

  /** The new process took it: it leaves this process without a word to it. */
  movedAway(): void {
    if (!this.moving) return;
    this.moving = false;
    const s = this.server;
    if (s) {
      // Its linked server went with it.
      this.server = null;
      this.pinnedKinds = 0;
      this.pool!.forgetMoved(s);
      this.core.counters.serversMovedOut++;
    }
    this.closeReason = 'moved to the new process (takeover)';
    this.core.counters.movedOut++;
    this.onClientClosed(true);
  }

  /** The new process refused it (or is gone): the relay takes it again from `fd`, with the bytes it had sent. */
  moveBack(fd: number, pending: Buffer, why: string, serverFd?: number): void {
    if (!this.moving) return;
    this.moving = false;
    if (this.state === 'closed') {
      // Closed meanwhile (shutdown_timeout): its copies of the descriptors just close.
      fdPassing?.fdClose(fd);
      if (serverFd !== undefined) fdPassing?.fdClose(serverFd);
      return;
    }
    this.stays = true;
    this.core.log.info({ client_id: this.id, reason: why }, 'takeover: client stays on this process');
    const s = this.server;
    if (s && (serverFd === undefined || !this.pool!.takeBack(s, serverFd))) {
      // Its linked server is lost: the client cannot go on without the session it held there.
      if (serverFd === undefined) this.pool!.forgetMoved(s);
      this.server = null;
      this.pinnedKinds = 0;
      fdPassing?.fdClose(fd);
      this.closeReason = 'its server was lost while moving (takeover)';
      return this.onClientClosed(true);
    }
    try {
      // The connection reads through its ClientStartup again, and reports there until the relay takes it.
      this.startup.takeSocket(fd);
    } catch {
      fdPassing?.fdClose(fd);
      this.closeReason = 'lost while moving (takeover)';
      return this.onClientClosed(true);
    }
    if (this.rewriter) {
      this.movedStatements = this.statementList();
      this.rewriter.close();
      this.rewriter = null;
    }
    this.pendingBytes = pending;
    this.handOff();
    if (this.end?.kind === 'js') this.startup.resumeReads();
  }

  /** A login waiting for a server before its greeting: the pool's ParameterStatus set and the client's startup
   * parameters (session-state/startup-params.ts). */
  private greeting: { params: ReadonlyMap<string, string>; wishes: ReadonlyMap<string, string> } | null = null;
  /** Session mode: startup parameters were applied to the server, which its reset must undo (see onClientClosed). */
  private appliedStartup = false;

  /** Waits for a server, applies the client's startup `wishes` to it (PostgreSQL checks them), then greets with the
   * pool's `params` and PostgreSQL's values of the wishes. Session mode keeps that server (its pid is the greeting's);
   * transaction mode gives it back. */
  private awaitServerToGreet(params: ReadonlyMap<string, string>, wishes: ReadonlyMap<string, string>): void {
    this.greeting = { params, wishes };
    this.core.registerClient(this);
    this.state = 'waiting';
    this.waitingSince = Date.now();
    this.pool!.acquire(this);
  }

  /** The server for a login that waited for it: the client's startup parameters are applied to it first (a refusal
   * is the client's FATAL, as at a direct connection's startup), then the greeting goes out. Session mode keeps the
   * server (the greeting carries its pid) and the relay takes over; transaction mode gives it back, holding the
   * client's values, for the client's first transaction. */
  private greet(s: ServerConnection, pooled: ReadonlyMap<string, string>, wishes: ReadonlyMap<string, string>): void {
    if (this.state === 'closed' || this.socket.destroyed) {
      this.pool!.release(s, true);
      return;
    }
    // Ours while it checks: if it dies, onServerClosed ends the login.
    this.server = s;
    s.owner = this;
    this.state = 'active';
    // What the server holds already needs no round trip: in session mode its login's values (a reset server is back
    // to them), in transaction mode what the pool knows it holds (another client's values, maybe).
    let held: ReadonlyMap<string, string>;
    if (this.params) held = serverValues(s, this.paramHost.tracked()).values;
    else {
      const reported = new Map([...s.params].map(([k, v]) => [k.toLowerCase(), v]));
      reported.set('application_name', s.applicationName);
      held = reported;
    }
    const apply = new Map([...wishes].filter(([n, v]) => held.get(n) !== v));
    if (apply.size === 0) return this.greetWith(s, pooled, wishes);
    applyStartup(s, apply, (r) => {
      if (this.server !== s || this.state === 'closed') {
        if (s.owner === this) s.owner = null;
        if (this.server === s) this.server = null;
        this.releaseChecked(s);
        return;
      }
      if (!r.ok) {
        this.server = null;
        s.owner = null;
        this.releaseChecked(s);
        this.core.events.loginFailure(
          `client ${this.addr}: startup parameter refused by PostgreSQL: ${r.message} (SQLSTATE ${r.sqlstate})`,
        );
        return this.fatal(r.sqlstate, r.message, r.detail);
      }
      this.appliedStartup = true;
      this.greetWith(s, pooled, new Map([...wishes, ...r.values]));
    });
  }

  /** A server that checked a login's startup parameters goes back: a session-mode one through its reset (which
   * undoes them), a transaction-mode one as it is (its values are known: see greetWith). */
  private releaseChecked(s: ServerConnection): void {
    if (this.pool!.settings.mode === 'session') this.pool!.resetAndRelease(s, this.resetQuery(true));
    else this.pool!.release(s, true);
  }

  /** The greeting, with PostgreSQL's values of what the client asked for (`values`) in place of the pool's. */
  private greetWith(
    s: ServerConnection,
    pooled: ReadonlyMap<string, string>,
    values: ReadonlyMap<string, string>,
  ): void {
    const app = values.get('application_name');
    if (app !== undefined) this.applicationName = app;
    if (this.pool!.settings.mode === 'transaction' && this.params) {
      // The server holds the client's values now: its first transaction may start there with no sync.
      this.params.client.settle(values);
      const held = serverValues(s, this.paramHost.tracked());
      for (const [n, v] of values) held.set(n, v);
      this.server = null;
      s.owner = null;
      this.state = 'idle';
      this.pool!.release(s, true);
      this.greetNow(this.params.client.greeting(pooled) ?? pooled, true);
      return;
    }
    this.core.rekeyCancel(this, s.backendPid);
    // The server's own login values (its ParameterStatus), with what the client asked for in their place.
    const greeting = new Map(s.params);
    for (const k of greeting.keys()) {
      const v = values.get(k.toLowerCase());
      if (v !== undefined) greeting.set(k, v);
    }
    this.socket.write(loginGreeting(greeting, this.applicationName, this.cancelPid, this.cancelSecret));
    // A server free at once is given inside the login's cork: the relay takes the connection after it.
    this.startup.whenUncorked(() => this.handOff());
  }

  /** Session mode: the query that cleans a server after its client. Startup parameters applied to it are undone by
   * RESET ALL, which server_reset_query's default (DISCARD ALL) runs; a reset query that runs neither gets one added. */
  private resetQuery(applied = this.appliedStartup): string {
    const q = this.pool!.settings.resetQuery;
    if (!applied || /\b(?:discard|reset)\s+all\b/i.test(q)) return q;
    return q ? `${q}; RESET ALL` : 'RESET ALL';
  }

  /** Hands the socket to the relay once the greeting has left Node's plaintext socket (the native relay takes the
   * descriptor, and bytes still queued in Node would be lost); bytes that arrive meanwhile stay with the login
   * and go along. Servers are on the same relay, so a client the relay cannot take is closed. */
  private handOff(): void {
    if (this.state === 'closed' || this.socket.destroyed) return;
    // A TLS socket goes to the JavaScript relay, which writes through the same socket: nothing to wait for (and its
    // queued bytes may never raise 'drain', which comes only after a write that returned false).
    if (this.socket.writableLength > 0 && !this.tls) {
      this.socket.once('drain', () => this.handOff());
      return;
    }
    const conn = {
      socket: this.socket,
      read: (h: ChunkHandler) => {
        this.handler = h;
      },
    };
    const pool = this.pool!;
    const maxMessageSize = this.core.config.general.max_message_size;
    const options: ClientOptions = {
      stats: pool.stats,
      app: this.core.apps.get(this.applicationName).block,
      maxMessageSize,
      // A client moved by a takeover (or back after a refused move): the bytes it sent that no server got.
      initial: this.pendingBytes.length > 0 ? this.pendingBytes : this.startup.takeRest(),
    };
    this.pendingBytes = EMPTY;
    if (pool.settings.mode === 'transaction') options.pinMask = pinMaskFor(pool.interner !== null);
    if (queryStatsOn()) options.queryPool = poolQueryId(pool.name);
    if (pool.interner && pool.settings.mode === 'transaction') {
      const interner = pool.interner;
      // Made when the relay first needs it: the native relay forwards a client itself until its first message the
      // rewriter handles (a simple-protocol client may never send one); the JavaScript relay asks at once.
      options.intercept = (sink) => {
        // Servers are opened with the pooler's own startup parameters and synced to the client's: of those, the
        // search_path decides what a text names (and so what a Parse infers), and is part of a statement's identity.
        const rewriter = new StatementRewriter(
          interner,
          () => this.params?.client.values.values.get('search_path') ?? '',
        );
        // Moved by a takeover: the names it prepared before, as if parsed here (servers get them at first use).
        if (this.movedStatements) rewriter.restore(this.movedStatements);
        this.movedStatements = null;
        if (this.state === 'closed') rewriter.close();
        else this.rewriter = rewriter;
        // Made while this client holds a server: the rewriter works on that server's statements from here on.
        if (this.server?.statements && this.state !== 'closed') rewriter.attach(this.server.statements);
        return new PreparedPipe(rewriter, maxMessageSize, sink);
      };
    }
    this.handler = discardReads;
    const end = pool.relay.adoptClient(conn, options, this.relayEvents);
    if (!end)
      return this.fatal(SqlState.ConnectionFailure, 'internal error: the connection could not be handed to the relay');
    this.end = end;
    this.startup.detach();
    // Moved with its linked server: what PostgreSQL sent that the client was not sent on the old process comes first.
    if (this.toClient.length > 0) end.write(this.toClient);
    this.toClient = EMPTY;
    // Session mode (or moved pinned): the server the greeting named. When either side is gone, its close report is on
    // the way.
    if (this.server) {
      if (end.link(this.server.end, false) && this.pinnedKinds !== 0) end.restorePins(this.pinnedKinds);
    } else if (this.core.shuttingDown) {
      // A login that ended after a takeover: the new process serves it from now on, if it takes it.
      if (this.state === 'idle') this.core.offerMove(this);
    } else if (end.parks && pool.settings.mode === 'transaction' && this.state === 'idle' && !this.lentLogin)
      this.prelink(pool);
  }

  /** Set while a server lent at login (prelink) is on its way to the link, which then parks the pair. */
  private parkOnLink = false;
  /** The relay asked for a server (the client sent its first query) while that server was on its way. */
  private askedBeforeLink = false;

  /** A transaction-mode client that just logged in takes an idle server parked with it when the pool could spare one
   * (Pool.lendParked): its first transaction then goes to PostgreSQL with no trip into JavaScript, which matters to
   * clients that connect per transaction. The pool takes the server back whenever it needs it, as after any
   * transaction of a parked pair. */
  private prelink(pool: Pool): void {
    this.waitingSince = Date.now();
    this.parkOnLink = true;
    if (!pool.lendParked(this)) this.parkOnLink = false;
  }

  // ---- relay reports ----

  private readonly relayEvents: ClientEvents = {
    onNeedServer: () => {
      if (this.state !== 'idle') {
        // A server lent at login is still syncing: its link takes the bytes, unless it goes back (linkServer).
        if (this.parkOnLink) this.askedBeforeLink = true;
        return;
      }
      // A graceful shutdown lets running transactions finish; a new one would only wait, silent, for
      // shutdown_timeout: the client hears at once, in PostgreSQL's words for a backend told to stop.
      // After a takeover the client goes to the new process instead, its bytes with it, when it can move.
      if (this.core.shuttingDown) {
        if (this.core.offerMove(this)) return;
        if (!this.core.movingClients || !this.mayMoveLater)
          return this.kill(
            this.core.handedOver ? TAKEOVER_LEFT_MESSAGE : 'terminating connection due to administrator command',
            SqlState.AdminShutdown,
          );
        // It cannot go this instant (a reply still leaving, a read-back under way): it waits in its paused pool, with
        // its bytes in the relay, and the mover's next sweep sends it.
      }
      this.state = 'waiting';
      this.waitingSince = Date.now();
      // Its next server is synced to values a read-back may still be learning.
      if (!this.params || this.params.mayAcquire()) this.pool!.acquire(this);
    },
    onRelease: () => {
      const s = this.server;
      if (!s) return;
      this.server = null;
      this.rewriter?.detach();
      if (this.state !== 'closed') this.state = 'idle';
      if (this.pinnedKinds !== 0) {
        this.params?.forget(s);
        return this.unpinned(s);
      }
      if (this.params) this.checkIn(s, true);
      else this.pool!.release(s, true);
      if (this.core.shuttingDown && this.state === 'idle') this.core.offerMove(this);
    },
    onLent: (serverEndId) => {
      const s = this.pool!.lending.take(serverEndId);
      if (!s) return;
      this.server = s;
      s.owner = this;
      if (this.state !== 'closed') this.state = 'active';
    },
    onClose: (reason, clean) => {
      this.end = null;
      this.closeReason ||= reason;
      this.onClientClosed(clean);
    },
    onPin: (kinds) => {
      const s = this.server;
      // 0: the client cleared what it held; the split that follows unpins it (onRelease).
      if (!s || this.state === 'closed' || kinds === 0) return;
      this.nativeKind = -1;
      const was = this.pinnedKinds;
      this.pinnedKinds = kinds;
      if (was === kinds) return;
      this.pool!.pin(s);
      this.core.events.add(
        'client_pinned',
        `${this.database}/${this.user}`,
        `client ${this.id} (${this.addr}) ${was ? 'stays' : 'is'} pinned to server ${s.id} (backend pid ${s.backendPid}): ${stateKindNames(kinds)}`,
      );
    },
    onBadLength: (length) => {
      // PostgreSQL's words for a type it does not take; the server never saw it and stays in the pool.
      if (length < 0) return this.fatal(SqlState.ProtocolViolation, `invalid frontend message type ${-1 - length}`);
      this.fatal(
        SqlState.ProtocolViolation,
        `invalid message length ${length} (max_message_size ${this.core.config.general.max_message_size})`,
      );
    },
  };

  /** The relay carrying this client's bytes; null before the handoff, for admin sessions, and once closed. */
  get relayKind(): RelayKind | null {
    return this.end ? this.end.kind : null;
  }

  /** The relay's numbers for this client; null before the handoff, for admin sessions and once closed. */
  relayCounts(): RelayCounts | null {
    return this.end ? this.end.counts() : null;
  }

  /** Why this client waits for a server (SHOW CLIENTS `wait_reason`), or '' when it is not waiting. */
  waitReason(): string {
    if (this.state !== 'waiting') return '';
    const pool = this.pool;
    if (!pool) return 'waiting for server';
    if (pool.paused) return 'pool paused';
    if (pool.coordinator?.blocked.has(pool)) return `max_db_connections ${pool.coordinator.settings.maxDbConnections}`;
    return pool.connecting > 0 ? 'connecting' : 'all servers busy';
  }

  // ---- the pool ----

  private readonly paramHost: ParamSessionHost = {
    release: (s, reusable) => this.pool!.release(s, reusable),
    tell: (data) => this.end?.write(data),
    acquire: () => {
      if (this.state === 'waiting') this.pool!.acquire(this);
    },
    tracked: () => trackedParams(this.core.config.general.track_extra_parameters),
    warn: (fields, message) => this.core.log.warn({ ...fields, client_id: this.id }, message),
  };

  /** PoolWaiter: a server is ours now. */
  onServer(s: ServerConnection): void {
    const greeting = this.greeting;
    if (greeting) {
      this.greeting = null;
      return this.greet(s, greeting.params, greeting.wishes);
    }
    const end = this.end;
    if (this.state === 'closed' || !end) {
      this.pool!.release(s, true);
      return;
    }
    this.server = s;
    s.owner = this;
    this.state = 'active';
    // Before the client's first message of the transaction: the server takes the client's parameters if they differ.
    if (this.params && !this.params.inSync(s) && this.params.sync(s, () => this.synced(s))) return;
    this.linkServer(s);
  }

  private synced(s: ServerConnection): void {
    if (this.server !== s || this.state === 'closed') {
      // The client left meanwhile: the server is between transactions.
      if (this.server === s) this.server = null;
      if (s.owner === this) s.owner = null;
      this.pool!.release(s, true);
      return;
    }
    this.linkServer(s);
  }

  private linkServer(s: ServerConnection): void {
    const end = this.end!;
    const park = this.parkOnLink;
    const asked = this.askedBeforeLink;
    this.parkOnLink = false;
    this.askedBeforeLink = false;
    if (park && !this.pool!.mayStillPark()) {
      // Lent at login, then the pool paused (or needs its servers) while the server synced: linked now, the pair
      // would run the client's first transaction past the PAUSE. The server goes back; a client that has sent its
      // first query already waits like any other, one that has not asks when it does.
      this.server = null;
      s.owner = null;
      this.pool!.release(s, true);
      if (asked && end.alive) {
        this.state = 'waiting';
        this.waitingSince = Date.now();
        this.pool!.acquire(this);
      } else this.state = 'idle';
      return;
    }
    if (this.rewriter && s.statements) this.rewriter.attach(s.statements);
    if (end.link(s.end, this.pool!.settings.mode === 'transaction', park)) return;
    this.rewriter?.detach();
    // One side is gone and its close report is on the way: a live server goes back, a live client waits again.
    this.server = null;
    s.owner = null;
    this.pool!.release(s, s.end.alive);
    if (end.alive) {
      this.state = 'waiting';
      this.pool!.acquire(this);
    }
  }

  /** PoolWaiter: no server could be had. */
  onPoolError(message: string, sqlstate: string): void {
    this.fatal(sqlstate, message);
  }

  // ---- ServerOwner ----

  onServerClosed(server: ServerConnection, reason: string, atBoundary: boolean, toldClient: boolean): void {
    this.server = null;
    if (this.params) this.params.syncing = false;
    if (this.state === 'closed') return;
    this.core.events.add(
      'backend_lost',
      `${this.database}/${this.user}`,
      `backend pid ${server.backendPid} (server ${server.id}) was lost while serving client ${this.id} (${this.addr}): ${reason}`,
    );
    // The pooler's own error only when PostgreSQL said nothing: after its FATAL (pg_terminate_backend, a shutdown) a
    // driver expects the close, as on a direct connection, and takes a second error for a new failure.
    if (atBoundary && !toldClient) return this.fatal(SqlState.ConnectionFailure, `server connection lost: ${reason}`);
    const end = this.end;
    this.end = null;
    this.closeReason ||= `server connection lost: ${reason}`;
    // What the client was sent goes out first; a client that got part of a message is cut off (nothing it could
    // parse can follow).
    if (toldClient) end?.close();
    else end?.destroy();
    this.onClientClosed(true);
  }

  onServerLostBetween(s: ServerConnection): void {
    if (this.server !== s) return;
    this.server = null;
    if (this.state !== 'closed') this.state = 'idle';
  }

  // ---- teardown ----

  /** Sends a FATAL error and closes the connection. */
  fatal(sqlstate: string, message: string, detail?: string): void {
    if (this.state === 'closed') return;
    const error = writeErrorResponse({ severity: 'FATAL', code: sqlstate, message, ...(detail ? { detail } : {}) });
    // The pooler's own errors count by SQLSTATE with PostgreSQL's (refused during an outage: 08006).
    if (this.pool) countSqlState(this.pool.stats.block, sqlstate);
    const end = this.end;
    if (end) {
      this.end = null;
      this.closeReason ||= message;
      this.core.counters.errors++;
      const clean = this.server ? end.unlink() : true;
      end.write(error);
      end.close();
      this.onClientClosed(clean);
      return;
    }
    if (this.socket.destroyed) return;
    this.closeReason ||= message;
    this.core.counters.errors++;
    this.socket.end(error);
    this.onClientClosed(true);
  }

  /** `clean`: the relay's verdict on the server it unlinked (between transactions and whole messages). */
  onClientClosed(clean: boolean): void {
    if (this.state === 'closed') return;
    const wasWaiting = this.state === 'waiting';
    this.state = 'closed';
    // The socket stays readable until the client closes it, but nothing it sends now may reach a server.
    this.handler = discardReads;
    if (wasWaiting) this.pool?.cancelWait(this);
    const s = this.server;
    if (s && this.moving) {
      // Closed while on its way with its linked server (shutdown_timeout): the relay let go of both, the mover holds
      // the descriptors and the new process may have the pair; nothing may be sent to that server from here.
      this.server = null;
      this.pinnedKinds = 0;
      this.pool!.forgetMoved(s);
    } else if (this.pinnedKinds !== 0) {
      if (s) this.params?.forget(s);
      this.leavePinned(s, clean);
    } else if (s && this.params?.syncing) {
      // Its set_config is still running: synced() gives the server back at its ReadyForQuery.
      this.server = null;
    } else if (s) {
      this.server = null;
      if (clean && this.pool!.settings.mode === 'session') this.pool!.resetAndRelease(s, this.resetQuery());
      else if (clean && this.params) this.checkIn(s, false);
      else this.pool!.release(s, clean);
    }
    this.rewriter?.close();
    this.rewriter = null;
    this.core.unregisterClient(this);
  }

  /** The client's texts cleared what pinned it and the relay split the pair (session-state/pins.ts). */
  private unpinned(s: ServerConnection): void {
    const pinned = { id: this.id, addr: this.addr, pinnedKinds: this.pinnedKinds };
    this.pinnedKinds = 0;
    const message = releaseUnpinned(pinned, this.pool!, s);
    this.core.events.add('client_unpinned', `${this.database}/${this.user}`, message);
  }

  /** A server back from this client, through its parameters' check-in (`stays`: the client lives on). It holds this
   * native login's kind of values (the pool's ServerLending may lend it) unless they are read back: then neither it nor any later
   * server of this client does, the client's own values may differ from its login's from now on. */
  private checkIn(s: ServerConnection, stays: boolean): void {
    s.lendKind = this.nativeKind;
    if (!this.params!.checkIn(s, stays)) return;
    s.lendKind = -1;
    this.nativeKind = -1;
  }

  /** The client of a pinned server left (session-state/pins.ts). */
  private leavePinned(s: ServerConnection | null, clean: boolean): void {
    this.server = null;
    this.core.events.add(
      'client_unpinned',
      `${this.database}/${this.user}`,
      releaseLeftPinned(this, this.pool!, s, clean),
    );
  }

  /** Admin KILL, shutdown: closes the connection with an error. */
  kill(message: string, sqlstate: string = SqlState.AdminShutdown): void {
    this.fatal(sqlstate, message);
  }

  /** True when the client holds no server mid-transaction (graceful shutdown waits for this). */
  get quiescent(): boolean {
    if (this.server === null) return true;
    const c = this.relayCounts();
    const s = this.server.end.counts();
    return !c || !s || (c.syncs === 0 && s.txStatus === TxStatus.Idle);
  }
}
