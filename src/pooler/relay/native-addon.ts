// The native relay addon's surface (native/relay*.cc) as TypeScript sees it: its functions, and what the relay's own
// logins and lent servers carry (native/relay-auth.cc, native/relay-lend.cc). NativeRelay (native.ts) binds it.
import { SqlState } from '../../protocol/codes.js';
import type { NativeTlsSocket, TlsAddon } from './native-tls.js';

export interface RelayAddon extends TlsAddon {
  relayInit(
    onEvents: (count: number) => void,
    events: Int32Array,
    layout: Int32Array,
    bounds: Float64Array,
    laneOut?: Float64Array,
  ): boolean;
  relayAddClient(
    fd: number,
    stats: Float64Array,
    maxMessage: number,
    initial?: Uint8Array,
    divert?: boolean,
    app?: Float64Array,
    pinMask?: number,
    queryPool?: number,
  ): number;
  relayQueryStatsSize(n: number): void;
  relayQueryStats(): { pools: number[]; hashes: string[]; texts: string[]; counts: number[]; times: number[] };
  relayAddServer(fd: number, maxMessage: number, divert?: boolean): number;
  relayTake(id: number): Buffer;
  relayLink(client: number, server: number, transactionMode: boolean, lane?: Uint8Array, park?: boolean): boolean;
  relayUnlink(client: number, laneIdle?: boolean): number;
  relayLaneTake(client: number, out: Float64Array): number;
  relayWrite(id: number, data: Uint8Array): boolean;
  relayClose(id: number): void;
  relayDestroy(id: number): void;
  relayRelease(id: number): { fd: number; pending: Buffer } | undefined;
  relayReleasePair(client: number): { fd: number; serverFd: number; toClient: Buffer; pinned: number } | undefined;
  relaySetPinned(client: number, kinds: number): boolean;
  relayWatchReady(server: number, capture?: boolean): boolean;
  relayParams(server: number): Buffer | undefined;
  relayInfo(id: number, out: Float64Array): boolean;
  relayReclaim(stats: Float64Array, out: Int32Array, skipRelayOnly?: boolean): number;
  relayPollHandles(): number;
  relayClosingClients(): number;
  relayListen(fd: number, noDelay: boolean, keepAliveSecs: number, deferAcceptSecs?: number): number;
  relayUnlisten(listener: number): void;
  relayListenerFd(listener: number): number;
  relayPeer(id: number): string;
  relayExpireLogins(listener: number, timeoutMs: number): number;
  relayAcceptRefused(listener: number): number;
  relayAuthSet(
    listener: number,
    maxConnections: number,
    slots: Int32Array,
    users: NativeLoginUser[] | null,
    sslRefused: boolean,
  ): boolean;
  relayAppName(id: number): string;
  relayLoginError(id: number): string;
  relayLoginKey(id: number): Buffer | undefined;
  relayLend(
    server: number,
    entry: number,
    kind: number,
    stats: Float64Array,
    app: Float64Array | null,
    pinMask: number,
    queryPool: number,
    divert: boolean,
    maxMessage: number,
    slots: Int32Array,
  ): boolean;
  relayUnlend(stats: Float64Array | null, out: Int32Array): number;
  relayMaterialize(stats: Float64Array | null, id: number, out: Int32Array): number;
  relayHeldCounts(slots: Int32Array, out: Int32Array): number;
  relayHeldRows(slots: Int32Array, nextId: number, out: Float64Array): number;
  relayListedId(id: number): number;
}

/** What a server is lent with (NativeRelay.lend): the options the pool's clients get, and the kind of login it suits. */
export interface LendOptions {
  entry: number;
  /** The relay's application_name id << 1 | 1 when client_encoding was named (NativeLoginOk.kind). */
  kind: number;
  stats: Float64Array;
  app: Float64Array | null;
  pinMask: number;
  queryPool: number;
  divert: boolean;
  maxMessage: number;
  /** The lending pooler's slots (setLogins): only its logins take the server. */
  slots: Int32Array;
}

/** A user whose login the relay runs itself (native/relay-auth.cc): one per (database, user) of a transaction-mode pool
 * whose greeting is known. `entry` is the caller's index of the pool, reported back with each login. */
export type NativeLoginUser = {
  entry: number;
  database: string;
  user: string;
  greeting: Uint8Array;
  clientEncoding?: string;
  /** [0]: the pool's idle servers JavaScript holds (not lent): while there are any, a login is not held
   * (native/relay-lend.cc Hold), as its session would take one at once (ClientSession.prelink). */
  idle?: Int32Array;
} & ({ md5: string } | { iterations: number; salt: Uint8Array; storedKey: Uint8Array; serverKey: Uint8Array });

/** A login the relay ran: the pool entry, the client's application_name, its BackendKeyData (pid: the relay's id with
 * NATIVE_LOGIN_PID_BIT, cancel-keys.ts). */
export interface NativeLoginOk {
  entry: number;
  applicationName: string;
  /** The startup packet named client_encoding (with the pool's own value). */
  clientEncoding: boolean;
  cancelPid: number;
  cancelSecret: Buffer;
  /** Its session parameters' kind: the relay's application_name id << 1 | clientEncoding (lent servers suit one kind). */
  kind: number;
  /** The relay ran it relay-only on a lent server (native/relay-lend.cc): its kLent follows, and it is adopted already. */
  lent: boolean;
  /** The client id a snapshot listed it with while it was held (NativeRelay.heldRows), which its session keeps; 0 when
   * it was never listed. */
  clientId: number;
}

/** Where the clients of one listener go (NativeRelay.listen). */
export interface NativeAcceptor {
  /** A client whose login JavaScript runs (`login` null), or one the relay logged in itself. */
  accept(socket: NativeTlsSocket, login: NativeLoginOk | null): void;
  /** The relay refused a login it ran (the FATAL error is sent, the connection closed). */
  loginFailed(address: string, port: number, entry: number, sqlstate: string, message: string): void;
  /** A client left during a login the relay ran. */
  loginGone(): void;
}

/** kLoginFailed's SQLSTATE index (relay-auth.cc). */
export const LOGIN_SQLSTATES = [
  SqlState.InvalidPassword,
  SqlState.ProtocolViolation,
  SqlState.InvalidAuthorization,
  SqlState.TooManyConnections,
];

/** The events the relay reports (native/relay-engine.h EventKind), five Int32 slots each. */
export const enum RelayEvent {
  NeedServer = 1,
  Release = 2,
  ClientClosed = 3,
  ServerClosed = 4,
  ServerReady = 5,
  BadLength = 6,
  ClientData = 7,
  ServerData = 8,
  ServerDiscarded = 9,
  Pin = 10,
  TlsReady = 11,
  LoginData = 12,
  Accepted = 13,
  LoginOk = 14,
  LoginFailed = 15,
  LoginGone = 16,
  Lent = 17,
  ServerSchema = 18,
}
