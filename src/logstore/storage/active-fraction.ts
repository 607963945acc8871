// The active fraction: documents kept in memory (and in its write-ahead file) with an in-memory index.
import type { MappingSpec } from '../mapping.js';
import { postings as P } from '../../native/index.js';
import { formatIdTail, idTail } from '../doc-time.js';
import { ActiveIndex } from './active-index.js';
import type { DocBatch } from '../../native/doc-indexer.js';
import type { Column, DocRef, FractionView, TimeOrder } from './fraction-view.js';
import { ClientIdTable, clientIdHash, docHasClientId } from './client-ids.js';

const HEX24 = /^[0-9a-f]{24}$/;
/** Room for documents an active fraction starts with (it doubles from there). */
const INITIAL_DOCS = 1024;
/** Bytes a document costs in an active fraction's per-document arrays: time, counter, batch, offset, length. */
const PER_DOC_BYTES = 8 + 8 + 4 + 4 + 4;

/** `next` with the values of `old` at its start. */
function grownTo<T extends Float64Array | Uint32Array>(old: T, next: T): T {
  next.set(old);
  return next;
}

export class ActiveFraction implements FractionView {
  /** True while documents arrived in (time, id) order (the usual case): then local ids are time-ordered too. */
  private ordered = true;
  private lastTail = -1;
  private readonly shardNo: number;
  readonly index: ActiveIndex;
  /** Documents held. */
  private n = 0;
  /**
   * Per document: time, id counter, and where its bytes are (batch, offset, length), in typed arrays grown by
   * doubling: 28 bytes a document, outside the V8 heap (JavaScript number arrays took 48, and each of their
   * growths was a large old-space allocation that brought the shard's next full collection nearer).
   */
  private tm = new Float64Array(INITIAL_DOCS);
  private ctr = new Float64Array(INITIAL_DOCS);
  private docBatch = new Uint32Array(INITIAL_DOCS);
  private docOff = new Uint32Array(INITIAL_DOCS);
  private docLen = new Uint32Array(INITIAL_DOCS);
  /** Runs of consecutive id tails: run r starts at local id runLocal[r] with tail runTail[r]. Ids made by one
   *  counter form one run; a proxy's batches (its counter jumps between batches) one run each. */
  private readonly runTail: number[] = [];
  private readonly runLocal: number[] = [];
  private readonly batches: Buffer[] = [];
  private readonly ref: DocRef = { buf: Buffer.alloc(0), start: 0, end: 0 };
  /** Client `_id` of the documents that carry one (kept in the document as its field `_id`), by hash. */
  readonly clientIds = new ClientIdTable();
  minTime = Infinity;
  maxTime = -Infinity;
  rawBytes = 0;
  private batchBytes = 0;
  private lastBuffer: ArrayBufferLike | null = null;
  /** Read side, for an unordered fraction: local ids by (time, tail), their times, and each id's position. */
  private sorted = new Uint32Array(0);
  private sortedTimes = new Float64Array(0);
  private ranks = new Uint32Array(0);

  constructor(
    readonly name: string,
    readonly mapping: MappingSpec,
    readonly shardHex: string,
  ) {
    this.index = new ActiveIndex(mapping);
    this.shardNo = parseInt(shardHex, 16);
  }

  get docCount(): number {
    return this.n;
  }

  /** Each document's time, by local id (a view: valid until the next document is added). */
  get times(): Float64Array {
    return this.tm.subarray(0, this.n);
  }

  /** Room for one more document. */
  private grow(): void {
    const cap = 2 * this.tm.length;
    this.tm = grownTo(this.tm, new Float64Array(cap));
    this.ctr = grownTo(this.ctr, new Float64Array(cap));
    this.docBatch = grownTo(this.docBatch, new Uint32Array(cap));
    this.docOff = grownTo(this.docOff, new Uint32Array(cap));
    this.docLen = grownTo(this.docLen, new Uint32Array(cap));
  }

