// A client connection and its login: the accepted socket, its TLS start, the startup packets and password exchange
// (client-login.ts) with their corks, client_login_timeout, a FATAL before the login is done. The login ends in a
// LoginResult from which a ClientSession is born logged in (listener.ts makes it); the connection then carries the
// session's socket events and reads until the relay takes the socket. A client a takeover moved here (moved) or took
// back (takeSocket) runs no login: its connection is made from the descriptor the old process passed.
import type net from 'node:net';
import { randomBytesPooled } from './random-pool.js';
import { SqlState } from '../protocol/codes.js';
import { writeErrorResponse } from '../protocol/writer.js';
import type { StartupHost } from './hosts.js';
import type { NativeLoginOk } from './relay/native.js';
import { ClientLogin, type LoginResult } from './client-login.js';
import { CLIENT_READ_BUFFER, socketFromFd, type ChunkHandler } from './read-buffer.js';
import type { ClientTls } from './tls/tls-settings.js';
import { startClientTls } from './tls/client-handshake.js';
import { NativeTlsSocket } from './relay/native-tls.js';

let nextClientId = 1;

/** The id the next client gets: a held login a snapshot lists takes its id from here (NativeRelay.heldRows). */
export function peekClientId(): number {
  return nextClientId;
}

/** Ids up to `last` are taken (given to held logins listed by a snapshot): the next client gets a later one. */
export function claimClientIds(last: number): void {
  if (last >= nextClientId) nextClientId = last + 1;
}

/** A read handler that drops what it is given (nothing a client sends then may reach a server). */
export const discardReads: ChunkHandler = () => false;
export const EMPTY = Buffer.alloc(0);

/** What a connection reports to once its client is logged in: the session born from the login. */
export interface ConnectionOwner {
  /** Sends a FATAL error and closes the connection. */
  fatal(sqlstate: string, message: string): void;
  /** The socket closed before the relay took it; `clean` as the relay's verdict would be. */
  onClientClosed(clean: boolean): void;
}

export class ClientStartup {
  /** In login order; a held login a snapshot listed keeps the id it was listed with (NativeLoginOk.clientId). */
  readonly id: number;
  /** When the connection was accepted (a login the native relay began keeps the relay's time). */
  readonly connectedAt: number;
  /** The BackendKeyData the login sends (cancel-keys.ts; a native login's come from the relay). */
  readonly cancelPid: number;
  readonly cancelSecret: Buffer;
  /** Peer address, kept: the native relay drops the socket object when it takes the descriptor. */
  readonly addr: string;
  /** TLS protocol and cipher as SHOW CLIENTS shows them ("TLSv1.3/TLS_AES_256_GCM_SHA384"), '' for plaintext. */
  tls = '';
  /** The accepted socket, replaced by its TLS socket once a handshake is done (a NativeTlsSocket when the native relay
   * terminates it). */
  socket: net.Socket | NativeTlsSocket;
  /** The socket's reads go here (see read-buffer.ts); true when the chunk is kept after the call. The login's until it
   * is done, then the session's (the admin console's framing, or the relay's). */
  handler: ChunkHandler;
  /** The session once the client is logged in; null during the login. */
  private owner: ConnectionOwner | null = null;
  private closed = false;
  /** Between the 'S' (or a direct hello) and the end of the handshake. */
  private handshaking = false;
  /** Startup packets and the password exchange (client-login.ts); null when the native relay ran the login. */
  private readonly login: ClientLogin | null;
  /** The login's cork depth, and what waits for it to end. */
  private corks = 0;
  private afterUncork: (() => void) | null = null;

