// The clients waiting for a server of one pool, first come first served (a head index, compacted now and then).
import type { ServerConnection } from './server-connection.js';

/** A client waiting for a server. */
export interface PoolWaiter {
  waitingSince: number;
  onServer(server: ServerConnection): void;
  onPoolError(message: string, sqlstate: string): void;
}

export class WaiterQueue {
  /** Taken slots before `head` are emptied at once: a client that got its server is not kept alive by the queue. */
  private items: (PoolWaiter | undefined)[] = [];
  private head = 0;

  get length(): number {
    return this.items.length - this.head;
  }

  push(w: PoolWaiter): void {
    this.items.push(w);
  }

  /** The longest-waiting client, left in the queue. */
  peek(): PoolWaiter | undefined {
    return this.head < this.items.length ? this.items[this.head] : undefined;
  }

  /** Takes the longest-waiting client. */
  shift(): PoolWaiter | undefined {
    if (this.head >= this.items.length) return undefined;
    const w = this.items[this.head]!;
    this.items[this.head++] = undefined;
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return w;
  }

  /** Removes a client that gave up (timeout, disconnect). */
  remove(w: PoolWaiter): void {
    const i = this.items.indexOf(w, this.head);
    if (i >= 0) this.items.splice(i, 1);
  }
}
