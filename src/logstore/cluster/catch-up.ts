// Batches a replica missed while it was down, kept by the proxy and sent to it, in order, until it has them all:
// with one replica of a shard down, writes are acknowledged by the replicas that answer (cluster.write_quorum) and
// the missing one is caught up when it returns. Until its queue is empty the replica is "behind": it takes no new
// batch directly (they queue behind the old ones) and reads go to its up-to-date replicas first.
import type { Logger } from 'pino';
import type { StoreClient } from './store-client.js';
import { isCallerError } from './store-client.js';

function message(err: unknown): string {
  return (err as Error)?.message ?? String(err);
}

export class CatchUp {
  private readonly queues = new Map<StoreClient, Buffer[]>();
  private readonly draining = new Set<StoreClient>();
  private held = 0;
  private closed = false;
  private timers = new Set<NodeJS.Timeout>();

  /** `maxBytes`: batches held for all replicas at most (cluster.catchup_memory); `retryMs`: the wait between tries
   * of a replica that is still down (cluster.breaker_cooldown). */
  constructor(
    private readonly maxBytes: number,
    private readonly retryMs: number,
    private readonly log: Logger,
  ) {}

  /** Batches queued for the replica (0: up to date). */
  behind(c: StoreClient): number {
    return this.queues.get(c)?.length ?? 0;
  }

  /** Bytes held for every replica. */
  get bytes(): number {
    return this.held;
  }

  /** True when a copy of `batch` for each of `clients` fits in catchup_memory: `add` will take it. */
  fits(batch: Buffer, clients: number): boolean {
    return this.held + batch.length * clients <= this.maxBytes;
  }

  /** Queues a copy of `batch` (the caller's buffer is reused after this returns) for each replica. */
  add(clients: StoreClient[], batch: Buffer): void {
    if (clients.length === 0) return;
    const copy = Buffer.from(batch);
    for (const c of clients) {
      let q = this.queues.get(c);
      if (!q) this.queues.set(c, (q = []));
      if (q.length === 0)
        this.log.warn(
          { store: c.addr },
          'a replica missed a batch: writes are acknowledged without it and it is caught up when it answers',
        );
      q.push(copy);
      this.held += copy.length;
      void this.drain(c);
    }
  }

  /** Sends the replica its queue, oldest first; a failure waits `retryMs` and tries the same batch again. The store
   * remembers recent batches by their key, so one that arrived but whose answer was lost is not stored twice. */
  private async drain(c: StoreClient): Promise<void> {
    if (this.draining.has(c)) return;
    this.draining.add(c);
    try {
      const q = this.queues.get(c)!;
      let caughtUp = 0;
      while (q.length > 0 && !this.closed) {
        const batch = q[0]!;
        try {
          await c.bulk(batch);
        } catch (err) {
          if (!isCallerError(err)) {
            await new Promise<void>((resolve) => {
              const t = setTimeout(() => {
                this.timers.delete(t);
                resolve();
              }, this.retryMs);
              this.timers.add(t);
            });
            continue;
          }
          // The store refuses the batch itself (it cannot take it now or ever): nothing a retry would change.
          this.log.error(
            { store: c.addr, err: message(err) },
            'a replica refused a batch it missed: it lacks those documents',
          );
        }
        q.shift();
        this.held -= batch.length;
        caughtUp++;
      }
      if (q.length === 0 && caughtUp > 0) this.log.warn({ store: c.addr, batches: caughtUp }, 'a replica is caught up');
    } finally {
      this.draining.delete(c);
    }
  }

  close(): void {
    this.closed = true;
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
  }
}
