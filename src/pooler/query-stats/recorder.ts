// Simple-protocol query statistics on the JavaScript relay: one recorder per client follows the sync points of the relay's own framing (FrameStream, as relay-stream.cc's NoteSyncPoint follows the native scan) and times each Query into the process's table at its ReadyForQuery.
import { QueryFingerprint } from './fingerprint.js';
import { NO_ENTRY, QueryRing, QueryStatsTable } from './table.js';

/** The JavaScript relay's table (the native relay keeps its own, native/query-stats.h). */
export const jsQueryStats = new QueryStatsTable();

const Q = 0x51,
  S = 0x53,
  F = 0x46;

export class QueryRecorder {
  private print: QueryFingerprint | null = null;
  private readonly ring = new QueryRing();
  /** Bytes of the current Query's text still to come in the next reads (the framing skips them). */
  private left = 0;

  /** `pool`: the pool's id in the table (stats.ts poolQueryId). `tx`: the client's transaction tracker, whose COPY IN
   * state says whether a Sync is a sync point (it has seen every message before the one given to onMessage). */
  constructor(
    private readonly pool: number,
    private readonly tx: { readonly copyIn: boolean },
    private readonly table: QueryStatsTable = jsQueryStats,
  ) {}

  /** Every client read, before it is framed: the rest of a Query cut by the last read. */
  onChunk(chunk: Buffer): void {
    if (this.left === 0) return;
    const n = Math.min(this.left, chunk.length);
    this.print!.feed(chunk, 0, n);
    this.left -= n;
    if (this.left === 0) this.textEnd();
  }

  /** A message of the relay's framing (FrameStream): buf[start ..] holds its header and as much of its body as the
   * read did. */
  onMessage(type: number, buf: Buffer, start: number, len: number, complete: boolean): void {
    if (!this.table.on) return;
    if (type === Q) {
      this.ring.push();
      this.print ??= new QueryFingerprint();
      this.print.start();
      const bodyEnd = start + 1 + len;
      const end = complete ? bodyEnd : Math.min(bodyEnd, buf.length);
      if (end > start + 5) this.print.feed(buf, start + 5, end);
      this.left = bodyEnd - end;
      if (this.left === 0) this.textEnd();
    } else if (type === F || (type === S && !this.tx.copyIn)) {
      this.ring.push();
    }
  }

  private textEnd(): void {
    const q = this.print!;
    q.finish();
    const slot = this.table.find(q, this.pool);
    if (slot >= 0) this.ring.setLast(slot, this.table.foundGen);
  }

  /** A ReadyForQuery answered the oldest sync point, `us` after it was sent; `syncs`: sync points still in flight. */
  onReady(us: number, syncs: number): void {
    const ring = this.ring;
    if (ring.empty) return;
    const slot = ring.pop();
    if (slot !== NO_ENTRY) this.table.observe(slot, ring.poppedGen, us);
    // Nothing in flight: whatever the ring still holds belongs to no query.
    if (syncs === 0) ring.clear();
  }
}
