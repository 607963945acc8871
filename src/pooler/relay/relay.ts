// The one seam between sessions and bytes: what a relay (native.ts, js.ts) does with logged-in sockets and reports back.
// It imports no implementation: choose.ts picks one.
import type net from 'node:net';
import type { ChunkHandler } from '../read-buffer.js';
import type { PoolStats } from '../stats.js';
import type { NativeTlsSocket } from './native-tls.js';
import type { ParamChanges } from '../session-state/params.js';

/** A logged-in socket as a relay takes it: the stream to write to, and a way to direct its reads (net's onread or
 * 'data' events, whichever the socket was opened with). Nothing here is a descriptor: a TLS socket fits too, and
 * only the native relay, which takes the descriptor, refuses a socket without one. */
export interface RelaySocket {
  readonly socket: net.Socket;
  /** From now on the socket's reads go to `handler`. */
  read(handler: ChunkHandler): void;
}

/** A logged-in client as a relay takes it: a Node socket, or a client whose TLS the native relay terminates
 * (NativeTlsSocket), which is already inside that relay and which only it takes. */
export interface ClientRelaySocket {
  readonly socket: net.Socket | NativeTlsSocket;
  read(handler: ChunkHandler): void;
}

/** Per-connection numbers a relay keeps (SHOW CLIENTS, SHOW SERVERS, graceful shutdown). */
export interface RelayCounts {
  transactions: number;
  /** Query and Execute messages: sent by a client, run on a server. */
  queries: number;
  /** ErrorResponses a client got. */
  errors: number;
  /** Server: bytes to and from PostgreSQL. Client: bytes to and from the client. */
  bytesSent: number;
  bytesReceived: number;
  /** Time spent in finished transactions (microseconds). */
  xactTimeUs: number;
  /** Client: microseconds since the query in flight was sent (0 when none is). */
  queryAgeUs: number;
  /** Client: microseconds since the transaction under way began (its first sync point, or the link to a server
   * after it), 0 when none is. */
  xactAgeUs: number;
  /** Server: the status byte of its last ReadyForQuery. */
  txStatus: number;
  /** Client: sync points (Query, Sync, FunctionCall) whose ReadyForQuery has not come back. */
  syncs: number;
  /** Client: extended-protocol messages sent since its last Sync. */
  unsynced: boolean;
}

/** What a client end reports to its session. */
export interface ClientEvents {
  /** Bytes arrived while no server is linked; they wait in the relay until `link`. Once per wait. */
  onNeedServer(): void;
  /** Transaction mode: a transaction ended with both streams between whole messages. The pair is already split;
   * the server goes back to the pool. */
  onRelease(): void;
  /** The socket is gone (EOF, Terminate, an error) and its server, if one was linked, is unlinked: `clean` when
   * that server is between transactions and may be pooled. Nothing is reported after this. */
  onClose(reason: string, clean: boolean): void;
  /** A message length below 4 or above max_message_size, or (negative: -1 - the type byte) a message type no
   * PostgreSQL server takes from a frontend (FRONTEND_TYPES): nothing of that read went on, and reads stopped. */
  onBadLength(length: number): void;
  /** Transaction mode, at a transaction's end: the kinds of session state (ClientOptions.pinMask,
   * session-state/state-scan.ts) the client holds, whenever they change. While they are not 0 the relay keeps the pair
   * linked, as in session mode; 0 (its texts dropped them all) is followed by the split of this transaction's end. */
  onPin(kinds: number): void;
  /** A relay-only login (native/relay-lend.cc) is reported linked, parked, to the lent server whose end has this id. */
  onLent?(serverEndId: number): void;
}

/** What a server end reports to its connection. */
export interface ServerEvents {
  /** The socket is gone (EOF, an error, a malformed message); nothing is reported after this. `atBoundary`: the
   * linked client got whole messages only. `parked`: its client was between transactions (see native.ts) and
   * carries on as if the server had died idle. `toldClient`: the last message the linked client got was PostgreSQL's
   * own FATAL (or PANIC), which says why the connection ends (pg_terminate_backend, a shutdown). */
  onClose(reason: string, atBoundary: boolean, parked: boolean, toldClient: boolean): void;
  /** It answered DISCARD ALL or DEALLOCATE ALL for a client the rewriter does not see (native relay): its
   * prepared statements are gone. */
  onStatementsDropped?(): void;
  /** It answered a command whose tag may change the schema (CREATE, ALTER, DROP, DO...: prepared/schema-epoch.ts),
   * for any client, intercepted or not (pools that rewrite prepared statements only). */
  onSchemaChanged?(): void;
}

