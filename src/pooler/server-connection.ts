// One connection to PostgreSQL after its login (server-login.ts): pool bookkeeping, cancel key, owner, relay end.
import { SqlState } from '../protocol/codes.js';
import {
  serverLogin,
  SERVER_READ_BUFFER,
  ServerLoginError,
  type ServerCredential,
  type ServerLogin,
  type ServerTarget,
} from './server-login.js';
import type { Relay, ServerEnd, ServerEvents } from './relay/relay.js';
import type { ServerStatements } from './prepared/server-cache.js';
import type { ParamValues } from './session-state/params.js';
import type { MovedServer } from './takeover-servers.js';
import { socketFromFd, type ChunkHandler } from './read-buffer.js';

/** The session a server currently serves: told when the server goes away under it. */
export interface ServerOwner {
  /** `toldClient`: the client got PostgreSQL's own FATAL last (ServerEvents.onClose), which says all there is to say. */
  onServerClosed(server: ServerConnection, reason: string, atBoundary: boolean, toldClient: boolean): void;
  /** The server died while parked with this owner between transactions (native relay). */
  onServerLostBetween?(server: ServerConnection): void;
}

let nextServerId = 1;

export type ServerState = 'login' | 'idle' | 'active' | 'used' | 'closed';

export class ServerConnection {
  readonly id = nextServerId++;
  readonly createdAt: number;
  state: ServerState = 'idle';
  owner: ServerOwner | null = null;
  /** PostgreSQL's backend pid and secret, for CancelRequest. */
  readonly backendPid: number;
  readonly backendSecret: Buffer;
  readonly params: ReadonlyMap<string, string>;
  readonly applicationName: string;
  /** TLS protocol/cipher toward PostgreSQL (SHOW SERVERS tls), '' for plaintext. */
  readonly tls: string;
  /** Opened from the database's reserve (coordinator.ts): closed when it comes back and nobody waits. */
  reserve = false;
  /** CancelRequests forwarded for this server whose connection PostgreSQL has not closed yet (Pool.forwardCancel):
   * until then the server serves no other transaction, which a late cancel could hit. */
  cancelsInFlight = 0;
  /** Its release, held until those cancels are done. */
  afterCancel: (() => void) | null = null;
  /** Kept by one transaction-mode client for good (Pool.pin). */
  pinned = false;
  /** Close instead of pooling at the next release (RECONNECT, lifetime, RELOAD). */
  closeOnRelease = false;
  /** Deadline for replacement: server_lifetime with jitter. */
  expiresAt = Infinity;
  lastUsed = Date.now();
  /** The relay's side of this socket (a new one after a takeover's refused move: readopt). */
  end: ServerEnd;
  private readonly events: ServerEvents;
  /** Set by the pool: told once when the socket is gone by itself. */
  onClosed: ((server: ServerConnection) => void) | null = null;
  /** Statements prepared here under pooler names (transaction mode with prepared_statements), else null. */
  statements: ServerStatements | null = null;
  /** Transaction mode: the session parameters it holds (session-state/param-sync.ts), from its first use. */
  paramValues: ParamValues | null = null;
  /** Names whose values it may hold but are not known (a pinned client's server): read back before its next sync. */
  paramsUnknown: string[] | null = null;
  /** Lent to the native relay for relay-only logins (pool-lending.ts): in the pool's lent list, state 'idle', until the
   * pool takes it back (Pool.settle) or a relay-only client that used it is reported with it (ServerLending.take); set
   * only by ServerLists.move. */
  lent = false;
  /** The kind of native login (NativeLoginOk.kind) whose session parameters this server holds as it came back, or -1:
   * only such a server is lent, and only to logins of that kind. */
  lendKind = -1;
  private closeReason = '';

