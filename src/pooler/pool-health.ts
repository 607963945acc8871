// A pool's view of its PostgreSQL: the last server connect error, connect failures per second, and the outage
// ("PostgreSQL unreachable since <time>") that starts when no server login succeeded for connect_timeout while clients
// needed one, and ends at the next server login that succeeds.

export interface ConnectError {
  readonly message: string;
  /** SQLSTATE PostgreSQL sent, or the socket's errno (ECONNREFUSED) when it never answered. */
  readonly code: string;
  /** Milliseconds since the epoch. */
  readonly time: number;
}

/** An outage began (`unreachable`) or ended (`reachable`); the pool turns it into an event. */
export type HealthChange =
  | { readonly kind: 'unreachable'; readonly since: number; readonly error: ConnectError }
  | { readonly kind: 'reachable'; readonly since: number; readonly until: number; readonly failures: number };

export interface HealthSnapshot {
  /** Start of the outage, null while PostgreSQL is reachable. */
  readonly unreachableSince: number | null;
  readonly lastError: ConnectError | null;
  /** Failed server connects since start. */
  readonly connectFailures: number;
  /** Failed server connects per second over the last stats period (the overview's window), unrounded. */
  readonly connectFailuresPerSec: number;
}

export class PoolHealth {
  lastError: ConnectError | null = null;
  connectFailures = 0;
  unreachableSince: number | null = null;
  /** First failed connect since the last login that succeeded; null when the last one succeeded. */
  private failingSince: number | null = null;
  /** Last time a client waited on, or was refused for, a failing connect. */
  private clientsAffectedAt = -1;
  /** connectFailures before the first failure of the current run. */
  private failuresBefore = 0;
  private prevFailures = 0;
  private lastFailures = 0;
  private lastPeriodMs = 1;

  /** `timeoutMs`: connect_timeout, how long logins may fail before it is an outage (read at each call: RELOAD may change it). */
  constructor(private readonly timeoutMs: () => number) {}

  /** A server connect failed; `clientsNeedServer`: clients are waiting for one, or are refused with this error. */
  connectFailed(message: string, code: string, now: number, clientsNeedServer: boolean): HealthChange | null {
    this.connectFailures++;
    this.lastError = { message, code, time: now };
    if (this.failingSince === null) {
      this.failingSince = now;
      this.failuresBefore = this.connectFailures - 1;
    }
    if (clientsNeedServer) this.clientsAffectedAt = now;
    return this.check(now, false);
  }

  /** A server logged in: an outage ends. */
  connectSucceeded(now: number): HealthChange | null {
    this.failingSince = null;
    const since = this.unreachableSince;
    if (since === null) return null;
    this.unreachableSince = null;
    return { kind: 'reachable', since, until: now, failures: this.connectFailures - this.failuresBefore };
  }

  /** Called on every failure and maintenance tick: the outage starts once logins failed for connect_timeout while
   * clients needed a server (waiting now, or refused since the failures began). */
  check(now: number, clientsWaiting: boolean): HealthChange | null {
    if (this.unreachableSince !== null || this.failingSince === null || this.lastError === null) return null;
    if (clientsWaiting) this.clientsAffectedAt = now;
    if (now - this.failingSince < this.timeoutMs() || this.clientsAffectedAt < this.failingSince) return null;
    this.unreachableSince = this.failingSince;
    return { kind: 'unreachable', since: this.failingSince, error: this.lastError };
  }

  /** Every stats_period, with the pool's stats: the window connectFailuresPerSec is read over. */
  roll(periodMs: number): void {
    this.prevFailures = this.lastFailures;
    this.lastFailures = this.connectFailures;
    this.lastPeriodMs = periodMs;
  }

  snapshot(): HealthSnapshot {
    return {
      unreachableSince: this.unreachableSince,
      lastError: this.lastError,
      connectFailures: this.connectFailures,
      connectFailuresPerSec: ((this.lastFailures - this.prevFailures) * 1000) / this.lastPeriodMs,
    };
  }
}
