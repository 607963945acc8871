// Containers for what comes and goes with every login (clients by relay id, cancel keys, the registry of sessions),
// shaped for V8's garbage collector. A long-lived Map or Set that is filled and emptied thousands of times a second
// keeps every client it ever held alive through the young-generation collections: each rehash leaves the obsolete
// hash table pointing at its successor (for iterators), the first obsolete table that reached the old generation
// keeps the whole chain of its successors and their entries alive until the next full collection, and half of what
// a login allocates was promoted (trace-gc-nvp under pgbench -C: survival 48%, promotion 99.9%). These overwrite
// slots of arrays that are only replaced when they grow, so an entry that leaves is garbage at once.

/** Positive int32 keys (relay ids, pids) to values: open addressing, linear probing, deletion by backward shift (no
 * tombstones, so churn never rebuilds the table). */
export class IdTable<V> {
  private keys: Int32Array;
  private vals: (V | undefined)[];
  private shift: number;
  private count = 0;

  constructor(capacity = 64) {
    let bits = 4;
    while (1 << bits < capacity) bits++;
    this.keys = new Int32Array(1 << bits);
    this.vals = new Array<V | undefined>(1 << bits).fill(undefined);
    this.shift = 32 - bits;
  }

  get size(): number {
    return this.count;
  }

  private home(key: number): number {
    return Math.imul(key, 0x9e3779b1) >>> this.shift;
  }

  /** The slot holding `key`, or the empty slot where it would go. */
  private find(key: number): number {
    const keys = this.keys;
    const mask = keys.length - 1;
    let i = this.home(key);
    while (keys[i] !== 0 && keys[i] !== key) i = (i + 1) & mask;
    return i;
  }

  get(key: number): V | undefined {
    const i = this.find(key);
    return this.keys[i] === key ? this.vals[i] : undefined;
  }

  set(key: number, value: V): void {
    if (!(key > 0 && key <= 0x7fffffff && Number.isInteger(key)))
      throw new RangeError(`IdTable key must be a positive int32, got ${key}`);
    let i = this.find(key);
    if (this.keys[i] !== key) {
      if ((this.count + 1) * 2 > this.keys.length) {
        this.grow();
        i = this.find(key);
      }
      this.keys[i] = key;
      this.count++;
    }
    this.vals[i] = value;
  }

  delete(key: number): boolean {
    if (!(key > 0)) return false;
    const keys = this.keys;
    const vals = this.vals;
    const mask = keys.length - 1;
    let i = this.find(key);
    if (keys[i] !== key) return false;
    // Backward shift: entries after the hole that may move into it do, so every probe sequence stays unbroken.
    let j = i;
    for (;;) {
      j = (j + 1) & mask;
      const k = keys[j]!;
      if (k === 0) break;
      const h = this.home(k);
      const movable = j > i ? h <= i || h > j : h <= i && h > j;
      if (movable) {
        keys[i] = k;
        vals[i] = vals[j];
        i = j;
      }
    }
    keys[i] = 0;
    vals[i] = undefined;
    this.count--;
    return true;
  }

  private grow(): void {
    const oldKeys = this.keys;
    const oldVals = this.vals;
    const size = oldKeys.length * 2;
    this.keys = new Int32Array(size);
    this.vals = new Array<V | undefined>(size).fill(undefined);
    this.shift--;
    for (let i = 0; i < oldKeys.length; i++) {
      const k = oldKeys[i]!;
      if (k === 0) continue;
      const j = this.find(k);
      this.keys[j] = k;
      this.vals[j] = oldVals[i];
    }
    // The old array may sit in the old generation: emptied, it keeps nobody alive.
    oldVals.fill(undefined);
  }
}

/** What a SlotSet needs of its members: where it keeps them (-1 while not in a set). */
export interface Slotted {
  slot: number;
}

/** A set of objects (one set per object at a time) as a dense array, each member knowing its index: add, delete and
 * has in constant time, iteration over the array. Delete moves the last member into the hole, so a caller that
 * deletes while iterating iterates over a copy (`[...set]`). */
export class SlotSet<T extends Slotted> implements Iterable<T> {
  private readonly items: T[] = [];

  get size(): number {
    return this.items.length;
  }

  has(item: T): boolean {
    return item.slot >= 0 && this.items[item.slot] === item;
  }

  add(item: T): void {
    if (this.has(item)) return;
    item.slot = this.items.length;
    this.items.push(item);
  }

  delete(item: T): boolean {
    if (!this.has(item)) return false;
    const last = this.items.pop()!;
    if (last !== item) {
      this.items[item.slot] = last;
      last.slot = item.slot;
    }
    item.slot = -1;
    return true;
  }

  [Symbol.iterator](): Iterator<T> {
    return this.items[Symbol.iterator]();
  }
}
