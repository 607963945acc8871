// A mergeable log-linear histogram of durations (microseconds) for percentiles: 8 buckets per power of two.

// Bucket 0 holds [0, 1 us); bucket 1 + 8e + s holds [2^e (1 + s/8), 2^e (1 + (s+1)/8)) us, read straight from the
// double's exponent and top three mantissa bits (native/relay-stream.cc LogAdd computes the same index). A bucket is
// at most 12.5% wide, so a quantile read at its middle is within 6.25% of the true value. Counts add up, so pools,
// periods and applications merge by adding arrays: the reason for a histogram rather than a sorted sample.

/** Powers of two covered: up to 2^36 us (19 hours); longer durations land in the last bucket. */
const MAX_EXP = 36;
export const LOG_BUCKETS = 1 + MAX_EXP * 8;

const f64 = new Float64Array(1);
const u32 = new Uint32Array(f64.buffer);
const HI = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1 ? 1 : 0;

/** The bucket of a duration in microseconds. */
export function logBucketOf(us: number): number {
  if (!(us >= 1)) return 0;
  f64[0] = us;
  const hi = u32[HI]!;
  const i = 1 + (((hi >>> 20) & 0x7ff) - 1023) * 8 + ((hi >>> 17) & 7);
  return i < LOG_BUCKETS ? i : LOG_BUCKETS - 1;
}

/** The middle of a bucket, in microseconds. */
export function logBucketMiddle(i: number): number {
  if (i <= 0) return 0.5;
  const e = Math.floor((i - 1) / 8);
  const s = (i - 1) % 8;
  return 2 ** e * (1 + (s + 0.5) / 8);
}

/** The q-quantile (0..1) of bucket counts, in microseconds; 0 when there are none. */
export function quantileOf(counts: ArrayLike<number>, q: number): number {
  let total = 0;
  for (let i = 0; i < counts.length; i++) total += counts[i]!;
  if (total <= 0) return 0;
  const rank = Math.max(1, Math.ceil(q * total));
  let seen = 0;
  for (let i = 0; i < counts.length; i++) {
    seen += counts[i]!;
    if (seen >= rank) return logBucketMiddle(i);
  }
  return logBucketMiddle(counts.length - 1);
}

/** p50, p95 and p99 in whole microseconds. */
export interface Percentiles {
  p50: number;
  p95: number;
  p99: number;
}

export function percentilesOf(counts: ArrayLike<number>): Percentiles {
  return {
    p50: Math.round(quantileOf(counts, 0.5)),
    p95: Math.round(quantileOf(counts, 0.95)),
    p99: Math.round(quantileOf(counts, 0.99)),
  };
}

/** A cumulative log histogram inside a shared block (the relays count into it), with the counts it had at the last
 * two stats_period boundaries, so that a window (the last complete period plus the current one) can be read. */
export class LogHistogram {
  private prev = new Float64Array(LOG_BUCKETS);
  private last = new Float64Array(LOG_BUCKETS);

  constructor(
    private readonly block: Float64Array,
    private readonly off: number,
  ) {}

  observeUs(us: number): void {
    this.block[this.off + logBucketOf(us)]!++;
  }

  roll(): void {
    const keep = this.prev;
    this.prev = this.last;
    keep.set(this.block.subarray(this.off, this.off + LOG_BUCKETS));
    this.last = keep;
  }

  /** Adds the counts of the recent window into `into` (LOG_BUCKETS long); returns it. */
  addWindow(into: Float64Array): Float64Array {
    const b = this.block;
    const p = this.prev;
    for (let i = 0; i < LOG_BUCKETS; i++) into[i]! += b[this.off + i]! - p[i]!;
    return into;
  }

  window(): Float64Array {
    return this.addWindow(new Float64Array(LOG_BUCKETS));
  }

  /** Percentiles of the recent window. */
  percentiles(): Percentiles {
    return percentilesOf(this.window());
  }
}
