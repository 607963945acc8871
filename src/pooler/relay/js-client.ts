// The JavaScript relay's client side (js.ts adopts the ends; js-server.ts is the server side): a Node socket's bytes
// followed by FrameStream and TransactionTracker and written to the linked server as they come.
import net from 'node:net';
import { FrontendMessage } from '../../protocol/codes.js';
import { FrameStream, typeSet } from '../../protocol/frame-stream.js';
import { TransactionTracker } from '../transaction-tracker.js';
import type {
  ClientEnd,
  ClientEvents,
  ClientOptions,
  MessageInterceptor,
  PairRelease,
  RelayCounts,
  RelaySocket,
  ServerEnd,
} from './relay.js';
import { dupOf, JsServerEnd, type LinkedClient } from './js-server.js';
import { Takeover } from './js-takeover.js';
import { PinWatch } from './js-pins.js';
import { ClientCounts } from './js-counts.js';
import { ClientParamNotes } from './js-params.js';
import { fdPassing } from '../../native/fd-passing.js';

/** Client sockets closed by the pooler (a FATAL sent, writes shut) whose peer has not closed yet: reads are discarded
 * until then. A process that exits before resets them, and a reset can drop the FATAL unread (graceful shutdown). */
let closingClients = 0;

export function jsClosingClients(): number {
  return closingClients;
}
import { QueryRecorder } from '../query-stats/recorder.js';
import type { MessageHandler } from '../../protocol/frame-stream.js';

/** Client messages seen whole: only Terminate (its offset decides what goes on). */
const CLIENT_WHOLE = typeSet(FrontendMessage.Terminate);
/** Message types PostgreSQL takes from a frontend after login (postgres.c SocketBackend; native/relay-scan.h
 * FrontendType): any other ends the server's connection, so a client's one must never reach it. */
export const FRONTEND_TYPES = typeSet(...[...'BCDEFHPQSXcdf'].map((c) => c.charCodeAt(0)));
/** A client streaming (COPY data, a long pipeline) while it waits for a server is held back past this. */
const MAX_QUEUED_BYTES = 1024 * 1024;

export class JsClientEnd implements ClientEnd, LinkedClient {
  readonly kind = 'js';
  private readonly socket: net.Socket;
  /** Sync points, unsynced messages, COPY IN and Terminate seen in the client's stream. */
  private readonly tx = new TransactionTracker();
  /** Bytes, queries, transactions, errors and times, for RelayCounts and the pool's and application's totals. */
  private readonly count: ClientCounts;
  private readonly frames: FrameStream;
  private server: JsServerEnd | null = null;
  /** The pair splits at a transaction's end (read and set by the pins, js-pins.ts). */
  transactionMode = true;
  /** Bytes that arrived while no server was linked. */
  private queue: Buffer[] = [];
  private queuedBytes = 0;
  private needServerSent = false;
  private clientPaused = false;
  private serverPaused = false;
  /** Closed by the session, or reported closed: no more reports. */
  private closed = false;
  /** After a Terminate or a bad length, or once closed: PostgreSQL would never read what follows. */
  private discarding = false;
  private reason = '';
  /** Set at the ReadyForQuery that ends a transaction; the pair splits once that server read is scanned. */
  releaseDue = false;
  /** Prepared statements in transaction mode: client bytes and server replies pass through it (see relay.ts), from
   * the client's first message it must see (prepared/divert.ts) on; until then bytes pass straight through, as on the
   * native relay, so a client that never prepares costs what it costs without prepared_statements. */
  private readonly interceptor: MessageInterceptor | null;
  /** With an interceptor: when it takes the client over (js-takeover.ts). */
  private readonly takeover: Takeover | null;
  /** Session state that cannot move (ClientOptions.pinMask), or null when no kind is watched. */
  private readonly pins: PinWatch | null;
  /** Session parameters: statements that may change one, noted on the server they go to (or held until a link). */
  private readonly params = new ClientParamNotes(() => this.server);
  /** Simple-protocol query statistics (query-stats/recorder.ts), when the pool records them. */
  private readonly queries: QueryRecorder | null;
  /** The bytes the login read past its end are still to be relayed (a microtask away). */
  private initialDue = false;
  /** The first message type of the stream no server takes (FRONTEND_TYPES), -1 while there is none. */
  private badType = -1;

