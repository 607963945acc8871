// Forgetting the copy a batch left on a shard it moved away from (or whose items failed): store API `Forget` on
// every replica of that shard, so that totals, histograms and aggregations count each document once. The
// replicas that took the batch are waited for (they just answered); the others (down, hung, or one that stored
// it after its deadline) are asked again every breaker_cooldown until they answer. Each forget names the batch
// too (store.proto BatchKey): a store that took it forgets its ids once stored, one it has not reached yet refuses
// it, so a copy is forgotten even when no replica answered in time and the proxy never learned its ids.
import type { Logger } from 'pino';
import type { BatchKey } from '../grpc/store/messages.js';
import type { StoreClient } from './store-client.js';

/** The replicas of one shard, as the proxy's shard groups list them. */
interface ShardReplicas {
  replicas: StoreClient[];
}

/** A shard a batch was sent to and then left (it moved on, or failed): its replicas in `acked` stored it. */
export interface Leftover {
  shard: ShardReplicas;
  acked: Set<number>;
  /** Replicas that refused it for their limits.bulk_memory (RESOURCE_EXHAUSTED): they stored none of it. */
  refused: Set<number>;
}

/** Forgets kept for stores that have not answered them (each up to ~120 KB of ids). */
const MAX_OUTBOX = 4096;

function message(err: unknown): string {
  return (err as Error)?.message ?? String(err);
}

interface Forget {
  client: StoreClient;
  /** As in BulkResponse.ids; empty when no replica answered. */
  ids: Uint8Array;
  batch: BatchKey;
}

export class ForgetOutbox {
  /** Forgets not answered yet, retried every `delay` ms until their store answers. */
  private readonly outbox: Forget[] = [];
  private timer: NodeJS.Timeout | null = null;
  private closed = false;

  constructor(
    private readonly delay: number,
    private readonly log: Logger,
  ) {}

  /**
   * Forgets the batch `batch` (its `ids` as in BulkResponse.ids, or empty when no replica answered) on every
   * replica of each leftover shard that may hold it.
   */
  async forget(leftovers: Leftover[], ids: Uint8Array | null, batch: BatchKey): Promise<void> {
    if (leftovers.length === 0) return;
    const f = (client: StoreClient): Forget => ({ client, ids: ids ?? new Uint8Array(0), batch });
    await Promise.all(
      leftovers.flatMap((l) =>
        l.shard.replicas.map(async (c, i) => {
          if (l.refused.has(i) && !l.acked.has(i)) return;
          if (!l.acked.has(i)) {
            this.queue(f(c));
            return;
          }
          try {
            await c.forget(f(c).ids, [batch]);
          } catch (err) {
            this.log.warn(
              { store: c.addr, err: message(err) },
              "a moved batch's copy could not be forgotten yet; retrying",
            );
            this.queue(f(c));
          }
        }),
      ),
    );
  }

  close(): void {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
  }

  private queue(f: Forget): void {
    this.outbox.push(f);
    if (this.outbox.length > MAX_OUTBOX) {
      const lost = this.outbox.shift()!;
      this.log.error(
        { store: lost.client.addr, docs: lost.batch.offs_count / 2 },
        "forget outbox full: a moved batch's copy stays counted on that store",
      );
    }
    if (!this.closed) this.timer ??= setTimeout(() => void this.drain(), this.delay).unref();
  }

  private async drain(): Promise<void> {
    const due = this.outbox.splice(0);
    await Promise.all(
      due.map(async (f) => {
        try {
          await f.client.forget(f.ids, [f.batch]);
        } catch {
          this.outbox.push(f);
        }
      }),
    );
    this.timer = null;
    if (this.outbox.length > 0 && !this.closed) this.timer = setTimeout(() => void this.drain(), this.delay).unref();
  }
}
