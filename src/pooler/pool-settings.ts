// What a pool is configured with (from [pools.<database>] and its user), and the counters of SHOW POOL_SCALING.
import {
  effectivePoolMode,
  type PoolConfig,
  type PoolerConfig,
  type PoolMode,
  type UserConfig,
} from '../config/pooler.js';
import type { CoordinatorSettings } from './coordinator.js';
import type { RelayKind } from './relay/relay.js';
import type { ServerTarget } from './server-login.js';
import type { ServerTls } from './tls/tls-settings.js';

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
  /** server_login_retry: no new connect this long after one failed. */
  loginRetryMs: number;
  idleTimeoutMs: number;
  lifetimeMs: number;
  queryWaitTimeoutMs: number;
  maxConcurrentConnects: number;
  noDelay: boolean;
  /** Session mode: sent when a client leaves, before its server goes back to the pool ('' for none). */
  resetQuery: string;
  /** Transaction mode with prepared_statements: texts kept once unused, statements kept per server; else null. */
  prepared: { cacheSize: number; serverCacheSize: number } | null;
  /** The relay that carries the pool's sockets (fixed when the pool is made; see poolSettings). */
  relay: RelayKind;
}

/** Counters of SHOW POOL_SCALING (docs/pooler.md, SHOW POOL_SCALING, says what each counts). */
export interface ScalingCounters {
  creates: number;
  gateWaits: number;
  gateBudgetEx: number;
  anticNotify: number;
  anticTimeout: number;
  createFallback: number;
  replenishDef: number;
}

/** The key of a pool in Pooler.pools. */
export function poolKey(database: string, user: string): string {
  return `${database}\0${user}`;
}

/** A pool's settings from the config: `tls` is the server TLS in force, `tlsRelay` whether pools run on the JS relay. */
export function poolSettings(
  config: PoolerConfig,
  database: string,
  pool: PoolConfig,
  user: UserConfig,
  tls: ServerTls,
  tlsRelay: boolean,
): PoolSettings {
  const g = config.general;
  const serverPassword = user.server_password ?? (user.password.startsWith('SCRAM-SHA-256$') ? null : user.password);
  const mode = effectivePoolMode(config, pool, user);
  return {
    database,
    user: user.username,
    mode,
    target: {
      host: pool.server_host,
      port: pool.server_port,
      database: pool.server_database ?? database,
      applicationName: pool.application_name ?? '',
      tls,
    },
    serverUser: user.server_username ?? user.username,
    serverPassword,
    poolSize: user.pool_size,
    minPoolSize: user.min_pool_size,
    connectTimeoutMs: g.connect_timeout,
    loginRetryMs: g.server_login_retry,
    idleTimeoutMs: g.idle_timeout,
    lifetimeMs: g.server_lifetime,
    queryWaitTimeoutMs: g.query_wait_timeout,
    maxConcurrentConnects: g.max_concurrent_connects,
    noDelay: g.tcp_no_delay,
    resetQuery: g.server_reset_query,
    prepared:
      mode === 'transaction' && g.prepared_statements
        ? { cacheSize: g.prepared_statements_cache_size, serverCacheSize: g.server_prepared_statements_cache_size }
        : null,
    relay: poolRelay(config, tlsRelay, mode === 'transaction' && g.prepared_statements),
  };
}

/** The JavaScript relay carries a pool when [native] relay is off; when its clients or servers may be Node TLS sockets
 * (`tlsRelay`, tlsNeedsJsRelay: client TLS the native relay terminates itself needs no such pool); or when its
 * statements are rewritten (prepared_statements in transaction mode) and [native] prepared_relay is js. */
function poolRelay(config: PoolerConfig, tlsRelay: boolean, rewrites: boolean): RelayKind {
  if (!config.native.relay || tlsRelay || (rewrites && config.native.prepared_relay === 'js')) return 'js';
  return 'native';
}

/** A database's coordinator settings (max_db_connections, reserve, eviction) from its [pools.<database>]. */
export function coordinatorSettings(pc: PoolConfig): CoordinatorSettings {
  return {
    maxDbConnections: pc.max_db_connections,
    reserveSize: pc.reserve_pool_size,
    reserveTimeoutMs: pc.reserve_pool_timeout,
    minGuaranteed: pc.min_guaranteed_pool_size,
    minConnectionLifetimeMs: pc.min_connection_lifetime,
  };
}

/** True when new settings point a pool at another server or login: its server connections must be replaced. */
export function serverChanged(old: PoolSettings, next: PoolSettings): boolean {
  return (
    old.target.host !== next.target.host ||
    old.target.port !== next.target.port ||
    old.target.database !== next.target.database ||
    old.target.tls.mode !== next.target.tls.mode ||
    old.serverUser !== next.serverUser ||
    old.serverPassword !== next.serverPassword
  );
}