  constructor(
    conn: RelaySocket,
    options: ClientOptions,
    private readonly events: ClientEvents,
  ) {
    this.socket = conn.socket;
    this.count = new ClientCounts(options.stats, options.app ?? null, this.tx);
    this.takeover = options.intercept ? new Takeover(this.tx) : null;
    const pinMask = options.pinMask ?? 0;
    this.pins = pinMask !== 0 ? new PinWatch(pinMask, (kinds) => this.events.onPin(kinds)) : null;
    this.queries = options.queryPool ? new QueryRecorder(options.queryPool, this.tx) : null;
    const inner: MessageHandler = this.takeover ? this.takeover.onFrame : this.tx.onMessage;
    this.frames = new FrameStream(options.maxMessageSize, CLIENT_WHOLE, (type, buf, start, len, complete) => {
      if (!FRONTEND_TYPES[type] || this.badType >= 0) {
        if (this.badType < 0) this.badType = type;
        return;
      }
      if (type === FrontendMessage.Query || type === FrontendMessage.Parse)
        this.params.onMessage(type, buf, start, len, complete);
      this.queries?.onMessage(type, buf, start, len, complete);
      inner(type, buf, start, len, complete);
    });
    this.interceptor = options.intercept
      ? options.intercept({ toServer: this.writeServer, toClient: this.writeClient })
      : null;
    this.socket.on('error', (err) => {
      this.reason ||= err.message;
    });
    this.socket.on('close', this.onSocketClose);
    this.socket.on('drain', this.onDrain);
    conn.read(this.onData);
    // After the caller holds this end (what these bytes cause may need it), before any further read.
    const initial = options.initial;
    if (initial.length) {
      this.initialDue = true;
      queueMicrotask(() => {
        this.initialDue = false;
        this.onData(initial);
      });
    }
  }

  get alive(): boolean {
    return !this.closed && !this.socket.destroyed;
  }

  // ---- client -> server ----

  private readonly onData = (chunk: Buffer): boolean => {
    if (this.discarding) return false;
    const tx = this.tx;
    tx.terminateAt = -1;
    tx.chunk = chunk;
    const midMessage = !this.frames.atBoundary;
    this.pins?.feed(chunk);
    this.params.onChunk(chunk);
    this.queries?.onChunk(chunk);
    if (!this.frames.feed(chunk) || this.badType >= 0) {
      // Nothing of this chunk goes on; when it began with the rest of a message the server already has the
      // start of, that server is not reusable.
      if (midMessage) tx.unsynced = true;
      this.discarding = true;
      this.events.onBadLength(this.badType >= 0 ? -1 - this.badType : this.frames.badLength);
      return false;
    }
    this.takeover?.afterScan(chunk, this.frames.carried);
    if (tx.terminateAt >= 0) {
      const kept = tx.terminateAt > 0 && this.toServer(chunk.subarray(0, tx.terminateAt));
      this.reason = 'client terminated';
      // The socket stays readable until the client closes it; what follows a Terminate must reach no server
      // (the rest of a message cut by this read would leave PostgreSQL misframed).
      this.discarding = true;
      this.socket.end();
      return kept;
    }
    return this.toServer(chunk);
  };

  /** Client bytes toward PostgreSQL: the linked server gets them, or they wait for one; true when `data` is still
   * referenced afterwards. The one path from a client to a server: MessageInterceptor.clientBytes plugs in here. */
  private toServer(data: Buffer): boolean {
    if (data.length === 0) return false;
    this.count.received(data.length);
    const t = this.takeover;
    if (t && !t.switched) {
      if (t.passthrough) {
        const at = t.split(data.length);
        if (at === data.length) return this.direct(data);
        // The interceptor's first message: what comes before it goes on as it is, the rest through the interceptor.
        const kept = at > 0 && this.direct(data.subarray(0, at));
        this.hold(data.subarray(at));
        return kept;
      }
      this.hold(data);
      return false;
    }
    return this.direct(data);
  }

  /** Bytes for the linked server as they are (or through the interceptor once it took over), or queued for one. */
  private direct(data: Buffer): boolean {
    const s = this.server;
    if (s) {
      if (this.takeover?.switched) {
        // Its whole messages are copies, and it copies the CopyData it passes on: nothing of `data` is kept.
        this.interceptor!.clientBytes(data);
        return false;
      }
      if (!s.write(data) && !this.clientPaused) this.pauseFor(s);
      return s.socket.writableLength > 0;
    }
    this.queue.push(data);
    this.queuedBytes += data.length;
    if (this.queuedBytes > MAX_QUEUED_BYTES && !this.clientPaused) {
      this.clientPaused = true;
      this.socket.pause();
    }
    if (!this.needServerSent) {
      this.needServerSent = true;
      this.events.onNeedServer();
      // A free server is usually linked inside that call, and link() wrote the queue: `data` is still referenced
      // only if the write is pending (the read buffer is then replaced, a 16 KiB allocation per transaction).
      const s = this.server;
      if (this.queue.length === 0 && s) return s.socket.writableLength > 0;
    }
    return true;
  }

  private hold(data: Buffer): void {
    this.takeover!.held.push(Buffer.from(data));
    this.queuedBytes += data.length;
    if (this.queuedBytes > MAX_QUEUED_BYTES && !this.clientPaused) {
      this.clientPaused = true;
      this.socket.pause();
    }
    this.switchOver();
  }

