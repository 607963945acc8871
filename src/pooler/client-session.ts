// One client connection: login (client-login.ts), then relay to a pooled server (transaction or session mode),
// on the native relay (native-relay.ts) or, as the fallback, through this class's JavaScript path.
import net from 'node:net';
import { randomBytesPooled } from './random-pool.js';
import { FrontendMessage, SqlState, TxStatus } from '../protocol/codes.js';
import { FrameStream, ALL_TYPES, typeSet, type MessageHandler } from '../protocol/frame-stream.js';
import { writeErrorResponse } from '../protocol/writer.js';
import type { Pooler } from './pooler.js';
import type { Pool, PoolWaiter } from './pool.js';
import type { ServerConnection, ServerOwner } from './server-connection.js';
import { TransactionTracker } from './transaction-tracker.js';
import { ClientLogin, loginGreeting } from './client-login.js';
import type { ScramSecret } from './auth/scram.js';
import { NativeRelay, type RelayClientOwner } from './relay/native.js';

let nextClientId = 1;
const RELAY_WHOLE = typeSet(FrontendMessage.Terminate);
const MAX_QUEUED_BYTES = 1024 * 1024;

export type ClientState = 'startup' | 'auth' | 'idle' | 'waiting' | 'active' | 'closed';

export class ClientSession implements ServerOwner, PoolWaiter, RelayClientOwner {
  readonly id = nextClientId++;
  readonly connectedAt = Date.now();
  readonly cancelPid: number;
  readonly cancelSecret = randomBytesPooled(4);
  state: ClientState = 'startup';
  database = '';
  user = '';
  applicationName = '';
  isAdmin = false;
  pool: Pool | null = null;
  server: ServerConnection | null = null;
  waitingSince = 0;
  cancelRequested = 0;
  /** Counted by the JavaScript relay; the native relay keeps its own (see the getters). */
  private jsTransactions = 0;
  private jsErrors = 0;
  /** Id in the native relay once it carries this client's bytes, else 0. */
  nativeId = 0;
  private relay: NativeRelay | null = null;
  /** Peer address, kept: the socket object is dropped when the native relay takes the descriptor. */
  readonly addr: string;
  /** Sync points, unsynced messages, COPY IN and Terminate seen in the client's stream. */
  readonly tx = new TransactionTracker();
  private queue: Buffer[] = [];
  private queuedBytes = 0;
  private frames: FrameStream | null = null;
  private xactStart = 0;
  private clientPaused = false;
  private serverPaused = false;
  private closeReason = '';
  /** Admin console sessions get every whole message here (see admin/console.ts). */
  onAdminMessage: MessageHandler = () => undefined;

  constructor(readonly socket: net.Socket, readonly core: Pooler) {
    this.cancelPid = this.id;
    this.addr = `${socket.remoteAddress ?? '?'}:${socket.remotePort ?? 0}`;
    this.handler = this.onStartupChunk;
    socket.on('error', (err) => { this.closeReason ||= err.message; });
    socket.on('close', () => this.onClientClosed());
    socket.on('drain', this.onClientDrain);
  }

  // ---- startup and authentication ----

  /** The socket's reads go here (see read-buffer.ts); true when the chunk is kept after the call. */
  handler: (chunk: Buffer) => boolean;

  private readonly onStartupChunk = (chunk: Buffer): boolean => {
    this.login.feed(Buffer.from(chunk));
    return false;
  };

  /** Startup packets and the password exchange (client-login.ts). */
  private readonly login = new ClientLogin(this);
  protocol32 = false;

