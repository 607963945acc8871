// Bounded FIFO of serialized log documents for the shipper: a ring that drops the oldest when full.

/** A document taken out for a bulk request, with the number of times the store already refused it per item. */
export interface QueuedDoc {
  doc: string;
  tries: number;
}

export class ShipQueue {
  private docs: (string | undefined)[];
  private tries: Uint8Array;
  private head = 0;
  private count = 0;

  constructor(private cap: number) {
    this.docs = new Array<string | undefined>(cap);
    this.tries = new Uint8Array(cap);
  }

  get length(): number {
    return this.count;
  }

  get capacity(): number {
    return this.cap;
  }

  /** Appends a new document; returns 1 when the oldest one had to be dropped to make room, else 0. */
  push(doc: string, tries = 0): number {
    let dropped = 0;
    if (this.count === this.cap) {
      this.head = (this.head + 1) % this.cap;
      this.count--;
      dropped = 1;
    }
    const at = (this.head + this.count) % this.cap;
    this.docs[at] = doc;
    this.tries[at] = tries;
    this.count++;
    return dropped;
  }

  /**
   * Puts documents that were taken out (and not stored) back in front, in their order. They are older than
   * everything queued, so when the queue is full they are the ones dropped; returns how many were.
   */
  unshift(items: readonly QueuedDoc[]): number {
    let dropped = 0;
    for (let i = items.length - 1; i >= 0; i--) {
      if (this.count === this.cap) {
        dropped += i + 1;
        break;
      }
      this.head = (this.head - 1 + this.cap) % this.cap;
      this.docs[this.head] = items[i]!.doc;
      this.tries[this.head] = Math.min(255, items[i]!.tries);
      this.count++;
    }
    return dropped;
  }

  /** Takes up to `n` of the oldest documents out. */
  take(n: number): QueuedDoc[] {
    const k = Math.min(n, this.count);
    const out = new Array<QueuedDoc>(k);
    for (let i = 0; i < k; i++) {
      out[i] = { doc: this.docs[this.head]!, tries: this.tries[this.head]! };
      this.docs[this.head] = undefined;
      this.head = (this.head + 1) % this.cap;
    }
    this.count -= k;
    return out;
  }

  /** A new capacity (RELOAD): keeps the newest documents that fit; returns how many were dropped. */
  resize(cap: number): number {
    if (cap === this.cap) return 0;
    const keep = this.take(this.count);
    const dropped = Math.max(0, keep.length - cap);
    this.cap = cap;
    this.docs = new Array<string | undefined>(cap);
    this.tries = new Uint8Array(cap);
    this.head = 0;
    for (const item of keep.slice(dropped)) this.push(item.doc, item.tries);
    return dropped;
  }

  /** Empties the queue; returns how many documents it held. */
  clear(): number {
    const n = this.count;
    this.docs = new Array<string | undefined>(this.cap);
    this.head = 0;
    this.count = 0;
    return n;
  }
}
