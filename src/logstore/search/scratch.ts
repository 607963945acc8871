// Reusable byte buffers for a search's passing bytes (its packed hits, and the answer written from them). A steady
// stream of searches otherwise allocated two fresh buffers an answer: 50 KB for 100 hits, 3 MB for 5 000, each
// page-faulted anew past glibc's mmap threshold, and the external memory pushed V8 into a full GC every few hundred
// answers (every ~20 for 5 000 hits).
const MAX_KEPT_BYTES = 8 << 20;
const MAX_KEPT = 4;

/** Buffers handed out by takeScratch and not given back (their ArrayBuffers). */
const out = new WeakSet<ArrayBufferLike>();
/** Buffers free for reuse, whole (each its own ArrayBuffer). */
const free: Buffer[] = [];

/**
 * A new buffer's size for `size` bytes: a quarter more, in 4 KB pages, so that it serves the next search of a
 * similar size; no more than that, as a buffer its taker never gives back (store mode's hits, export, async
 * search) costs what a buffer of its own did.
 */
function roomy(size: number): number {
  return Math.ceil((size + (size >> 2)) / 4096) * 4096 || 4096;
}

/**
 * `size` bytes, uninitialized: a subarray of the smallest free kept buffer that is large enough, else of a new
 * one a little larger than asked.
 */
export function takeScratch(size: number): Buffer {
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
  out.add(whole.buffer);
  return whole.subarray(0, size);
}

/**
 * Returns a buffer takeScratch handed out (or any view of it) once nothing reads it any more. Anything else, or
 * a buffer given back already, is ignored; buffers past 8 MB and past four kept are left to the GC.
 */
export function giveBack(buf: Uint8Array): void {
  const ab = buf.buffer;
  if (!out.has(ab)) return;
  out.delete(ab);
  if (ab.byteLength > MAX_KEPT_BYTES) return;
  if (free.length >= MAX_KEPT) {
    // Keep the larger ones: a small request fits in them too.
    let smallest = 0;
    for (let i = 1; i < free.length; i++) if (free[i]!.length < free[smallest]!.length) smallest = i;
    if (free[smallest]!.length >= ab.byteLength) return;
    free[smallest] = Buffer.from(ab, 0, ab.byteLength);
    return;
  }
  free.push(Buffer.from(ab, 0, ab.byteLength));
}
