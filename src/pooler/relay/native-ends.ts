// The two ends of a pair the native relay forwards (NativeRelay.adoptClient/adoptServer): what the pool asks of them, done through the addon.
import { writeTerminate } from '../../protocol/writer.js';
import { TxStatus } from '../../protocol/codes.js';
import type { ParamChanges } from '../session-state/params.js';
import type { RelayAddon } from './native-addon.js';
import type {
  ClientEnd,
  ClientEvents,
  ClientOptions,
  MessageInterceptor,
  PairRelease,
  RelayCounts,
  ServerEnd,
  ServerEvents,
} from './relay.js';

/** What the ends need of the native relay (NativeRelay, native.ts, implements it): its addon, a pair's close and
 * destroy and counts, and the lane's count table. */
export interface NativeEndsRelay {
  readonly a: RelayAddon;
  /** Sends what is pending, shuts down writes and discards reads until EOF; forced after `graceMs`. */
  close(id: number, graceMs: number): void;
  destroy(id: number): void;
  /** The client `id` left the relay (relayRelease): no more reports for it. */
  forget(id: number): void;
  /** The server `id` left the relay (relayRelease): no more reports for it. */
  forgetServer(id: number): void;
  info(id: number): RelayCounts | null;
  /** Parses and Binds the native lane answered in groups it saw through (counted when JavaScript takes them). */
  laneAnswered: number;
  /** Release reports that brought the lane's counts. */
  laneReports: number;
  /** relayLaneTake's output: Parse hits, then per lane entry its Binds, Executes and their microseconds. */
  readonly laneCounts: Float64Array;
  /** Counts that came with kRelease reports: at an offset, the entries, then as in `laneCounts`. */
  readonly laneOut: Float64Array;
}

export class NativeClientEnd implements ClientEnd {
  readonly kind = 'native';
  /** Prepared statements: from the client's first message a rewriter must see, the addon hands its bytes and its
   * server's replies here (ClientData, ServerData) and this end writes what the interceptor makes of them. Made at
   * that first message (`made`); until then the client owes nothing and has no statements to look up. */
  private made: MessageInterceptor | null = null;
  private readonly makeInterceptor: ClientOptions['intercept'] | undefined;
  private server = 0;
  /** False when linked in session mode, or while pinned (RelayEvent.Pin). */
  transactionMode = true;
  /** Intercepted bytes that came while no server was linked. */
  private waiting: Buffer[] = [];
  /** The last link gave the addon a lane table whose counts JavaScript has not taken yet. */
  private laneOpen = false;

  constructor(
    private readonly r: NativeEndsRelay,
    readonly id: number,
    readonly events: ClientEvents,
    intercept?: ClientOptions['intercept'],
  ) {
    this.makeInterceptor = intercept;
  }

  /** The interceptor, made now if this client has one and it was not made yet. */
  private interceptor(): MessageInterceptor | null {
    if (this.made || !this.makeInterceptor) return this.made;
    const r = this.r;
    this.made = this.makeInterceptor({
      toServer: (bufs) =>
        void (this.server && r.a.relayWrite(this.server, bufs.length === 1 ? bufs[0]! : Buffer.concat(bufs))),
      toClient: (bufs) => void r.a.relayWrite(this.id, bufs.length === 1 ? bufs[0]! : Buffer.concat(bufs)),
    });
    return this.made;
  }

  get alive(): boolean {
    return this.r.info(this.id) !== null;
  }

  readonly parks = true;

  link(server: ServerEnd, transactionMode: boolean, park = false): boolean {
    if (!(server instanceof NativeServerEnd)) return false;
    // The client's parameter texts go with the link: a check-in's shortcut (noParams) holds no more.
    server.noParams = false;
    // The rewriter's table for this server: the addon answers its cache hits itself until something else comes.
    // Not while bytes the rewriter must handle wait here: the lane runs only when JavaScript has nothing to send.
    const lane = transactionMode && this.waiting.length === 0 ? (this.made?.laneTable?.() ?? null) : null;
    if (!this.r.a.relayLink(this.id, server.id, transactionMode, lane ?? undefined, park)) return false;
    this.laneOpen = lane !== null;
    this.server = server.id;
    this.transactionMode = transactionMode;
    if (this.waiting.length) {
      const data = Buffer.concat(this.waiting);
      this.waiting = [];
      this.made!.clientBytes(data);
    }
    return true;
  }

