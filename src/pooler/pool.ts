// One pool of server connections for a (database, user): FIFO handoff, bounded connects, timeouts, pause.
import type { Logger } from 'pino';
import type { PoolMode } from '../config/pooler.js';
import { SqlState } from '../protocol/codes.js';
import { writeQuery } from '../protocol/writer.js';
import { ServerConnection } from './server-connection.js';
import { ServerLoginError, type ServerCredential, type ServerTarget } from './server-login.js';
import { PoolStats, STATS_LAYOUT } from './stats.js';
import type { ScramCredential } from './auth/scram.js';
import { relayFor, type Relay } from './relay/relay.js';
import { Interner } from './prepared/interner.js';
import { ServerStatements } from './prepared/server-cache.js';

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
}

/** A client waiting for a server. */
export interface PoolWaiter {
  waitingSince: number;
  onServer(server: ServerConnection): void;
  onPoolError(message: string, sqlstate: string): void;
}

export class Pool {
  readonly servers = new Set<ServerConnection>();
  private idle: ServerConnection[] = [];
  private waiters: PoolWaiter[] = [];
  private waitHead = 0;
  connecting = 0;
  private isPaused = false;
  private isRetired = false;
  /** RECONNECT is waiting for active servers to come back: none may stay parked. */
  private draining = false;
  readonly stats = new PoolStats();
  /** Carries this pool's clients and servers; the JavaScript relay when their statements are rewritten. */
  readonly relay: Relay;
  /** The pool's query texts (prepared_statements in transaction mode), else null. Fixed at start, as is the relay. */
  readonly interner: Interner | null;
  private readonly serverCacheSize: number;
  /** ParameterStatus values of the first server that logged in, replayed to clients at login. */
  serverParams: Map<string, string> | null = null;
  /** A SCRAM credential recovered from a client's proof (pass-through). */
  scramCredential: ScramCredential | null = null;
  private pauseWaiters: (() => void)[] = [];
  private paramWaiters: { resolve: (p: Map<string, string>) => void; reject: (e: ServerLoginError) => void }[] = [];

  constructor(public settings: PoolSettings, private readonly log: Logger) {
    const prepared = settings.prepared;
    this.interner = prepared ? new Interner({ idleCapacity: prepared.cacheSize }) : null;
    this.serverCacheSize = prepared?.serverCacheSize ?? 0;
    this.relay = relayFor(prepared !== null);
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
    this.stats.block[STATS_LAYOUT.parkable] = !this.isPaused && !this.isRetired && !this.draining && this.waiting === 0 ? 1 : 0;
  }

  /** Returns parked servers to the pool, so what follows sees (and SHOW reports) its real state. */
  settle(): void {
    this.relay.reclaim(this.stats);
  }

  get name(): string {
    return `${this.settings.user}@${this.settings.database}`;
  }

  get waiting(): number {
    return this.waiters.length - this.waitHead;
  }

  get idleCount(): number {
    return this.idle.length;
  }

  get activeCount(): number {
    let n = 0;
    for (const s of this.servers) if (s.state === 'active') n++;
    return n;
  }

  /** Age in ms of the longest-waiting client. */
  maxWaitMs(now = Date.now()): number {
    return this.waiting > 0 ? now - this.waiters[this.waitHead]!.waitingSince : 0;
  }

  private credential(): ServerCredential {
    return { user: this.settings.serverUser, password: this.settings.serverPassword, scram: () => this.scramCredential };
  }

  /** Hands a server to `w` now or when one is free; FIFO among waiters. */
  acquire(w: PoolWaiter): void {
    if (!this.paused) {
      if (this.idle.length === 0) this.relay.reclaim(this.stats);
      while (this.idle.length) {
        const s = this.idle.pop()!;
        if (s.state !== 'idle') continue;
        this.give(s, w);
        return;
      }
    }
    this.waiters.push(w);
    this.updateParkable();
    this.growForWaiters();
  }

  /** Removes a waiter that gave up (timeout, disconnect). */
  cancelWait(w: PoolWaiter): void {
    const i = this.waiters.indexOf(w, this.waitHead);
    if (i >= 0) this.waiters.splice(i, 1);
    this.updateParkable();
  }