  /**
   * Bytes this fraction holds in memory: its document batches (whole buffers, as they arrived), 28 per
   * document for times, counters and places (room the arrays have not used yet is not resident: they grow by
   * doubling, the large ones in fresh zeroed pages), its index (see ActiveIndex.memoryBytes) and, once searched
   * out of time order, 16 per document for the time order (see byTime).
   */
  get memoryBytes(): number {
    return this.batchBytes + PER_DOC_BYTES * this.n + 16 * this.sorted.length + this.index.memoryBytes;
  }

  get timeOrdered(): boolean {
    return this.ordered;
  }

  /**
   * Indexes one document; its bytes stay in `buf` (a batch buffer shared by many documents). `doc` is the parsed
   * document, or null when the document is number `bi` of `batch` (ActiveIndex.indexBatch tokenized it).
   */
  add(
    doc: Record<string, unknown> | null,
    buf: Buffer,
    off: number,
    len: number,
    time: number,
    counter: number,
    batch?: DocBatch,
    bi = 0,
  ): void {
    const n = this.n;
    const tail = idTail(counter, this.shardNo);
    if (n > 0 && (time < this.tm[n - 1]! || (time === this.tm[n - 1]! && tail <= this.lastTail))) this.ordered = false;
    if (n === 0 || tail !== this.lastTail + 1) {
      this.runTail.push(tail);
      this.runLocal.push(n);
    }
    this.lastTail = tail;
    if (doc === null) this.index.addIndexed(batch!, bi);
    else {
      this.index.addDoc(doc);
      if (typeof doc._id === 'string') this.clientIds.add(clientIdHash(doc._id), n);
    }
    if (n === this.tm.length) this.grow();
    this.tm[n] = time;
    this.ctr[n] = counter;
    if (this.batches[this.batches.length - 1] !== buf) {
      this.batches.push(buf);
      if (buf.buffer !== this.lastBuffer) this.batchBytes += buf.buffer.byteLength;
      this.lastBuffer = buf.buffer;
    }
    this.docBatch[n] = this.batches.length - 1;
    this.docOff[n] = off;
    this.docLen[n] = len;
    this.n = n + 1;
    this.rawBytes += len;
    if (time < this.minTime) this.minTime = time;
    if (time > this.maxTime) this.maxTime = time;
  }

  timeRange(from: number, to: number): [number, number] | null {
    if (!this.ordered) return null;
    const times = this.times;
    const lo = firstAtLeast(times, from, false);
    return [lo, Math.max(lo, firstAtLeast(times, to, true))];
  }

  universe(from: number, to: number): Uint32Array {
    const n = this.n;
    if (from <= this.minTime && to >= this.maxTime) return P.rangeOfIds(0, n);
    if (this.ordered) return P.rangeOfIds(firstAtLeast(this.times, from, false), firstAtLeast(this.times, to, true));
    const { order, lo, hi } = this.byTime(from, to)!;
    return order.slice(lo, hi).sort();
  }

  /**
   * The documents sorted by (time, tail), built when a search first needs it and brought up to date by the next
   * search after more documents arrive: the new ones are sorted (they come in long ordered runs, which the
   * merge sort of Array.prototype.sort takes in near-linear time) and merged with the order kept.
   */
  byTime(from: number, to: number): TimeOrder | null {
    if (this.ordered) return null;
    const n = this.n;
    const m = this.sorted.length;
    if (m !== n) {
      const times = this.times;
      const fresh: number[] = [];
      for (let i = m; i < n; i++) fresh.push(i);
      fresh.sort((a, b) => times[a]! - times[b]! || this.tail(a) - this.tail(b));
      const order = new Uint32Array(n);
      const sortedTimes = new Float64Array(n);
      const old = this.sorted;
      const oldTimes = this.sortedTimes;
      let i = 0;
      let j = 0;
      for (let k = 0; k < n; k++) {
        const b = fresh[j];
        let takeOld = i < m;
        if (takeOld && b !== undefined) {
          const a = old[i]!;
          takeOld = oldTimes[i]! < times[b]! || (oldTimes[i] === times[b] && this.tail(a) < this.tail(b));
        }
        if (takeOld) {
          sortedTimes[k] = oldTimes[i]!;
          order[k] = old[i++]!;
        } else {
          sortedTimes[k] = times[b!]!;
          order[k] = b!;
          j++;
        }
      }
      const ranks = new Uint32Array(n);
      for (let k = 0; k < n; k++) ranks[order[k]!] = k;
      this.sorted = order;
      this.sortedTimes = sortedTimes;
      this.ranks = ranks;
    }
    const lo = firstAtLeast(this.sortedTimes, from, false);
    return { order: this.sorted, rank: this.ranks, lo, hi: Math.max(lo, firstAtLeast(this.sortedTimes, to, true)) };
  }

