// Counters and recent-duration samples of one pool, for SHOW STATS, POOLS_EXTENDED and metrics.

/** A fixed ring of recent samples (microseconds) for percentiles. */
export class SampleRing {
  private readonly buf: Float64Array;
  private n = 0;
  private i = 0;
  constructor(size = 2048) {
    this.buf = new Float64Array(size);
  }
  add(v: number): void {
    this.buf[this.i] = v;
    this.i = (this.i + 1) % this.buf.length;
    if (this.n < this.buf.length) this.n++;
  }
  quantile(q: number): number {
    if (this.n === 0) return 0;
    const sorted = Array.from(this.buf.subarray(0, this.n)).sort((a, b) => a - b);
    return sorted[Math.min(this.n - 1, Math.floor(q * this.n))]!;
  }
}

/** Bucket bounds in seconds for query and transaction durations. */
export const DURATION_BOUNDS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10] as const;

/** A cumulative-free duration histogram: counts[i] observations fell in (bounds[i-1], bounds[i]]. */
export class DurationHistogramCounter {
  readonly counts = new Array<number>(DURATION_BOUNDS.length).fill(0);
  count = 0;
  sum = 0;
  observeUs(us: number): void {
    const s = us / 1e6;
    this.count++;
    this.sum += s;
    for (let i = 0; i < DURATION_BOUNDS.length; i++) {
      if (s <= DURATION_BOUNDS[i]!) {
        this.counts[i]!++;
        return;
      }
    }
  }
  snapshot(): { bounds: readonly number[]; counts: readonly number[]; count: number; sum: number } {
    return { bounds: DURATION_BOUNDS, counts: [...this.counts], count: this.count, sum: this.sum };
  }
}

export interface Totals {
  xactCount: number;
  queryCount: number;
  received: number;
  sent: number;
  xactTimeUs: number;
  queryTimeUs: number;
  waitTimeUs: number;
  errors: number;
}

export function emptyTotals(): Totals {
  return { xactCount: 0, queryCount: 0, received: 0, sent: 0, xactTimeUs: 0, queryTimeUs: 0, waitTimeUs: 0, errors: 0 };
}

export class PoolStats {
  readonly totals: Totals = emptyTotals();
  /** Totals at the start of the last complete stats period, and the period before, for avg_*. */
  private prev: Totals = emptyTotals();
  private last: Totals = emptyTotals();
  private lastPeriodMs = 1;
  readonly queryTimes = new SampleRing();
  readonly xactTimes = new SampleRing();
  readonly queryHistogram = new DurationHistogramCounter();
  readonly xactHistogram = new DurationHistogramCounter();

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
    this.last = { ...this.totals };
    this.lastPeriodMs = periodMs;
  }

  /** Per-second rates and means over the last complete period. */
  averages(): { xactCount: number; queryCount: number; recv: number; sent: number; errors: number; xactTime: number; queryTime: number; waitTime: number } {
    const d = (k: keyof Totals) => this.last[k] - this.prev[k];
    const perSec = (k: keyof Totals) => Math.round((d(k) * 1000) / this.lastPeriodMs);
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
