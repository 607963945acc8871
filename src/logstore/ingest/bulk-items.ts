// What a bulk keeps per item until its answer is written: 4 bytes (action, index, rejected) plus a generated
// id as 12 bytes, in typed pages; client ids, errors and kept items in sparse maps. No object per item. All of
// it is counted (stateBytes), so that limits.bulk_memory is charged for every item, rejected ones included.

export type BulkOp = 'index' | 'create' | 'update' | 'delete';
export const OPS: readonly BulkOp[] = ['index', 'create', 'update', 'delete'];
const OP_CODE: Record<BulkOp, number> = { index: 0, create: 1, update: 2, delete: 3 };

export interface ItemError {
  status: number;
  type: string;
  reason: string;
}

/** Bit of an item's code: rejected for overload (answered with the bulk's one rejection error). */
const REJECTED = 4;
/** Items per page of generated ids (12 bytes each: 48 KiB a page, allocated when an item of it is stored). */
const PAGE_ITEMS = 1 << 12;
const PAGE_SHIFT = 12;
/** Bytes counted per client id (Map entry and string header) besides its characters (2 bytes each at most). */
const CLIENT_ID_ENTRY_BYTES = 64;
/** Bytes counted per item error entry (Map entry, the error object, its reason text: a line number and a cause). */
export const ERROR_ENTRY_BYTES = 256;
const HEX_DIGIT = Buffer.from('0123456789abcdef');
const HEX_VALUE = new Uint8Array(256);
for (let d = 0; d < 16; d++) {
  HEX_VALUE[HEX_DIGIT[d]!] = d;
  HEX_VALUE[HEX_DIGIT[d]! - (d >= 10 ? 32 : 0)] = d;
}

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
  /** The error of rejected items (429, overload): one object for them all, and a flag bit per item. */
  private rejection: ItemError | null = null;
  private rejectedAll = false;
  private rejectedCount = 0;
  private clientIdBytes = 0;
  private pages = 0;

  /**
   * Bytes of state held for the items so far: the codes array as allocated, the generated-id pages, client ids
   * and error entries (estimated per entry). Rejected items cost their code (and client id) like any other.
   */
  get stateBytes(): number {
    return (
      this.codes.byteLength + this.pages * PAGE_ITEMS * 12 + this.clientIdBytes + this.errors.size * ERROR_ENTRY_BYTES
    );
  }

  /** Answers item i with `err` (a 429 for overload) without an entry of its own. */
  reject(i: number, err: ItemError): void {
    this.rejection ??= err;
    if (this.errors.has(i) || this.codes[i]! & REJECTED) return;
    this.codes[i]! |= REJECTED;
    this.rejectedCount++;
  }

  /** Answers every item not failed already with `err`. */
  rejectAll(err: ItemError): void {
    this.rejection = err;
    this.rejectedAll = true;
  }

  /** The error of item i, if it failed. */
  error(i: number): ItemError | undefined {
    const e = this.errors.get(i);
    if (e) return e;
    if (this.rejectedAll || this.codes[i]! & REJECTED) return this.rejection!;
    return undefined;
  }

  /** Items that failed. */
  get failed(): number {
    return this.rejectedAll ? this.n : this.errors.size + this.rejectedCount;
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
    this.codes[i] = OP_CODE[op] + slot * 8;
    if (id !== null) {
      this.clientIds.set(i, id);
      this.clientIdBytes += CLIENT_ID_ENTRY_BYTES + 2 * id.length;
    }
    return i;
  }

  op(i: number): BulkOp {
    return OPS[this.codes[i]! & 3]!;
  }

  /** The action of an item as its code (0 index, 1 create, 2 update, 3 delete). */
  opCode(i: number): number {
    return this.codes[i]! & 3;
  }

  /** The index slot of an item (items of one index share it); indexName() gives the name. */
  indexOf(i: number): number {
    return this.codes[i]! >>> 3;
  }

  indexName(slot: number): string {
    return this.indexNames[slot]!;
  }

  index(i: number): string {
    return this.indexNames[this.codes[i]! >>> 3]!;
  }

  /** The client `_id` of item i, or null. */
  id(i: number): string | null {
    return this.clientIds.get(i) ?? null;
  }

  /** Records the generated id of a stored item (24 lowercase hex digits at byte `at` of `src`) as 12 bytes. */
  setGenerated(i: number, src: Uint8Array, at: number): void {
    let page = this.idPages[i >>> PAGE_SHIFT];
    if (page === undefined) {
      page = this.idPages[i >>> PAGE_SHIFT] = Buffer.allocUnsafeSlow(PAGE_ITEMS * 12);
      this.pages++;
    }
    const o = (i & (PAGE_ITEMS - 1)) * 12;
    for (let k = 0; k < 12; k++) page[o + k] = (HEX_VALUE[src[at + 2 * k]!]! << 4) | HEX_VALUE[src[at + 2 * k + 1]!]!;
  }

  /** Writes the generated id of a stored item as its 24 hex digits into `dst` at `pos`. */
  writeGenerated(i: number, dst: Buffer, pos: number): void {
    const page = this.idPages[i >>> PAGE_SHIFT]!;
    const o = (i & (PAGE_ITEMS - 1)) * 12;
    for (let k = 0; k < 12; k++) {
      const b = page[o + k]!;
      dst[pos + 2 * k] = HEX_DIGIT[b >>> 4]!;
      dst[pos + 2 * k + 1] = HEX_DIGIT[b & 15]!;
    }
  }

  /** The generated id of a stored item (24 hex digits). */
  generated(i: number): string {
    const b = Buffer.allocUnsafe(24);
    this.writeGenerated(i, b, 0);
    return b.toString('latin1');
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