  /** The client proved who it is (client-login.ts): greet it, then relay. */
  async loginOk(clientKey: Buffer | null, scramSecret: ScramSecret | null): Promise<void> {
    this.state = 'idle';
    if (clientKey && scramSecret && this.pool) this.pool.scramCredential = { clientKey, secret: scramSecret };
    let params: ReadonlyMap<string, string>;
    if (this.isAdmin) params = this.core.adminParams();
    else {
      try {
        params = await this.pool!.params();
      } catch (err) {
        const e = err as { message: string; sqlstate?: string };
        return this.fatal(e.sqlstate ?? SqlState.ConnectionFailure, e.message);
      }
    }
    if (this.socket.destroyed) return;
    this.socket.write(loginGreeting(params, this.applicationName, this.cancelPid, this.cancelSecret));
    this.core.registerClient(this);
    if (!this.isAdmin && NativeRelay.get()) return this.adoptNative();
    const rest = this.login.takeRest();
    this.frames = this.isAdmin
      ? new FrameStream(1024 * 1024, ALL_TYPES, (type, buf, start, len, complete) => this.onAdminMessage(type, buf, start, len, complete))
      : new FrameStream(this.core.config.general.max_message_size, RELAY_WHOLE, this.tx.onMessage);
    this.handler = this.onRelayData;
    if (rest.length) this.onRelayData(rest);
  }

  /** Hands the socket to the native relay (see native-relay.ts) once the greeting has left Node's socket;
   * bytes that arrive meanwhile stay with the login and go along. Servers are on the native relay too, so a
   * client that cannot follow them there is closed rather than left on a path that cannot reach them. */
  private adoptNative(): void {
    if (this.state === 'closed' || this.socket.destroyed) return;
    if (this.socket.writableLength > 0) {
      this.socket.once('drain', () => this.adoptNative());
      return;
    }
    const relay = NativeRelay.get()!;
    const id = relay.adoptClient(this.socket, this.pool!.stats.block, this.core.config.general.max_message_size, this.login.takeRest(), this);
    if (!id) return this.fatal(SqlState.ConnectionFailure, 'internal error: the connection could not be handed to the relay');
    this.relay = relay;
    this.nativeId = id;
    this.handler = () => false;
  }

  // ---- native relay reports ----

  onNativeNeedServer(): void {
    if (this.state !== 'idle') return;
    this.state = 'waiting';
    this.waitingSince = Date.now();
    this.pool!.acquire(this);
  }

  onNativeRelease(): void {
    const s = this.server;
    if (!s) return;
    this.server = null;
    if (this.state !== 'closed') this.state = 'idle';
    this.pool!.release(s, true);
  }

  onNativeClosed(reason: number, clean: boolean): void {
    this.relay = null;
    this.closeReason ||= reason === 1 ? 'client terminated' : reason === 2 ? 'socket error' : 'client closed the connection';
    this.onClientClosed(clean);
  }

  onServerLostBetween(s: ServerConnection): void {
    if (this.server !== s) return;
    this.server = null;
    if (this.state !== 'closed') this.state = 'idle';
  }

  onNativeBadLength(length: number): void {
    this.fatal(SqlState.ProtocolViolation, `invalid message length ${length} (max_message_size ${this.core.config.general.max_message_size})`);
  }

  private nativeNumbers() {
    return this.relay ? this.relay.info(this.nativeId) : null;
  }

  get transactionCount(): number {
    return this.jsTransactions + (this.nativeNumbers()?.transactions ?? 0);
  }

  get errorCount(): number {
    return this.jsErrors + (this.nativeNumbers()?.errors ?? 0);
  }

  // ---- relay ----

  private readonly onRelayData = (chunk: Buffer): boolean => {
    if (this.isAdmin) {
      if (!this.frames!.feed(chunk)) this.fatal(SqlState.ProtocolViolation, `invalid message length ${this.frames!.badLength}`);
      return false;
    }
    const tx = this.tx;
    tx.terminateAt = -1;
    tx.chunk = chunk;
    const midMessage = !this.frames!.atBoundary;
    if (!this.frames!.feed(chunk)) {
      // Nothing of this chunk goes on; when it began with the rest of a message the server already has the
      // start of, that server is not reusable.
      if (midMessage) tx.unsynced = true;
      this.fatal(SqlState.ProtocolViolation, `invalid message length ${this.frames!.badLength} (max_message_size ${this.core.config.general.max_message_size})`);
      return false;
    }
    if (tx.terminateAt >= 0) {
      const kept = tx.terminateAt > 0 && this.forward(chunk.subarray(0, tx.terminateAt));
      this.closeReason = 'client terminated';
      this.handler = this.discardReads;
      this.socket.end();
      return kept;
    }
    return this.forward(chunk);
  };

