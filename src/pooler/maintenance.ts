// Every periodic tick and the shutdown (PgBouncer: janitor.c): the pools' ticks and the reaping of retired pools and
// idle coordinators, auth_query's cache, client_login_timeout's sweep, the log lines limited to one a period, the
// stats periods; SHUTDOWN's drain and close.
import type { Logger } from 'pino';
import type { PoolerConfig } from '../config/pooler.js';
import { SqlState } from '../protocol/codes.js';
import type { AppRegistry } from './apps.js';
import { TAKEOVER_TIMEOUT_MESSAGE, type ClientSession } from './client-session.js';
import type { ClientStartup } from './client-startup.js';
import type { EventRing } from './events.js';
import type { PoolerCounters } from './hosts.js';
import type { Listener } from './listener.js';
import type { LogLimiter } from './log-limiter.js';
import type { Pool } from './pool.js';
import type { PoolSet } from './pool-set.js';
import { NativeRelay } from './relay/native.js';
import { jsClosingClients } from './relay/js-client.js';

/** What the periodic work and the shutdown act on. */
export interface MaintenanceHost {
  /** Current, validated config (replaced on RELOAD). */
  readonly config: PoolerConfig;
  readonly log: Logger;
  readonly events: EventRing;
  readonly apps: AppRegistry;
  readonly counters: PoolerCounters;
  readonly limitedLogs: {
    readonly loginTimeouts: LogLimiter;
    readonly maxConnections: LogLimiter;
    readonly descriptors: LogLimiter;
  };
  /** JavaScript logins in progress, in accept order. */
  readonly logins: Set<ClientStartup>;
  /** Logged-in clients. */
  readonly clients: Iterable<ClientSession>;
  readonly poolSet: PoolSet;
  readonly authQuery: { maintain(now: number): void; close(): void };
  readonly nativeLogins: { readonly underWay: number; materializeHeld(): void };
  readonly nativeTls: NativeRelay | null;
  readonly listener: Listener;
  poolHasClients(pool: Pool): boolean;
  onReload(listener: (config: PoolerConfig) => void): void;
  /** The last step of a shutdown, once everything is closed (the log shipper's flush; `graceful` false: at once). */
  finishShutdown(graceful: boolean): Promise<void>;
  /** After a takeover, before the servers close: the idle ones move to the next process. */
  lastServerMoves?(): Promise<void>;
}

/** How long a graceful shutdown waits, at most, for the clients it closed to close their end. */
const CLOSING_LINGER_MS = 1000;

function closingClients(): number {
  return (NativeRelay.get()?.closingClients() ?? 0) + jsClosingClients();
}

export class Maintenance {
  private timer: NodeJS.Timeout | null = null;
  private loginTimer: NodeJS.Timeout | null = null;
  private loginSweepMs = 0;
  private lastRoll = Date.now();
  shuttingDown = false;
  private shutdownDone: Promise<void> | null = null;

  constructor(private readonly host: MaintenanceHost) {}

  /** Starts the ticks (once the listener listens). */
  start(): void {
    this.timer = setInterval(() => this.maintain(), 1000);
    this.timer.unref();
    this.scheduleLoginSweep();
    this.host.onReload(() => this.scheduleLoginSweep());
  }

  /** client_login_timeout's sweep: a quarter of the timeout (100 ms to 1 s), so a login is closed at most a quarter
   * late; none when the timeout is off. */
  private scheduleLoginSweep(): void {
    const timeout = this.host.config.general.client_login_timeout;
    const every = timeout > 0 ? Math.min(1000, Math.max(100, Math.floor(timeout / 4))) : 0;
    if (every === this.loginSweepMs || this.shuttingDown) return;
    if (this.loginTimer) clearInterval(this.loginTimer);
    this.loginTimer = null;
    this.loginSweepMs = every;
    if (!every) return;
    this.loginTimer = setInterval(() => this.expireLogins(), every);
    this.loginTimer.unref();
  }

  /** Closes the logins older than client_login_timeout: JavaScript's in accept order (stopping at the first young
   * one, so a sweep costs what it closes), the native relay's in one pass there. */
  expireLogins(now = Date.now()): number {
    const timeout = this.host.config.general.client_login_timeout;
    if (timeout <= 0) return 0;
    let n = 0;
    for (const c of this.host.logins) {
      if (now - c.connectedAt < timeout) break;
      this.host.logins.delete(c);
      c.loginTimedOut();
      n++;
    }
    if (this.host.listener.nativeListener && this.host.nativeLogins.underWay > 0)
      n += this.host.nativeTls?.expireLogins(this.host.listener.nativeListener, timeout) ?? 0;
    if (n > 0) {
      this.host.counters.loginTimeouts += n;
      this.host.limitedLogs.loginTimeouts.add(n, { client_login_timeout_ms: timeout });
    }
    return n;
  }

