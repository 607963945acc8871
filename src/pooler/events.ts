// The ring of recent operator events (SHOW EVENTS, /api/events): what happened to which pool, newest first.

export const EVENT_KINDS = [
  'pause',
  'resume',
  'reload',
  'reconnect',
  'kill',
  'shutdown',
  'connect_failure',
  'backend_unreachable',
  'backend_reachable',
  'login_failure',
  'pool_exhaustion',
  'backend_lost',
  'eviction',
  'client_pinned',
  'client_unpinned',
] as const;
export type PoolerEventKind = (typeof EVENT_KINDS)[number];

export interface PoolerEvent {
  /** Milliseconds since the epoch. */
  readonly time: number;
  readonly kind: PoolerEventKind;
  /** `<database>/<user>`, or null for the whole pooler. */
  readonly pool: string | null;
  readonly message: string;
}

/** Events kept at most; the oldest go first. */
export const EVENT_RING_SIZE = 1000;
/** Login failures: at most this many events per window, the rest counted into the next one. */
const LOGIN_FAILURES_PER_WINDOW = 5;
const LOGIN_FAILURE_WINDOW_MS = 10_000;

export class EventRing {
  private readonly ring: PoolerEvent[] = [];
  private next = 0;
  private loginWindowStart = 0;
  private loginInWindow = 0;
  private loginSuppressed = 0;

  constructor(private readonly size = EVENT_RING_SIZE) {}

  add(kind: PoolerEventKind, pool: string | null, message: string, now = Date.now()): void {
    const e: PoolerEvent = { time: now, kind, pool, message };
    if (this.ring.length < this.size) this.ring.push(e);
    else this.ring[this.next] = e;
    this.next = (this.next + 1) % this.size;
  }

  /** A failed client login; rate-limited so a password-guessing storm cannot flush the ring. */
  loginFailure(message: string, now = Date.now()): void {
    if (now - this.loginWindowStart >= LOGIN_FAILURE_WINDOW_MS) {
      const suppressed = this.loginSuppressed;
      this.loginWindowStart = now;
      this.loginInWindow = 0;
      this.loginSuppressed = 0;
      if (suppressed > 0) {
        this.add(
          'login_failure',
          null,
          `${suppressed} more login failures in the previous ${LOGIN_FAILURE_WINDOW_MS / 1000} s were not recorded one by one`,
          now,
        );
        this.loginInWindow++;
      }
    }
    if (this.loginInWindow >= LOGIN_FAILURES_PER_WINDOW) {
      this.loginSuppressed++;
      return;
    }
    this.loginInWindow++;
    this.add('login_failure', null, message, now);
  }

  /** Newest first. */
  list(): PoolerEvent[] {
    const n = this.ring.length;
    const out: PoolerEvent[] = [];
    for (let i = 1; i <= n; i++) out.push(this.ring[(this.next - i + n) % n]!);
    return out;
  }
}
