// What a bulk keeps per item until its answer is written: 4 bytes (action and index) plus the 24 bytes of a
// generated id, in typed pages; client ids, errors and kept items in sparse maps. No object per item.

export type BulkOp = 'index' | 'create' | 'update' | 'delete';
const OPS: readonly BulkOp[] = ['index', 'create', 'update', 'delete'];
const OP_CODE: Record<BulkOp, number> = { index: 0, create: 1, update: 2, delete: 3 };

export interface ItemError {
  status: number;
  type: string;
  reason: string;
}

/** Items per page of generated ids (24 bytes each: 1.5 MiB a page). */
const PAGE_ITEMS = 1 << 16;
/** Bytes of state kept per item (code + generated id): the per-item term of the memory bound. */
export const ITEM_STATE_BYTES = 4 + 24;

export class BulkItems {
  private n = 0;
  private codes = new Uint32Array(1024);
  private readonly indexNames: string[] = [];
  private readonly indexSlot = new Map<string, number>();
  /** The `_id` of action lines that carried one (the shard generates the others'). */
  readonly clientIds = new Map<number, string>();
  readonly errors = new Map<number, ItemError>();
  /** `index` items whose `_id` was already stored: the first copy is kept and the item answers 200 "noop". */
  readonly kept = new Set<number>();
  private readonly idPages: (Buffer | undefined)[] = [];
  /** The error of every item not in `errors` (a bulk rejected whole, per item): one object for them all. */
  rejected: ItemError | null = null;

  /** The error of item i, if it failed. */
  error(i: number): ItemError | undefined {
    return this.errors.get(i) ?? this.rejected ?? undefined;
  }

  /** Items that failed. */
  get failed(): number {
    return this.rejected ? this.n : this.errors.size;
  }

  get count(): number {
    return this.n;
  }

  /** Adds an item; returns its number. */
  push(op: BulkOp, index: string, id: string | null): number {
    let slot = this.indexSlot.get(index);
    if (slot === undefined) {
      slot = this.indexNames.length;
      this.indexNames.push(index);
      this.indexSlot.set(index, slot);
    }
    if (this.n === this.codes.length) {
      const next = new Uint32Array(this.codes.length * 2);
      next.set(this.codes);
      this.codes = next;
    }
    const i = this.n++;
    this.codes[i] = OP_CODE[op] + slot * 4;
    if (id !== null) this.clientIds.set(i, id);
    return i;
  }

  op(i: number): BulkOp {
    return OPS[this.codes[i]! & 3]!;
  }

  /** The index slot of an item (items of one index share it); indexName() gives the name. */
  indexOf(i: number): number {
    return this.codes[i]! >>> 2;
  }

  indexName(slot: number): string {
    return this.indexNames[slot]!;
  }

  index(i: number): string {
    return this.indexNames[this.codes[i]! >>> 2]!;
  }

  /** The client `_id` of item i, or null. */
  id(i: number): string | null {
    return this.clientIds.get(i) ?? null;
  }

  /** Records the 24-byte generated id of a stored item (from a shard's answer, at byte `at` of `src`). */
  setGenerated(i: number, src: Uint8Array, at: number): void {
    const p = i >>> 16;
    const page = (this.idPages[p] ??= Buffer.allocUnsafeSlow(PAGE_ITEMS * 24));
    page.set(src.subarray(at, at + 24), (i & (PAGE_ITEMS - 1)) * 24);
  }

  /** The generated id of a stored item, as the page and the byte where it starts. */
  generated(i: number): [Buffer, number] {
    return [this.idPages[i >>> 16]!, (i & (PAGE_ITEMS - 1)) * 24];
  }

  /** Every item's action (tests and small answers). */
  ops(): BulkOp[] {
    return Array.from({ length: this.n }, (_, i) => this.op(i));
  }

  /** Every item's client id or null (tests and small answers). */
  ids(): (string | null)[] {
    return Array.from({ length: this.n }, (_, i) => this.id(i));
  }

  indexes(): string[] {
    return Array.from({ length: this.n }, (_, i) => this.index(i));
  }
}