export interface ClientOptions {
  /** The pool's statistics block: the relay counts the client's traffic and durations into it. */
  stats: PoolStats;
  /** Totals of the client's application_name (the first eight slots of a stats block): counted as the pool's are. */
  app?: Float64Array;
  maxMessageSize: number;
  /** Bytes the login read past its end (a pipelined first query): relayed as if just read. */
  initial: Buffer;
  /** Transaction mode with prepared_statements: builds the interceptor the client's bytes and their replies go through
   * (JavaScript relay only: see relayFor). */
  intercept?: (sink: InterceptorSink) => MessageInterceptor;
  /** Transaction mode: the kinds of session state (session-state/state-scan.ts StateKind) that pin the client to its
   * server (see ClientEvents.onPin); 0 or absent: none. */
  pinMask?: number;
  /** The pool's id in the relay's table of simple-protocol queries (query-stats/stats.ts poolQueryId); 0 or absent:
   * the client's queries are not recorded. */
  queryPool?: number;
}

/** Which relay carries a socket. */
export type RelayKind = 'native' | 'js';

/** A client socket inside a relay. */
export interface ClientEnd {
  readonly kind: RelayKind;
  /** False once the socket is gone or closed. */
  readonly alive: boolean;
  /** Links a server: bytes waiting go to it, its bytes to the client. False when either end is gone (its close
   * report is on the way). In transaction mode the relay splits the pair itself at a transaction's end. */
  link(server: ServerEnd, transactionMode: boolean, park?: boolean): boolean;
  /** `link` may park (the native relay): a client that sent nothing yet is linked as between transactions, so its
   * first transaction needs no report, and the pool takes the server back (Relay.reclaim) whenever it needs it. */
  readonly parks: boolean;
  /** Splits the pair now: true when the server was linked and may be pooled (between transactions and whole
   * messages on both streams). */
  unlink(): boolean;
  /** The pooler's own bytes to the client (an ErrorResponse). */
  write(data: Buffer): void;
  /** Sends what is pending, then closes; reads are discarded until the client goes. No report follows. */
  close(): void;
  /** Closes at once. No report follows. */
  destroy(): void;
  /** Null once the socket is gone (native relay). */
  counts(): RelayCounts | null;
  /** Lets go of the client between transactions, for a takeover to move it to the next process
   * (takeover-clients.ts): a duplicate of its descriptor (the caller's to close) and the bytes it sent that no server
   * got, which begin at a message boundary. The end is gone without a report, and the connection stays open: nothing
   * is written to it, nothing shut down. Null when it cannot now (linked, TLS, bytes to it unsent, bytes held for a
   * rewriter), and then nothing changed. */
  release(): { fd: number; pending: Buffer } | null;
  /** Lets go of the client together with the server it is linked to (session mode, or pinned: ClientEvents.onPin),
   * for a takeover to move the pair to the next process: duplicates of both descriptors (the caller's to close), the
   * server's bytes not yet written to the client (whole messages, to be written first there) and the kinds it is
   * pinned for (0: none). Only between transactions: the server idle, both streams between whole messages, no sync
   * point in flight, nothing unsent to the server. Both ends are gone without a report, nothing is written to either
   * connection. Null when it cannot now, and then nothing changed. */
  releasePair(): PairRelease | null;
  /** After `link` in session style, for a pair a takeover moved here pinned: the client is pinned for `kinds` again
   * (the pair splits once its texts clear them all, as on the process it came from). */
  restorePins(kinds: number): void;
}

/** What ClientEnd.releasePair hands over. */
export interface PairRelease {
  fd: number;
  serverFd: number;
  toClient: Buffer;
  pinned: number;
}

