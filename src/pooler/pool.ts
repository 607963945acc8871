// One pool of server connections for a (database, user): its server lists and waiting clients, FIFO handoff, bounded connects, timeouts, pause.
import type { Logger } from 'pino';
import { SqlState } from '../protocol/codes.js';
import { writeQuery } from '../protocol/writer.js';
import { sendCancelRequest } from './cancel-forward.js';
import { ServerConnection } from './server-connection.js';
import { ServerLoginError, type ServerCredential } from './server-login.js';
import { ServerStatements } from './prepared/server-cache.js';
import { PoolStats, STATS_LAYOUT } from './stats.js';
import { PoolHealth, type HealthChange } from './pool-health.js';
import type { ScramCredential } from './auth/scram.js';
import type { Relay } from './relay/relay.js';
import { relayFor } from './relay/choose.js';
import { Interner, type Statement } from './prepared/interner.js';
import { schemaEpochFor } from './prepared/schema-epoch.js';
import type { Coordinator } from './coordinator.js';
import type { PoolerEventKind } from './events.js';
import { WaiterQueue, type PoolWaiter } from './waiter-queue.js';
import type { PoolSettings, ScalingCounters } from './pool-settings.js';
import { ServerLists } from './server-lists.js';
import { ServerLending } from './pool-lending.js';
import { ParamValues } from './session-state/params.js';
import type { MovedServer } from './takeover-servers.js';
import { fdPassing } from '../native/fd-passing.js';

export type { PoolWaiter } from './waiter-queue.js';
export type { PoolSettings, ScalingCounters } from './pool-settings.js';

/** A pool used within this long retires expired servers one at a time (Pool.mayRetire). */
const IN_USE_MS = 3000;

/** A pool of server connections for a (database, user): its server lists, its waiting clients, what it lends the
 * native relay, and what it does with them (hand out, take back, connect, tick, pause). */
export class Pool {
  /** [0]: the idle list's length, kept by `servers` and read by the native relay (NativeLoginUser.idle). */
  readonly idleCount = new Int32Array(1);
  /** The pool's open servers, each in one list (idle, lent, active, used); they move only through servers.move. */
  readonly servers = new ServerLists<ServerConnection>(this.idleCount);
  private readonly waiters = new WaiterQueue();
  connecting = 0;
  private isPaused = false;
  private isRetired = false;
  /** RECONNECT is waiting for active servers to come back: none may stay parked. */
  private draining = false;
  readonly stats = new PoolStats();
  /** When a client last used a server of this pool (release, or the query count moving between two ticks). */
  private usedAt = 0;
  private queriesAtTick = 0;
  /** The last connect error, connect failures per second, PostgreSQL unreachable since (pool-health.ts). */
  readonly health: PoolHealth;
  /** Carries this pool's clients and servers; the JavaScript relay when their statements are rewritten. */
  readonly relay: Relay;
  /** The idle servers it lends the native relay for relay-only logins (pool-lending.ts). */
  readonly lending: ServerLending;
  /** The pool's query texts (prepared_statements in transaction mode), else null. Fixed at start, as is the relay. */
  readonly interner: Interner | null;
  private readonly serverCacheSize: number;
  /** ParameterStatus values of the first server that logged in, replayed to clients at login. */
  serverParams: Map<string, string> | null = null;
  /** The last server connect failed and none has logged in since (SHOW POOLS `fallback_active`): clients are being
   * refused or kept waiting while the pool retries. */
  connectFailing = false;
  /** server_login_retry: no connect starts before this time (ms since the epoch) after one failed. */
  private loginRetryAt = 0;
  /** The last failed server connect's error (what clients get at once within server_login_retry). */
  private lastLoginError: ServerLoginError | null = null;
  /** Called when serverParams becomes known (the pooler gives the native relay the pool's greeting then). */
  onParamsKnown: (() => void) | null = null;
  /** A SCRAM credential recovered from a client's proof (pass-through). */
  scramCredential: ScramCredential | null = null;
  private pauseWaiters: (() => void)[] = [];
  private paramWaiters: { resolve: (p: Map<string, string>) => void; reject: (e: ServerLoginError) => void }[] = [];
  private paramWaitSince = 0;
  /** The database's coordinator (max_db_connections, reserve, eviction); set by the pooler. */
  coordinator: Coordinator | null = null;
  /** Connects in flight that were granted from the reserve. */
  private connectingReserve = 0;
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
  private cancelling = 0;
  /** Where the pool reports what an operator needs to see later (the pooler's event ring). */
  onEvent: (kind: PoolerEventKind, message: string) => void = () => undefined;

