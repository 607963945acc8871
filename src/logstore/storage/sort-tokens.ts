// Sorting a fraction's token dictionary at seal time. Array.prototype.sort on ~800 000 strings (a day of
// client addresses) cost ~0.9 s per 128 MiB fraction; an MSD radix sort on UTF-16 code units gives the
// same order (JavaScript's `<` on strings, which sealed readers binary-search with) in a fraction of it.

/** Buckets below this size are finished by insertion sort. */
const SMALL = 32;
/** Widest code-unit range sorted by counting at one depth; wider (rare) ranges fall back to a comparison sort. */
const MAX_SPAN = 4096;

/** A permutation of 0..strs.length-1 that orders `strs` as `a < b` does on JavaScript strings. */
export function sortedOrder(strs: readonly string[]): Uint32Array {
  const n = strs.length;
  const idx = new Uint32Array(n);
  for (let i = 0; i < n; i++) idx[i] = i;
  if (n < 2) return idx;
  const tmp = new Uint32Array(n);
  const codes = new Int32Array(n);
  const count = new Int32Array(MAX_SPAN + 2);
  // Pending buckets as (lo, hi, depth) triples; every string of [lo, hi) shares its first `depth` units.
  const stack: number[] = [0, n, 0];
  while (stack.length > 0) {
    const depth = stack.pop()!;
    const hi = stack.pop()!;
    const lo = stack.pop()!;
    if (hi - lo <= SMALL) {
      insertionSort(strs, idx, lo, hi);
      continue;
    }
    // Code unit at `depth` plus one; 0 for a string that ends before it (a prefix sorts first).
    let min = 0x10001;
    let max = -1;
    for (let i = lo; i < hi; i++) {
      const s = strs[idx[i]!]!;
      const c = depth < s.length ? s.charCodeAt(depth) + 1 : 0;
      codes[i] = c;
      if (c < min) min = c;
      if (c > max) max = c;
    }
    if (min === max) {
      if (min !== 0) stack.push(lo, hi, depth + 1);
      continue;
    }
    const span = max - min + 1;
    if (span > MAX_SPAN) {
      const part = Array.from(idx.subarray(lo, hi)).sort((a, b) => (strs[a]! < strs[b]! ? -1 : strs[a]! > strs[b]! ? 1 : 0));
      idx.set(part, lo);
      continue;
    }
    count.fill(0, 0, span + 1);
    for (let i = lo; i < hi; i++) count[codes[i]! - min + 1]++;
    for (let c = 0; c < span; c++) count[c + 1] += count[c]!;
    for (let i = lo; i < hi; i++) tmp[lo + count[codes[i]! - min]!++] = idx[i]!;
    idx.set(tmp.subarray(lo, hi), lo);
    // count[c] is now the end of bucket c; buckets of ended strings (code 0) hold equal strings.
    let start = lo;
    for (let c = 0; c < span; c++) {
      const end = lo + count[c]!;
      if (end - start > 1 && c + min !== 0) stack.push(start, end, depth + 1);
      start = end;
    }
  }
  return idx;
}

function insertionSort(strs: readonly string[], idx: Uint32Array, lo: number, hi: number): void {
  for (let i = lo + 1; i < hi; i++) {
    const v = idx[i]!;
    const s = strs[v]!;
    let j = i - 1;
    while (j >= lo && strs[idx[j]!]! > s) {
      idx[j + 1] = idx[j]!;
      j--;
    }
    idx[j + 1] = v;
  }
}
