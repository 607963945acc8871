// A pool's server connections, each in exactly one list (idle, lent, active, used), and the one function that moves a server between them (PgBouncer's change_server_state): SHOW, /api and /metrics count these lists.
import type { ServerState } from './server-connection.js';

/** What the lists keep in step with the list a server is in (ServerConnection has both fields). */
export interface ListedServer {
  state: ServerState;
  /** Lent to the native relay for relay-only logins: out of the idle stack, state 'idle'. */
  lent: boolean;
}

/**
 * Where an open server of a pool is: `idle` in the idle stack (the most recently used on top, handed out first);
 * `lent` to the native relay while nobody else could want it (its state stays 'idle'); `active` serving a client
 * (parked pairs included); `used` released but not reusable yet (server_reset_query running, or a forwarded cancel
 * not finished, PgBouncer's sv_used). A server still connecting is not a list member: the pool counts those.
 */
export type ServerList = 'idle' | 'lent' | 'active' | 'used';

/** Servers by state as SHOW POOLS (sv_active, sv_idle, sv_used), /api and /metrics report them: lent ones are idle. */
export interface ServerCounts {
  active: number;
  idle: number;
  used: number;
}

export class ServerLists<S extends ListedServer> implements Iterable<S> {
  private readonly where = new Map<S, ServerList>();
  /** The idle list, bottom first. */
  private stack: S[] = [];
  private readonly n: Record<ServerList, number> = { idle: 0, lent: 0, active: 0, used: 0 };

  /** `idleOut`: [0] is kept equal to the idle list's length. */
  constructor(private readonly idleOut?: Int32Array) {}

  /** Open servers of the pool, in any list. */
  get size(): number {
    return this.where.size;
  }

  [Symbol.iterator](): IterableIterator<S> {
    return this.where.keys();
  }

  has(s: S): boolean {
    return this.where.has(s);
  }

  /** The list `s` is in, or undefined when it is not the pool's (closed, or not added yet). */
  listOf(s: S): ServerList | undefined {
    return this.where.get(s);
  }

  count(list: ServerList): number {
    return this.n[list];
  }

  counts(): ServerCounts {
    return { active: this.n.active, idle: this.n.idle + this.n.lent, used: this.n.used };
  }

  /** The idle list, bottom (least recently released) first. Read only: servers leave it through move(). */
  idle(): readonly S[] {
    return this.stack;
  }

  /** The most recently released idle server, still in the idle list; undefined when none is idle. */
  topIdle(): S | undefined {
    return this.stack[this.stack.length - 1];
  }

  /**
   * The one place a server changes lists: out of the one it is in, into `to`, its `state` and `lent` set to match;
   * `to` null takes it out of the pool (its socket is the caller's to close: close() and the relay's loss of the
   * socket mark it 'closed'). A move into `idle` puts it on top of the stack, even when it was idle already.
   */
  move(s: S, to: ServerList | null): void {
    const from = this.where.get(s);
    if (from !== undefined) {
      this.n[from]--;
      if (from === 'idle') this.unstack(s);
    }
    if (to === null) {
      this.where.delete(s);
      s.lent = false;
      if (this.idleOut) this.idleOut[0] = this.n.idle;
      return;
    }
    this.where.set(s, to);
    this.n[to]++;
    if (to === 'idle') this.stack.push(s);
    if (this.idleOut) this.idleOut[0] = this.n.idle;
    s.lent = to === 'lent';
    s.state = to === 'lent' ? 'idle' : to;
  }

  /** Every server out of the pool at once (KILL, shutdown: the caller has closed them). */
  clear(): void {
    for (const s of this.where.keys()) s.lent = false;
    this.where.clear();
    this.stack = [];
    this.n.idle = this.n.lent = this.n.active = this.n.used = 0;
    if (this.idleOut) this.idleOut[0] = 0;
  }

  private unstack(s: S): void {
    const last = this.stack.length - 1;
    if (this.stack[last] === s) this.stack.pop();
    else this.stack.splice(this.stack.indexOf(s), 1);
  }
}
