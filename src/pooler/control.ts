// What the pooler offers its operator surfaces (admin console, web API): SHOW tables and admin verbs.
import type { PoolerConfig } from '../config/pooler.js';
import type { LogHub } from '../shared/logger.js';
import type { LogShipStats } from './log-ship/log-shipper.js';
import type { Pool } from './pool.js';
import type { DurationBuckets, PoolerSnapshot, SnapshotParts } from './snapshot.js';
import type { ShowTable } from './show-table.js';

export type { DurationBuckets } from './snapshot.js';

export type { Cell, ShowTable } from './show-table.js';

/** Totals for the console's overview page (overview.ts formats them from the snapshot). */
export interface Overview {
  /** idle_in_transaction: clients inside a transaction with nothing in flight, counted in active too (as SHOW POOLS'
   * cl_active does); the servers' likewise, in their active. */
  clients: Record<'active' | 'idle' | 'waiting' | 'total' | 'idle_in_transaction', number>;
  servers: Record<'active' | 'idle' | 'used' | 'login' | 'total' | 'idle_in_transaction', number>;
  /** Transactions and queries per second over the last stats period. */
  tps: number;
  qps: number;
  /** Errors sent to clients since start. */
  errors: number;
  pools: number;
  pools_paused: number;
  /** Query percentiles (us) of all pools together, over the last stats period plus the current one. */
  query_p50_us: number;
  query_p95_us: number;
  query_p99_us: number;
  transaction_p95_us: number;
  wait_p95_us: number;
  cl_waiting: number;
  /** Errors per second over the last stats period. */
  errors_per_sec: number;
  sv_active: number;
  sv_idle: number;
  sv_used: number;
  sv_login: number;
  /** Wait of the longest-waiting client of any pool (ms). */
  max_wait_ms: number;
  evictions: number;
  exhaustions: number;
  /** Failed server connects per second over the last stats period, all pools. */
  connect_failures_per_sec: number;
  /** Age of the oldest transaction a client holds open idle, any pool (ms); 0 when none. */
  max_idle_xact_age_ms: number;
  /** Pools whose PostgreSQL is unreachable now. */
  pools_unreachable: number;
  /** Databases with a pool whose PostgreSQL is unreachable: since the first pool's outage began, with the latest
   * connect error of its pools. Empty while every PostgreSQL answers. */
  databases_unreachable: DatabaseOutage[];
}

/** A database whose PostgreSQL no pool could log in to for connect_timeout while clients needed a server. */
export interface DatabaseOutage {
  database: string;
  /** ISO time the outage began. */
  since: string;
  /** The pools (`<database>/<user>`) that are unreachable. */
  pools: string[];
  last_error: string | null;
  /** SQLSTATE, or the socket's errno (ECONNREFUSED). */
  last_error_code: string | null;
  last_error_at: string | null;
}

/** Query, transaction and wait duration histograms of one user@database pool. */
export interface DurationHistogram {
  readonly database: string;
  readonly user: string;
  readonly query: DurationBuckets;
  readonly transaction: DurationBuckets;
  readonly wait: DurationBuckets;
}

/** A pool (database, user) or a database the caller named does not exist. */
export class PoolNotFoundError extends Error {
  constructor(what: string) {
    super(`no such pool: ${what}`);
    this.name = 'PoolNotFoundError';
  }
}

/** What the web API's PAUSE answers with, before the running transactions have finished. */
export interface PauseAnswer {
  message: string;
  running_transactions: number;
}

export interface PoolerControl {
  /** Current, validated config (replaced on RELOAD). */
  readonly config: PoolerConfig;
  readonly logs: LogHub;
  readonly startedAt: Date;
  /** SHOW tables (admin/show.ts lists the names; throws UnknownShowError for others, NotConfiguredError for
   * AUTH_QUERY). With `snapshot`, that snapshot is formatted instead of a new one. */
  show(name: string, snapshot?: PoolerSnapshot): ShowTable;
  /** The operator state, counted once: SHOW, /api/* and /metrics format it. `parts`: the costlier parts to include. */
  snapshot(parts?: SnapshotParts): PoolerSnapshot;
  overview(snapshot?: PoolerSnapshot): Overview;
  /** PAUSE: no new checkouts; resolves when running transactions of the selected pools have finished.
   * `user` undefined selects every pool of the database; `database` undefined selects all pools. */
  pause(database?: string, user?: string): Promise<string>;
  /** PAUSE that answers at once (the web API): checkouts stop now; `running_transactions` still hold a server of the
   * selected pools (in session mode: sessions) and finish on their own. */
  pauseNow(database?: string, user?: string): PauseAnswer;
  resume(database?: string, user?: string): string;
  reconnect(database?: string, user?: string): string;
  /** RELOAD: re-reads the config file; rejects with ConfigError (old config stays) when it is bad. */
  reload(): Promise<string>;
  /** Counters of [logs] shipping for /metrics; null (or absent) when shipping is off. */
  logShipping?(): LogShipStats | null;
  /** Called after every successful reload with the new config. */
  onReload(listener: (config: PoolerConfig) => void): void;
}

/** What the admin console (admin/console.ts) needs beyond the web API: KILL, SHUTDOWN, and the pools (RESET INTERNER). */
export interface AdminHost extends PoolerControl {
  readonly pools: ReadonlyMap<string, Pool>;
  kill(database: string): string;
  /** Stops accepting, lets running transactions finish up to shutdown_timeout, then closes everything. */
  shutdown(graceful?: boolean): Promise<void>;
}