  /** A relay-only login (NativeLoginOk.lent) came linked, parked, to the lent server `serverId` (0: that server is gone). */
  lent(serverId: number): void {
    if (serverId === 0) return;
    this.server = serverId;
    this.transactionMode = true;
    this.events.onLent?.(serverId);
  }

  unlink(): boolean {
    this.server = 0;
    return this.r.a.relayUnlink(this.id) === 1 && this.settled;
  }

  /** The addon split the pair (a transaction's end, or a parked pair taken back). `laneAt`: the lane's counts came with
   * the report, at `laneAt - 1` in the relay's laneOut (0: they wait in the addon). */
  released(laneAt = 0): void {
    if (laneAt > 0) this.laneReported(laneAt - 1);
    else this.takeLane();
    this.server = 0;
    this.events.onRelease();
  }

  /** Nothing the interceptor owes the client, or no interceptor. */
  get settled(): boolean {
    return !this.made || this.made.atBoundary;
  }

  /** The lane's counts go to the rewriter (while it still has the server they were counted on). */
  takeLane(): void {
    if (!this.laneOpen) return;
    this.laneOpen = false;
    const out = this.r.laneCounts;
    const n = this.r.a.relayLaneTake(this.id, out);
    let used = out[0]!;
    for (let k = 0; k < n; k++) used += out[1 + 3 * k]!;
    this.r.laneAnswered += used;
    this.made?.laneUsed?.(out, n);
  }

  /** The lane's counts from a kRelease report (Relay::EmitRelease): what takeLane would have taken from the addon. */
  private laneReported(at: number): void {
    if (!this.laneOpen) return;
    this.laneOpen = false;
    const out = this.r.laneOut;
    const n = out[at]!;
    let used = out[at + 1]!;
    for (let k = 0; k < n; k++) used += out[at + 2 + 3 * k]!;
    this.r.laneAnswered += used;
    this.r.laneReports++;
    this.made?.laneUsed?.(out, n, at + 1);
  }

  /** ClientData: `earlier` sync points were in flight before the first intercepted message (-1 after it); the
   * first `sent` bytes are the lane's unanswered groups, already on the server; `lane`: status | delivered << 8. */
  onClientData(earlier: number, sent: number, lane: number): void {
    let data = this.r.a.relayTake(this.id);
    const i = this.interceptor();
    if (!i) return;
    if (earlier > 0) i.expectEarlierReplies(earlier);
    if (sent > 0 || lane !== 0) {
      this.takeLane();
      i.adoptSent?.(data.subarray(0, sent), lane >>> 8, lane & 0xff);
      data = data.subarray(sent);
    }
    if (data.length === 0) return;
    if (this.server) i.clientBytes(data);
    else this.waiting.push(data);
  }

  /** ServerData: the linked server's replies; the pair splits once a transaction ended and nothing is owed. */
  onServerData(serverId: number): void {
    const data = this.r.a.relayTake(serverId);
    // (Only a client that handed over a message diverts its server's replies: its interceptor is made.)
    const i = this.made;
    if (!i || serverId !== this.server) return;
    i.serverBytes(data);
    if (!this.transactionMode || !i.atBoundary) return;
    const c = this.r.info(this.id);
    const s = this.r.info(serverId);
    if (!c || !s || c.syncs !== 0 || c.unsynced || s.txStatus !== TxStatus.Idle) return;
    // The rewriter owes nothing: the client's next bytes may wait for the next link's lane table.
    this.r.a.relayUnlink(this.id, true);
    this.released();
  }

