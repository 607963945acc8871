// Counters and duration histograms of one pool (or one application_name), for SHOW STATS, POOLS_EXTENDED and metrics.

// Everything lives in one Float64Array per pool (see STATS_LAYOUT), so the native relay (native/relay-stream.cc)
// counts into the same numbers the JavaScript relay does, with no call per transaction.
import { LOG_BUCKETS, LogHistogram, logBucketOf } from './log-histogram.js';

/** Bucket bounds in seconds for query, transaction and wait durations (the Prometheus histograms). */
export const DURATION_BOUNDS = [
  0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
] as const;

const HIST_SIZE = DURATION_BOUNDS.length + 2;
/** Distinct SQLSTATEs a pool counts errors under; later ones count as `other` (a pool sees a handful in practice). */
export const SQLSTATE_SLOTS = 32;

/** Offsets in a pool's stats block: 8 totals; three Prometheus histograms (query, transaction, wait: counts per
 * bound, count, sum); three log histograms of the same durations for percentiles (log-histogram.ts); the number
 * of server checkouts (the waits counted); the pool's "parkable" flag for the native relay (Pool.updateParkable); then
 * the errors sent to clients by SQLSTATE: SQLSTATE_SLOTS (code, count) pairs, codes as encodeSqlState, and the count
 * of those with no free slot or no readable SQLSTATE. */
export const STATS_LAYOUT = {
  totals: 0,
  qHist: 8,
  xHist: 8 + HIST_SIZE,
  wHist: 8 + 2 * HIST_SIZE,
  qLog: 8 + 3 * HIST_SIZE,
  xLog: 8 + 3 * HIST_SIZE + LOG_BUCKETS,
  wLog: 8 + 3 * HIST_SIZE + 2 * LOG_BUCKETS,
  logBuckets: LOG_BUCKETS,
  waitCount: 8 + 3 * HIST_SIZE + 3 * LOG_BUCKETS,
  parkable: 8 + 3 * HIST_SIZE + 3 * LOG_BUCKETS + 1,
  sqlStates: 8 + 3 * HIST_SIZE + 3 * LOG_BUCKETS + 2,
  size: 8 + 3 * HIST_SIZE + 3 * LOG_BUCKETS + 2 + 2 * SQLSTATE_SLOTS + 1,
} as const;

/** A SQLSTATE (five of 0-9, A-Z) as a number: base 36, plus 1 so that 0 is an empty slot; 0 when it is not one
 * (native/relay-scan.h SqlStateCode computes the same). */
export function encodeSqlState(code: string | null): number {
  if (code === null || !/^[0-9A-Z]{5}$/.test(code)) return 0;
  return parseInt(code, 36) + 1;
}

export function decodeSqlState(n: number): string {
  return (n - 1).toString(36).toUpperCase().padStart(5, '0');
}

/** Counts one error sent to a client under its SQLSTATE (native/relay-scan.h CountSqlState is the native twin). */
export function countSqlState(block: Float64Array, code: string | null): void {
  countSqlStateN(block, code, 1);
}

/** Counts `count` errors under a SQLSTATE (a takeover carries the old process's counts: takeover-stats.ts). */
export function countSqlStateN(block: Float64Array, code: string | null, count: number): void {
  const n = encodeSqlState(code);
  const off = STATS_LAYOUT.sqlStates;
  if (n > 0) {
    for (let i = 0; i < SQLSTATE_SLOTS; i++) {
      const at = off + 2 * i;
      if (block[at] === n) {
        block[at + 1]! += count;
        return;
      }
      if (block[at] === 0) {
        block[at] = n;
        block[at + 1] = count;
        return;
      }
    }
  }
  block[off + 2 * SQLSTATE_SLOTS]! += count;
}

/** Errors sent to clients per SQLSTATE, most first (ties by code); `other`: past the slots, or none readable. */
export function sqlStateCounts(block: Float64Array): { sqlstate: string; count: number }[] {
  const off = STATS_LAYOUT.sqlStates;
  const out: { sqlstate: string; count: number }[] = [];
  for (let i = 0; i < SQLSTATE_SLOTS && block[off + 2 * i] !== 0; i++)
    out.push({ sqlstate: decodeSqlState(block[off + 2 * i]!), count: block[off + 2 * i + 1]! });
  const other = block[off + 2 * SQLSTATE_SLOTS]!;
  if (other > 0) out.push({ sqlstate: 'other', count: other });
  return out.sort((a, b) => b.count - a.count || a.sqlstate.localeCompare(b.sqlstate));
}