  private give(s: ServerConnection, w: PoolWaiter): void {
    s.state = 'active';
    s.lastUsed = Date.now();
    this.stats.totals.waitTimeUs += (s.lastUsed - w.waitingSince) * 1000;
    w.onServer(s);
  }

  private nextWaiter(): PoolWaiter | undefined {
    if (this.waitHead >= this.waiters.length) return undefined;
    const w = this.waiters[this.waitHead++]!;
    if (this.waitHead > 1024 && this.waitHead * 2 > this.waiters.length) {
      this.waiters = this.waiters.slice(this.waitHead);
      this.waitHead = 0;
    }
    if (this.waitHead >= this.waiters.length) this.updateParkable();
    return w;
  }

  /** A server comes back from a client. `reusable` is false when its state is unknown (mid-transaction). */
  release(s: ServerConnection, reusable: boolean): void {
    s.owner = null;
    const now = Date.now();
    if (!reusable || s.closeOnRelease || now >= s.expiresAt || this.retired || this.servers.size > this.settings.poolSize) {
      s.close(!reusable ? 'released in an unknown state' : s.closeOnRelease ? 'reconnect' : 'lifetime');
      this.forget(s);
      this.growForWaiters();
    } else if (!this.paused && this.waiting > 0) {
      this.give(s, this.nextWaiter()!);
    } else {
      s.state = 'idle';
      s.lastUsed = now;
      this.idle.push(s);
    }
    this.checkPaused();
  }

  /** Session mode: the client left with its server between transactions. server_reset_query runs, then the
   * server comes back (to be closed at release when the reset failed). */
  resetAndRelease(s: ServerConnection): void {
    const query = this.settings.resetQuery;
    if (!query) return this.release(s, true);
    s.owner = null;
    s.end.reset(writeQuery(query), (sawError) => {
      if (sawError) s.closeOnRelease = true;
      this.release(s, true);
    });
  }

  private forget(s: ServerConnection): void {
    this.servers.delete(s);
    const i = this.idle.indexOf(s);
    if (i >= 0) this.idle.splice(i, 1);
  }

  /** Starts backend connects for waiting clients, bounded by pool_size and max_concurrent_connects. */
  private growForWaiters(): void {
    if (this.paused || this.retired) return;
    while (this.waiting > this.connecting && this.servers.size + this.connecting < this.settings.poolSize && this.connecting < this.settings.maxConcurrentConnects) {
      this.connectOne();
    }
  }

  private connectOne(): void {
    this.connecting++;
    ServerConnection.connect(this.settings.target, this.credential(), this.settings.connectTimeoutMs, this.settings.noDelay, this.relay, this.interner !== null).then(
      (s) => {
        this.connecting--;
        if (this.interner) s.statements = new ServerStatements(this.interner, this.serverCacheSize);
        const lifetime = this.settings.lifetimeMs;
        if (lifetime > 0) s.expiresAt = s.createdAt + lifetime * (1 - Math.random() * 0.1);
        s.onClosed = (dead) => {
          this.forget(dead);
          this.checkPaused();
        };
        this.servers.add(s);
        if (!this.serverParams) {
          this.serverParams = new Map(s.params);
          for (const p of this.paramWaiters.splice(0)) p.resolve(this.serverParams);
        }
        this.log.debug({ pool: this.name, server_id: s.id, backend_pid: s.backendPid }, 'server connection ready');
        this.release(s, true);
      },
      (err: ServerLoginError) => {
        this.connecting--;
        this.log.warn({ pool: this.name, err: err.message, sqlstate: err.sqlstate }, 'server login failed');
        for (const p of this.paramWaiters.splice(0)) p.reject(err);
        // Waiters that no live or pending server could serve get the error now.
        if (this.servers.size === 0 && this.connecting === 0) {
          for (let w = this.nextWaiter(); w; w = this.nextWaiter()) w.onPoolError(err.message, err.sqlstate === SqlState.InvalidPassword || err.sqlstate === SqlState.InvalidAuthorization ? err.sqlstate : SqlState.ConnectionFailure);
        } else this.growForWaiters();
      },
    );
  }