  /** After a Terminate or a FATAL the socket stays readable until the client closes it, but PostgreSQL would
   * never read what follows: forwarding it would hand a server bytes cut anywhere (the rest of a message the
   * Terminate's read cut off), or let a closed session take a server again. */
  private readonly discardReads = (): boolean => false;

  /** Sends client bytes to the server, or queues them while a server is awaited; true when `data` is kept. */
  private forward(data: Buffer): boolean {
    if (data.length === 0) return false;
    const pool = this.pool!.stats.totals;
    pool.received += data.length;
    const s = this.server;
    if (s) {
      if (!s.write(data) && !this.clientPaused) this.pauseClientFor(s);
      return s.socket.writableLength > 0;
    }
    this.queue.push(data);
    this.queuedBytes += data.length;
    // A client streaming (COPY data, a long pipeline) while it waits is held back, not buffered without bound.
    if (this.queuedBytes > MAX_QUEUED_BYTES && !this.clientPaused) {
      this.clientPaused = true;
      this.socket.pause();
    }
    if (this.state !== 'waiting') {
      this.state = 'waiting';
      this.waitingSince = Date.now();
      this.pool!.acquire(this);
    }
    return true;
  }

  private pauseClientFor(s: ServerConnection): void {
    this.clientPaused = true;
    this.socket.pause();
    s.socket.once('drain', () => {
      this.clientPaused = false;
      if (!this.socket.destroyed) this.socket.resume();
    });
  }

  /** PoolWaiter: a server is ours now. */
  onServer(s: ServerConnection): void {
    if (this.state === 'closed') {
      this.pool!.release(s, true);
      return;
    }
    this.server = s;
    s.owner = this;
    this.state = 'active';
    if (this.relay) {
      if (this.relay.link(this.nativeId, s.nativeId, this.pool!.settings.mode === 'transaction')) return;
      // One side is gone and its close report is on the way: a live server goes back, a live client waits again.
      this.server = null;
      s.owner = null;
      const serverAlive = s.nativeId !== 0 && this.relay.info(s.nativeId) !== null;
      this.pool!.release(s, serverAlive);
      if (this.relay.info(this.nativeId)) {
        this.state = 'waiting';
        this.pool!.acquire(this);
      }
      return;
    }
    this.xactStart = performance.now();
    const q = this.queue;
    this.queue = [];
    this.queuedBytes = 0;
    const data = q.length === 1 ? q[0]! : Buffer.concat(q);
    if (this.clientPaused) {
      this.clientPaused = false;
      this.socket.resume();
    }
    if (!s.write(data)) this.pauseClientFor(s);
  }

  /** PoolWaiter: no server could be had. */
  onPoolError(message: string, sqlstate: string): void {
    this.queue = [];
    this.queuedBytes = 0;
    this.fatal(sqlstate, message);
  }

  // ---- ServerOwner ----

  onServerData(chunk: Buffer): boolean {
    this.pool!.stats.totals.sent += chunk.length;
    const socket = this.socket;
    if (socket.destroyed) return false;
    if (!socket.write(chunk) && !this.serverPaused) {
      this.serverPaused = true;
      this.server?.socket.pause();
    }
    return socket.writableLength > 0;
  }

  private readonly onClientDrain = (): void => {
    if (this.serverPaused) {
      this.serverPaused = false;
      this.server?.socket.resume();
    }
  };

  onReadyForQuery(status: number): void {
    const now = performance.now();
    const stats = this.pool!.stats;
    stats.observeQuery(this.tx.readyForQuery(now) * 1000);
    if (!this.tx.between(status)) return;
    stats.observeTransaction((now - this.xactStart) * 1000);
    const queries = this.tx.queryCount - this.countedQueries;
    stats.totals.queryCount += queries;
    this.countedQueries = this.tx.queryCount;
    this.jsTransactions++;
    const s = this.server!;
    s.transactionCount++;
    s.queryCount += queries;
    this.xactStart = now;
    // Only between whole client messages: one the client has begun must end on the server that got its start.
    if (this.pool!.settings.mode === 'transaction' && this.queue.length === 0 && this.frames!.atBoundary) this.releaseServer(true);
  }

