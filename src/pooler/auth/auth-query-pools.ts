// auth_query logins: a lookup per unknown user (auth-query.ts), a pool of its own per user found, SHOW AUTH_QUERY.
import type { PoolConfig, PoolerConfig, UserConfig } from '../../config/pooler.js';
import { SqlState } from '../../protocol/codes.js';
import type { LoginTarget } from '../client-login.js';
import type { ShowTable } from '../show-table.js';
import type { Pool } from '../pool.js';
import type { ServerTls } from '../tls/tls-settings.js';
import { AuthQueryDatabase, type AuthQueryLimits } from './auth-query.js';

/** What the auth_query logins need of the pooler. */
export interface AuthQueryHost {
  readonly config: PoolerConfig;
  serverTls(): ServerTls;
  /** The pool of (database, user), or null. */
  pool(database: string, user: string): Pool | null;
  /** Makes the pool of a user found by auth_query (with the pooler's coordinator and events). */
  createPool(database: string, pc: PoolConfig, user: UserConfig): Pool;
  /** Drops a pool nobody uses any more. */
  dropPool(pool: Pool): void;
  inUse(pool: Pool): boolean;
}

export const AUTH_QUERY_COLUMNS = [
  'database',
  'cache_entries',
  'cache_hits',
  'cache_misses',
  'cache_refetches',
  'cache_rate_limited',
  'auth_success',
  'auth_failure',
  'executor_queries',
  'executor_errors',
  'dynamic_pools_current',
  'dynamic_pools_created',
  'dynamic_pools_destroyed',
];

export class AuthQueryLogins {
  private readonly databases = new Map<string, AuthQueryDatabase>();
  /** Pools made for users found by auth_query, with the time of their last login. */
  private readonly dynamic = new Map<Pool, { database: string; lastLogin: number }>();

  constructor(private readonly host: AuthQueryHost) {}

  /** auth_query is on for some database. */
  get configured(): boolean {
    const g = this.host.config.general;
    return g.auth_user !== '' || Object.values(this.host.config.pools).some((p) => p.auth_user);
  }

  /** The login target of `user`, not listed in `pc`: null when auth_query is off for this database. */
  resolve(database: string, pc: PoolConfig, user: string): Promise<LoginTarget> | null {
    const g = this.host.config.general;
    const authUser = pc.auth_user ?? g.auth_user;
    if (!authUser) return null;
    const aq = this.database(database, pc, authUser, pc.auth_password ?? g.auth_password);
    return aq.lookup(user).then((secret) => {
      if (secret === null) {
        aq.counters.authFailure++;
        return { error: `password authentication failed for user "${user}"`, sqlstate: SqlState.InvalidPassword };
      }
      const pool = this.poolFor(database, pc, user, secret, aq);
      return {
        admin: false,
        pool,
        secret,
        onAuth: (ok) => {
          if (ok) aq.counters.authSuccess++;
          else {
            aq.counters.authFailure++;
            // The password may have changed in PostgreSQL: the next login asks again.
            aq.forget(user);
          }
        },
      };
    });
  }

  private database(database: string, pc: PoolConfig, user: string, password: string): AuthQueryDatabase {
    const g = this.host.config.general;
    const target = {
      database,
      host: pc.server_host,
      port: pc.server_port,
      serverDatabase: pc.server_database ?? database,
      user,
      password,
      query: g.auth_query,
      tls: this.host.serverTls(),
    };
    const limits: AuthQueryLimits = {
      ttlMs: g.auth_query_cache_ttl,
      cacheSize: g.auth_query_cache_size,
      rate: g.auth_query_rate,
    };
    let aq = this.databases.get(database);
    if (!aq) this.databases.set(database, (aq = new AuthQueryDatabase(target, limits)));
    else {
      if (JSON.stringify({ ...aq.target, tls: null }) !== JSON.stringify({ ...target, tls: null })) aq.close();
      aq.target = target;
      aq.limits = limits;
    }
    return aq;
  }

  private poolFor(database: string, pc: PoolConfig, user: string, secret: string, aq: AuthQueryDatabase): Pool {
    const existing = this.host.pool(database, user);
    const entry = existing ? this.dynamic.get(existing) : undefined;
    if (existing && entry) {
      entry.lastLogin = Date.now();
      if (existing.settings.serverPassword !== secret && !secret.startsWith('SCRAM-SHA-256$')) {
        // A new secret in PostgreSQL: new server logins use it; open ones are replaced as they come back.
        existing.settings = { ...existing.settings, serverPassword: secret };
        existing.reconnect();
      }
      return existing;
    }
    if (existing) return existing;
    const g = this.host.config.general;
    const pool = this.host.createPool(database, pc, {
      username: user,
      password: secret,
      pool_size: g.auth_query_pool_size,
      min_pool_size: 0,
      pool_mode: null,
      server_username: null,
      server_password: null,
    });
    this.dynamic.set(pool, { database, lastLogin: Date.now() });
    aq.counters.dynamicPoolsCreated++;
    return pool;
  }

  /** Pools of auth_query users: kept while used, dropped once idle past the cache lifetime (at least 10 s). */
  maintain(now: number): void {
    const idleMs = Math.max(10_000, this.host.config.general.auth_query_cache_ttl);
    for (const [pool, e] of this.dynamic) {
      if (now - e.lastLogin < idleMs || this.host.inUse(pool)) continue;
      this.dynamic.delete(pool);
      this.host.dropPool(pool);
      const aq = this.databases.get(e.database);
      if (aq) aq.counters.dynamicPoolsDestroyed++;
    }
  }

  /** A dynamic pool is the auth_query's, not the config's: RELOAD leaves it alone. */
  isDynamic(pool: Pool): boolean {
    return this.dynamic.has(pool);
  }

  show(): ShowTable {
    const current = new Map<string, number>();
    for (const e of this.dynamic.values()) current.set(e.database, (current.get(e.database) ?? 0) + 1);
    return {
      columns: [...AUTH_QUERY_COLUMNS],
      rows: [...this.databases].map(([db, aq]) => {
        const c = aq.counters;
        return [
          db,
          aq.cacheEntries,
          c.cacheHits,
          c.cacheMisses,
          c.cacheRefetches,
          c.cacheRateLimited,
          c.authSuccess,
          c.authFailure,
          c.executorQueries,
          c.executorErrors,
          current.get(db) ?? 0,
          c.dynamicPoolsCreated,
          c.dynamicPoolsDestroyed,
        ];
      }),
    };
  }

  close(): void {
    for (const aq of this.databases.values()) aq.close();
  }
}