  constructor(
    public settings: PoolSettings,
    private readonly log: Logger,
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
    this.lending = new ServerLending(this.servers, this.relay, this.stats, () => this.mayStillPark());
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
  private updateParkable(): void {
    const parkable = this.mayPark;
    this.stats.block[STATS_LAYOUT.parkable] = parkable ? 1 : 0;
    // The relay may park pairs and take lent servers again: the next checkout that finds no idle server looks.
    if (parkable) this.swept = false;
  }

  /** findIdle found nothing more to take back while the relay could park nothing (parkable 0 in the stats block), and
   * the block has said 0 ever since (updateParkable clears this when it writes 1): the relay has parked no pair of
   * this pool and no relay-only login has taken a lent server since, so another search would find nothing. While
   * clients outnumber servers every checkout comes here; the search was three calls into the addon each time. */
  private swept = false;

  /** Nobody else could want a server of this pool now: not paused, retired or draining, nobody waiting, no cancel in flight. */
  private get mayPark(): boolean {
    return !this.isPaused && !this.isRetired && !this.draining && this.waiting === 0 && this.cancelling === 0;
  }

  /** Returns parked and lent servers to the pool, so what follows sees (and SHOW reports) its real state: relay-only
   * clients are reported (each a session holding its lent server, parked), parked pairs split, and the lent servers no
   * client uses come back to the idle stack. */
  settle(): void {
    // Free lent servers first: the parked ones then land on top of the idle stack, as the most recently used.
    this.lending.takeBack();
    this.relay.reclaim(this.stats);
    // What could still be lent goes back to the relay after this turn.
    this.lending.queue();
  }

  /** A server for a waiter, cheapest first: a lent server no client uses, then parked pairs of clients JavaScript
   * knows, then relay-only clients' (each reported first). Stops as soon as one is idle. */
  private findIdle(): void {
    if (this.swept && this.servers.count('lent') === 0) return;
    this.lending.takeBack(true);
    if (this.servers.count('idle') > 0) return;
    this.relay.reclaim(this.stats, true);
    if (this.servers.count('idle') > 0) return;
    // Every lent server is now a relay-only client's, held until it leaves (one that leaves while someone waits is
    // reported, and its server goes to the waiter). While the pool may grow, the waiter gets a new server or that one
    // first; at max_db_connections a new server may be long in coming, so theirs come back now. With none lent, no
    // relay-only client holds a server, and the reclaim above took every parked pair.
    if (this.servers.count('lent') > 0) {
      if (this.servers.size - this.pinned + this.connecting < this.settings.poolSize && !this.coordinator?.atCap())
        return;
      this.relay.reclaim(this.stats);
      if (this.servers.count('idle') > 0) return;
    }
    this.swept = this.stats.block[STATS_LAYOUT.parkable] === 0;
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

  private give(s: ServerConnection, w: PoolWaiter, now = Date.now()): void {
    s.lendKind = -1;
    this.servers.move(s, 'active');
    s.lastUsed = now;
    this.stats.observeWait((s.lastUsed - w.waitingSince) * 1000);
    w.onServer(s);
  }

  private nextWaiter(): PoolWaiter | undefined {
    const w = this.waiters.shift();
    if (this.waiters.length === 0) this.updateParkable();
    return w;
  }

  /** Clients (and logins waiting for the first server's parameters) that need a server. */
  private get demand(): number {
    return this.waiting + (this.paramWaiters.length > 0 && this.servers.size === 0 ? 1 : 0);
  }

  /** How long the oldest client that needs a server has waited (ms). */
  private demandWaitMs(now: number): number {
    if (this.waiting > 0) return this.maxWaitMs(now);
    return this.paramWaiters.length ? now - this.paramWaitSince : 0;
  }

  private scramOrPasswordKnown(): boolean {
    return this.settings.serverPassword !== null || this.scramCredential !== null;
  }
  /** Closes an idle server for another user of the database (coordinator.ts). */
  evict(s: ServerConnection, reason: string): void {
    this.forget(s);
    s.close(reason);
    this.log.info({ pool: this.name, server_id: s.id, backend_pid: s.backendPid }, reason);
    this.onEvent('eviction', `idle server ${s.id} (backend pid ${s.backendPid}) closed: ${reason}`);
  }

  private credential(): ServerCredential {
    return {
      user: this.settings.serverUser,
      password: this.settings.serverPassword,
      scram: () => this.scramCredential,
    };
  }

  /** Hands a server to `w` now or when one is free; FIFO among waiters. */
  acquire(w: PoolWaiter): void {
    if (!this.paused) {
      if (this.servers.count('idle') === 0) this.findIdle();
      if (this.giveIdle(w)) return;
      const cached = this.cachedLoginError(Date.now());
      if (cached) return w.onPoolError(cached.message, cached.sqlstate);
    }
    this.waiters.push(w);
    this.updateParkable();
    this.growForWaiters();
  }

  /** A client that just logged in may take an idle server parked with it (ClientSession.prelink): only while the pool
   * could park a finished transaction's server anyway (nobody waiting, not paused, retired or draining, no cancel in
   * flight) and no other user of the database waits for an idle server to be evicted. False when none is idle: the
   * client asks at its first query, as before. */
  lendParked(w: PoolWaiter): boolean {
    if (!this.mayPark || (this.coordinator && this.coordinator.blocked.size > 0)) return false;
    return this.giveIdle(w);
  }

  /** A server lent at login may still be parked with its client when the link is finally made (after a parameter
   * sync): not when PAUSE, RECONNECT, a waiter or a blocked user came meanwhile, which the settle they ran could not
   * take back (the pair was not linked yet). */
  mayStillPark(): boolean {
    return this.mayPark && !(this.coordinator && this.coordinator.blocked.size > 0);
  }

  /** The most recently used idle server to `w`; false when none is idle. */
  private giveIdle(w: PoolWaiter): boolean {
    const s = this.servers.topIdle();
    if (!s) return false;
    this.give(s, w);
    return true;
  }

  /** Sends PostgreSQL a CancelRequest for `s` (whose client has a query in flight) on a new connection. Until
   * PostgreSQL closes that connection (it has signalled the backend by then) the server is not lent to anyone: a
   * release meanwhile waits (see release), so a cancel that comes late finds the backend idle, where PostgreSQL
   * ignores it, never running another client's query. `onError` hears why the connection failed. */
  forwardCancel(s: ServerConnection, onError: (message: string) => void): void {
    s.cancelsInFlight++;
    this.cancelling++;
    this.updateParkable();
    sendCancelRequest(
      this.settings.target,
      s.backendPid,
      s.backendSecret,
      Math.max(this.settings.connectTimeoutMs, 1000),
      onError,
      () => {
        s.cancelsInFlight--;
        this.cancelling--;
        this.updateParkable();
        if (s.cancelsInFlight > 0) return;
        const then = s.afterCancel;
        s.afterCancel = null;
        then?.();
      },
    );
  }

  /** A server comes back from a client. `reusable` is false when its state is unknown (mid-transaction). */
  release(s: ServerConnection, reusable: boolean): void {
    s.owner = null;
    const now = Date.now();
    this.usedAt = now;
    // A server the pool no longer holds (its socket closed under the client, or KILL dropped it) joins no list again.
    if (!this.servers.has(s)) reusable = false;
    if (reusable && s.cancelsInFlight > 0 && s.state !== 'closed') {
      this.servers.move(s, 'used');
      s.afterCancel = () => this.release(s, true);
      return;
    }
    const waiting = !this.paused && this.waiting > 0;
    const expired = now >= s.expiresAt && this.mayRetire();
    if (
      !reusable ||
      s.closeOnRelease ||
      expired ||
      this.retired ||
      this.servers.size - this.pinned > this.settings.poolSize ||
      (s.reserve && !waiting)
    ) {
      s.close(
        !reusable
          ? 'released in an unknown state'
          : s.closeOnRelease
            ? 'reconnect'
            : s.reserve
              ? 'reserve connection returned'
              : 'lifetime',
      );
      this.forget(s);
      this.growForWaiters();
      if (expired && reusable && !s.closeOnRelease) this.replaceRetired();
    } else if (waiting) {
      // A connect started for the waiters is still on its way: the returned server came first.
      if (this.connecting > 0) this.scaling.anticNotify++;
      this.give(s, this.nextWaiter()!, now);
    } else {
      this.servers.move(s, 'idle');
      s.lastUsed = now;
      this.lending.queue();
      // Another user of the database may be waiting for this one to be evicted.
      if (this.coordinator && this.coordinator.blocked.size > 0) this.coordinator.kick();
    }
    this.checkPaused();
  }

  /** A transaction-mode client keeps `s` for good (session state that cannot move): the pool may open another in
   * its place for the other clients. */
  pin(s: ServerConnection): void {
    if (s.pinned) return;
    s.pinned = true;
    this.pinned++;
    this.growForWaiters();
  }

  /** Before a pinned server comes back (or when it is gone). */
  unpin(s: ServerConnection): void {
    if (!s.pinned) return;
    s.pinned = false;
    this.pinned--;
  }

  /** Closes a server a client leaves with state no query can undo (LOAD). */
  retire(s: ServerConnection, reason: string): void {
    s.owner = null;
    this.unpin(s);
    this.forget(s);
    s.close(reason);
    this.growForWaiters();
    this.checkPaused();
  }

  /** Session mode: the client left with its server between transactions. server_reset_query runs, then the
   * server comes back (to be closed at release when the reset failed). Transaction mode: `query` cleans the session
   * state a pinned client leaves (session-state/pins.ts). */
  resetAndRelease(s: ServerConnection, query = this.settings.resetQuery): void {
    if (!query) return this.release(s, true);
    s.owner = null;
    if (s.cancelsInFlight > 0 && s.state !== 'closed') {
      this.servers.move(s, 'used');
      s.afterCancel = () => this.resetAndRelease(s, query);
      return;
    }
    this.servers.move(s, 'used');
    s.end.reset(writeQuery(query), (sawError) => {
      if (sawError) s.closeOnRelease = true;
      this.release(s, true);
    });
  }

  private forget(s: ServerConnection): void {
    this.unpin(s);
    this.servers.move(s, null);
    if (this.coordinator && this.coordinator.blocked.size > 0) this.coordinator.kick();
  }

  /** Starts backend connects for waiting clients, bounded by pool_size, max_concurrent_connects and the database's
   * coordinator. */
  grow(): void {
    this.growForWaiters();
  }

  /**
   * server_lifetime retires servers one at a time while the pool is in use: a server past its lifetime is closed
   * only when no connect of this pool is under way, and its replacement is started at once (replaceRetired), so
   * the others keep serving until the new one is in. Servers opened together (at start, or after RECONNECT)
   * reach their lifetime together; closing them all at once left the pool with none while PostgreSQL forked their
   * replacements, which on a loaded host took long enough for waiting clients to reach query_wait_timeout
   * (issue 35, item 3). An idle pool (no client served or waiting) lets every expired server go at once.
   */
  private mayRetire(): boolean {
    return this.retired || !this.inUse() || this.connecting === 0;
  }

  /** Clients wait, hold a server, or ran queries within the last few seconds (the native relay's count, read at
   * each tick: its servers come back to the idle list at every tick however busy they are). */
  private inUse(): boolean {
    return this.waiting > 0 || this.servers.count('active') > 0 || Date.now() - this.usedAt < IN_USE_MS;
  }

  /** Opens the replacement of a server retired for its lifetime while the pool is in use, within pool_size,
   * max_concurrent_connects, server_login_retry and the database's coordinator. */
  private replaceRetired(): void {
    if (this.paused || this.retired || Date.now() < this.loginRetryAt || !this.inUse()) return;
    this.connectIfAdmitted();
  }

  private growForWaiters(): void {
    if (this.paused || this.retired) return;
    // server_login_retry: after a failed connect the next waits (the maintenance tick tries again).
    if (Date.now() < this.loginRetryAt) return;
    while (this.demand > this.connecting) if (!this.connectIfAdmitted()) return;
  }

  /** Starts one connect within pool_size, max_concurrent_connects and the database's coordinator (counting the gate
   * that refused it, SHOW POOL_SCALING); false when refused. */
  private connectIfAdmitted(): boolean {
    if (this.servers.size - this.pinned + this.connecting >= this.settings.poolSize) {
      this.scaling.gateBudgetEx++;
      return false;
    }
    if (this.connecting >= this.settings.maxConcurrentConnects) {
      this.scaling.gateWaits++;
      return false;
    }
    const admission = this.coordinator ? this.coordinator.admit(this, this.demandWaitMs(Date.now())) : 'free';
    if (admission === 'none') {
      this.scaling.gateBudgetEx++;
      return false;
    }
    this.connectOne(admission === 'reserve');
    return true;
  }

  /** closeAll(..., true) ran: the pooler shut down. */
  private closedFinal = false;

  private connectOne(reserve = false): void {
    this.connecting++;
    this.scaling.creates++;
    if (reserve) this.connectingReserve++;
    ServerConnection.connect(
      this.settings.target,
      this.credential(),
      this.settings.connectTimeoutMs,
      this.settings.noDelay,
      this.relay,
      this.interner !== null,
    ).then(
      (s) => {
        this.connecting--;
        if (this.closedFinal) {
          if (reserve) this.connectingReserve--;
          s.close('shutdown');
          s.destroy();
          return;
        }
        this.connectFailing = false;
        this.lastLoginError = null;
        this.noteHealth(this.health.connectSucceeded(Date.now()));
        if (reserve) {
          this.connectingReserve--;
          s.reserve = true;
        }
        if (this.interner) s.statements = new ServerStatements(this.interner, this.serverCacheSize);
        this.join(s, 'server connection ready');
      },
      (err: ServerLoginError) => {
        this.connecting--;
        if (reserve) this.connectingReserve--;
        this.scaling.createFallback++;
        this.connectFailing = true;
        this.loginRetryAt = Date.now() + this.settings.loginRetryMs;
        this.lastLoginError = err;
        // During an outage its start and end events stand for the failures (a storm of them would flush the ring).
        if (this.health.unreachableSince === null)
          this.onEvent(
            'connect_failure',
            `connecting to ${this.settings.target.host}:${this.settings.target.port} failed: ${err.message}`,
          );
        this.noteHealth(
          this.health.connectFailed(
            err.message,
            err.errno ?? err.sqlstate,
            Date.now(),
            this.waiting > 0 || this.paramWaiters.length > 0,
          ),
        );
        this.log.warn({ pool: this.name, err: err.message, sqlstate: err.sqlstate }, 'server login failed');
        for (const p of this.paramWaiters.splice(0)) p.reject(err);
        // Waiters that no live or pending server could serve get the error now.
        if (this.servers.size === 0 && this.connecting === 0) {
          for (let w = this.nextWaiter(); w; w = this.nextWaiter()) w.onPoolError(err.message, clientSqlState(err));
        } else this.growForWaiters();
        this.coordinator?.kick();
      },
    );
  }

  /** An outage of this pool's PostgreSQL began or ended: an event and a log line. */
  private noteHealth(change: HealthChange | null): void {
    if (!change) return;
    const { host, port } = this.settings.target;
    if (change.kind === 'unreachable') {
      const message = `PostgreSQL ${host}:${port} unreachable since ${new Date(change.since).toISOString()}: ${change.error.message} (${change.error.code})`;
      this.onEvent('backend_unreachable', message);
      this.log.error(
        {
          pool: this.name,
          since: new Date(change.since).toISOString(),
          err: change.error.message,
          code: change.error.code,
        },
        'PostgreSQL unreachable',
      );
    } else {
      const seconds = Math.round((change.until - change.since) / 100) / 10;
      this.onEvent(
        'backend_reachable',
        `PostgreSQL ${host}:${port} reachable again: a server logged in after ${seconds} s unreachable (${change.failures} failed connects)`,
      );
      this.log.info(
        { pool: this.name, unreachable_ms: change.until - change.since, failures: change.failures },
        'PostgreSQL reachable again',
      );
    }
  }

  /** While PostgreSQL is unreachable and no client asks for a server, one connect every connect_timeout (at least a
   * second) finds out when it is back, so the outage does not outlast it on the console. */
  private probe(now: number): void {
    const last = this.health.lastError;
    if (
      this.health.unreachableSince === null ||
      !last ||
      this.demand > 0 ||
      this.connecting > 0 ||
      this.paused ||
      this.retired
    )
      return;
    if (
      now - last.time < Math.max(this.settings.connectTimeoutMs, 1000) ||
      this.servers.size >= this.settings.poolSize ||
      !this.scramOrPasswordKnown()
    )
      return;
    if (this.coordinator && this.coordinator.admit(this, -1) === 'none') return;
    this.connectOne();
  }

  /**
   * Within server_login_retry of a failed connect, with no server open or opening: the error a client that needs a
   * server gets at once instead of waiting (PgBouncer's wording and behaviour), else null.
   */
  private cachedLoginError(now: number): { message: string; sqlstate: string } | null {
    const err = this.lastLoginError;
    if (!err || now >= this.loginRetryAt || this.servers.size > 0 || this.connecting > 0) return null;
    return {
      message: `server login has been failing, cached error: ${err.message} (server_login_retry)`,
      sqlstate: clientSqlState(err),
    };
  }

  /** ParameterStatus set for client logins; connects a first server when none has logged in yet. */
  params(): Promise<Map<string, string>> {
    if (this.serverParams) return Promise.resolve(this.serverParams);
    const cached = this.cachedLoginError(Date.now());
    if (cached) return Promise.reject(new ServerLoginError(cached.message, cached.sqlstate));
    return new Promise((resolve, reject) => {
      if (this.paramWaiters.length === 0) this.paramWaitSince = Date.now();
      this.paramWaiters.push({ resolve, reject });
      // Also while paused: a login needs the server's parameters, not a checkout.
      if (this.connecting === 0 && this.servers.size < this.settings.poolSize) {
        const admission = this.coordinator ? this.coordinator.admit(this, 0) : 'free';
        if (admission !== 'none') this.connectOne(admission === 'reserve');
      }
    });
  }

  /** Periodic work: idle_timeout, server_lifetime, min_pool_size, query_wait_timeout. */
  maintain(now: number): void {
    const { idleTimeoutMs, minPoolSize, queryWaitTimeoutMs } = this.settings;
    // Parked and lent servers come back once a tick, so idle_timeout, server_lifetime and RECONNECT see them.
    this.settle();
    const queries = this.stats.totals.queryCount;
    if (queries !== this.queriesAtTick) {
      this.queriesAtTick = queries;
      this.usedAt = now;
    }
    if (this.draining) {
      let pending = false;
      for (const s of this.servers) if (s.closeOnRelease) pending = true;
      this.draining = pending;
      this.updateParkable();
    }
    let closed = false;
    const idle = this.servers.idle();
    for (let i = idle.length - 1; i >= 0; i--) {
      const s = idle[i]!;
      const tooOld = now >= s.expiresAt && this.mayRetire();
      const tooIdle = idleTimeoutMs > 0 && now - s.lastUsed > idleTimeoutMs && this.servers.size > minPoolSize;
      if (tooOld || tooIdle || this.retired) {
        this.servers.move(s, null);
        s.close(tooOld ? 'server_lifetime' : 'idle_timeout');
        closed = true;
        if (tooOld && !tooIdle) this.replaceRetired();
      }
    }
    // A slot of the database freed: a user waiting at max_db_connections may take it now.
    if (closed && this.coordinator && this.coordinator.blocked.size > 0) this.coordinator.kick();
    if (!this.paused && !this.retired && this.scramOrPasswordKnown()) {
      while (this.servers.size + this.connecting < minPoolSize) {
        if (
          this.connecting >= this.settings.maxConcurrentConnects ||
          (this.coordinator && this.coordinator.admit(this, -1) === 'none')
        ) {
          this.scaling.replenishDef++;
          break;
        }
        this.connectOne();
      }
    }
    if (
      queryWaitTimeoutMs > 0 &&
      this.paramWaiters.length > 0 &&
      this.servers.size === 0 &&
      this.connecting === 0 &&
      now - this.paramWaitSince > queryWaitTimeoutMs
    ) {
      // Logins waiting for a first server that the database's cap never let this pool open.
      const capped = this.coordinator !== null && this.coordinator.atCap();
      if (capped) this.coordinator!.exhaustions++;
      const message = `query_wait_timeout: no server connection available within ${queryWaitTimeoutMs} ms${capped ? ` (database at max_db_connections ${this.coordinator!.settings.maxDbConnections})` : ''}`;
      this.onEvent(
        'pool_exhaustion',
        `${this.paramWaiters.length} logins waited ${now - this.paramWaitSince} ms for a first server: ${message}`,
      );
      const err = new ServerLoginError(message, SqlState.QueryCanceled);
      for (const p of this.paramWaiters.splice(0)) p.reject(err);
    }
    // Not while paused: PAUSE holds clients until RESUME so a switchover costs them a wait, not an error (docs/pooler.md,
    // "PAUSE"); the console shows who waits and for how long (SHOW CLIENTS wait, wait_reason 'pool paused').
    if (queryWaitTimeoutMs > 0 && !this.paused) {
      while (this.waiting > 0 && now - this.waiters.peek()!.waitingSince > queryWaitTimeoutMs) {
        const w = this.nextWaiter()!;
        const waitedMs = now - w.waitingSince;
        if (this.connecting > 0) this.scaling.anticTimeout++;
        const capped = this.coordinator !== null && this.coordinator.atCap();
        if (capped) this.coordinator!.exhaustions++;
        this.onEvent(
          'pool_exhaustion',
          `a client waited ${waitedMs} ms for a server (query_wait_timeout ${queryWaitTimeoutMs} ms; ${this.servers.size} of pool_size ${this.settings.poolSize} open${capped ? `, database at max_db_connections ${this.coordinator!.settings.maxDbConnections}` : ''})`,
        );
        w.onPoolError(
          `query_wait_timeout: no server connection available within ${queryWaitTimeoutMs} ms`,
          SqlState.QueryCanceled,
        );
      }
    }
    this.growForWaiters();
    this.noteHealth(this.health.check(now, this.demand > 0));
    this.probe(now);
  }

  /** PAUSE: checkouts stop now; returns how many servers still serve a client (transactions running; in session
   * mode, sessions). The web API answers with it at once; the admin console waits for quiet() as PgBouncer's does. */
  pause(): number {
    this.paused = true;
    // Parked pairs come back first, so a finished transaction's server is not counted as running.
    this.settle();
    return this.activeServers();
  }

  /** Servers lent to a client now (SHOW POOLS sv_active). */
  activeServers(): number {
    return this.servers.count('active');
  }

  /** Resolves when no server of this pool is serving a client. */
  quiet(): Promise<void> {
    return new Promise((resolve) => {
      this.pauseWaiters.push(resolve);
      this.checkPaused();
    });
  }

  private checkPaused(): void {
    if (!this.pauseWaiters.length || this.servers.count('active') > 0) return;
    for (const r of this.pauseWaiters.splice(0)) r();
  }

  resume(): void {
    this.paused = false;
    for (let s = this.servers.topIdle(); s && this.waiting > 0; s = this.servers.topIdle())
      this.give(s, this.nextWaiter()!);
    this.growForWaiters();
  }

  /** RECONNECT: idle servers closed now, active ones when they come back. */
  reconnect(): void {
    // An operator's RECONNECT (or new server settings) means "try now": no server_login_retry wait.
    this.loginRetryAt = 0;
    for (const s of this.servers) s.closeOnRelease = true;
    this.draining = true;
    this.updateParkable();
    this.settle();
    for (const s of [...this.servers.idle()]) {
      this.servers.move(s, null);
      s.close('reconnect');
    }
  }

  /** `host:port/database` of the pool's PostgreSQL: a moved server must come from the same one. */
  private targetKey(): string {
    const t = this.settings.target;
    return `${t.host}:${t.port}/${t.database}`;
  }

  /** The old process of a takeover (takeover-servers.ts): lets go of `s` if it is idle in this pool and in a known
   * state (not pinned, reserved, expired or to be closed, no cancel in flight, plaintext, every statement on it
   * answered, the relay's end idle between whole messages): what the new process needs and a descriptor of the
   * socket, the caller's to close. It leaves the pool as if closed, without a word to PostgreSQL. Else why not. */
  moveOut(s: ServerConnection): { server: MovedServer; fd: number } | string {
    if (this.servers.listOf(s) !== 'idle') return 'not idle';
    if (s.pinned || s.owner !== null || s.cancelsInFlight > 0) return 'in use';
    if (s.closeOnRelease || s.reserve || Date.now() >= s.expiresAt) return 'to be closed';
    if (s.tls) return 'TLS to PostgreSQL';
    const held = s.statements ? s.statements.settled() : [];
    if (held === null) return 'statements being prepared or closed';
    const fd = s.end.release();
    if (fd === null) return 'the relay cannot let it go now';
    const server = this.describe(s, held);
    s.onClosed = null;
    this.forget(s);
    s.state = 'closed';
    s.statements?.clear();
    this.log.debug({ pool: this.name, server_id: s.id, backend_pid: s.backendPid }, 'takeover: server sent');
    return { server, fd };
  }

  /** What the new process needs of `s` (moveOut, or a client's linked server), `held` its settled statements. */
  private describe(s: ServerConnection, held: { statement: Statement; stale: boolean }[]): MovedServer {
    return {
      database: this.settings.database,
      user: this.settings.user,
      target: this.targetKey(),
      serverUser: this.settings.serverUser,
      backendPid: s.backendPid,
      backendSecret: s.backendSecret,
      params: [...s.params],
      applicationName: s.applicationName,
      createdAt: s.createdAt,
      lastUsed: s.lastUsed,
      values: s.paramValues ? [...s.paramValues.values] : null,
      unknown: s.paramsUnknown ? [...s.paramsUnknown] : null,
      statements: held.map(({ statement, stale }) => ({
        name: statement.name,
        query: statement.query,
        types: statement.types,
        settings: statement.settings,
        stale,
      })),
    };
  }

  /** The old process of a takeover, for a client that moves with `s`, the server it is linked to (session mode, or
   * pinned): what the new process needs of it, or why it cannot go now (the relay lets go of the pair after this). */
  describeLinked(s: ServerConnection): MovedServer | string {
    if (s.cancelsInFlight > 0) return 'a cancel in flight';
    if (s.tls) return 'TLS to PostgreSQL';
    const held = s.statements ? s.statements.settled() : [];
    if (held === null) return 'statements being prepared or closed';
    return this.describe(s, held);
  }

  /** The new process took a client's linked server: it leaves this pool as if closed, without a word to PostgreSQL
   * (the relay let go of it already). */
  forgetMoved(s: ServerConnection): void {
    s.owner = null;
    s.onClosed = null;
    this.forget(s);
    s.state = 'closed';
    s.statements?.clear();
  }

  /** The new process refused a client's linked server (or is gone): the relay takes it again from `fd`; false when
   * it cannot (the server is then closed and forgotten). */
  takeBack(s: ServerConnection, fd: number): boolean {
    try {
      s.readopt(fd, this.relay, this.interner !== null);
      return true;
    } catch (err) {
      this.log.warn({ pool: this.name, server_id: s.id, err: (err as Error).message }, 'takeover: server lost');
      this.forgetMoved(s);
      return false;
    }
  }

  /** The new process of a takeover: an idle server of the old process's pool of the same name joins this pool, with
   * the statements prepared on it, its session parameters and its age (server_lifetime counts from its connect there).
   * Null when pooled (or handed to a waiter), else why not; `fd` is this pool's from the call on (closed when refused). */
  adoptMoved(m: MovedServer, fd: number): string | null {
    const s = this.adoptServer(m, fd, this.servers.size - this.pinned >= this.settings.poolSize);
    if (typeof s === 'string') return s;
    this.join(s, 'takeover: server adopted');
    return null;
  }

  /** The new process of a takeover: the server a moved client is linked to (session mode, or pinned: `pinned`) joins
   * this pool as that client's, not the idle list: with its statements, session parameters and age as in adoptMoved.
   * The server, or why not; `fd` is this pool's from the call on (closed when refused). A pinned server is outside
   * pool_size, as here; a session-mode one counts. */
  adoptLinked(m: MovedServer, fd: number, pinned: boolean): ServerConnection | string {
    const s = this.adoptServer(
      m,
      fd,
      !pinned && this.servers.size - this.pinned + this.connecting >= this.settings.poolSize,
    );
    if (typeof s === 'string') return s;
    const lifetime = this.settings.lifetimeMs;
    if (lifetime > 0) s.expiresAt = s.createdAt + lifetime * (1 - Math.random() * 0.1);
    s.onClosed = (dead) => {
      this.forget(dead);
      this.checkPaused();
    };
    this.servers.move(s, 'active');
    if (pinned) this.pin(s);
    if (!this.serverParams) {
      this.serverParams = new Map(s.params);
      for (const p of this.paramWaiters.splice(0)) p.resolve(this.serverParams);
      this.onParamsKnown?.();
    }
    this.log.debug({ pool: this.name, server_id: s.id, backend_pid: s.backendPid }, 'takeover: linked server adopted');
    return s;
  }

  /** A moved server as this pool's (adoptMoved, adoptLinked): the server, or why not (`full`: no room for it here);
   * `fd` is this pool's from the call on (closed when refused). */
  private adoptServer(m: MovedServer, fd: number, full: boolean): ServerConnection | string {
    const refuse = (why: string): string => {
      fdPassing?.fdClose(fd);
      return why;
    };
    if (this.retired) return refuse(`pool ${this.name} is retired here`);
    const mode = this.settings.target.tls.mode;
    if (m.target !== this.targetKey() || m.serverUser !== this.settings.serverUser)
      return refuse(`pool ${this.name} connects to ${this.targetKey()} as ${this.settings.serverUser} here`);
    if (mode !== 'disable' && mode !== 'allow' && mode !== 'prefer')
      return refuse(`pool ${this.name} has server_tls_sslmode = "${mode}" here`);
    if (m.statements.length > 0 && !this.interner)
      return refuse(`the server has prepared statements and pool ${this.name} has prepared_statements off here`);
    if (full) return refuse(`pool ${this.name} is full here`);
    if (this.coordinator && this.coordinator.admit(this, -1) === 'none')
      return refuse(`database ${this.settings.database} is at max_db_connections here`);
    const statements = this.adoptStatements(m);
    if (typeof statements === 'string') return refuse(statements);
    let s: ServerConnection;
    try {
      s = ServerConnection.adopt(m, fd, this.relay, this.interner !== null);
    } catch (err) {
      statements?.clear();
      return `the relay cannot take it: ${(err as Error).message}`;
    }
    s.statements = statements;
    if (m.values) {
      const values = new ParamValues();
      for (const [name, value] of m.values) values.set(name, value);
      s.paramValues = values;
    }
    s.paramsUnknown = m.unknown;
    return s;
  }

  /** A moved server's statements, interned here under the names they had there; why not when a name differs. */
  private adoptStatements(m: MovedServer): ServerStatements | null | string {
    if (!this.interner) return null;
    const statements = new ServerStatements(this.interner, this.serverCacheSize);
    for (const st of m.statements) {
      const s = this.interner.internKeyed(st.query, st.types, st.settings);
      if (s.name !== st.name) {
        statements.clear();
        return `its statement ${st.name} has another name here (${s.name})`;
      }
      statements.adopt(s, st.stale);
    }
    return statements;
  }

  /** A server that logged in here (or came from the old process of a takeover) joins the pool: its lifetime (with
   * jitter, from its connect), its close handler, the pool's greeting if it is the first, then release() places it
   * (idle, a waiter's, or closed when its lifetime is over). */
  private join(s: ServerConnection, logMsg: string): void {
    const lifetime = this.settings.lifetimeMs;
    if (lifetime > 0) s.expiresAt = s.createdAt + lifetime * (1 - Math.random() * 0.1);
    s.onClosed = (dead) => {
      this.forget(dead);
      this.checkPaused();
    };
    this.servers.move(s, 'used');
    if (!this.serverParams) {
      this.serverParams = new Map(s.params);
      for (const p of this.paramWaiters.splice(0)) p.resolve(this.serverParams);
      this.onParamsKnown?.();
    }
    this.log.debug({ pool: this.name, server_id: s.id, backend_pid: s.backendPid }, logMsg);
    this.release(s, true);
  }

  /** Every server closed at once (KILL, shutdown). `final` (shutdown): a connect still in flight closes its server
   * when it logs in, instead of joining a pool nothing serves any more (its backend would live on). */
  closeAll(reason: string, final = false): void {
    if (final) this.closedFinal = true;
    this.settle();
    for (const s of [...this.servers]) {
      s.close(reason);
      s.destroy();
    }
    this.servers.clear();
  }

  /** Fails every waiting client (KILL, shutdown). */
  failWaiters(message: string, sqlstate: string): void {
    for (let w = this.nextWaiter(); w; w = this.nextWaiter()) w.onPoolError(message, sqlstate);
  }
}

/** What a client hears of a failed server login: PostgreSQL's refusal of the credentials as it is, else 08006. */
function clientSqlState(err: ServerLoginError): string {
  return err.sqlstate === SqlState.InvalidPassword || err.sqlstate === SqlState.InvalidAuthorization
    ? err.sqlstate
    : SqlState.ConnectionFailure;
}
