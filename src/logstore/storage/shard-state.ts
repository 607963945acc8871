// A shard's state shared with the HTTP thread (a SharedArrayBuffer): a generation counter, odd while the shard
// thread changes its fractions, and its active fraction's size and time bounds. The HTTP thread reads sealed
// fractions itself only while the generation stays even and unchanged (a sequence lock).

/** Bytes of one shard's state: Int32 [generation, active docs], then Float64 [active min time, active max time]. */
export const SHARD_STATE_BYTES = 32;

const GEN = 0;
const DOCS = 1;

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

  constructor(sab: SharedArrayBuffer) {
    this.ints = new Int32Array(sab, 0, 2);
    this.times = new Float64Array(sab, 8, 2);
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

  constructor(sab: SharedArrayBuffer) {
    this.ints = new Int32Array(sab, 0, 2);
    this.times = new Float64Array(sab, 8, 2);
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
