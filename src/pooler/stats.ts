// Counters and recent-duration samples of one pool, for SHOW STATS, POOLS_EXTENDED and metrics.

// Everything lives in one Float64Array per pool (see STATS_LAYOUT), so the native relay (native/relay.cc)
// counts into the same numbers the JavaScript relay does, with no call per transaction.

/** Bucket bounds in seconds for query and transaction durations. */
export const DURATION_BOUNDS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10] as const;

const RING_SIZE = 2048;
const HIST_SIZE = DURATION_BOUNDS.length + 2;
/** Offsets in a pool's stats block: 8 totals, two histograms (counts, count, sum), two rings (n, next, samples),
 * then the pool's "parkable" flag for the native relay (see Pool.updateParkable). */
export const STATS_LAYOUT = {
  totals: 0,
  qHist: 8,
  xHist: 8 + HIST_SIZE,
  qRing: 8 + 2 * HIST_SIZE,
  xRing: 8 + 2 * HIST_SIZE + RING_SIZE + 2,
  ringSize: RING_SIZE,
  parkable: 8 + 2 * HIST_SIZE + 2 * (RING_SIZE + 2),
  size: 8 + 2 * HIST_SIZE + 2 * (RING_SIZE + 2) + 1,
} as const;

/** A fixed ring of recent samples (microseconds) for percentiles: [n, next, samples...] in the block. */
export class SampleRing {
  constructor(private readonly block: Float64Array, private readonly off: number, private readonly size: number) {}
  add(v: number): void {
    const b = this.block;
    const o = this.off;
    const i = b[o + 1]!;
    b[o + 2 + i] = v;
    b[o + 1] = (i + 1) % this.size;
    if (b[o]! < this.size) b[o]!++;
  }
  quantile(q: number): number {
    const n = this.block[this.off]!;
    if (n === 0) return 0;
    const sorted = Array.from(this.block.subarray(this.off + 2, this.off + 2 + n)).sort((a, b) => a - b);
    return sorted[Math.min(n - 1, Math.floor(q * n))]!;
  }
}

/** A cumulative-free duration histogram: counts[i] observations fell in (bounds[i-1], bounds[i]]; then count, sum. */
export class DurationHistogramCounter {
  constructor(private readonly block: Float64Array, private readonly off: number) {}
  observeUs(us: number): void {
    const s = us / 1e6;
    const b = this.block;
    const o = this.off;
    const nb = DURATION_BOUNDS.length;
    b[o + nb]!++;
    b[o + nb + 1]! += s;
    for (let i = 0; i < nb; i++) {
      if (s <= DURATION_BOUNDS[i]!) {
        b[o + i]!++;
        return;
      }
    }
  }
  get count(): number {
    return this.block[this.off + DURATION_BOUNDS.length]!;
  }
  snapshot(): { bounds: readonly number[]; counts: readonly number[]; count: number; sum: number } {
    const nb = DURATION_BOUNDS.length;
    const b = this.block;
    return { bounds: DURATION_BOUNDS, counts: Array.from(b.subarray(this.off, this.off + nb)), count: b[this.off + nb]!, sum: b[this.off + nb + 1]! };
  }
}

export interface TotalsRecord {
  xactCount: number;
  queryCount: number;
  received: number;
  sent: number;
  xactTimeUs: number;
  queryTimeUs: number;
  waitTimeUs: number;
  errors: number;
}

/** The eight totals, read and written by name over the first slots of the block. */
export class Totals implements TotalsRecord {
  constructor(private readonly b: Float64Array) {}
  get xactCount(): number { return this.b[0]!; }
  set xactCount(v: number) { this.b[0] = v; }
  get queryCount(): number { return this.b[1]!; }
  set queryCount(v: number) { this.b[1] = v; }
  get received(): number { return this.b[2]!; }
  set received(v: number) { this.b[2] = v; }
  get sent(): number { return this.b[3]!; }
  set sent(v: number) { this.b[3] = v; }
  get xactTimeUs(): number { return this.b[4]!; }
  set xactTimeUs(v: number) { this.b[4] = v; }
  get queryTimeUs(): number { return this.b[5]!; }
  set queryTimeUs(v: number) { this.b[5] = v; }
  get waitTimeUs(): number { return this.b[6]!; }
  set waitTimeUs(v: number) { this.b[6] = v; }
  get errors(): number { return this.b[7]!; }
  set errors(v: number) { this.b[7] = v; }
  snapshot(): TotalsRecord {
    const b = this.b;
    return { xactCount: b[0]!, queryCount: b[1]!, received: b[2]!, sent: b[3]!, xactTimeUs: b[4]!, queryTimeUs: b[5]!, waitTimeUs: b[6]!, errors: b[7]! };
  }
}

export function emptyTotals(): TotalsRecord {
  return { xactCount: 0, queryCount: 0, received: 0, sent: 0, xactTimeUs: 0, queryTimeUs: 0, waitTimeUs: 0, errors: 0 };
}

export class PoolStats {
  /** Shared with the native relay, which counts into it directly. */
  readonly block = new Float64Array(STATS_LAYOUT.size);
  readonly totals = new Totals(this.block);
  /** Totals at the start of the last complete stats period, and the period before, for avg_*. */
  private prev: TotalsRecord = emptyTotals();
  private last: TotalsRecord = emptyTotals();
  private lastPeriodMs = 1;
  readonly queryTimes = new SampleRing(this.block, STATS_LAYOUT.qRing, STATS_LAYOUT.ringSize);
  readonly xactTimes = new SampleRing(this.block, STATS_LAYOUT.xRing, STATS_LAYOUT.ringSize);
  readonly queryHistogram = new DurationHistogramCounter(this.block, STATS_LAYOUT.qHist);
  readonly xactHistogram = new DurationHistogramCounter(this.block, STATS_LAYOUT.xHist);

  observeQuery(us: number): void {
    this.totals.queryTimeUs += us;
    this.queryTimes.add(us);
    this.queryHistogram.observeUs(us);
  }

  observeTransaction(us: number): void {
    this.totals.xactCount++;
    this.totals.xactTimeUs += us;
    this.xactTimes.add(us);
    this.xactHistogram.observeUs(us);
  }

  /** Called every stats_period: freezes the deltas avg_* report. */
  roll(periodMs: number): void {
    this.prev = this.last;
    this.last = this.totals.snapshot();
    this.lastPeriodMs = periodMs;
  }

  /** Per-second rates and means over the last complete period. */
  averages(): { xactCount: number; queryCount: number; recv: number; sent: number; errors: number; xactTime: number; queryTime: number; waitTime: number } {
    const d = (k: keyof TotalsRecord) => this.last[k] - this.prev[k];
    const perSec = (k: keyof TotalsRecord) => Math.round((d(k) * 1000) / this.lastPeriodMs);
    const xacts = d('xactCount');
    const queries = d('queryCount');
    return {
      xactCount: perSec('xactCount'), queryCount: perSec('queryCount'), recv: perSec('received'), sent: perSec('sent'), errors: perSec('errors'),
      xactTime: xacts ? Math.round(d('xactTimeUs') / xacts) : 0,
      queryTime: queries ? Math.round(d('queryTimeUs') / queries) : 0,
      waitTime: xacts ? Math.round(d('waitTimeUs') / xacts) : 0,
    };
  }
}
