// Counters across a takeover (issue 38): the new process starts its counters from the old one's, so SHOW STATS totals
// and the Prometheus counters of /metrics do not go back to zero when the port changes hands.
//
// The old process sends its counters, absolute, in the takeover answer (takeover.ts: before the new process serves)
// and then every PUSH_MS while it finishes its clients, and once more as it exits, on the new process's takeover
// socket: one line {"stats":1,"pid":<old pid>,"carry":<CarriedStats>}. The new process adds to its own counters the
// difference between each snapshot and the one before (StatsCarry), so every counter it shows is its own plus the
// old process's latest: it never goes down. The stats_period averages (avg_*) do not count what is carried, and the
// percentile windows start empty.
import net from 'node:net';
import type { Logger } from 'pino';
import { STATS_LAYOUT, countSqlStateN, sqlStateCounts, type PeriodTotals } from './stats.js';
import { poolKey } from './pool-settings.js';

/** How often the old process sends its counters while it finishes its clients. */
export const PUSH_MS = 500;
/** Retry interval until the successor's takeover socket first answers. */
const FIRST_RETRY_MS = 20;
/** Longest a push waits for the new process's answer. */
const PUSH_TIMEOUT_MS = 2_000;

/** Slots of a pool's stats block that only grow: the eight totals and the three Prometheus histograms. */
const MONOTONIC_END = STATS_LAYOUT.qLog;

export interface CarriedPool {
  database: string;
  user: string;
  /** The block's slots [0, qLog): totals, then the query, transaction and wait histograms. */
  block: number[];
  /** Checkouts that waited (the wait histogram's observations), for avg_wait_time. */
  waits: number;
  /** Errors sent to clients by SQLSTATE (`other`: no slot or no SQLSTATE). */
  sqlstates: [string, number][];
  /** SHOW POOL_SCALING creates and create_fallback. */
  creates: number;
  createFallback: number;
}

export interface CarriedStats {
  v: 1;
  pools: CarriedPool[];
  /** Per application_name: the eight totals. */
  apps: [string, number[]][];
  /** The pooler's process-wide counters (PoolerCounters). */
  counters: Record<string, number>;
  /** Per database: the coordinator's evictions, reserve acquisitions and exhaustions. */
  coordinators: [string, number[]][];
}

/** What the carry reads and adds to: the pooler's pools, apps, counters and coordinators. */
export interface StatsHost {
  readonly pools: ReadonlyMap<
    string,
    {
      readonly settings: { database: string; user: string };
      readonly stats: { block: Float64Array; period: PeriodTotals };
      readonly scaling: { creates: number; createFallback: number };
    }
  >;
  readonly apps: {
    get(name: string): { block: Float64Array; period: PeriodTotals };
    entries(): Iterable<{ name: string; block: Float64Array }>;
  };
  readonly counters: object;
  readonly coordinators: ReadonlyMap<string, { evictions: number; reserveAcquisitions: number; exhaustions: number }>;
}

/** This process's counters, to hand to a successor. */
export function collectStats(host: StatsHost): CarriedStats {
  const pools: CarriedPool[] = [];
  for (const p of host.pools.values()) {
    const b = p.stats.block;
    pools.push({
      database: p.settings.database,
      user: p.settings.user,
      block: Array.from(b.subarray(0, MONOTONIC_END)),
      waits: b[STATS_LAYOUT.waitCount]!,
      sqlstates: sqlStateCounts(b).map((s) => [s.sqlstate, s.count]),
      creates: p.scaling.creates,
      createFallback: p.scaling.createFallback,
    });
  }
  const apps: [string, number[]][] = [];
  for (const e of host.apps.entries()) apps.push([e.name, Array.from(e.block.subarray(0, 8))]);
  const counters: Record<string, number> = {};
  for (const [k, v] of Object.entries(host.counters)) if (typeof v === 'number') counters[k] = v;
  const coordinators: [string, number[]][] = [];
  for (const [db, c] of host.coordinators) coordinators.push([db, [c.evictions, c.reserveAcquisitions, c.exhaustions]]);
  return { v: 1, pools, apps, counters, coordinators };
}

function isCarried(x: unknown): x is CarriedStats {
  const s = x as CarriedStats | null;
  return (
    typeof s === 'object' &&
    s !== null &&
    s.v === 1 &&
    Array.isArray(s.pools) &&
    Array.isArray(s.apps) &&
    typeof s.counters === 'object' &&
    Array.isArray(s.coordinators)
  );
}

const num = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) && v > 0 ? v : 0);

/** The new process's side: adds the old process's counters to its own, snapshot after snapshot. */
export class StatsCarry {
  /** The last snapshot applied, per pool key: what the next one is compared with. */
  private readonly poolsSeen = new Map<string, CarriedPool>();
  /** Pools the old process had that this one has not (yet): applied when the pool is made. */
  private readonly pending = new Map<string, CarriedPool>();
  private readonly appsSeen = new Map<string, number[]>();
  private countersSeen: Record<string, number> = {};
  private readonly coordinatorsSeen = new Map<string, number[]>();
  /** Snapshots applied. */
  applied = 0;

  constructor(
    private readonly host: StatsHost,
    readonly fromPid: number,
  ) {}

