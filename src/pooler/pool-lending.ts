// What a pool lends the native relay for relay-only logins (native/relay-lend.cc): idle servers holding a native login kind's parameters, lent while nobody else could want them, taken back when someone does, or handed to the relay-only client reported holding one.
import type { Relay } from './relay/relay.js';
import type { ServerConnection } from './server-connection.js';
import type { ServerLists } from './server-lists.js';
import type { PoolStats } from './stats.js';

export class ServerLending {
  /** Lends an idle server to the native relay for relay-only logins (the pooler's, for pools whose logins the relay
   * runs: native-logins.ts); false when it cannot. Null: this pool lends nothing. */
  lender: ((s: ServerConnection) => boolean) | null = null;
  private queued = false;

  constructor(
    private readonly servers: ServerLists<ServerConnection>,
    private readonly relay: Relay,
    private readonly stats: PoolStats,
    /** Nobody else could want an idle server of the pool now (Pool.mayStillPark). */
    private readonly mayLend: () => boolean,
  ) {}

  /** The lent servers no client uses (one with `one`), back in the idle stack. */
  takeBack(one = false): void {
    if (this.servers.count('lent') === 0) return;
    for (const id of this.relay.unlend?.(this.stats, one) ?? []) {
      const s = this.lentServer(id);
      if (s) this.servers.move(s, 'idle');
    }
  }

  /** A relay-only client was reported holding the lent server whose end is `endId`: it is that client's now. */
  take(endId: number): ServerConnection | null {
    const s = this.lentServer(endId);
    if (!s) return null;
    this.servers.move(s, 'active');
    s.lastUsed = Date.now();
    return s;
  }

  /** Idle servers go to the relay after this turn (not at once: whoever released them may want one back now). */
  queue(): void {
    if (!this.lender || this.queued) return;
    this.queued = true;
    queueMicrotask(() => {
      this.queued = false;
      this.lendIdle();
    });
  }

  /** The lent server whose relay end is `endId` (still in the lent list); null when none is. */
  private lentServer(endId: number): ServerConnection | null {
    if (this.servers.count('lent') === 0) return null;
    for (const s of this.servers) if (s.lent && (s.end as { id?: number }).id === endId) return s;
    return null;
  }

  /** Lends the relay the idle servers that hold a native login kind's parameters, while nobody else could want them. */
  private lendIdle(): void {
    const lender = this.lender;
    if (!lender || this.servers.count('idle') === 0 || !this.mayLend()) return;
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
}
