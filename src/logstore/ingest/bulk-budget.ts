// The memory that bulks in flight may hold on the HTTP thread (limits.bulk_memory): batches sent to shards and
// not yet stored, and the per-item state kept until each answer is written. Past it, documents are answered
// 429 es_rejected_execution_exception (shippers retry those items) instead of being held.
import { ITEM_STATE_BYTES } from './bulk-items.js';

export class BulkBudget {
  private held = 0;

  constructor(readonly limit: number) {}

  get used(): number {
    return this.held;
  }

  /** Takes room for a batch of `bytes` and `items` documents; false (nothing taken) when it does not fit. */
  take(bytes: number, items: number): boolean {
    const need = bytes + items * ITEM_STATE_BYTES;
    if (this.held > 0 && this.held + need > this.limit) return false;
    this.held += need;
    return true;
  }

  /** Gives back what take() took (the batch's bytes once stored; its items' state once the answer is written). */
  give(bytes: number): void {
    this.held = Math.max(0, this.held - bytes);
  }
}