  private countedQueries = 0;

  /** Queries (Query and Execute messages) this client has sent, for SHOW CLIENTS. */
  get queryCount(): number {
    return this.tx.queryCount + (this.nativeNumbers()?.queries ?? 0);
  }

  onCopyInResponse(): void {
    this.tx.copyIn = true;
  }

  onServerError(): void {
    this.jsErrors++;
    this.pool!.stats.totals.errors++;
  }

  onServerClosed(_server: ServerConnection, reason: string, atBoundary: boolean): void {
    this.server = null;
    this.serverPaused = false;
    if (this.state === 'closed') return;
    if (atBoundary) this.fatal(SqlState.ConnectionFailure, `server connection lost: ${reason}`);
    else if (this.relay) {
      this.relay.destroy(this.nativeId);
      this.relay = null;
      this.closeReason ||= `server connection lost: ${reason}`;
      this.onClientClosed(true);
    } else this.socket.destroy();
  }

  private releaseServer(reusable: boolean): void {
    const s = this.server;
    if (!s) return;
    this.server = null;
    if (this.serverPaused) {
      this.serverPaused = false;
      s.socket.resume();
    }
    if (this.state !== 'closed') this.state = 'idle';
    this.pool!.release(s, reusable && s.atBoundary);
  }

  // ---- teardown ----

  /** Sends a FATAL error and closes the connection. */
  fatal(sqlstate: string, message: string): void {
    if (this.state === 'closed') return;
    if (this.relay) {
      this.closeReason ||= message;
      this.core.counters.errors++;
      const relay = this.relay;
      this.relay = null;
      const clean = this.server ? relay.unlink(this.nativeId) === 1 : true;
      relay.write(this.nativeId, writeErrorResponse({ severity: 'FATAL', code: sqlstate, message }));
      relay.close(this.nativeId, 5000);
      this.onClientClosed(clean);
      return;
    }
    if (this.socket.destroyed) return;
    this.closeReason ||= message;
    this.core.counters.errors++;
    this.socket.end(writeErrorResponse({ severity: 'FATAL', code: sqlstate, message }));
    this.onClientClosed();
  }

  /** `nativeClean`: the native relay's verdict on the linked server (it tracks the bytes, not `tx`). */
  private onClientClosed(nativeClean?: boolean): void {
    if (this.state === 'closed') return;
    const wasWaiting = this.state === 'waiting';
    this.state = 'closed';
    this.handler = this.discardReads;
    if (wasWaiting) this.pool?.cancelWait(this);
    const s = this.server;
    if (s) {
      this.server = null;
      if (this.serverPaused) s.socket.resume();
      const clean = nativeClean ?? (this.tx.between(s.txStatus) && s.atBoundary && (this.frames?.atBoundary ?? true));
      if (clean && this.pool!.settings.mode === 'session') this.core.resetAndRelease(this.pool!, s);
      else this.pool!.release(s, clean);
    }
    this.core.unregisterClient(this);
  }

  /** Admin KILL, shutdown: closes the connection with an error. */
  kill(message: string, sqlstate: string = SqlState.AdminShutdown): void {
    this.fatal(sqlstate, message);
  }

  /** True when the client holds no server mid-transaction (graceful shutdown waits for this). */
  get quiescent(): boolean {
    if (this.server === null) return true;
    if (this.relay) {
      const c = this.relay.info(this.nativeId);
      const s = this.relay.info(this.server.nativeId);
      return !c || !s || (c.syncs === 0 && s.txStatus === TxStatus.Idle);
    }
    return this.tx.syncs === 0 && this.server.txStatus === TxStatus.Idle;
  }
}

