// auth_query: secrets of users not in the config, fetched from PostgreSQL as auth_user, cached for a bounded time and rate-limited per database.
import pg from 'pg';
import { SqlState } from '../../protocol/codes.js';
import type { ServerTls } from '../tls/tls-settings.js';

/** How one database's lookups are made. */
export interface AuthQueryTarget {
  database: string;
  host: string;
  port: number;
  serverDatabase: string;
  user: string;
  password: string;
  query: string;
  tls: ServerTls;
}

export interface AuthQueryLimits {
  /** Cache lifetime of a fetched secret (and of a "no such user"), ms. */
  ttlMs: number;
  /** Entries kept per database at most (oldest dropped first). */
  cacheSize: number;
  /** Lookups PostgreSQL gets per second per database at most (and as a burst). */
  rate: number;
}

/** SHOW AUTH_QUERY's counters of one database (reference columns). */
export interface AuthQueryCounters {
  cacheHits: number;
  cacheMisses: number;
  cacheRefetches: number;
  cacheRateLimited: number;
  authSuccess: number;
  authFailure: number;
  executorQueries: number;
  executorErrors: number;
  dynamicPoolsCreated: number;
  dynamicPoolsDestroyed: number;
}

export class AuthQueryError extends Error {
  constructor(
    message: string,
    readonly sqlstate: string,
  ) {
    super(message);
    this.name = 'AuthQueryError';
  }
}

/** A cached answer: the secret, or null when PostgreSQL has no such user (or no password for it). */
interface Entry {
  secret: string | null;
  at: number;
}

/** One database's cache, rate limit and executor connection (one query at a time). */
export class AuthQueryDatabase {
  readonly counters: AuthQueryCounters = {
    cacheHits: 0,
    cacheMisses: 0,
    cacheRefetches: 0,
    cacheRateLimited: 0,
    authSuccess: 0,
    authFailure: 0,
    executorQueries: 0,
    executorErrors: 0,
    dynamicPoolsCreated: 0,
    dynamicPoolsDestroyed: 0,
  };
  private readonly cache = new Map<string, Entry>();
  private readonly inflight = new Map<string, Promise<string | null>>();
  private tokens: number;
  private lastRefill = Date.now();
  private client: pg.Client | null = null;
  private connecting: Promise<pg.Client> | null = null;
  private chain: Promise<unknown> = Promise.resolve();

  constructor(
    public target: AuthQueryTarget,
    public limits: AuthQueryLimits,
  ) {
    this.tokens = limits.rate;
  }

  get cacheEntries(): number {
    return this.cache.size;
  }

  /** The secret of `user` (null: no such user); cached, one lookup per user in flight, rate-limited. */
  async lookup(user: string): Promise<string | null> {
    const now = Date.now();
    const hit = this.cache.get(user);
    if (hit && now - hit.at < this.limits.ttlMs) {
      this.counters.cacheHits++;
      return hit.secret;
    }
    if (hit) this.counters.cacheRefetches++;
    else this.counters.cacheMisses++;
    const pending = this.inflight.get(user);
    if (pending) return pending;
    if (!this.take()) {
      this.counters.cacheRateLimited++;
      throw new AuthQueryError(
        `too many auth_query lookups for database "${this.target.database}" (auth_query_rate ${this.limits.rate}/s); try again`,
        SqlState.TooManyConnections,
      );
    }
    const p = this.fetch(user).finally(() => this.inflight.delete(user));
    this.inflight.set(user, p);
    return p;
  }

  /** A login failed with a cached secret (a password changed in PostgreSQL): the next login asks again. */
  forget(user: string): void {
    this.cache.delete(user);
  }

  private take(): boolean {
    const now = Date.now();
    this.tokens = Math.min(this.limits.rate, this.tokens + ((now - this.lastRefill) / 1000) * this.limits.rate);
    this.lastRefill = now;
    if (this.tokens < 1) return false;
    this.tokens--;
    return true;
  }

  private fetch(user: string): Promise<string | null> {
    const run = async (): Promise<string | null> => {
      this.counters.executorQueries++;
      try {
        const c = await this.connect();
        // Positional, as PgBouncer reads it: the second column is the secret, whatever the query names it.
        const r = await c.query({ text: this.target.query, values: [user], rowMode: 'array' });
        const row = r.rows[0] as unknown[] | undefined;
        const secret = row && typeof row[1] === 'string' ? row[1] : null;
        this.remember(user, secret || null);
        return secret || null;
      } catch (err) {
        this.counters.executorErrors++;
        this.drop();
        throw new AuthQueryError(
          `auth_query for database "${this.target.database}" failed: ${(err as Error).message}`,
          SqlState.ConnectionFailure,
        );
      }
    };
    // One query at a time on the executor connection.
    const p = this.chain.then(run, run);
    this.chain = p.catch(() => undefined);
    return p;
  }

  private remember(user: string, secret: string | null): void {
    this.cache.delete(user);
    this.cache.set(user, { secret, at: Date.now() });
    while (this.cache.size > this.limits.cacheSize) this.cache.delete(this.cache.keys().next().value!);
  }

  private async connect(): Promise<pg.Client> {
    if (this.client) return this.client;
    this.connecting ??= (async () => {
      const t = this.target;
      const verify = t.tls.mode === 'verify-ca' || t.tls.mode === 'verify-full';
      const ssl =
        t.tls.mode === 'disable' || t.tls.mode === 'allow'
          ? false
          : {
              rejectUnauthorized: verify,
              secureContext: t.tls.context ?? undefined,
              ...(t.tls.mode === 'verify-ca' ? { checkServerIdentity: () => undefined } : {}),
            };
      const c = new pg.Client({
        host: t.host,
        port: t.port,
        database: t.serverDatabase,
        user: t.user,
        password: t.password,
        ssl,
        application_name: 'tidepool auth_query',
        connectionTimeoutMillis: 5000,
      });
      c.on('error', () => this.drop());
      await c.connect();
      this.client = c;
      return c;
    })().finally(() => {
      this.connecting = null;
    });
    return this.connecting;
  }

  private drop(): void {
    const c = this.client;
    this.client = null;
    c?.end().catch(() => undefined);
  }

  close(): void {
    this.drop();
  }
}
