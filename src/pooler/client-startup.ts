// A client connection until the relay takes it: the startup packets and password exchange (client-login.ts) with
// their socket writes, corks and TLS start, the greeting, and the admin console's framing. ClientSession (the
// relay's reports and the pool) extends it.
import type net from 'node:net';
import { randomBytesPooled } from './random-pool.js';
import { SqlState } from '../protocol/codes.js';
import { FrameStream, ALL_TYPES, type MessageHandler } from '../protocol/frame-stream.js';
import type { SessionHost } from './hosts.js';
import type { Pool } from './pool.js';
import type { NativeLoginOk } from './relay/native.js';
import type { ServerConnection } from './server-connection.js';
import { ClientLogin, loginGreeting, type LoginResult } from './client-login.js';
import type { ChunkHandler } from './read-buffer.js';
import type { ClientTls } from './tls/tls-settings.js';
import { startClientTls } from './tls/client-handshake.js';
import { NativeTlsSocket } from './relay/native-tls.js';
import { ClientParams, startupWishes } from './session-state/params.js';
import { needsCheck, refusedStartupKey } from './session-state/startup-params.js';
import { ParamSession, type ParamSessionHost } from './session-state/param-session.js';

let nextClientId = 1;

/** A read handler that drops what it is given (nothing a client sends then may reach a server). */
export const discardReads: ChunkHandler = () => false;
export const EMPTY = Buffer.alloc(0);

export type ClientState = 'startup' | 'idle' | 'waiting' | 'active' | 'closed';

export abstract class ClientStartup {
  readonly id = nextClientId++;
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
  state: ClientState = 'startup';
  database = '';
  user = '';
  applicationName = '';
  isAdmin = false;
  pool: Pool | null = null;
  server: ServerConnection | null = null;
  waitingSince = 0;
  /** Peer address, kept: the native relay drops the socket object when it takes the descriptor. */
  readonly addr: string;
  private adminFrames: FrameStream | null = null;
  /** Transaction mode: this client's session parameters (session-state/), or null (session mode, admin). */
  protected params: ParamSession | null = null;
  protected closeReason = '';
  /** Between the 'S' (or a direct hello) and the end of the handshake. */
  private handshaking = false;
  /** Admin console sessions get every whole message here (see admin/console.ts). */
  onAdminMessage: MessageHandler = () => undefined;

  /** TLS protocol and cipher as SHOW CLIENTS shows them ("TLSv1.3/TLS_AES_256_GCM_SHA384"), '' for plaintext. */
  tls = '';

  /** The accepted socket, replaced by its TLS socket once a handshake is done (a NativeTlsSocket when the native relay
   * terminates it). */
  socket: net.Socket | NativeTlsSocket;

  /** `accepted`: Node's socket, or a client the native relay accepted itself (its login runs on the addon's endpoint);
   * `native`: the relay ran the login itself and greeted the client (native/relay-auth.cc), or a takeover moved the
   * client here logged in (its key, and when it was accepted). */
  constructor(
    accepted: net.Socket | NativeTlsSocket,
    readonly core: SessionHost<ClientStartup>,
    native?: Pick<NativeLoginOk, 'cancelPid' | 'cancelSecret'> & { connectedAt?: number },
  ) {
    const socket = accepted;
    this.socket = socket;
    this.connectedAt =
      native?.connectedAt ??
      (socket instanceof NativeTlsSocket && socket.acceptedAt > 0 ? socket.acceptedAt : Date.now());
    this.addr = `${socket.remoteAddress ?? '?'}:${socket.remotePort ?? 0}`;
    socket.on('error', this.onSocketError);
    socket.on('close', this.onSocketClose);
    if (native) {
      this.cancelPid = native.cancelPid;
      this.cancelSecret = native.cancelSecret;
      this.login = null;
      this.handler = discardReads;
      return;
    }
    this.cancelPid = core.newCancelPid();
    this.cancelSecret = randomBytesPooled(4);
    this.login = new ClientLogin(
      {
        id: this.id,
        addr: this.addr,
        ip: socket.remoteAddress ?? '',
        write: (data) => {
          this.socket.write(data);
        },
        fatal: (sqlstate, message) => {
          if (this.state === 'startup')
            core.events.loginFailure(`client ${this.addr}: ${message} (SQLSTATE ${sqlstate})`);
          this.fatal(sqlstate, message);
        },
        destroy: () => {
          this.socket.destroy();
        },
        cork: () => {
          this.corks++;
          this.socket.cork();
        },
        uncork: () => {
          this.socket.uncork();
          if (--this.corks > 0 || !this.afterUncork) return;
          const next = this.afterUncork;
          this.afterUncork = null;
          next();
        },
        startTls: (settings, initial) => this.startTls(settings, initial),
      },
      core,
      (result) => this.loginOk(result),
    );
    this.handler = this.onStartupChunk;
    core.logins.add(this);
    if (socket instanceof NativeTlsSocket)
      socket.setHandlers({ onSecure: () => undefined, onData: (chunk) => void this.handler(chunk) });
  }

  // ---- what the session does ----

