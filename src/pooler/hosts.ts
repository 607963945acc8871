// The narrow faces of the pooler its parts are given (Pooler implements them): a client connection's login gets a
// StartupHost, a session a SessionHost, the snapshot and SHOW a read-only SnapshotSource. No part imports the Pooler
// class. `Login` and `Client` are the connection and session classes (client-startup.ts, client-session.ts),
// parameters so that this file, which they import, names none of their classes (type imports tie files into circles
// too: test/unit/layers.test.ts).
import type { PoolerConfig } from '../config/pooler.js';
import type { LogHub } from '../shared/logger.js';
import type { AppRegistry } from './apps.js';
import type { LoginCore } from './client-login.js';
import type { Coordinator } from './coordinator.js';
import type { EventRing } from './events.js';
import type { Pool } from './pool.js';
import type { HeldRow, NativeRelay } from './relay/native.js';
import type { ShowTable } from './show-table.js';

/** connections: accepted; tls: of them, those that completed a TLS handshake; nativeLogins / jsLogins: logins that
 * succeeded, by who ran the password exchange (the native relay, or client-login.ts). */
export interface PoolerCounters {
  connections: number;
  errors: number;
  cancel: number;
  tls: number;
  nativeLogins: number;
  jsLogins: number;
  /** Logins closed by client_login_timeout; clients refused at accept for max_connections, and for want of
   * descriptors (EMFILE, ENFILE). */
  loginTimeouts: number;
  refusedMaxConnections: number;
  refusedDescriptors: number;
  /** Clients a takeover moved here from the process before, and from here to the next (takeover-clients.ts). */
  movedIn: number;
  movedOut: number;
  /** Server connections a takeover moved likewise (takeover-servers.ts). */
  serversMovedIn: number;
  serversMovedOut: number;
}

/** What a client connection until its login is done (client-startup.ts) needs of the pooler, its login's included. */
export interface StartupHost<Login> extends LoginCore {
  readonly events: EventRing;
  readonly counters: PoolerCounters;
  /** The native relay when it terminates client TLS (fixed at start); null when Node's tls does. */
  readonly nativeTls: NativeRelay | null;
  /** JavaScript logins in progress, in accept order (client_login_timeout closes the oldest). */
  readonly logins: { add(c: Login): void };
  /** The pid of a new client's BackendKeyData (cancel-keys.ts): never a backend's. */
  newCancelPid(): number;
  hbaWantsCertificates(): boolean;
  /** The connection closed before its login succeeded: it is no longer a login in progress. */
  loginEnded(c: Login): void;
}

/** What a logged-in client (client-session.ts) needs of the pooler. */
export interface SessionHost<Client> extends LoginCore {
  readonly events: EventRing;
  readonly apps: AppRegistry;
  readonly counters: PoolerCounters;
  readonly shuttingDown: boolean;
  /** ParameterStatus values the admin console reports at login. */
  adminParams(): ReadonlyMap<string, string>;
  /** The login is done: the client joins the registry (and its cancel key), `native` when the relay ran it, 'moved' for
   * a client a takeover moved here logged in. */
  registerClient(c: Client, native?: boolean | 'moved'): void;
  unregisterClient(c: Client): void;
  /** Session mode: the client's BackendKeyData names its server's pid from now on. */
  rekeyCancel(c: Client, pid: number): void;
  /** After a takeover: a client between transactions is offered to the new process; true when it is on its way. */
  offerMove(c: Client): boolean;
  /** After a takeover, while the new process takes clients: one that cannot move this instant may later. */
  readonly movingClients: boolean;
  /** A takeover handed this process's sockets to a new one: what is told 57P01 here names the restart. */
  readonly handedOver: boolean;
}

/** Held logins of one pool and application_name (NativeLogins.heldCounts). */
export interface HeldCount {
  readonly pool: Pool;
  readonly applicationName: string;
  readonly count: number;
}

/** A held login as a client row (NativeLogins.heldRows). */
export interface HeldClient extends HeldRow {
  readonly pool: Pool;
}

/** What the snapshot (snapshot.ts) and SHOW (admin/show.ts) read of the pooler: no field of it is written through here
 * (a snapshot only settles the pools' parked and lent servers first, gives held logins it lists their client ids, and
 * makes the registry entry of a held login's application_name, as its session would). */
export interface SnapshotSource<Client> {
  /** Current, validated config (replaced on RELOAD). */
  readonly config: PoolerConfig;
  readonly logs: LogHub;
  readonly pools: ReadonlyMap<string, Pool>;
  /** Logged-in clients. */
  readonly clients: Iterable<Client>;
  readonly coordinators: ReadonlyMap<string, Coordinator>;
  readonly apps: AppRegistry;
  readonly events: EventRing;
  readonly counters: Readonly<PoolerCounters>;
  /** Client connections accepted and not yet logged in (JavaScript's count). */
  readonly loggingIn: number;
  /** The native relay's logins: under way, relay-only clients unreported (those that left, and held logins), and the
   * held logins counted and listed without reporting them (native-logins.ts). */
  readonly nativeLogins: {
    readonly underWay: number;
    readonly unreported: number;
    heldCounts(): readonly HeldCount[];
    heldRows(): readonly HeldClient[];
  };
  /** auth_query's cache (SHOW AUTH_QUERY). */
  readonly authQuery: { readonly configured: boolean; show(): ShowTable };
}