/** A server socket inside a relay. */
export interface ServerEnd {
  readonly kind: RelayKind;
  readonly alive: boolean;
  /** The pooler's own bytes to PostgreSQL. */
  write(data: Buffer): boolean;
  /** Session mode, before the server goes back to the pool: sends `query` (server_reset_query) while unlinked and
   * calls `done` at its ReadyForQuery (`sawError` when an ErrorResponse came first). If the server dies first,
   * `done` is never called and its close report says so. */
  reset(query: Buffer, done: (sawError: boolean) => void): void;
  /** While unlinked: sends `query` (the pooler's own) and calls `done` with every reply up to and with its
   * ReadyForQuery, none of which reaches a client. As `reset`, `done` is never called if the server dies first. */
  ask(query: Buffer, done: (replies: Buffer, sawError: boolean) => void): void;
  /** Session parameters (session-state/params.ts): what linked clients sent or were told since the last call that
   * may have changed one (SET / RESET / DISCARD texts, ParameterStatus); null when nothing. */
  takeParams(): ParamChanges | null;
  /** Terminate, then close (forced after a second). No report follows. */
  close(): void;
  /** Closes at once, without Terminate; after close() it lets that close run its course. No report follows. */
  destroy(): void;
  /** True once the descriptor is closed: after close(), when PostgreSQL has closed its side (its backend is gone), or
   * after destroy() or a close report. The pool coordinator counts a closing connection until then. */
  readonly gone: boolean;
  counts(): RelayCounts | null;
  /** Lets go of the server for a takeover to move it to the next process (takeover-clients.ts): a duplicate of its
   * descriptor, the caller's to close, when it is unlinked, idle (its last ReadyForQuery 'I'), between whole messages,
   * plaintext, with nothing unsent and no reply awaited. The end is gone without a report and the connection stays
   * open (nothing is written to it). Null when it cannot now, and then nothing changed. */
  release(): number | null;
}

export interface Relay {
  /** Takes a logged-in client socket (its greeting already sent); null when it cannot. */
  adoptClient(conn: ClientRelaySocket, options: ClientOptions, events: ClientEvents): ClientEnd | null;
  /** Takes a logged-in server socket (its ReadyForQuery received); null when it cannot. */
  /** `rewrites`: its pool rewrites prepared statements (see ServerEvents.onStatementsDropped). */
  adoptServer(conn: RelaySocket, events: ServerEvents, rewrites?: boolean): ServerEnd | null;
  /** Splits the pairs a relay kept linked between transactions in the pool counting into `stats` (native.ts:
   * parking); each client is told `onRelease`, as at the transaction's end. */
  reclaim(stats: PoolStats, keepRelayOnly?: boolean): void;
  /** Takes back the servers lent for relay-only logins (native.ts) of that pool that no client uses: their ends' ids. */
  unlend?(stats: PoolStats, one?: boolean): number[];
}

/** Where a MessageInterceptor writes: in order, what one chunk produced (a server reply can release client
 * messages it held back, so either call can follow either side's bytes). */
export interface InterceptorSink {
  toServer(bufs: Buffer[]): void;
  toClient(bufs: Buffer[]): void;
}

/**
 * The hook a message rewriter implements (prepared/pipe.ts PreparedPipe; built by ClientOptions.intercept with the
 * InterceptorSink it writes to). It goes on the JavaScript relay's two paths and nowhere else:
 * js.ts `JsClientEnd.toServer` (every client byte toward a server) and `JsClientEnd.fromServer` (every server byte
 * toward the client), and `atBoundary` joins the relay's own test before a pair is split. The session owns its life
 * (it knows which ServerConnection, and so which statement cache, each transaction gets, and when the client goes).
 */
export interface MessageInterceptor {
  /** Bytes from the client; false on an invalid message length (see `clientBadLength`). */
  clientBytes(chunk: Buffer): boolean;
  /** Bytes from the server; false on an invalid message length. */
  serverBytes(chunk: Buffer): boolean;
  readonly clientBadLength: number;
  /** No message of either side is partly through and the client is owed nothing: the pair may split. */
  readonly atBoundary: boolean;
  /** The native relay passed `n` sync points on before the first message it handed over: their replies come first. */
  expectEarlierReplies(n: number): void;
  /** Native relay, at each link: the table of the native lane (native/relay-lane.h) for the linked server, or null
   * when the rewriter must see everything (it owes the client something, or has nothing the server holds). */
  laneTable?(): Buffer | null;
  /** What the lane's answered groups used since the table was given (relayLaneTake's counts, from `counts[at]`). */
  laneUsed?(counts: Float64Array, n: number, at?: number): void;
  /** The lane ended with groups still unanswered: `bytes` (whole messages) went to the server already, the first
   * `delivered` replies of the first group reached the client, `status` is the server's last ReadyForQuery (0: none). */
  adoptSent?(bytes: Buffer, delivered: number, status: number): void;
}