  postings(field: string, token: string): Uint32Array {
    return this.index.postings(field, token);
  }

  postingsWhere(field: string, accept: (token: string) => boolean): Uint32Array[] {
    return this.index.postingsWhere(field, accept);
  }

  tokenLists(field: string): { tokens: string[]; lists: Uint32Array[] } {
    return this.index.tokenLists(field);
  }

  time(local: number): number {
    return this.tm[local]!;
  }

  id(local: number): string {
    return formatIdTail(this.tm[local]!, this.tail(local));
  }

  /** The id counter of a document as stored (see OWN_SHARD): ids of one fraction mostly come from one counter. */
  counter(local: number): number {
    return this.ctr[local]!;
  }

  /** The id's shard and counter as one number: ids order by (time, tail). */
  tail(local: number): number {
    return idTail(this.ctr[local]!, this.shardNo);
  }

  /** The shard bytes (byte 7 of a 12-byte id) of this fraction's ids: the local shard's own, or a proxy's. */
  idShards(): number[] {
    const out = new Set<number>();
    for (let r = 0; r < this.runTail.length; r++) {
      const last =
        (r + 1 < this.runTail.length ? this.runLocal[r + 1]! : this.n) - 1 - this.runLocal[r]! + this.runTail[r]!;
      for (let b = Math.floor(this.runTail[r]! / 2 ** 40); b <= Math.floor(last / 2 ** 40); b++) out.add(b & 0xff);
    }
    return [...out];
  }

  /** The local id of `id`, or -1: the run that holds its tail, checked by time (runs of two counters may overlap). */
  find(id: string): number {
    if (id.length !== 24 || !HEX24.test(id)) return -1;
    const time = parseInt(id.slice(0, 12), 16);
    const tail = parseInt(id.slice(12), 16);
    const runs = this.runTail.length;
    for (let r = runs - 1; r >= 0; r--) {
      const local = this.runLocal[r]! + (tail - this.runTail[r]!);
      const end = r + 1 < runs ? this.runLocal[r + 1]! : this.n;
      if (local >= this.runLocal[r]! && local < end && this.tm[local] === time) return local;
    }
    return -1;
  }

  data(locals: readonly number[]): Uint8Array[] {
    return locals.map((l) => this.doc(l));
  }

  docRef(local: number): DocRef {
    const off = this.docOff[local]!;
    this.ref.buf = this.batches[this.docBatch[local]!]!;
    this.ref.start = off;
    this.ref.end = off + this.docLen[local]!;
    return this.ref;
  }

  /** Bytes of document `local`. */
  docLength(local: number): number {
    return this.docLen[local]!;
  }

  doc(local: number): Uint8Array {
    const off = this.docOff[local]!;
    return this.batches[this.docBatch[local]!]!.subarray(off, off + this.docLen[local]!);
  }

  timeArray(): Float64Array {
    return this.times;
  }

  column(field: string): Column | null {
    return this.index.column(field);
  }

  fields(): string[] {
    return this.index.seenFields();
  }

  /** Whether a document here carries client id `id` (`h` = clientIdHash(id)). */
  hasClientId(id: string, h: number): boolean {
    if (this.clientIds.size === 0) return false;
    for (const local of this.clientIds.candidates(h)) {
      const r = this.docRef(local);
      if (docHasClientId(r.buf, r.start, r.end, id)) return true;
    }
    return false;
  }
}

/** First index whose time is >= t (or > t when `after`), in a non-decreasing array. */
export function firstAtLeast(times: ArrayLike<number>, t: number, after: boolean): number {
  let lo = 0;
  let hi = times.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (after ? times[mid]! <= t : times[mid]! < t) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
