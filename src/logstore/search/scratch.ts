// Reusable byte buffers: a search's passing bytes (its packed hits, and the answer written from them), and a
// proxy's bulk batches and their gRPC messages (cluster/cluster.ts). A steady stream of searches otherwise
// allocated two fresh buffers an answer: 50 KB for 100 hits, 3 MB for 5 000, each page-faulted anew past glibc's
// mmap threshold, and the external memory pushed V8 into a full GC every few hundred answers (every ~20 for
// 5 000 hits); a proxy's ingest, 4 MB of fresh buffers a 5 000-document bulk, one full GC every ~15 bulks.

/**
 * A new buffer's size for `size` bytes: a quarter more, in 4 KB pages, so that it serves the next request of a
 * similar size; no more than that, as a buffer its taker never gives back (store mode's hits, export, async
 * search) costs what a buffer of its own did.
 */
function roomy(size: number): number {
  return Math.ceil((size + (size >> 2)) / 4096) * 4096 || 4096;
}

/** Buffers handed out, kept for reuse once given back: at most `maxKept` of them, none past `maxKeptBytes`. */
export class ScratchPool {
  /** Buffers handed out and not given back (their ArrayBuffers). */
  private readonly out = new WeakSet<ArrayBufferLike>();
  /** Buffers free for reuse, whole (each its own ArrayBuffer). */
  private readonly free: Buffer[] = [];

  constructor(
    private readonly maxKept: number,
    private readonly maxKeptBytes: number,
  ) {}

  /** Bytes the pool keeps while nothing is taken (at most maxKept * maxKeptBytes). */
  get keptBytes(): number {
    return this.free.reduce((n, b) => n + b.length, 0);
  }

  /**
   * `size` bytes, uninitialized: a subarray of the smallest free kept buffer that is large enough, else of a new
   * one a little larger than asked. Each is its own ArrayBuffer at offset 0 (it can be moved to a worker).
   */
  take(size: number): Buffer {
    const free = this.free;
    let best = -1;
    for (let i = 0; i < free.length; i++) {
      const b = free[i]!;
      if (b.length >= size && (best < 0 || b.length < free[best]!.length)) best = i;
    }
    let whole: Buffer;
    if (best >= 0) {
      whole = free[best]!;
      free[best] = free[free.length - 1]!;
      free.pop();
    } else whole = Buffer.allocUnsafeSlow(roomy(size));
    this.out.add(whole.buffer);
    return whole.subarray(0, size);
  }

  /**
   * Returns a buffer take() handed out (or any view of it) once nothing reads it any more. Anything else, or a
   * buffer given back already, is ignored; buffers past maxKeptBytes and past maxKept kept are left to the GC.
   */
  give(buf: Uint8Array): void {
    const ab = buf.buffer;
    if (!this.out.has(ab)) return;
    this.out.delete(ab);
    if (ab.byteLength > this.maxKeptBytes) return;
    const free = this.free;
    if (free.length >= this.maxKept) {
      // Keep the larger ones: a small request fits in them too.
      let smallest = 0;
      for (let i = 1; i < free.length; i++) if (free[i]!.length < free[smallest]!.length) smallest = i;
      if (free[smallest]!.length >= ab.byteLength) return;
      free[smallest] = Buffer.from(ab, 0, ab.byteLength);
      return;
    }
    free.push(Buffer.from(ab, 0, ab.byteLength));
  }
}

/** The searches' pool: four buffers of up to 8 MB. */
const searches = new ScratchPool(4, 8 << 20);

/** A search's scratch buffer (ScratchPool.take of the searches' pool). */
export function takeScratch(size: number): Buffer {
  return searches.take(size);
}

/** Gives a search's scratch buffer back (ScratchPool.give of the searches' pool). */
export function giveBack(buf: Uint8Array): void {
  searches.give(buf);
}