  private constructor(login: ServerLogin, relay: Relay, rewrites: boolean) {
    this.createdAt = login.startedAt;
    this.backendPid = login.backendPid;
    this.backendSecret = login.backendSecret;
    this.params = login.params;
    this.applicationName = login.applicationName;
    this.tls = login.tls;
    const events: ServerEvents = {
      onClose: (reason, atBoundary, parked, toldClient) => this.lost(reason, atBoundary, parked, toldClient),
      onStatementsDropped: () => this.statements?.clearUpTo(Infinity),
      onSchemaChanged: () => this.statements?.schemaChanged(),
    };
    this.events = events;
    const end = relay.adoptServer(login.conn, events, rewrites);
    if (!end)
      throw new ServerLoginError(
        'internal error: the server connection could not be handed to the relay',
        SqlState.ConnectionFailure,
      );
    this.end = end;
  }

  /** Connects and logs in; resolves when PostgreSQL sent ReadyForQuery and the relay has the socket. */
  static connect(
    target: ServerTarget,
    cred: ServerCredential,
    timeoutMs: number,
    noDelay: boolean,
    relay: Relay,
    rewrites = false,
  ): Promise<ServerConnection> {
    return serverLogin(target, cred, timeoutMs, noDelay, (login) => new ServerConnection(login, relay, rewrites));
  }

  /** A server connection a takeover moved here (takeover-servers.ts), logged in by the old process: the connection
   * from `fd` (this process's from now on, closed here when the relay cannot take it), with the backend key,
   * ParameterStatus values and start time it had there. Throws when it cannot be relayed. */
  static adopt(m: MovedServer, fd: number, relay: Relay, rewrites: boolean): ServerConnection {
    let handler: ChunkHandler = () => false;
    const socket = socketFromFd(fd, SERVER_READ_BUFFER, () => handler);
    const login: ServerLogin = {
      conn: {
        socket,
        read: (h) => {
          handler = h;
        },
      },
      startedAt: m.createdAt,
      backendPid: m.backendPid,
      backendSecret: m.backendSecret,
      params: new Map(m.params),
      applicationName: m.applicationName,
      tls: '',
    };
    let s: ServerConnection;
    try {
      s = new ServerConnection(login, relay, rewrites);
    } catch (err) {
      socket.on('error', () => undefined);
      socket.destroy();
      throw err;
    }
    // The JavaScript relay reads through Node's socket, made paused (the native relay took the descriptor unread).
    if (s.end.kind === 'js' && !socket.destroyed) socket.resume();
    s.lastUsed = m.lastUsed;
    return s;
  }

  /** The old process of a takeover took back a server whose move with its client was refused (the relay let go of it
   * for the move): the relay takes the connection again from `fd` (this process's copy). Throws when it cannot (the
   * descriptor is closed then). */
  readopt(fd: number, relay: Relay, rewrites: boolean): void {
    let handler: ChunkHandler = () => false;
    const socket = socketFromFd(fd, SERVER_READ_BUFFER, () => handler);
    const end = relay.adoptServer(
      {
        socket,
        read: (h) => {
          handler = h;
        },
      },
      this.events,
      rewrites,
    );
    if (!end) {
      socket.on('error', () => undefined);
      socket.destroy();
      throw new Error('the relay cannot take it');
    }
    this.end = end;
    if (end.kind === 'js' && !socket.destroyed) socket.resume();
  }

  /** The socket closed by itself (EOF, error, a malformed message). */
  private lost(reason: string, atBoundary: boolean, parked: boolean, toldClient: boolean): void {
    if (this.state === 'closed') return;
    this.closeReason ||= reason;
    const wasOwner = this.owner;
    this.state = 'closed';
    this.owner = null;
    this.statements?.clear();
    this.onClosed?.(this);
    // A parked server dies as an idle one would: its client was between transactions and carries on.
    if (wasOwner && parked) wasOwner.onServerLostBetween?.(this);
    else if (wasOwner)
      wasOwner.onServerClosed(
        this,
        this.closeReason || 'server closed the connection unexpectedly',
        atBoundary,
        toldClient,
      );
  }

  /** Closes at once, without Terminate (KILL, shutdown). */
  destroy(): void {
    this.state = 'closed';
    this.statements?.clear();
    this.end.destroy();
  }

  /** Polite close: Terminate, then end. */
  close(reason: string): void {
    if (this.state === 'closed') return;
    this.closeReason ||= reason;
    this.state = 'closed';
    this.statements?.clear();
    this.end.close();
  }
}