  /** The interceptor takes over both directions once the server's stream is at a message boundary (its bytes so far
   * went to the client as they came): the replies to the `earlier` sync points still owed pass through it as they are. */
  switchOver(): void {
    const s = this.server;
    const t = this.takeover;
    if (!t || t.switched || t.passthrough || !s || !s.atBoundary) {
      if (!s && !this.needServerSent && this.holding) {
        this.needServerSent = true;
        this.events.onNeedServer();
      }
      return;
    }
    t.switched = true;
    const i = this.interceptor!;
    if (t.earlier > 0) i.expectEarlierReplies(t.earlier);
    const held = t.held;
    t.held = [];
    if (this.queue.length === 0) this.queuedBytes = 0;
    if (this.clientPaused && this.queue.length === 0) {
      this.clientPaused = false;
      this.socket.resume();
    }
    i.clientBytes(held.length === 1 ? held[0]! : Buffer.concat(held));
  }

  /** Between engaging and switching: the interceptor waits for the server's stream to reach a message boundary. */
  get holding(): boolean {
    return this.takeover !== null && this.takeover.held.length > 0;
  }

  /** The server's replies go to the client as they are: the interceptor, if any, has not taken them over. */
  get repliesThrough(): boolean {
    return !this.takeover?.switched;
  }

  private pauseFor(s: JsServerEnd): void {
    this.clientPaused = true;
    this.socket.pause();
    s.socket.once('drain', () => {
      this.clientPaused = false;
      if (!this.socket.destroyed) this.socket.resume();
    });
  }

  /** The interceptor's output toward the linked server. */
  private readonly writeServer = (bufs: Buffer[]): void => {
    const s = this.server;
    if (!s) return;
    if (!s.write(bufs.length === 1 ? bufs[0]! : Buffer.concat(bufs)) && !this.clientPaused) this.pauseFor(s);
  };

  /** The interceptor's output toward the client; pieces of rows are views of the server's read buffer. */
  private readonly writeClient = (bufs: Buffer[]): void => {
    const socket = this.socket;
    if (socket.destroyed) return;
    const ok = socket.write(bufs.length === 1 ? bufs[0]! : Buffer.concat(bufs));
    if (!ok && !this.serverPaused && this.server) {
      this.serverPaused = true;
      this.server.socket.pause();
    }
  };

  // ---- server -> client (called by JsServerEnd) ----

  /** Server bytes toward the client; true when `chunk` is still referenced afterwards. The one path from a server
   * to a client: MessageInterceptor.serverBytes plugs in here. */
  fromServer(chunk: Buffer, s: JsServerEnd): boolean {
    this.count.sent(chunk.length);
    const socket = this.socket;
    if (socket.destroyed) return false;
    if (this.takeover?.switched) {
      this.interceptor!.serverBytes(chunk);
      return socket.writableLength > 0;
    }
    if (!socket.write(chunk) && !this.serverPaused) {
      this.serverPaused = true;
      s.socket.pause();
    }
    return socket.writableLength > 0;
  }

  private readonly onDrain = (): void => {
    if (this.serverPaused) {
      this.serverPaused = false;
      this.server?.socket.resume();
    }
  };

  onReadyForQuery(s: JsServerEnd, status: number): void {
    const now = performance.now();
    const queryUs = this.tx.readyForQuery(now) * 1000;
    this.takeover?.readyPassed();
    this.count.query(queryUs);
    this.queries?.onReady(queryUs, this.tx.syncs);
    if (!this.tx.between(status)) return;
    const queries = this.count.transaction(this.tx.endTransaction(now) * 1000);
    s.transactions++;
    s.queries += queries;
    if (this.pins && this.pins.atEnd(this)) return;
    // Only between whole client messages: one the client has begun must end on the server that got its start. With
    // an interceptor, also only once the client got every reply it is owed (it may swallow ReadyForQuery messages
    // of its own Syncs, and hold client messages back).
    if (
      this.transactionMode &&
      this.queue.length === 0 &&
      !this.holding &&
      this.frames.atBoundary &&
      (!this.interceptor || this.interceptor.atBoundary)
    )
      this.releaseDue = true;
  }

  /** After the server's read that held the transaction's last ReadyForQuery (all of that read went to this
   * client, as on the native relay). The one place a pair splits: MessageInterceptor.atBoundary joins the test. */
  releaseAfterRead(s: JsServerEnd): void {
    this.releaseDue = false;
    if (this.server !== s) return;
    this.detach(s);
    this.events.onRelease();
  }

  onCopyInResponse(): void {
    this.tx.copyIn = true;
  }

  onServerError(sqlstate: string | null): void {
    this.count.error(sqlstate);
  }

