// The pool coordinator of one database: max_db_connections across its users, the reserve, fair eviction of idle connections.
import type { ServerConnection } from './server-connection.js';

/** What the coordinator reads and asks of one pool of its database (pool.ts implements it). The coordinator names no
 * pool class: pool-settings.ts, which a pool imports, imports this file. */
export interface CoordinatedPool {
  readonly name: string;
  readonly servers: { readonly size: number };
  readonly connecting: number;
  readonly stats: { readonly xactTimes: { percentiles(): { p95: number } } };
  /** Connections taken from the database's reserve, open or connecting. */
  reserveHeld(): number;
  /** The least recently used idle server created at or before `createdBefore`, or null. */
  evictable(createdBefore: number): ServerConnection | null;
  /** Creation time of the oldest idle server, or null when none is idle. */
  oldestIdleCreatedAt(): number | null;
  /** Closes an idle server for another user of the database. */
  evict(s: ServerConnection, reason: string): void;
  /** Starts connects for waiting clients (a slot may have freed). */
  grow(): void;
}

export interface CoordinatorSettings {
  /** Server connections of all users of the database together; 0: no cap. */
  maxDbConnections: number;
  /** Connections allowed above the cap for a client that waited reserve_pool_timeout. */
  reserveSize: number;
  reserveTimeoutMs: number;
  /** Connections of each user that are never evicted for another user. */
  minGuaranteed: number;
  /** An idle connection younger than this is never evicted. */
  minConnectionLifetimeMs: number;
}

/** What a pool may do for one more connection: open it under the cap, open it from the reserve, or wait. */
export type Admission = 'free' | 'reserve' | 'none';

/** How often a closing (evicted) connection is checked for its socket being gone. */
const CLOSING_POLL_MS = 5;

/**
 * Order of a request under the cap (as pg_doorman): a free slot under max_db_connections; else the idle connection
 * of the other user with the largest surplus over min_guaranteed_pool_size (ties: the higher p95 transaction time;
 * never one younger than min_connection_lifetime) is closed, and its slot is given once PostgreSQL has let it go, so
 * pg_stat_activity never shows more than the cap; else, once the oldest waiter has waited reserve_pool_timeout, the
 * reserve; else the client waits (and past query_wait_timeout, that is an exhaustion).
 */
export class Coordinator {
  readonly pools = new Set<CoordinatedPool>();
  evictions = 0;
  reserveAcquisitions = 0;
  exhaustions = 0;
  /** Evicted connections whose socket is not closed yet: they still hold their slot. */
  private closing: ServerConnection[] = [];
  /** Pools that wanted a connection the cap refused: told when a slot may have freed. */
  readonly blocked = new Set<CoordinatedPool>();
  private timer: NodeJS.Timeout | null = null;
  private timerAt = Infinity;

  constructor(
    readonly database: string,
    public settings: CoordinatorSettings,
  ) {}

  get capped(): boolean {
    return this.settings.maxDbConnections > 0;
  }

  /** Connections the database holds: open servers, connects in flight, evicted ones not closed yet. */
  current(): number {
    let n = this.closing.length;
    for (const p of this.pools) n += p.servers.size + p.connecting;
    return n;
  }

  /** Connections taken from the reserve (open or connecting). */
  reserveUsed(): number {
    let n = 0;
    for (const p of this.pools) n += p.reserveHeld();
    return n;
  }

  /** May `pool` open one more connection? `waitedMs`: how long its oldest waiter has waited, or -1 when nobody waits
   * (min_pool_size): such a connection only takes a free slot. */
  admit(pool: CoordinatedPool, waitedMs: number): Admission {
    const s = this.settings;
    if (s.maxDbConnections <= 0) return 'free';
    this.sweep();
    const reserveUsed = this.reserveUsed();
    if (this.current() - reserveUsed < s.maxDbConnections) return 'free';
    if (waitedMs < 0) return 'none';
    this.blocked.add(pool);
    // One eviction at a time: its slot goes to a waiting pool as soon as the backend is gone.
    if (this.closing.length === 0) this.evictFor(pool);
    if (this.closing.length > 0) return 'none';
    if (reserveUsed < s.reserveSize) {
      if (waitedMs >= s.reserveTimeoutMs) {
        this.reserveAcquisitions++;
        return 'reserve';
      }
      this.recheckIn(s.reserveTimeoutMs - waitedMs);
    }
    return 'none';
  }

  /** True when nothing more can be opened without the reserve or an eviction. */
  atCap(): boolean {
    return this.capped && this.current() - this.reserveUsed() >= this.settings.maxDbConnections;
  }

  /** Closes the idle connection of the user with the largest surplus over its guarantee, for `pool`; false when none
   * may go (it then checks again when the youngest candidate reaches min_connection_lifetime). */
  private evictFor(pool: CoordinatedPool): boolean {
    const { minGuaranteed, minConnectionLifetimeMs } = this.settings;
    const now = Date.now();
    let best: { pool: CoordinatedPool; server: ServerConnection; surplus: number; p95: number } | null = null;
    let soonest = Infinity;
    for (const p of this.pools) {
      if (p === pool) continue;
      const surplus = p.servers.size - minGuaranteed;
      if (surplus <= 0) continue;
      const server = p.evictable(now - minConnectionLifetimeMs);
      if (!server) {
        const young = p.oldestIdleCreatedAt();
        if (young !== null) soonest = Math.min(soonest, young + minConnectionLifetimeMs - now);
        continue;
      }
      if (best && surplus < best.surplus) continue;
      const p95 = p.stats.xactTimes.percentiles().p95;
      if (best && surplus === best.surplus && p95 <= best.p95) continue;
      best = { pool: p, server, surplus, p95 };
    }
    if (!best) {
      if (soonest < Infinity) this.recheckIn(Math.max(1, soonest));
      return false;
    }
    // Counted as closing before it leaves its pool, so no pool told of the change sees a free slot yet.
    this.closing.push(best.server);
    this.evictions++;
    best.pool.evict(best.server, `evicted for ${pool.name} (max_db_connections ${this.settings.maxDbConnections})`);
    this.recheckIn(CLOSING_POLL_MS);
    return true;
  }

  /** Forgets evicted connections whose socket is closed. */
  private sweep(): void {
    if (this.closing.length) this.closing = this.closing.filter((s) => !s.end.gone);
  }

  /** A slot may have freed (a server closed, went idle, or the reserve timer ran out): blocked pools try again. */
  kick(): void {
    if (this.blocked.size === 0) return;
    this.sweep();
    const pools = [...this.blocked];
    this.blocked.clear();
    for (const p of pools) p.grow();
    if (this.closing.length) this.recheckIn(CLOSING_POLL_MS);
  }

  private recheckIn(ms: number): void {
    const at = Date.now() + ms;
    if (this.timer && this.timerAt <= at) return;
    if (this.timer) clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.timerAt = Infinity;
      this.kick();
    }, ms);
    this.timer.unref();
  }

  /** Stops its timer (the database left the config, or shutdown). */
  close(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }
}
