// A pool's bookkeeping (pool.ts has what the pool does with it): its server lists (server-lists.ts), waiting clients and logins, connects in flight, the flags that let a pair stay parked, the counts read over them.
import type { Logger } from 'pino';
import type { ServerConnection } from './server-connection.js';
import type { ServerLoginError } from './server-login.js';
import { PoolStats, STATS_LAYOUT } from './stats.js';
import { PoolHealth } from './pool-health.js';
import type { ScramCredential } from './auth/scram.js';
import type { Relay } from './relay/relay.js';
import { relayFor } from './relay/choose.js';
import { Interner } from './prepared/interner.js';
import { schemaEpochFor } from './prepared/schema-epoch.js';
import type { Coordinator } from './coordinator.js';
import type { PoolerEventKind } from './events.js';
import { WaiterQueue, type PoolWaiter } from './waiter-queue.js';
import type { PoolSettings, ScalingCounters } from './pool-settings.js';
import { ServerLists } from './server-lists.js';

export abstract class PoolState {
  /** The pool's open servers, each in one list (idle, lent, active, used); they move only through servers.move. */
  readonly servers = new ServerLists<ServerConnection>();
  protected readonly waiters = new WaiterQueue();
  connecting = 0;
  protected isPaused = false;
  protected isRetired = false;
  /** RECONNECT is waiting for active servers to come back: none may stay parked. */
  protected draining = false;
  readonly stats = new PoolStats();
  /** The last connect error, connect failures per second, PostgreSQL unreachable since (pool-health.ts). */
  readonly health: PoolHealth;
  /** Carries this pool's clients and servers; the JavaScript relay when their statements are rewritten. */
  readonly relay: Relay;
  /** The pool's query texts (prepared_statements in transaction mode), else null. Fixed at start, as is the relay. */
  readonly interner: Interner | null;
  protected readonly serverCacheSize: number;
  /** ParameterStatus values of the first server that logged in, replayed to clients at login. */
  serverParams: Map<string, string> | null = null;
  /** The last server connect failed and none has logged in since (SHOW POOLS `fallback_active`): clients are being
   * refused or kept waiting while the pool retries. */
  connectFailing = false;
  /** server_login_retry: no connect starts before this time (ms since the epoch) after one failed. */
  protected loginRetryAt = 0;
  /** The last failed server connect's error (what clients get at once within server_login_retry). */
  protected lastLoginError: ServerLoginError | null = null;
  /** Called when serverParams becomes known (the pooler gives the native relay the pool's greeting then). */
  onParamsKnown: (() => void) | null = null;
  /** A SCRAM credential recovered from a client's proof (pass-through). */
  scramCredential: ScramCredential | null = null;
  protected pauseWaiters: (() => void)[] = [];
  protected paramWaiters: { resolve: (p: Map<string, string>) => void; reject: (e: ServerLoginError) => void }[] = [];
  protected paramWaitSince = 0;
  /** The database's coordinator (max_db_connections, reserve, eviction); set by the pooler. */
  coordinator: Coordinator | null = null;
  /** Connects in flight that were granted from the reserve. */
  protected connectingReserve = 0;
  readonly scaling: ScalingCounters = {
    creates: 0,
    gateWaits: 0,
    gateBudgetEx: 0,
    anticNotify: 0,
    anticTimeout: 0,
    createFallback: 0,
    replenishDef: 0,
  };
  /** Servers pinned to their client (session state that cannot move, session-state/): outside pool_size, as a
   * session-mode server is its client's, until the client leaves. */
  pinned = 0;
  /** Forwarded CancelRequests not finished yet: no pair is parked meanwhile (a parked client's next query would go to
   * the server the cancel is on its way to). */
  protected cancelling = 0;
  /** Lends an idle server to the native relay for relay-only logins (the pooler's, for pools whose logins the relay
   * runs); false when it cannot. Null: this pool lends nothing. */
  lender: ((s: ServerConnection) => boolean) | null = null;
  /** Where the pool reports what an operator needs to see later (the pooler's event ring). */
  onEvent: (kind: PoolerEventKind, message: string) => void = () => undefined;

  constructor(
    public settings: PoolSettings,
    protected readonly log: Logger,
  ) {
    this.health = new PoolHealth(() => this.settings.connectTimeoutMs);
    const prepared = settings.prepared;
    const t = settings.target;
    // Pools of one database share its schema epoch: DDL seen through any of them re-parses every pool's texts.
    this.interner = prepared
      ? new Interner({ idleCapacity: prepared.cacheSize, schema: schemaEpochFor(`${t.host}:${t.port}/${t.database}`) })
      : null;
    this.serverCacheSize = prepared?.serverCacheSize ?? 0;
    this.relay = relayFor(settings.relay);
    this.updateParkable();
  }

  get paused(): boolean {
    return this.isPaused;
  }
  set paused(v: boolean) {
    this.isPaused = v;
    this.updateParkable();
  }

  /** Set when the pool left the config on RELOAD: it drains and is then dropped. */
  get retired(): boolean {
    return this.isRetired;
  }
  set retired(v: boolean) {
    this.isRetired = v;
    this.updateParkable();
  }

  /** The native relay may keep a finished transaction's server with its client only while nobody else
   * could want that server. */
  protected updateParkable(): void {
    this.stats.block[STATS_LAYOUT.parkable] = this.mayPark ? 1 : 0;
  }

  /** Nobody else could want a server of this pool now: not paused, retired or draining, nobody waiting, no cancel in flight. */
  protected get mayPark(): boolean {
    return !this.isPaused && !this.isRetired && !this.draining && this.waiting === 0 && this.cancelling === 0;
  }

