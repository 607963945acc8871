// Simple-protocol query statistics on the JavaScript relay: one recorder per client follows its stream's sync points (its own framing, as relay-stream.cc's NoteSyncPoint) and times each Query into the process's table at its ReadyForQuery.
import { QueryFingerprint } from './fingerprint.js';
import { NO_ENTRY, QueryRing, QueryStatsTable } from './table.js';

/** The JavaScript relay's table (the native relay keeps its own, native/query-stats.h). */
export const jsQueryStats = new QueryStatsTable();

const Q = 0x51, S = 0x53, F = 0x46, COPY_DONE = 0x63, COPY_FAIL = 0x66;

export class QueryRecorder {
  private print: QueryFingerprint | null = null;
  private readonly ring = new QueryRing();
  private readonly header = new Uint8Array(5);
  private headerLen = 0;
  /** Bytes left of the current message, and whether they are a Query's text. */
  private left = 0;
  private inQuery = false;
  private copyIn = false;

  /** `pool`: the pool's id in the table (stats.ts poolQueryId). */
  constructor(private readonly pool: number, private readonly table: QueryStatsTable = jsQueryStats) {}

  /** A client read that went on (after the relay's framing accepted it). `copyIn`: the server began COPY IN and the
   * client has not ended it (its Syncs are then no sync points). */
  onChunk(chunk: Buffer, copyIn: boolean): void {
    this.copyIn = copyIn;
    const end = chunk.length;
    let pos = 0;
    while (pos < end) {
      if (this.left > 0) {
        const take = Math.min(this.left, end - pos);
        if (this.inQuery) this.print!.feed(chunk, pos, pos + take);
        pos += take;
        this.left -= take;
        if (this.left === 0 && this.inQuery) this.textEnd();
        continue;
      }
      this.header[this.headerLen++] = chunk[pos++]!;
      if (this.headerLen < 5) continue;
      this.headerLen = 0;
      const h = this.header;
      const len = ((h[1]! << 24) | (h[2]! << 16) | (h[3]! << 8) | h[4]!) >>> 0;
      this.left = len > 4 ? len - 4 : 0;
      this.message(h[0]!);
    }
  }

  private message(type: number): void {
    this.inQuery = false;
    if (type === COPY_DONE || type === COPY_FAIL) this.copyIn = false;
    if (!this.table.on) return;
    if (type === Q) {
      this.ring.push();
      this.print ??= new QueryFingerprint();
      this.print.start();
      this.inQuery = true;
      if (this.left === 0) this.textEnd();
    } else if (type === F || (type === S && !this.copyIn)) {
      this.ring.push();
    }
  }

  private textEnd(): void {
    this.inQuery = false;
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