  /** `accepted`: Node's socket, or a client the native relay accepted itself (its login runs on the addon's endpoint);
   * `loggedIn`: the session to make when the login succeeds; `native`: the relay ran the login itself and greeted the
   * client (native/relay-auth.cc), or a takeover moved the client here logged in (its key, and when it was accepted):
   * no login runs here, and the caller makes the session at once. */
  constructor(
    accepted: net.Socket | NativeTlsSocket,
    private readonly core: StartupHost<ClientStartup>,
    loggedIn: (startup: ClientStartup, result: LoginResult) => void,
    native?: Pick<NativeLoginOk, 'cancelPid' | 'cancelSecret'> & { connectedAt?: number; clientId?: number },
  ) {
    this.id = native?.clientId || nextClientId++;
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
          if (!this.owner && !this.closed)
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
      (result) => {
        // A connection closed meanwhile (auth_query's lookup outlived it) has nobody to greet.
        if (!this.closed) loggedIn(this, result);
      },
    );
    this.handler = this.onStartupChunk;
    core.logins.add(this);
    if (socket instanceof NativeTlsSocket)
      socket.setHandlers({ onSecure: () => undefined, onData: (chunk) => void this.handler(chunk) });
  }

  /** A client a takeover moved here logged in (Pooler.adoptMoved, takeover-clients.ts): the connection from `fd`, read
   * through a ReadBuffer as an accepted socket is (paused until a relay has it), with the cancel key and accept time
   * it had on the old process; no login runs, and the caller makes the session at once. Throws when `fd` is not a
   * socket. */
  static moved(
    fd: number,
    core: StartupHost<ClientStartup>,
    key: Pick<NativeLoginOk, 'cancelPid' | 'cancelSecret'> & { connectedAt: number },
  ): ClientStartup {
    let startup: ClientStartup | null = null;
    const socket = socketFromFd(fd, CLIENT_READ_BUFFER, () => startup?.handler ?? discardReads);
    startup = new ClientStartup(socket, core, () => undefined, key);
    return startup;
  }

  /** A takeover's move that failed (ClientSession.moveBack): the relay let go of the socket, and the connection goes
   * on from `fd`, this process's copy of the client's descriptor, paused and read through the handler; its errors and
   * close come here until the relay takes it again (detach). Throws when `fd` is not a socket. */
  takeSocket(fd: number): net.Socket {
    const socket = socketFromFd(fd, CLIENT_READ_BUFFER, () => this.handler);
    this.socket = socket;
    socket.on('error', this.onSocketError);
    socket.on('close', this.onSocketClose);
    return socket;
  }

  /** A socket made from a descriptor (moved, takeSocket) is paused until the JavaScript relay has it (the native relay
   * takes the descriptor unread): its reads start here. */
  resumeReads(): void {
    const s = this.socket;
    if (!(s instanceof NativeTlsSocket) && !s.destroyed) s.resume();
  }

  /** The session born from this login takes the connection's reports (ClientSession's constructor calls it first). */
  adopt(owner: ConnectionOwner): void {
    this.owner = owner;
  }

  /** Runs `next` once the login's cork has ended (at once when none is on): the greeting written inside it leaves in
   * the same send as the login's last reply, and the relay takes the socket after. */
  whenUncorked(next: () => void): void {
    if (this.corks > 0) this.afterUncork = next;
    else next();
  }

  /** Bytes the client sent after its login, for the relay or the admin console. */
  takeRest(): Buffer {
    return this.login?.takeRest() ?? EMPTY;
  }

  /** The relay took the socket: its errors and close are the relay's to report from now on. */
  detach(): void {
    this.socket.off('error', this.onSocketError);
    this.socket.off('close', this.onSocketClose);
  }

  /** client_login_timeout passed (maintenance.ts expireLogins). Before a startup packet, or mid-handshake, the client
   * has not spoken the protocol (or is reading TLS records): closed without a word, as PostgreSQL closes it. Past it
   * (password exchange, a server awaited for the greeting) it gets FATAL 08P01 as PgBouncer sends one, with
   * PostgreSQL's text. Either way the descriptor goes once the bytes are out, whether the client reads or not. */
  loginTimedOut(): void {
    if (this.closed || this.socket.destroyed) return;
    const s = this.socket;
    if (this.login?.startupTaken && !this.handshaking) {
      // fatal() ends the socket and unregisters; the end below makes sure the descriptor does not wait for the client.
      this.fatal(SqlState.ProtocolViolation, 'canceling authentication due to timeout');
      if (!(s instanceof NativeTlsSocket)) s.destroySoon();
      return;
    }
    s.destroy();
  }

  /** Sends a FATAL error and closes the connection: the session's once the client is logged in. */
  private fatal(sqlstate: string, message: string): void {
    if (this.owner) return this.owner.fatal(sqlstate, message);
    if (this.closed || this.socket.destroyed) return;
    this.core.counters.errors++;
    this.socket.end(writeErrorResponse({ severity: 'FATAL', code: sqlstate, message }));
    this.closedBeforeLogin();
  }

  /** The connection ended before its login succeeded: nothing it sends now is read, and the pooler stops counting it. */
  private closedBeforeLogin(): void {
    if (this.closed) return;
    this.closed = true;
    this.handler = discardReads;
    this.core.loginEnded(this);
  }

  private readonly onStartupChunk = (chunk: Buffer): boolean => {
    // A chunk from a ReadBuffer is reused after this returns; the addon's (relayTake) are the login's own.
    this.login?.feed(this.socket instanceof NativeTlsSocket ? chunk : Buffer.from(chunk));
    return false;
  };

  /** Until the relay takes the socket (and for admin sessions, always). */
  private readonly onSocketError = (err: Error): void => {
    // A TLS handshake that failed (garbage instead of a hello, no shared protocol) is a failed login worth seeing.
    if (!this.owner && !this.closed && this.handshaking) {
      this.handshaking = false;
      this.core.events.loginFailure(`client ${this.addr}: TLS handshake failed: ${err.message}`);
    }
  };

  private readonly onSocketClose = (): void => {
    if (this.owner) this.owner.onClientClosed(true);
    else this.closedBeforeLogin();
  };

  /** SSLRequest answered S, or a direct TLS hello: the handshake runs in the native relay when it terminates client TLS,
   * else in Node's tls (and the JavaScript relay carries the client afterwards; see relay/choose.ts relayFor). */
  private startTls(settings: ClientTls, initial: Buffer | null): void {
    this.handshaking = true;
    const raw = this.socket;
    const startup = this;
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
          return !startup.closed && startup.socket === raw;
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
}
