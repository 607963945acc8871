// A shard's state shared with the HTTP thread (a SharedArrayBuffer): a generation counter, odd while the shard
// thread changes its fractions, and its active fraction's size and time bounds. The HTTP thread reads sealed
// fractions itself only while the generation stays even and unchanged (a sequence lock). A search thread that lists
// a shard's sealed fractions itself (search/read-plan.ts, a search with nothing in the active fraction) is counted
// here while it reads: the shard thread then keeps the files of the fractions it drops until the count is back to 0.

/**
 * Bytes of one shard's state: Int32 [generation, active docs], then Float64 [active min time, active max time], then
 * Int32 [searches reading sealed fractions they listed themselves, 1 when dropped fractions wait for them to end].
 */
export const SHARD_STATE_BYTES = 32;

const GEN = 0;
const DOCS = 1;
const READERS = 0;
const DOOMED = 1;

export interface ActiveBounds {
  docCount: number;
  minTime: number;
  maxTime: number;
}

/** A fresh state: generation 1 (odd: the shard thread has not opened its shard yet). */
export function newShardState(): SharedArrayBuffer {
  const sab = new SharedArrayBuffer(SHARD_STATE_BYTES);
  Atomics.store(new Int32Array(sab, 0, 2), GEN, 1);
  return sab;
}

/** The shard thread's side: begin() before it changes its fractions, end() after, with its active fraction. */
export class ShardStateWriter {
  private readonly ints: Int32Array;
  private readonly times: Float64Array;
  private readonly reads: Int32Array;

  constructor(sab: SharedArrayBuffer) {
    this.ints = new Int32Array(sab, 0, 2);
    this.times = new Float64Array(sab, 8, 2);
    this.reads = new Int32Array(sab, 24, 2);
  }

  /** Searches reading sealed fractions they listed themselves (ShardStateReader.enterRead). */
  readers(): number {
    return Atomics.load(this.reads, READERS);
  }

  /**
   * Before removing a dropped fraction's files: true when a search that listed the fractions itself reads now, so the
   * files must stay (the last such search to end then asks for a sweep: leaveRead). The flag is raised first, so a
   * search ending between the two sees it.
   */
  mustKeep(): boolean {
    const was = Atomics.exchange(this.reads, DOOMED, 1);
    if (Atomics.load(this.reads, READERS) > 0) return true;
    // (Raised before: a sweep is asked for already, or runs now; it lowers the flag.)
    if (was === 0) Atomics.store(this.reads, DOOMED, 0);
    return false;
  }

  /** After a sweep that removed every kept fraction (none waits for the readers any more). */
  swept(): void {
    Atomics.store(this.reads, DOOMED, 0);
  }

  begin(): void {
    if ((Atomics.load(this.ints, GEN) & 1) === 0) Atomics.add(this.ints, GEN, 1);
  }

  end(active: ActiveBounds): void {
    this.times[0] = active.minTime;
    this.times[1] = active.maxTime;
    Atomics.store(this.ints, DOCS, active.docCount);
    // Odd -> even: readers that saw the old even value see a change and discard what they read meanwhile.
    if ((Atomics.load(this.ints, GEN) & 1) === 1) Atomics.add(this.ints, GEN, 1);
  }
}

/** The HTTP thread's side. */
export class ShardStateReader {
  private readonly ints: Int32Array;
  private readonly times: Float64Array;
  private readonly reads: Int32Array;

  constructor(sab: SharedArrayBuffer) {
    this.ints = new Int32Array(sab, 0, 2);
    this.times = new Float64Array(sab, 8, 2);
    this.reads = new Int32Array(sab, 24, 2);
  }

  /** A search that will list and read the sealed fractions itself begins: from now on, no dropped fraction's files go. */
  enterRead(): void {
    Atomics.add(this.reads, READERS, 1);
  }

  /** That search ended: true when it was the last and dropped fractions wait for it (the shard thread sweeps them). */
  leaveRead(): boolean {
    return Atomics.sub(this.reads, READERS, 1) === 1 && Atomics.load(this.reads, DOOMED) === 1;
  }

  /** The current generation: odd while the shard thread changes its fractions (nothing may be read then). */
  generation(): number {
    return Atomics.load(this.ints, GEN);
  }

  /** Whether the active fraction holds documents in [from, to] (read between two equal even generations). */
  activeOverlaps(from: number, to: number): boolean {
    return Atomics.load(this.ints, DOCS) > 0 && this.times[1]! >= from && this.times[0]! <= to;
  }
}
