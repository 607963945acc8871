// The JavaScript relay's table of simple-protocol query fingerprints and the per-client ring of sync points in flight; twins of QueryStatsTable and QueryRing in native/query-stats.h.
import type { QueryFingerprint } from './fingerprint.js';

export const NO_ENTRY = 0xffffffff;

/** One entry as /api/top/queries reads it. */
export interface QueryStatsRow {
  pool: number;
  hash: string;
  text: string;
  count: number;
  timeUs: number;
}

/**
 * At most `cap` fingerprints (per pool) with their completed queries and total time (microseconds). A new
 * fingerprint in a full table replaces the entry with the lowest count (the first such); `gen` tells a ring's
 * reference to a replaced entry. Typed arrays and an open-addressing index: a lookup allocates nothing.
 */
export class QueryStatsTable {
  private cap = 0;
  private n = 0;
  private hi = new Uint32Array(0);
  private lo = new Uint32Array(0);
  private pool = new Int32Array(0);
  private gens = new Uint32Array(0);
  private counts = new Float64Array(0);
  private times = new Float64Array(0);
  private texts: Buffer[] = [];
  /** Slot + 1 by bucket, 0 empty; linear probing, backward-shift deletion. */
  private index = new Int32Array(0);
  private mask = 0;
  private genNext = 0;
  /** The generation of the entry find() returned. */
  foundGen = 0;

  get on(): boolean {
    return this.cap > 0;
  }

  get size(): number {
    return this.cap;
  }

  /** A new size empties the table (0: recording off). */
  resize(n: number): void {
    if (n === this.cap) return;
    this.cap = n;
    this.n = 0;
    this.hi = new Uint32Array(n);
    this.lo = new Uint32Array(n);
    this.pool = new Int32Array(n);
    this.gens = new Uint32Array(n);
    this.counts = new Float64Array(n);
    this.times = new Float64Array(n);
    this.texts = [];
    let buckets = 1;
    while (buckets < n * 2) buckets *= 2;
    this.index = new Int32Array(n > 0 ? buckets : 0);
    this.mask = buckets - 1;
    this.genNext++;
  }

  private bucket(lo: number, pool: number): number {
    return ((lo ^ Math.imul(pool, 0x9e3779b1)) >>> 0) & this.mask;
  }

  /** The slot of a finished fingerprint (foundGen its generation), added or replacing the least counted when new; -1 when off. */
  find(q: QueryFingerprint, pool: number): number {
    if (this.cap === 0) return -1;
    const idx = this.index;
    let i = this.bucket(q.lo, pool);
    for (let s = idx[i]!; s !== 0; s = idx[i]!) {
      const slot = s - 1;
      if (this.lo[slot] === q.lo && this.hi[slot] === q.hi && this.pool[slot] === pool) {
        this.foundGen = this.gens[slot]!;
        return slot;
      }
      i = (i + 1) & this.mask;
    }
    let slot: number;
    if (this.n < this.cap) {
      slot = this.n++;
    } else {
      slot = 0;
      const counts = this.counts;
      for (let k = 1; k < this.n; k++) if (counts[k]! < counts[slot]!) slot = k;
      this.unindex(slot);
      i = this.bucket(q.lo, pool);
      while (idx[i] !== 0) i = (i + 1) & this.mask;
    }
    idx[i] = slot + 1;
    this.hi[slot] = q.hi;
    this.lo[slot] = q.lo;
    this.pool[slot] = pool;
    this.gens[slot] = ++this.genNext;
    this.counts[slot] = 0;
    this.times[slot] = 0;
    this.texts[slot] = Buffer.from(q.text.subarray(0, q.textLen));
    this.foundGen = this.gens[slot]!;
    return slot;
  }

  private unindex(slot: number): void {
    const idx = this.index;
    const mask = this.mask;
    let p = this.bucket(this.lo[slot]!, this.pool[slot]!);
    while (idx[p] !== slot + 1) p = (p + 1) & mask;
    let j = p;
    for (;;) {
      j = (j + 1) & mask;
      const s = idx[j]!;
      if (s === 0) break;
      const k = this.bucket(this.lo[s - 1]!, this.pool[s - 1]!);
      // The entry at j may move to p when its home bucket k is not cyclically within (p, j].
      if (p <= j ? k <= p || k > j : k <= p && k > j) {
        idx[p] = s;
        p = j;
      }
    }
    idx[p] = 0;
  }

  observe(slot: number, gen: number, us: number): void {
    if (slot >= this.n || this.gens[slot] !== gen) return;
    this.counts[slot]! += 1;
    this.times[slot]! += us;
  }

  /** Entries with at least one completed query. */
  rows(): QueryStatsRow[] {
    const out: QueryStatsRow[] = [];
    for (let s = 0; s < this.n; s++) {
      if (this.counts[s] === 0) continue;
      out.push({
        pool: this.pool[s]!,
        hash: this.hi[s]!.toString(16).padStart(8, '0') + this.lo[s]!.toString(16).padStart(8, '0'),
        text: this.texts[s]!.toString('utf8'),
        count: this.counts[s]!,
        timeUs: this.times[s]!,
      });
    }
    return out;
  }
}

const RING_SLOTS = 8;

/** A client's sync points in flight, oldest first: the table entry of each Query (NO_ENTRY for a Sync, a
 * FunctionCall, or a Query not recorded). Past RING_SLOTS, sync points are only counted (never recorded). */
export class QueryRing {
  private readonly slots = new Uint32Array(RING_SLOTS);
  private readonly gens = new Uint32Array(RING_SLOTS);
  private head = 0;
  private len = 0;
  private lastInRing = false;
  private overflow = 0;
  /** Set by pop(): the generation of the entry it returned. */
  poppedGen = 0;

  push(): void {
    this.lastInRing = this.overflow === 0 && this.len < RING_SLOTS;
    if (!this.lastInRing) {
      this.overflow++;
      return;
    }
    const i = (this.head + this.len) % RING_SLOTS;
    this.slots[i] = NO_ENTRY;
    this.gens[i] = 0;
    this.len++;
  }

  /** The entry of the sync point pushed last (a Query whose text just ended). */
  setLast(slot: number, gen: number): void {
    if (!this.lastInRing || this.len === 0) return;
    const i = (this.head + this.len - 1) % RING_SLOTS;
    this.slots[i] = slot;
    this.gens[i] = gen;
  }

  /** The oldest sync point's entry (NO_ENTRY when none or not recorded). */
  pop(): number {
    if (this.len > 0) {
      const s = this.slots[this.head]!;
      this.poppedGen = this.gens[this.head]!;
      this.head = (this.head + 1) % RING_SLOTS;
      this.len--;
      return s;
    }
    if (this.overflow > 0) this.overflow--;
    return NO_ENTRY;
  }

  get empty(): boolean {
    return this.len === 0 && this.overflow === 0;
  }

  clear(): void {
    this.head = 0;
    this.len = 0;
    this.overflow = 0;
    this.lastInRing = false;
  }
}