  write(data: Buffer): void {
    this.r.a.relayWrite(this.id, data);
  }

  close(): void {
    this.r.close(this.id, 5000);
  }

  destroy(): void {
    this.r.destroy(this.id);
  }

  counts(): RelayCounts | null {
    return this.r.info(this.id);
  }

  release(): { fd: number; pending: Buffer } | null {
    if (this.server || !this.settled) return null;
    this.takeLane();
    const out = this.r.a.relayRelease(this.id);
    if (!out) return null;
    this.r.forget(this.id);
    // Bytes the rewriter's ClientData brought while no server was linked came before what the relay holds.
    const pending = this.waiting.length ? Buffer.concat([...this.waiting, out.pending]) : out.pending;
    this.waiting = [];
    return { fd: out.fd, pending };
  }

  releasePair(): PairRelease | null {
    const server = this.server;
    if (!server || this.transactionMode || !this.settled || this.waiting.length > 0) return null;
    this.takeLane();
    const out = this.r.a.relayReleasePair(this.id);
    if (!out) return null;
    this.r.forget(this.id);
    this.r.forgetServer(server);
    this.server = 0;
    return out;
  }

  restorePins(kinds: number): void {
    if (kinds === 0 || !this.server) return;
    this.r.a.relaySetPinned(this.id, kinds);
    this.transactionMode = false;
  }
}

export class NativeServerEnd implements ServerEnd {
  readonly kind = 'native';
  /** The pooler's own bytes (reset queries), which the addon does not count. */
  private controlSent = 0;
  private closing = false;
  private ready: ((sawError: boolean) => void) | null = null;

  constructor(
    private readonly r: NativeEndsRelay,
    readonly id: number,
    readonly events: ServerEvents,
  ) {}

  get alive(): boolean {
    return this.r.info(this.id) !== null;
  }

  write(data: Buffer): boolean {
    this.controlSent += data.length;
    return this.r.a.relayWrite(this.id, data);
  }

  reset(query: Buffer, done: (sawError: boolean) => void): void {
    this.ready = done;
    if (!this.r.a.relayWatchReady(this.id)) return;
    this.write(query);
  }

  ask(query: Buffer, done: (replies: Buffer, sawError: boolean) => void): void {
    this.ready = (sawError) => done(this.r.a.relayTake(this.id), sawError);
    if (!this.r.a.relayWatchReady(this.id, true)) return;
    this.write(query);
  }

  /** Set by the kRelease that says this server holds no session-parameter texts, while its client handles it. */
  noParams = false;

  takeParams(): ParamChanges | null {
    if (this.noParams) return null;
    const b = this.r.a.relayParams(this.id);
    if (b === undefined || b.length === 0) return null;
    const texts =
      b.length > 1
        ? b
            .toString('utf8', 1)
            .split('\0')
            .filter((t) => t.length > 0)
        : [];
    return { flags: b[0]!, texts };
  }

  onReady(sawError: boolean): void {
    const done = this.ready;
    this.ready = null;
    done?.(sawError);
  }

  close(): void {
    this.closing = true;
    this.r.a.relayWrite(this.id, writeTerminate());
    this.r.close(this.id, 1000);
  }

  /** The addon keeps a closing socket (and answers relayInfo for it) until its descriptor is closed. */
  get gone(): boolean {
    return this.r.info(this.id) === null;
  }

  /** After close() the graceful close runs its course (forced after its second). */
  destroy(): void {
    if (!this.closing) this.r.destroy(this.id);
  }

  release(): number | null {
    if (this.closing || this.ready !== null) return null;
    const out = this.r.a.relayRelease(this.id);
    if (!out) return null;
    this.r.forgetServer(this.id);
    return out.fd;
  }

  counts(): RelayCounts | null {
    const c = this.r.info(this.id);
    if (c) c.bytesSent += this.controlSent;
    return c;
  }
}
