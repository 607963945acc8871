// The client listener (PgBouncer: pooler.c): listen, accept, admit, and hand the socket to a login (ClientStartup),
// from which a ClientSession is born logged in; from net.Server or from the native relay's own accept.
import net from 'node:net';
import { SqlState } from '../protocol/codes.js';
import { writeErrorResponse } from '../protocol/writer.js';
import { ClientSession } from './client-session.js';
import { ClientStartup } from './client-startup.js';
import type { LoginResult } from './client-login.js';
import type { SessionHost, StartupHost } from './hosts.js';
import type { LogLimiter } from './log-limiter.js';
import type { NativeLogins } from './native-logins.js';
import { CLIENT_READ_BUFFER, ReadBuffer, adoptWithOnread } from './read-buffer.js';
import type { NativeAcceptor, NativeLoginOk } from './relay/native.js';
import { NativeTlsSocket } from './relay/native-tls.js';
import { clientSocketCap, openFileLimit } from './fd-limit.js';

/** TCP_DEFER_ACCEPT's time with tcp_defer_accept on: PgBouncer's fixed 45 s. */
const DEFER_ACCEPT_SECS = 45;

/** What the listener needs of the pooler: the sessions' host, and the counts and log lines it admits clients by. */
export interface ListenerHost extends SessionHost<ClientSession>, StartupHost<ClientStartup> {
  /** One warn line per period for what attackers can trigger by the thousand (log-limiter.ts). */
  readonly limitedLogs: { readonly maxConnections: LogLimiter; readonly descriptors: LogLimiter };
  /** The logins the native relay runs itself. */
  readonly nativeLogins: NativeLogins;
  /** Every accepted client, logins in progress included. */
  connectionCount(): number;
  /** A login began or ended. */
  loginCountChanged(delta: number): void;
}

/** TCP keepalive idle time of client connections. */
export const CLIENT_KEEPALIVE_MS = 60_000;

/** max_connections counts logins in progress: the client past it gets PostgreSQL's 53300 at once, and its socket
 * goes once the error is sent (a client that never reads or closes keeps no descriptor). True when refused. */
function refuseIfFull(p: ListenerHost, socket: net.Socket | NativeTlsSocket): boolean {
  const max = p.config.general.max_connections;
  if (p.connectionCount() < max) return false;
  p.counters.errors++;
  p.counters.refusedMaxConnections++;
  p.limitedLogs.maxConnections.add(1, {
    max_connections: max,
    addr: `${socket.remoteAddress ?? '?'}:${socket.remotePort ?? 0}`,
  });
  const error = writeErrorResponse({
    severity: 'FATAL',
    code: SqlState.TooManyConnections,
    message: `sorry, too many clients already (max_connections = ${max})`,
  });
  if (socket instanceof NativeTlsSocket) {
    socket.end(error);
  } else {
    socket.write(error);
    socket.destroySoon();
  }
  return true;
}

/** A connection net.Server accepted (paused): read straight into a ReadBuffer where the socket allows it. */
function acceptSocket(p: ListenerHost, accepted: net.Socket, socketCap: number): void {
  p.counters.connections++;
  if (p.shuttingDown) {
    accepted.destroy();
    return;
  }
  if (socketCap > 0 && p.connectionCount() >= socketCap) {
    p.counters.refusedDescriptors++;
    p.limitedLogs.descriptors.add(1, { client_sockets: socketCap });
    accepted.destroy();
    return;
  }
  if (refuseIfFull(p, accepted)) return;
  let conn: ClientStartup | null = null;
  p.loginCountChanged(1);
  const socket = adoptWithOnread(
    accepted,
    new ReadBuffer(CLIENT_READ_BUFFER).onread(() => conn!.handler),
  );
  if (socket) {
    socket.setKeepAlive(true, CLIENT_KEEPALIVE_MS);
    conn = new ClientStartup(socket, p, sessionMaker(p));
  } else {
    accepted.setKeepAlive(true, CLIENT_KEEPALIVE_MS);
    const c = new ClientStartup(accepted, p, sessionMaker(p));
    accepted.on('data', (chunk: Buffer) => c.handler(chunk));
    accepted.resume();
  }
}

function acceptNative(p: ListenerHost, socket: NativeTlsSocket, login: NativeLoginOk | null): void {
  p.counters.connections++;
  const pool = login ? p.nativeLogins.loggedIn(login, socket.id) : null;
  // A client the relay accepted before its listener closed is reported afterwards, even during a shutdown: it logs in
  // (a native login already greeted it), and a new transaction gets 57P01 as any idle client's, rather than a reset.
  if (login && !pool) {
    // Greeted by the relay for a pool this pooler does not know: nothing can serve it.
    socket.destroy();
    return;
  }
  if (!login && refuseIfFull(p, socket)) return;
  p.loginCountChanged(1);
  if (login && pool)
    new ClientSession(p, new ClientStartup(socket, p, sessionMaker(p), login), { native: { pool, login } });
  else new ClientStartup(socket, p, sessionMaker(p));
}

/** A login that succeeded gives birth to its session, which greets the client. */
function sessionMaker(p: ListenerHost): (startup: ClientStartup, result: LoginResult) => void {
  return (startup, result) => void new ClientSession(p, startup, { result });
}