/** A duration histogram with DURATION_BOUNDS: counts[i] observations fell in (bounds[i-1], bounds[i]]; then count, sum. */
export class DurationHistogramCounter {
  constructor(
    private readonly block: Float64Array,
    private readonly off: number,
  ) {}
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
    return {
      bounds: DURATION_BOUNDS,
      counts: Array.from(b.subarray(this.off, this.off + nb)),
      count: b[this.off + nb]!,
      sum: b[this.off + nb + 1]!,
    };
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

/** Slots of the totals (native/relay-engine.h `Totals` has the same numbers). */
export const enum Total {
  Xact = 0,
  Queries = 1,
  Recv = 2,
  Sent = 3,
  XactTime = 4,
  QueryTime = 5,
  Wait = 6,
  Errors = 7,
}

/** The eight totals, read and written by name over the first slots of the block. */
export class Totals implements TotalsRecord {
  constructor(private readonly b: Float64Array) {}
  get xactCount(): number {
    return this.b[0]!;
  }
  set xactCount(v: number) {
    this.b[0] = v;
  }
  get queryCount(): number {
    return this.b[1]!;
  }
  set queryCount(v: number) {
    this.b[1] = v;
  }
  get received(): number {
    return this.b[2]!;
  }
  set received(v: number) {
    this.b[2] = v;
  }
  get sent(): number {
    return this.b[3]!;
  }
  set sent(v: number) {
    this.b[3] = v;
  }
  get xactTimeUs(): number {
    return this.b[4]!;
  }
  set xactTimeUs(v: number) {
    this.b[4] = v;
  }
  get queryTimeUs(): number {
    return this.b[5]!;
  }
  set queryTimeUs(v: number) {
    this.b[5] = v;
  }
  get waitTimeUs(): number {
    return this.b[6]!;
  }
  set waitTimeUs(v: number) {
    this.b[6] = v;
  }
  get errors(): number {
    return this.b[7]!;
  }
  set errors(v: number) {
    this.b[7] = v;
  }
  snapshot(): TotalsRecord {
    return totalsOf(this.b);
  }
}

export function totalsOf(b: Float64Array): TotalsRecord {
  return {
    xactCount: b[0]!,
    queryCount: b[1]!,
    received: b[2]!,
    sent: b[3]!,
    xactTimeUs: b[4]!,
    queryTimeUs: b[5]!,
    waitTimeUs: b[6]!,
    errors: b[7]!,
  };
}

export function emptyTotals(): TotalsRecord {
  return { xactCount: 0, queryCount: 0, received: 0, sent: 0, xactTimeUs: 0, queryTimeUs: 0, waitTimeUs: 0, errors: 0 };
}

/** Per-second rates and means over the last complete stats period (SHOW STATS avg_*). */
export interface Averages {
  xactCount: number;
  queryCount: number;
  recv: number;
  sent: number;
  errors: number;
  /** Means in microseconds. */
  xactTime: number;
  queryTime: number;
  waitTime: number;
  /** The same rates per second unrounded (SHOW STATS keeps PgBouncer's integers; 0.3 errors a second is 0 there): the
   * console's overview, chart and wall read these. */
  exact: { xactCount: number; queryCount: number; errors: number };
}

/** The totals of a block at the last two stats_period boundaries: avg_* are the difference, per second. */
export class PeriodTotals {
  private prev: TotalsRecord = emptyTotals();
  private last: TotalsRecord = emptyTotals();
  private prevWaits = 0;
  private lastWaits = 0;
  private lastPeriodMs = 1;

  constructor(
    private readonly block: Float64Array,
    private readonly waitCountSlot = -1,
  ) {}

  roll(periodMs: number): void {
    this.prev = this.last;
    this.last = totalsOf(this.block);
    this.prevWaits = this.lastWaits;
    this.lastWaits = this.waitCountSlot >= 0 ? this.block[this.waitCountSlot]! : 0;
    this.lastPeriodMs = periodMs;
  }