  /** The session parameters' host (session-state/param-session.ts). */
  protected abstract readonly paramHost: ParamSessionHost;
  /** Hands the connection to the relay (after the greeting). */
  protected abstract handOff(): void;
  /** Waits for a server, applies the client's startup `wishes` to it (PostgreSQL checks them), then greets with the
   * pool's `params` and PostgreSQL's values of the wishes. Session mode keeps that server (its pid is the greeting's);
   * transaction mode gives it back. */
  protected abstract awaitServerToGreet(params: ReadonlyMap<string, string>, wishes: ReadonlyMap<string, string>): void;
  /** The pooler counts the client (pooler.ts registerClient). */
  protected abstract register(): void;
  /** Sends a FATAL error and closes the connection. */
  abstract fatal(sqlstate: string, message: string): void;
  /** `clean`: the relay's verdict on the server it unlinked (between transactions and whole messages). */
  protected abstract onClientClosed(clean: boolean): void;

  // ---- startup and authentication ----

  /** client_login_timeout passed (pooler.ts expireLogins). Before a startup packet, or mid-handshake, the client has
   * not spoken the protocol (or is reading TLS records): closed without a word, as PostgreSQL closes it. Past it
   * (password exchange, a server awaited for the greeting) it gets FATAL 08P01 as PgBouncer sends one, with
   * PostgreSQL's text. Either way the descriptor goes once the bytes are out, whether the client reads or not. */
  loginTimedOut(): void {
    if (this.state === 'closed' || this.socket.destroyed) return;
    this.closeReason ||= 'client_login_timeout';
    const s = this.socket;
    if (this.login?.startupTaken && !this.handshaking) {
      // fatal() ends the socket and unregisters; the end below makes sure the descriptor does not wait for the client.
      this.fatal(SqlState.ProtocolViolation, 'canceling authentication due to timeout');
      if (!(s instanceof NativeTlsSocket)) s.destroySoon();
      return;
    }
    s.destroy();
  }

  /** The socket's reads go here (see read-buffer.ts); true when the chunk is kept after the call. */
  handler: ChunkHandler;

  private readonly onStartupChunk = (chunk: Buffer): boolean => {
    // A chunk from a ReadBuffer is reused after this returns; the addon's (relayTake) are the login's own.
    this.login?.feed(this.socket instanceof NativeTlsSocket ? chunk : Buffer.from(chunk));
    return false;
  };

  /** Until the relay takes the socket (and for admin sessions, always). */
  protected readonly onSocketError = (err: Error): void => {
    this.closeReason ||= err.message;
    // A TLS handshake that failed (garbage instead of a hello, no shared protocol) is a failed login worth seeing.
    if (this.state === 'startup' && this.handshaking) {
      this.handshaking = false;
      this.core.events.loginFailure(`client ${this.addr}: TLS handshake failed: ${err.message}`);
    }
  };

  protected readonly onSocketClose = (): void => this.onClientClosed(true);

  /** SSLRequest answered S, or a direct TLS hello: the handshake runs in the native relay when it terminates client TLS,
   * else in Node's tls (and the JavaScript relay carries the client afterwards; see relay/choose.ts relayFor). */
  private startTls(settings: ClientTls, initial: Buffer | null): void {
    this.handshaking = true;
    const raw = this.socket;
    const session = this;
    startClientTls(
      {
        raw,
        native: this.core.nativeTls,
        askCertificate: settings.verifyClient || this.core.hbaWantsCertificates(),
        readInto: (h) => {
          this.handler = h;
        },
        deliver: (chunk) => void this.handler(chunk),
        replaceSocket: (secure) => {
          this.socket.off('error', this.onSocketError);
          this.socket.off('close', this.onSocketClose);
          this.socket = secure;
          secure.on('error', this.onSocketError);
          secure.on('close', this.onSocketClose);
        },
        get current() {
          return session.state !== 'closed' && session.socket === raw;
        },
        secured: (description, result) => {
          this.handshaking = false;
          this.tls = description;
          this.core.counters.tls++;
          this.handler = this.onStartupChunk;
          this.login?.tlsReady(result);
        },
        fatal: (sqlstate, message) => this.fatal(sqlstate, message),
      },
      settings,
      initial,
    );
  }

  /** Startup packets and the password exchange (client-login.ts); null when the native relay ran the login. */
  protected readonly login: ClientLogin | null;
  protocol32 = false;

  /** The client proved who it is (client-login.ts): greet it, then relay. The greeting is written in the same call
   * when the pool knows its server's parameters (the login's last reply and the greeting then share one send). */
  private loginOk(r: LoginResult): void {
    this.state = 'idle';
    this.user = r.user;
    this.database = r.database;
    this.applicationName = r.applicationName;
    this.protocol32 = r.protocol32;
    this.isAdmin = r.admin;
    this.pool = r.pool;
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
  protected greetNow(params: ReadonlyMap<string, string>, registered = false): void {
    this.socket.write(loginGreeting(params, this.applicationName, this.cancelPid, this.cancelSecret));
    if (!registered) this.register();
    // The relay takes the connection once the greeting has left the socket's cork (see ClientLogin's cork).
    const next = this.isAdmin ? () => this.serveAdmin() : () => this.handOff();
    if (this.corks > 0) this.afterUncork = next;
    else next();
  }

  /** The login's cork depth, and what waits for it to end. */
  protected corks = 0;
  protected afterUncork: (() => void) | null = null;

  private serveAdmin(): void {
    const rest = this.login?.takeRest() ?? EMPTY;
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
}