  /** Returns parked and lent servers to the pool, so what follows sees (and SHOW reports) its real state: relay-only
   * clients are reported (each a session holding its lent server, parked), parked pairs split, and the lent servers no
   * client uses come back to the idle stack. */
  settle(): void {
    // Free lent servers first: the parked ones then land on top of the idle stack, as the most recently used.
    this.takeBackLent();
    this.relay.reclaim(this.stats);
    // What could still be lent goes back to the relay after this turn.
    this.queueLend();
  }

  /** A server for a waiter, cheapest first: a lent server no client uses, then parked pairs of clients JavaScript
   * knows, then relay-only clients' (each reported first). Stops as soon as one is idle. */
  protected findIdle(): void {
    this.takeBackLent(true);
    if (this.servers.count('idle') > 0) return;
    this.relay.reclaim(this.stats, true);
    if (this.servers.count('idle') > 0) return;
    // Every lent server is now a relay-only client's, held until it leaves (one that leaves while someone waits is
    // reported, and its server goes to the waiter). While the pool may grow, the waiter gets a new server or that one
    // first; at max_db_connections a new server may be long in coming, so theirs come back now.
    if (
      this.servers.count('lent') > 0 &&
      this.servers.size - this.pinned + this.connecting < this.settings.poolSize &&
      !this.coordinator?.atCap()
    )
      return;
    this.relay.reclaim(this.stats);
  }

  /** The lent servers no client uses (one with `one`), back in the idle stack. */
  protected takeBackLent(one = false): void {
    if (this.servers.count('lent') === 0) return;
    for (const id of this.relay.unlend?.(this.stats, one) ?? []) {
      const s = this.lentServer(id);
      if (s) this.servers.move(s, 'idle');
    }
  }

  /** A relay-only client was reported holding the lent server whose end is `endId`: it is that client's now. */
  takeLent(endId: number): ServerConnection | null {
    const s = this.lentServer(endId);
    if (!s) return null;
    this.servers.move(s, 'active');
    s.lastUsed = Date.now();
    return s;
  }

  /** The lent server whose relay end is `endId` (still in the lent list); null when none is. */
  private lentServer(endId: number): ServerConnection | null {
    if (this.servers.count('lent') === 0) return null;
    for (const s of this.servers) if (s.lent && (s.end as { id?: number }).id === endId) return s;
    return null;
  }

  private lendQueued = false;

  /** Idle servers go to the relay after this turn (not at once: whoever released them may want one back now). */
  protected queueLend(): void {
    if (!this.lender || this.lendQueued) return;
    this.lendQueued = true;
    queueMicrotask(() => {
      this.lendQueued = false;
      this.lendIdle();
    });
  }

  /** Lends the relay the idle servers that hold a native login kind's parameters, while nobody else could want them. */
  protected lendIdle(): void {
    const lender = this.lender;
    if (
      !lender ||
      !this.mayPark ||
      (this.coordinator && this.coordinator.blocked.size > 0) ||
      this.servers.count('idle') === 0
    )
      return;
    const now = Date.now();
    // Bottom of the stack first: the most recently used is lent last, and the relay gives it first.
    for (const s of [...this.servers.idle()]) {
      if (
        s.lendKind < 0 ||
        s.closeOnRelease ||
        now >= s.expiresAt ||
        s.paramsUnknown ||
        s.pinned ||
        s.cancelsInFlight > 0 ||
        !lender(s)
      )
        continue;
      this.servers.move(s, 'lent');
    }
  }

  get name(): string {
    return `${this.settings.user}@${this.settings.database}`;
  }

  get waiting(): number {
    return this.waiters.length;
  }

  /** Connections taken from the database's reserve, open or connecting. */
  reserveHeld(): number {
    let n = this.connectingReserve;
    for (const s of this.servers) if (s.reserve) n++;
    return n;
  }

  /** The least recently used idle server created at or before `createdBefore`, or null (coordinator eviction). */
  evictable(createdBefore: number): ServerConnection | null {
    let pick: ServerConnection | null = null;
    for (const s of this.servers.idle()) {
      if (s.createdAt > createdBefore) continue;
      if (!pick || s.lastUsed < pick.lastUsed) pick = s;
    }
    return pick;
  }

  /** Creation time of the oldest idle server, or null when none is idle. */
  oldestIdleCreatedAt(): number | null {
    let t: number | null = null;
    for (const s of this.servers.idle()) if (t === null || s.createdAt < t) t = s.createdAt;
    return t;
  }

  /** Age in ms of the longest-waiting client. */
  maxWaitMs(now = Date.now()): number {
    const w = this.waiters.peek();
    return w ? now - w.waitingSince : 0;
  }

  /** Removes a waiter that gave up (timeout, disconnect). */
  cancelWait(w: PoolWaiter): void {
    this.waiters.remove(w);
    this.updateParkable();
  }

  protected give(s: ServerConnection, w: PoolWaiter): void {
    s.lendKind = -1;
    this.servers.move(s, 'active');
    s.lastUsed = Date.now();
    this.stats.observeWait((s.lastUsed - w.waitingSince) * 1000);
    w.onServer(s);
  }

  protected nextWaiter(): PoolWaiter | undefined {
    const w = this.waiters.shift();
    if (this.waiters.length === 0) this.updateParkable();
    return w;
  }

  /** Clients (and logins waiting for the first server's parameters) that need a server. */
  protected get demand(): number {
    return this.waiting + (this.paramWaiters.length > 0 && this.servers.size === 0 ? 1 : 0);
  }

  /** How long the oldest client that needs a server has waited (ms). */
  protected demandWaitMs(now: number): number {
    if (this.waiting > 0) return this.maxWaitMs(now);
    return this.paramWaiters.length ? now - this.paramWaitSince : 0;
  }

  protected scramOrPasswordKnown(): boolean {
    return this.settings.serverPassword !== null || this.scramCredential !== null;
  }
}