  /** Counts carried from another process (a takeover), just added to the block: added to both ends of the period as
   * well, so the averages do not count them. `delta`: the eight totals in slot order; `waits`: checkouts. */
  carry(delta: readonly number[], waits: number): void {
    const add = (t: TotalsRecord): TotalsRecord => ({
      xactCount: t.xactCount + (delta[Total.Xact] ?? 0),
      queryCount: t.queryCount + (delta[Total.Queries] ?? 0),
      received: t.received + (delta[Total.Recv] ?? 0),
      sent: t.sent + (delta[Total.Sent] ?? 0),
      xactTimeUs: t.xactTimeUs + (delta[Total.XactTime] ?? 0),
      queryTimeUs: t.queryTimeUs + (delta[Total.QueryTime] ?? 0),
      waitTimeUs: t.waitTimeUs + (delta[Total.Wait] ?? 0),
      errors: t.errors + (delta[Total.Errors] ?? 0),
    });
    this.prev = add(this.prev);
    this.last = add(this.last);
    this.prevWaits += waits;
    this.lastWaits += waits;
  }

  averages(): Averages {
    const d = (k: keyof TotalsRecord) => this.last[k] - this.prev[k];
    const exactPerSec = (k: keyof TotalsRecord) => (d(k) * 1000) / this.lastPeriodMs;
    const perSec = (k: keyof TotalsRecord) => Math.round(exactPerSec(k));
    const xacts = d('xactCount');
    const queries = d('queryCount');
    // PgBouncer's avg_wait_time: the mean wait of the clients that got a server during the period.
    const waits = this.waitCountSlot >= 0 ? this.lastWaits - this.prevWaits : xacts;
    return {
      xactCount: perSec('xactCount'),
      queryCount: perSec('queryCount'),
      recv: perSec('received'),
      sent: perSec('sent'),
      errors: perSec('errors'),
      xactTime: xacts ? Math.round(d('xactTimeUs') / xacts) : 0,
      queryTime: queries ? Math.round(d('queryTimeUs') / queries) : 0,
      waitTime: waits ? Math.round(d('waitTimeUs') / waits) : 0,
      exact: {
        xactCount: exactPerSec('xactCount'),
        queryCount: exactPerSec('queryCount'),
        errors: exactPerSec('errors'),
      },
    };
  }
}

export class PoolStats {
  /** Shared with the native relay, which counts into it directly. */
  readonly block = new Float64Array(STATS_LAYOUT.size);
  readonly totals = new Totals(this.block);
  readonly period = new PeriodTotals(this.block, STATS_LAYOUT.waitCount);
  readonly queryHistogram = new DurationHistogramCounter(this.block, STATS_LAYOUT.qHist);
  readonly xactHistogram = new DurationHistogramCounter(this.block, STATS_LAYOUT.xHist);
  readonly waitHistogram = new DurationHistogramCounter(this.block, STATS_LAYOUT.wHist);
  /** Percentiles over a recent window: the last complete stats period plus the current one so far. */
  readonly queryTimes = new LogHistogram(this.block, STATS_LAYOUT.qLog);
  readonly xactTimes = new LogHistogram(this.block, STATS_LAYOUT.xLog);
  readonly waitTimes = new LogHistogram(this.block, STATS_LAYOUT.wLog);

  observeQuery(us: number): void {
    const b = this.block;
    b[Total.QueryTime]! += us;
    b[STATS_LAYOUT.qLog + logBucketOf(us)]!++;
    this.queryHistogram.observeUs(us);
  }

  observeTransaction(us: number): void {
    const b = this.block;
    b[Total.Xact]!++;
    b[Total.XactTime]! += us;
    b[STATS_LAYOUT.xLog + logBucketOf(us)]!++;
    this.xactHistogram.observeUs(us);
  }

  /** A client got a server after waiting `us` (0 when one was idle). */
  observeWait(us: number): void {
    const b = this.block;
    b[Total.Wait]! += us;
    b[STATS_LAYOUT.waitCount]!++;
    b[STATS_LAYOUT.wLog + logBucketOf(us)]!++;
    this.waitHistogram.observeUs(us);
  }

  /** Called every stats_period: freezes the deltas avg_* report and starts a new percentile window. */
  roll(periodMs: number): void {
    this.period.roll(periodMs);
    this.queryTimes.roll();
    this.xactTimes.roll();
    this.waitTimes.roll();
  }

  averages(): Averages {
    return this.period.averages();
  }
}