  /** The one-second tick. */
  private maintain(): void {
    const now = Date.now();
    if (this.host.listener.nativeListener) {
      const refused = this.host.nativeTls?.acceptRefused(this.host.listener.nativeListener) ?? 0;
      if (refused > 0) {
        this.host.counters.refusedDescriptors += refused;
        this.host.limitedLogs.descriptors.add(refused, { err: 'EMFILE' });
      }
    }
    for (const l of Object.values(this.host.limitedLogs)) l.flush(now);
    this.host.authQuery.maintain(now);
    maintainPools(this.host.poolSet, (pool) => this.host.poolHasClients(pool), now);
    if (now - this.lastRoll >= this.host.config.general.stats_period) {
      for (const pool of this.host.poolSet.pools.values()) {
        pool.stats.roll(now - this.lastRoll);
        pool.health.roll(now - this.lastRoll);
      }
      this.host.apps.roll(now - this.lastRoll);
      this.lastRoll = now;
    }
  }

  private loginsUnderWay(): boolean {
    return this.host.logins.size > 0 || this.host.nativeLogins.underWay > 0;
  }

  /** Stops accepting, lets logins and running transactions finish up to shutdown_timeout, then closes everything.
   * `drain` (after a takeover, when the next process serves): waits for every client to leave, up to
   * shutdown_timeout, instead of closing idle ones at once; an idle transaction-mode client that comes back gets 57P01
   * for its query, so a client between connect and its first query is told in words, not cut. */
  shutdown(graceful = true, opts: { drain?: boolean } = {}): Promise<void> {
    if (this.shutdownDone) return this.shutdownDone;
    this.shuttingDown = true;
    const drain = graceful && opts.drain === true;
    this.host.events.add(
      'shutdown',
      null,
      drain
        ? 'takeover: the next process serves; clients get shutdown_timeout to leave'
        : graceful
          ? 'SHUTDOWN: running transactions get shutdown_timeout'
          : 'immediate shutdown',
    );
    this.shutdownDone = (async () => {
      this.host.listener.close();
      this.host.nativeLogins.materializeHeld();
      for (const p of this.host.poolSet.pools.values()) p.settle();
      if (graceful) {
        const deadline = Date.now() + this.host.config.general.shutdown_timeout;
        for (const p of this.host.poolSet.pools.values()) p.paused = true;
        // Logins under way finish too: their clients were accepted before the listener closed (after a takeover, the
        // next process accepts the new ones), and are told 57P01 like any idle client rather than cut mid-login. The
        // first look comes after a turn of the event loop, once the relay has reported the clients it accepted last.
        do await new Promise((r) => setTimeout(r, 50));
        while (
          Date.now() < deadline &&
          (this.loginsUnderWay() || [...this.host.clients].some((c) => !c.isAdmin && (drain || !c.quiescent)))
        );
      }
      for (const c of [...this.host.clients]) c.kill(drain ? TAKEOVER_TIMEOUT_MESSAGE : 'the pooler is shutting down');
      // A closed client's FATAL is on its way and what it sends meanwhile is read and dropped until it closes: exiting
      // first would reset the connection, and a reset can drop the FATAL unread. Bounded: a client may never close.
      if (graceful) {
        const until = Date.now() + CLOSING_LINGER_MS;
        while (Date.now() < until && closingClients() > 0) await new Promise((r) => setTimeout(r, 10));
      }
      if (drain) await this.host.lastServerMoves?.();
      for (const p of this.host.poolSet.pools.values()) {
        p.failWaiters('the pooler is shutting down', SqlState.AdminShutdown);
        p.closeAll('shutdown', true);
      }
      if (this.timer) clearInterval(this.timer);
      if (this.loginTimer) clearInterval(this.loginTimer);
      for (const c of this.host.poolSet.coordinators.values()) c.close();
      this.host.authQuery.close();
      this.host.log.info('pooler stopped');
      await this.host.finishShutdown(graceful);
    })();
    return this.shutdownDone;
  }
}

/** Each pool's timers (pool.ts maintain); then drops retired pools with no server and no client left, and
 * coordinators with no pool. */
export function maintainPools(set: PoolSet, hasClients: (pool: Pool) => boolean, now: number): void {
  for (const [key, pool] of set.pools) {
    pool.maintain(now);
    if (pool.retired && pool.servers.size === 0 && !hasClients(pool)) {
      set.pools.delete(key);
      pool.coordinator?.pools.delete(pool);
    }
  }
  for (const [db, c] of set.coordinators) {
    if (c.pools.size === 0) {
      c.close();
      set.coordinators.delete(db);
    }
  }
}
