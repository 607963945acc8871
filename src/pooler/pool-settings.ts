// What a pool is configured with (from [pools.<database>] and its user), and the counters of SHOW POOL_SCALING.
import type { PoolMode } from '../config/pooler.js';
import type { ServerTarget } from './server-login.js';

export interface PoolSettings {
  database: string;
  user: string;
  mode: PoolMode;
  target: ServerTarget;
  serverUser: string;
  /** Plaintext or md5 secret toward PostgreSQL; null when only the configured SCRAM secret is known. */
  serverPassword: string | null;
  poolSize: number;
  minPoolSize: number;
  connectTimeoutMs: number;
  idleTimeoutMs: number;
  lifetimeMs: number;
  queryWaitTimeoutMs: number;
  maxConcurrentConnects: number;
  noDelay: boolean;
  /** Session mode: sent when a client leaves, before its server goes back to the pool ('' for none). */
  resetQuery: string;
  /** Transaction mode with prepared_statements: texts kept once unused, statements kept per server; else null. */
  prepared: { cacheSize: number; serverCacheSize: number } | null;
  /** Clients or servers may be Node TLS sockets (tlsNeedsJsRelay): the pool runs on the JavaScript relay (fixed when
   * the pool is made). */
  tls: boolean;
}

/** Counters of SHOW POOL_SCALING (README "SHOW POOL_SCALING" says what each counts). */
export interface ScalingCounters {
  creates: number;
  gateWaits: number;
  gateBudgetEx: number;
  anticNotify: number;
  anticTimeout: number;
  createFallback: number;
  replenishDef: number;
}
