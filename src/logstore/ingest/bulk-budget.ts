// The memory that bulks in flight may hold on the HTTP thread (limits.bulk_memory): batches sent to shards and
// not yet stored, and the per-item state kept until each answer is written. Past it, documents are answered
// 429 es_rejected_execution_exception (shippers retry those items) instead of being held. Item state, which a
// bulk must keep to answer even a rejected item, is charged as it is read; over the budget a bulk reads on only
// once its own batches are stored, and one that would still take it past an eighth over is cut.

export class BulkBudget {
  private held = 0;
  /** Of `held`, the batches taken and not given back (takeBatch / giveBatch). */
  private batches = 0;

  constructor(readonly limit: number) {}

  get used(): number {
    return this.held;
  }

  /** Item state may take the budget up to this; a bulk that needs more is cut (BulkTooLargeError). */
  get hardLimit(): number {
    return this.limit + Math.floor(this.limit / 8);
  }

  /** Takes room for a batch of `bytes`; false (nothing taken) when it does not fit. A batch always fits while no
   * other batch is held, whatever item state holds and however large it is: otherwise a bulk whose batches are each
   * larger than the budget would be answered 429 on every item, every time it is sent again. */
  take(bytes: number): boolean {
    if (this.batches > 0 && this.held + bytes > this.limit) return false;
    this.held += bytes;
    this.batches += bytes;
    return true;
  }

  /** Gives back a batch's room once it is stored (or failed). */
  giveBatch(bytes: number): void {
    this.batches = Math.max(0, this.batches - bytes);
    this.give(bytes);
  }

  /** The batch size that keeps a bulk's batches within the budget: a quarter of it, between 64 KiB and `max`. */
  batchSize(max: number): number {
    return Math.min(max, Math.max(64 * 1024, Math.floor(this.limit / 4)));
  }

  /** Charges item state that already exists (it cannot be refused); false once the budget is past hardLimit. */
  charge(bytes: number): boolean {
    this.held += bytes;
    return this.held <= this.hardLimit;
  }

  /** Gives back what take() or charge() took (a batch's bytes once stored; its items' state once answered). */
  give(bytes: number): void {
    this.held = Math.max(0, this.held - bytes);
  }
}
