// Growable typed arrays of the active index (no per-element heap object, so a large fraction costs the garbage
// collector nothing per document or token).

/** A growable Uint32Array. */
export class U32List {
  data: Uint32Array;
  length = 0;
  constructor(capacity = 16) {
    this.data = new Uint32Array(capacity);
  }
  push(v: number): void {
    if (this.length === this.data.length) this.grow(this.length + 1);
    this.data[this.length++] = v;
  }
  grow(min: number): void {
    const next = new Uint32Array(Math.max(min, this.data.length * 2));
    next.set(this.data.subarray(0, this.length));
    this.data = next;
  }
  view(): Uint32Array {
    return this.data.subarray(0, this.length);
  }
}

/** Twice the table, the new half filled with -1. */
export function grownFilled(old: Int32Array): Int32Array<ArrayBuffer> {
  const next = new Int32Array(old.length * 2).fill(-1);
  next.set(old);
  return next;
}

/** A table of token ids that covers `value` (sized by powers of two, from 256 entries). */
export function grownTable(old: Int32Array | null, value: number): Int32Array {
  let size = old ? old.length : 256;
  while (size <= value) size *= 2;
  const next = new Int32Array(size);
  if (old) next.set(old);
  return next;
}