  /** The linked server's socket is gone (its connection reports it). */
  serverGone(s: JsServerEnd): void {
    if (this.server !== s) return;
    this.server = null;
    this.serverPaused = false;
    this.releaseDue = false;
  }

  // ---- ClientEnd ----

  /** This relay splits every pair at its transaction's end: nothing is parked. */
  readonly parks = false;

  link(server: ServerEnd, transactionMode: boolean): boolean {
    if (!(server instanceof JsServerEnd) || this.closed || !server.alive || server.client) return false;
    this.server = server;
    server.client = this;
    this.transactionMode = transactionMode;
    this.params.linked(server);
    this.needServerSent = false;
    // Query and transaction times are the server's: the time spent waiting for it counts as wait time.
    this.tx.restartClock(performance.now());
    if (this.queue.length > 0) {
      const q = this.queue;
      this.queue = [];
      this.queuedBytes = 0;
      const data = q.length === 1 ? q[0]! : Buffer.concat(q);
      if (this.clientPaused) {
        this.clientPaused = false;
        this.socket.resume();
      }
      if (this.takeover?.switched) this.interceptor!.clientBytes(data);
      else if (!server.write(data)) this.pauseFor(server);
    }
    // Bytes for the interceptor that waited for a server (after any that go on as they are): a new server's stream is at a boundary.
    if (this.holding) this.switchOver();
    return true;
  }

  unlink(): boolean {
    const s = this.server;
    if (!s) return false;
    const clean =
      this.tx.between(s.txStatus) &&
      s.atBoundary &&
      this.frames.atBoundary &&
      !this.holding &&
      (!this.interceptor || this.interceptor.atBoundary);
    this.detach(s);
    return clean;
  }

  private detach(s: JsServerEnd): void {
    this.server = null;
    s.client = null;
    if (this.serverPaused) {
      this.serverPaused = false;
      s.socket.resume();
    }
  }

  write(data: Buffer): void {
    if (!this.socket.destroyed) this.socket.write(data);
  }

  close(): void {
    if (this.closed) return;
    this.stop();
    if (!this.socket.destroyed) {
      closingClients++;
      this.socket.once('close', () => {
        closingClients--;
      });
    }
    this.socket.end();
  }

  destroy(): void {
    if (this.closed) return;
    this.stop();
    this.socket.destroy();
  }

  private stop(): void {
    this.closed = true;
    this.discarding = true;
    this.queue = [];
    this.queuedBytes = 0;
    if (this.takeover) this.takeover.held = [];
    if (this.server) this.detach(this.server);
  }

  private readonly onSocketClose = (): void => {
    if (this.closed) return;
    this.closed = true;
    this.discarding = true;
    const clean = this.server ? this.unlink() : true;
    this.events.onClose(this.reason || 'client closed the connection', clean);
  };

  counts(): RelayCounts {
    return this.count.relayCounts();
  }

  releasePair(): PairRelease | null {
    const s = this.server;
    if (!s || this.transactionMode || this.closed || this.discarding || this.initialDue || this.releaseDue) return null;
    const tx = this.tx;
    if (tx.syncs !== 0 || tx.unsynced || tx.copyIn || this.queue.length > 0 || this.holding) return null;
    if (!this.frames.atBoundary || (this.interceptor && !this.interceptor.atBoundary)) return null;
    const fd = dupOf(this.socket);
    if (fd === null) return null;
    const serverFd = s.releaseLinked();
    if (serverFd === null) {
      fdPassing!.fdClose(fd);
      return null;
    }
    const pinned = this.pins?.kinds ?? 0;
    this.detach(s);
    s.dropReleased();
    this.stop();
    const socket = this.socket;
    socket.removeAllListeners();
    socket.on('error', () => undefined);
    socket.destroy();
    return { fd, serverFd, toClient: Buffer.alloc(0), pinned };
  }

  restorePins(kinds: number): void {
    if (this.server) this.pins?.restore(kinds, this);
  }

  release(): { fd: number; pending: Buffer } | null {
    const socket = this.socket;
    if (this.closed || this.server || this.discarding || this.initialDue) return null;
    if (this.interceptor && !this.interceptor.atBoundary) return null;
    const fd = dupOf(socket);
    if (fd === null) return null;
    // What waited for a server, then what waited for the rewriter to take over (js-takeover.ts), in the order read.
    const parts = [...this.queue, ...(this.takeover?.held ?? [])];
    const pending = parts.length ? Buffer.concat(parts) : Buffer.alloc(0);
    this.stop();
    // Node's socket goes, its descriptor closed: the duplicate keeps the connection, and nothing is sent on it.
    socket.removeAllListeners();
    socket.on('error', () => undefined);
    socket.destroy();
    return { fd, pending };
  }
}
