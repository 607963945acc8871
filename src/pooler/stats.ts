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
