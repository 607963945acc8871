// Sorting a fraction's token dictionary at seal time: an MSD radix sort on UTF-16 code units packed in one typed
// array (JavaScript's `<` order on strings, which sealed readers binary-search with). The seal sorts in the
// native addon (native/dict-sort.cc); sortField here is its twin, and the sort of tests and the JSON-era tools.

/** Tokens of one field: token i is text[start_i, start_i + lens[i]) (starts by summing lens), its id ids[i]; in no set
 * order. Declared here, where they are sorted, so that this file imports nothing from the indexer that calls it. */
export interface FieldTokens {
  text: string;
  lens: Uint32Array;
  ids: Uint32Array;
}

/** A field's tokens in sorted order, as dict.bin stores them (see token-dict.ts). */
export interface SortedField {
  /** Token ids in sorted order. */
  ids: Uint32Array;
  /** Length of each token in UTF-16 code units, in sorted order. */
  lens: Uint32Array;
  /** Their code units in sorted order: one byte each, or UTF-16LE when `wide`. */
  bytes: Uint8Array;
  /** Some code unit is above 0xff. */
  wide: boolean;
}

/** Buckets below this size are finished by insertion sort. */
const SMALL = 32;
/** Widest code-unit range sorted by counting at one depth; wider (rare) ranges fall back to a comparison sort. */
const MAX_SPAN = 4096;

/**
 * Strings as one array of UTF-16 code units: token i is units[starts[i], starts[i + 1]). Sorting and writing the
 * dictionary read these instead of the strings themselves: the tokens are slices of the native indexer's batch
 * text, and `charCodeAt` on ~130 000 such slices at every radix depth cost 3-5x the same reads from a typed array.
 */
export interface PackedStrings {
  units: Uint16Array;
  starts: Uint32Array;
}

/** Packs `strs` (one join, one UTF-16 copy). */
export function packStrings(strs: readonly string[]): PackedStrings {
  const n = strs.length;
  const starts = new Uint32Array(n + 1);
  let p = 0;
  for (let i = 0; i < n; i++) {
    starts[i] = p;
    p += strs[i]!.length;
  }
  starts[n] = p;
  const units = new Uint16Array(p);
  if (p > 0) {
    // utf16le keeps every code unit as it is, lone surrogates included.
    Buffer.from(units.buffer, 0, p * 2).write(strs.join(''), 0, p * 2, 'utf16le');
  }
  return { units, starts };
}

/** Sorts a field's tokens (the twin of native/dict-sort.cc). */
export function sortField(ft: FieldTokens): SortedField {
  const p = packText(ft.text, ft.lens);
  const order = sortedOrderPacked(p);
  const { units, starts } = p;
  const n = order.length;
  let wide = false;
  for (let i = 0; i < units.length && !wide; i++) wide = units[i]! > 0xff;
  const ids = new Uint32Array(n);
  const lens = new Uint32Array(n);
  const bytes = new Uint8Array(units.length * (wide ? 2 : 1));
  let at = 0;
  for (let r = 0; r < n; r++) {
    const j = order[r]!;
    ids[r] = ft.ids[j]!;
    lens[r] = starts[j + 1]! - starts[j]!;
    for (let k = starts[j]!; k < starts[j + 1]!; k++) {
      bytes[at++] = units[k]! & 0xff;
      if (wide) bytes[at++] = units[k]! >>> 8;
    }
  }
  return { ids, lens, bytes, wide };
}

/** Packs strings already joined: token i is the next lens[i] code units of `text` (one UTF-16 copy). */
export function packText(text: string, lens: Uint32Array): PackedStrings {
  const n = lens.length;
  const starts = new Uint32Array(n + 1);
  let p = 0;
  for (let i = 0; i < n; i++) {
    starts[i] = p;
    p += lens[i]!;
  }
  starts[n] = p;
  if (p !== text.length) throw new Error(`packText: ${text.length} code units for tokens of ${p}`);
  const units = new Uint16Array(p);
  if (p > 0) Buffer.from(units.buffer, 0, p * 2).write(text, 0, p * 2, 'utf16le');
  return { units, starts };
}

/** Compares packed strings a and b from code unit `depth` on (their first `depth` units are equal). */
function compareFrom(p: PackedStrings, a: number, b: number, depth: number): number {
  const { units, starts } = p;
  const la = starts[a + 1]! - starts[a]!;
  const lb = starts[b + 1]! - starts[b]!;
  const m = la < lb ? la : lb;
  const oa = starts[a]!;
  const ob = starts[b]!;
  for (let k = depth; k < m; k++) {
    const d = units[oa + k]! - units[ob + k]!;
    if (d !== 0) return d;
  }
  return la - lb;
}

/** A permutation of 0..n-1 that orders the packed strings as `a < b` does on JavaScript strings. */
export function sortedOrderPacked(p: PackedStrings): Uint32Array {
  const { units, starts } = p;
  const n = starts.length - 1;
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
      insertionSort(p, idx, lo, hi, depth);
      continue;
    }
    // Code unit at `depth` plus one; 0 for a string that ends before it (a prefix sorts first).
    let min = 0x10001;
    let max = -1;
    for (let i = lo; i < hi; i++) {
      const s = idx[i]!;
      const at = starts[s]! + depth;
      const c = at < starts[s + 1]! ? units[at]! + 1 : 0;
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
      const part = Array.from(idx.subarray(lo, hi)).sort((a, b) => compareFrom(p, a, b, depth));
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

/** A permutation of 0..strs.length-1 that orders `strs` as `a < b` does on JavaScript strings. */
export function sortedOrder(strs: readonly string[]): Uint32Array {
  return sortedOrderPacked(packStrings(strs));
}

function insertionSort(p: PackedStrings, idx: Uint32Array, lo: number, hi: number, depth: number): void {
  for (let i = lo + 1; i < hi; i++) {
    const v = idx[i]!;
    let j = i - 1;
    while (j >= lo && compareFrom(p, idx[j]!, v, depth) > 0) {
      idx[j + 1] = idx[j]!;
      j--;
    }
    idx[j + 1] = v;
  }
}