  /** ParameterStatus set for client logins; connects a first server when none has logged in yet. */
  params(): Promise<Map<string, string>> {
    if (this.serverParams) return Promise.resolve(this.serverParams);
    return new Promise((resolve, reject) => {
      this.paramWaiters.push({ resolve, reject });
      if (this.connecting === 0) {
        if (this.servers.size + this.connecting < this.settings.poolSize) this.connectOne();
      }
    });
  }

  /** Periodic work: idle_timeout, server_lifetime, min_pool_size, query_wait_timeout. */
  maintain(now: number): void {
    const { idleTimeoutMs, minPoolSize, queryWaitTimeoutMs } = this.settings;
    // Parked servers come back once a tick, so idle_timeout, server_lifetime and RECONNECT see them.
    this.relay.reclaim(this.stats);
    if (this.draining) {
      let pending = false;
      for (const s of this.servers) if (s.closeOnRelease) pending = true;
      this.draining = pending;
      this.updateParkable();
    }
    for (let i = this.idle.length - 1; i >= 0; i--) {
      const s = this.idle[i]!;
      const tooOld = now >= s.expiresAt;
      const tooIdle = idleTimeoutMs > 0 && now - s.lastUsed > idleTimeoutMs && this.servers.size > minPoolSize;
      if (tooOld || tooIdle || this.retired) {
        this.idle.splice(i, 1);
        this.servers.delete(s);
        s.close(tooOld ? 'server_lifetime' : 'idle_timeout');
      }
    }
    if (!this.paused && !this.retired && this.scramOrPasswordKnown()) {
      while (this.servers.size + this.connecting < minPoolSize && this.connecting < this.settings.maxConcurrentConnects) this.connectOne();
    }
    if (queryWaitTimeoutMs > 0 && !this.paused) {
      while (this.waiting > 0 && now - this.waiters[this.waitHead]!.waitingSince > queryWaitTimeoutMs) {
        this.nextWaiter()!.onPoolError(`query_wait_timeout: no server connection available within ${queryWaitTimeoutMs} ms`, SqlState.QueryCanceled);
      }
    }
    this.growForWaiters();
  }

  private scramOrPasswordKnown(): boolean {
    return this.settings.serverPassword !== null || this.scramCredential !== null;
  }

  /** PAUSE: stop checkouts; resolves when no server of this pool is serving a client. */
  pause(): Promise<void> {
    this.paused = true;
    this.relay.reclaim(this.stats);
    return new Promise((resolve) => {
      this.pauseWaiters.push(resolve);
      this.checkPaused();
    });
  }

  private checkPaused(): void {
    if (!this.pauseWaiters.length) return;
    for (const s of this.servers) if (s.state === 'active') return;
    for (const r of this.pauseWaiters.splice(0)) r();
  }

  resume(): void {
    this.paused = false;
    while (this.idle.length && this.waiting > 0) {
      const s = this.idle.pop()!;
      if (s.state === 'idle') this.give(s, this.nextWaiter()!);
    }
    this.growForWaiters();
  }

  /** RECONNECT: idle servers closed now, active ones when they come back. */
  reconnect(): void {
    for (const s of this.servers) s.closeOnRelease = true;
    this.draining = true;
    this.updateParkable();
    this.relay.reclaim(this.stats);
    for (const s of this.idle.splice(0)) {
      this.servers.delete(s);
      s.close('reconnect');
    }
  }

  /** Every server closed at once (KILL, shutdown). */
  closeAll(reason: string): void {
    for (const s of [...this.servers]) {
      s.close(reason);
      s.destroy();
    }
    this.idle = [];
    this.servers.clear();
  }

  /** Fails every waiting client (KILL, shutdown). */
  failWaiters(message: string, sqlstate: string): void {
    for (let w = this.nextWaiter(); w; w = this.nextWaiter()) w.onPoolError(message, sqlstate);
  }
}