  /** Applies one snapshot from the old process (absolute counters); a malformed one is ignored: false. */
  apply(snapshot: unknown): boolean {
    if (!isCarried(snapshot)) return false;
    this.applied++;
    for (const p of snapshot.pools) {
      if (typeof p?.database !== 'string' || typeof p.user !== 'string' || !Array.isArray(p.block)) continue;
      const key = poolKey(p.database, p.user);
      if (this.host.pools.has(key)) {
        this.pending.delete(key);
        this.addPool(key, p);
      } else this.pending.set(key, p);
    }
    for (const [name, totals] of snapshot.apps) {
      if (typeof name !== 'string' || !Array.isArray(totals)) continue;
      const seen = this.appsSeen.get(name) ?? [];
      const delta = totals.slice(0, 8).map((v, i) => Math.max(0, num(v) - (seen[i] ?? 0)));
      this.appsSeen.set(name, totals.slice(0, 8).map(num));
      const e = this.host.apps.get(name);
      delta.forEach((d, i) => (e.block[i]! += d));
      e.period.carry(delta, 0);
    }
    const counters = this.host.counters as Record<string, number>;
    for (const [k, v] of Object.entries(snapshot.counters)) {
      if (typeof counters[k] !== 'number') continue;
      counters[k] += Math.max(0, num(v) - (this.countersSeen[k] ?? 0));
    }
    this.countersSeen = Object.fromEntries(Object.entries(snapshot.counters).map(([k, v]) => [k, num(v)]));
    for (const [db, values] of snapshot.coordinators) {
      const c = this.host.coordinators.get(db);
      if (!c || !Array.isArray(values)) continue;
      const seen = this.coordinatorsSeen.get(db) ?? [0, 0, 0];
      c.evictions += Math.max(0, num(values[0]) - seen[0]!);
      c.reserveAcquisitions += Math.max(0, num(values[1]) - seen[1]!);
      c.exhaustions += Math.max(0, num(values[2]) - seen[2]!);
      this.coordinatorsSeen.set(db, values.slice(0, 3).map(num));
    }
    return true;
  }

  /** A pool was made (an auth_query user's, after the takeover): it starts from the old process's counters. */
  poolCreated(database: string, user: string): void {
    const key = poolKey(database, user);
    const p = this.pending.get(key);
    if (!p) return;
    this.pending.delete(key);
    this.addPool(key, p);
  }

  private addPool(key: string, p: CarriedPool): void {
    const pool = this.host.pools.get(key)!;
    const seen = this.poolsSeen.get(key);
    const b = pool.stats.block;
    const delta: number[] = [];
    for (let i = 0; i < MONOTONIC_END; i++) {
      const d = Math.max(0, num(p.block[i]) - (seen ? num(seen.block[i]) : 0));
      delta.push(d);
      b[i]! += d;
    }
    const waits = Math.max(0, num(p.waits) - (seen ? num(seen.waits) : 0));
    b[STATS_LAYOUT.waitCount]! += waits;
    const seenStates = new Map(seen?.sqlstates ?? []);
    for (const [code, count] of Array.isArray(p.sqlstates) ? p.sqlstates : []) {
      const d = Math.max(0, num(count) - num(seenStates.get(code)));
      if (d > 0) countSqlStateN(b, code === 'other' ? null : code, d);
    }
    pool.scaling.creates += Math.max(0, num(p.creates) - (seen ? num(seen.creates) : 0));
    pool.scaling.createFallback += Math.max(0, num(p.createFallback) - (seen ? num(seen.createFallback) : 0));
    pool.stats.period.carry(delta.slice(0, 8), waits);
    this.poolsSeen.set(key, p);
  }
}

/** The old process's side: sends its counters to the successor's takeover socket every PUSH_MS, and at the end. */
export class StatsPusher {
  private timer: NodeJS.Timeout | null = null;
  private inFlight: Promise<boolean> | null = null;
  private stopped = false;
  /** Snapshots the successor acknowledged. */
  acknowledged = 0;

  constructor(
    private readonly socketPath: string,
    private readonly collect: () => CarriedStats,
    private readonly log: Logger,
  ) {}

  /** Pushes at once, then every PUSH_MS; until the successor first answers (its takeover socket opens just after
   * its ready), every FIRST_RETRY_MS. */
  start(): void {
    const next = () => {
      if (this.stopped) return;
      void this.push().then(() => {
        if (this.stopped) return;
        this.timer = setTimeout(next, this.acknowledged > 0 ? PUSH_MS : FIRST_RETRY_MS);
        this.timer.unref();
      });
    };
    next();
  }

  /** The last push, as this process exits (its counters final): true when the successor took it. */
  async final(): Promise<boolean> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (this.inFlight) await this.inFlight;
    const ok = await this.push();
    if (!ok)
      this.log.warn(
        { socket: this.socketPath },
        'takeover: the successor did not take this process last counters; what it counted since the last push is not carried',
      );
    return ok;
  }

  private push(): Promise<boolean> {
    if (this.inFlight) return this.inFlight;
    const line = `${JSON.stringify({ stats: 1, pid: process.pid, carry: this.collect() })}\n`;
    this.inFlight = new Promise<boolean>((resolve) => {
      const s = net.connect(this.socketPath);
      let answer = '';
      const done = (ok: boolean) => {
        clearTimeout(timer);
        s.destroy();
        if (ok) this.acknowledged++;
        resolve(ok);
      };
      const timer = setTimeout(() => done(false), PUSH_TIMEOUT_MS);
      s.once('connect', () => s.write(line));
      s.on('data', (d: Buffer) => {
        answer += d.toString('utf8');
        if (answer.includes('\n')) done(/^\{"ok":true\}/.test(answer));
      });
      s.once('error', () => done(false));
      s.once('close', () => done(false));
    }).finally(() => {
      this.inFlight = null;
    });
    return this.inFlight;
  }
}