/** Clients the native relay accepted (NativeRelay.listen): their logins run on the addon's endpoint, in JavaScript
 * or, for the users of nativeLogins, in the relay itself. */
function nativeAcceptor(p: ListenerHost): NativeAcceptor {
  return {
    accept: (socket, login) => acceptNative(p, socket, login),
    loginFailed: (address, port, entry, sqlstate, message) => {
      p.counters.connections++;
      p.counters.errors++;
      const pool = p.nativeLogins.pool(entry);
      if (sqlstate === SqlState.TooManyConnections) {
        p.counters.refusedMaxConnections++;
        p.limitedLogs.maxConnections.add(1, {
          max_connections: p.config.general.max_connections,
          addr: `${address}:${port}`,
        });
        return;
      }
      // A warning, as PostgreSQL and PgBouncer log it: security monitoring watches failed logins.
      if (sqlstate !== SqlState.ProtocolViolation) {
        p.log.warn(
          { user: pool?.settings.user, database: pool?.settings.database, addr: `${address}:${port}` },
          'client authentication failed',
        );
      }
      p.events.loginFailure(`client ${address}:${port}: ${message} (SQLSTATE ${sqlstate})`);
    },
    loginGone: () => {
      p.counters.connections++;
    },
  };
}

/** The pooler's client listener: net.Server, or the native relay's accept when it carries every pool. */
export class Listener {
  private server: net.Server | null = null;
  /** The port and listener id the native relay accepts on (see listen), 0 when net.Server does. */
  private nativePort = 0;
  nativeListener = 0;
  /** Client sockets net.Server's accepts may hold (fd-limit.ts), 0: no cap. */
  clientSocketCap = 0;

  constructor(private readonly p: ListenerHost) {}

  get port(): number {
    return this.nativePort || ((this.server?.address() as net.AddressInfo | null)?.port ?? 0);
  }

  /** True when the native relay accepts this pooler's clients itself (see listen). */
  get acceptsNatively(): boolean {
    return this.nativeListener > 0;
  }

  /** Opens the port, or accepts on `inheritedFd`: a listening socket a takeover received from the previous process
   * (takeover.ts), which keeps listening through the hand-over. */
  async listen(inheritedFd?: number): Promise<void> {
    const { host, port, tcp_no_delay, tcp_defer_accept } = this.p.config.general;
    this.server = net.createServer({ noDelay: tcp_no_delay, pauseOnConnect: true }, (socket) =>
      acceptSocket(this.p, socket, this.clientSocketCap),
    );
    await new Promise<void>((resolve, reject) => {
      this.server!.once('error', reject);
      const listening = () => {
        this.server!.removeListener('error', reject);
        resolve();
      };
      if (inheritedFd !== undefined) this.server!.listen({ fd: inheritedFd }, listening);
      else this.server!.listen(port, host, listening);
    });
    this.server.on('error', (err: NodeJS.ErrnoException) => {
      // libuv keeps a descriptor in reserve and closes the waiting client with it on EMFILE, then reports the error
      // here: one per refused client, so they are counted and logged once a period.
      if (err.code === 'EMFILE' || err.code === 'ENFILE') {
        this.p.counters.refusedDescriptors++;
        this.p.limitedLogs.descriptors.add(1, { err: err.code });
        return;
      }
      this.p.log.error({ err: err.message }, 'listener error');
    });
    // libuv answers EMFILE by closing the waiting clients without a word to Node: acceptSocket refuses clients past a
    // cap below the descriptor limit itself, where they can be counted and logged (net.Server's maxConnections
    // cannot: sockets read through a ReadBuffer leave its count).
    this.clientSocketCap = clientSocketCap(openFileLimit());
    // With the native relay carrying every pool, it accepts the clients itself: a login costs no Node socket
    // ([native] accept = false keeps net.Server's accepts, as with the JavaScript relay).
    const listener = this.p.config.native.accept
      ? (this.p.nativeTls?.listen(
          this.server,
          tcp_no_delay,
          CLIENT_KEEPALIVE_MS,
          nativeAcceptor(this.p),
          tcp_defer_accept ? DEFER_ACCEPT_SECS : 0,
        ) ?? 0)
      : 0;
    if (listener > 0) {
      this.nativeListener = listener;
      this.nativePort = (this.server.address() as net.AddressInfo).port;
      this.server.close();
      this.server = null;
      this.p.nativeLogins.listening(listener);
    }
  }

  /** The listening descriptor clients are accepted on (-1: none), for a takeover to pass to the next process. */
  get listeningFd(): number {
    if (this.nativeListener) return this.p.nativeTls?.listenerFd(this.nativeListener) ?? -1;
    const fd = (this.server as (net.Server & { _handle?: { fd?: number } | null }) | null)?._handle?.fd;
    return typeof fd === 'number' && fd >= 0 ? fd : -1;
  }

  /** Stops accepting: closes this process's descriptor of the listening socket. The socket itself stays open while
   * another process holds it (after a takeover), so nothing is ever shut down here, only closed. */
  close(): void {
    this.server?.close();
    this.server = null;
    this.p.nativeLogins.stopHolding();
    if (this.nativeListener) this.p.nativeTls?.unlisten(this.nativeListener);
  }
}
