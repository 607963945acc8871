// What the pooler offers its operator surfaces (admin console, web API): SHOW tables and admin verbs.
import type { PoolerConfig } from '../config/pooler.js';
import type { LogHub } from '../shared/logger.js';
import type { LogShipStats } from './log-ship/log-shipper.js';

export type Cell = string | number | bigint | boolean | null;

/** One SHOW result: column names as in reference/pooler.md, rows in column order. */
export interface ShowTable {
  readonly columns: readonly string[];
  readonly rows: readonly (readonly Cell[])[];
}

/** Totals for the console's overview page. */
export interface Overview {
  clients: Record<'active' | 'idle' | 'waiting' | 'total', number>;
  servers: Record<'active' | 'idle' | 'used' | 'login' | 'total', number>;
  /** Transactions and queries per second over the last stats period. */
  tps: number;
  qps: number;
  errors: number;
  pools: number;
  pools_paused: number;
}

/** Duration histogram of one kind (seconds): `counts[i]` observations fell in (bounds[i-1], bounds[i]]. */
export interface DurationBuckets {
  readonly bounds: readonly number[];
  readonly counts: readonly number[];
  /** All observations, including those above the last bound. */
  readonly count: number;
  readonly sum: number;
}

/** Query and transaction duration histograms of one user@database pool, for /metrics. */
export interface DurationHistogram {
  readonly database: string;
  readonly user: string;
  readonly query: DurationBuckets;
  readonly transaction: DurationBuckets;
}

/** A pool (database, user) or a database the caller named does not exist. */
export class PoolNotFoundError extends Error {
  constructor(what: string) {
    super(`no such pool: ${what}`);
    this.name = 'PoolNotFoundError';
  }
}

export interface PoolerControl {
  /** Current, validated config (replaced on RELOAD). */
  readonly config: PoolerConfig;
  readonly logs: LogHub;
  readonly startedAt: Date;
  /** Names accepted by show(): POOLS, POOLS_EXTENDED, CLIENTS, SERVERS, STATS, DATABASES, USERS, CONFIG,
   * VERSION, LISTS, LOG_LEVEL, CONNECTIONS, SOCKETS, PREPARED_STATEMENTS. Throws for others. */
  show(name: string): ShowTable;
  overview(): Overview;
  /** PAUSE: no new checkouts; resolves when running transactions of the selected pools have finished.
   * `user` undefined selects every pool of the database; `database` undefined selects all pools. */
  pause(database?: string, user?: string): Promise<string>;
  resume(database?: string, user?: string): string;
  reconnect(database?: string, user?: string): string;
  /** RELOAD: re-reads the config file; rejects with ConfigError (old config stays) when it is bad. */
  reload(): Promise<string>;
  /** Query and transaction duration histograms per pool for the web listener's /metrics (optional:
   * without it the pooler_*_duration_seconds families are left out). */
  durationHistograms?(): readonly DurationHistogram[];
  /** Counters of [logs] shipping for /metrics; null (or absent) when shipping is off. */
  logShipping?(): LogShipStats | null;
  /** Called after every successful reload with the new config. */
  onReload(listener: (config: PoolerConfig) => void): void;
}
