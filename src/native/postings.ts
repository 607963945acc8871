// TypeScript twins of native/postings.cc: posting lists are ascending Uint32Arrays of local doc ids.
// On disk a list is delta-varint encoded: the first id, then each gap, 7 bits per byte, high bit = more.

export type DecodePostings = (buf: Uint8Array, offset: number, length: number, count: number) => Uint32Array;
export type SetOp = (a: Uint32Array, b: Uint32Array) => Uint32Array;
export type UnionMany = (lists: Uint32Array[], universe: number) => Uint32Array;
export type CountInRange = (ids: Uint32Array, lo: number, hi: number) => number;
export type RangeOfIds = (lo: number, hi: number) => Uint32Array;

/** Encodes ascending ids as delta varints (TS only: sealing is not on the hot read path). */
export function encodePostings(ids: ArrayLike<number>): Uint8Array {
  const out = new Uint8Array(ids.length * 5);
  return out.slice(0, encodePostingsInto(ids, out, 0));
}

/**
 * Encodes ascending ids as delta varints into `out` at `pos` and returns the position after them; `out`
 * needs 5 bytes per id at most. The seal writes every list of a fraction into one buffer this way, with
 * no allocation per list; `from` and `to` encode ids[from, to) (a list inside a larger array, without a view of it).
 */
export function encodePostingsInto(ids: ArrayLike<number>, out: Uint8Array, pos: number, from = 0, to = ids.length): number {
  let prev = 0;
  for (let i = from; i < to; i++) {
    const id = ids[i]!;
    let v = (id - prev) >>> 0;
    prev = id;
    while (v >= 0x80) {
      out[pos++] = (v & 0x7f) | 0x80;
      v >>>= 7;
    }
    out[pos++] = v;
  }
  return pos;
}

/** Decodes `count` ids from buf[offset, offset + length); stops early (shorter result) on truncated input. */
export function decodePostingsTs(buf: Uint8Array, offset: number, length: number, count: number): Uint32Array {
  const out = new Uint32Array(count);
  const end = offset + length;
  let pos = offset;
  let prev = 0;
  let n = 0;
  while (n < count && pos < end) {
    let v = 0;
    let shift = 0;
    let b: number;
    do {
      b = buf[pos++]!;
      v |= (b & 0x7f) << shift;
      shift += 7;
    } while (b & 0x80 && pos < end && shift < 35);
    prev = (prev + (v >>> 0)) >>> 0;
    out[n++] = prev;
  }
  return n === count ? out : out.slice(0, n);
}

export function intersectPostingsTs(a: Uint32Array, b: Uint32Array): Uint32Array {
  if (a.length > b.length) [a, b] = [b, a];
  const out = new Uint32Array(a.length);
  let n = 0;
  let j = 0;
  for (let i = 0; i < a.length && j < b.length; i++) {
    const x = a[i]!;
    while (j < b.length && b[j]! < x) j++;
    if (j < b.length && b[j] === x) out[n++] = x;
  }
  return out.slice(0, n);
}

export function unionPostingsTs(a: Uint32Array, b: Uint32Array): Uint32Array {
  const out = new Uint32Array(a.length + b.length);
  let i = 0;
  let j = 0;
  let n = 0;
  while (i < a.length && j < b.length) {
    const x = a[i]!;
    const y = b[j]!;
    if (x < y) { out[n++] = x; i++; } else if (y < x) { out[n++] = y; j++; } else { out[n++] = x; i++; j++; }
  }
  while (i < a.length) out[n++] = a[i++]!;
  while (j < b.length) out[n++] = b[j++]!;
  return out.slice(0, n);
}

/** a minus b. */
export function differencePostingsTs(a: Uint32Array, b: Uint32Array): Uint32Array {
  const out = new Uint32Array(a.length);
  let n = 0;
  let j = 0;
  for (let i = 0; i < a.length; i++) {
    const x = a[i]!;
    while (j < b.length && b[j]! < x) j++;
    if (j >= b.length || b[j] !== x) out[n++] = x;
  }
  return out.slice(0, n);
}

/** Union of many lists whose ids are all below `universe`, through a bitmap. */
export function unionManyPostingsTs(lists: Uint32Array[], universe: number): Uint32Array {
  const bits = new Uint8Array(universe);
  let total = 0;
  for (const l of lists) {
    for (let i = 0; i < l.length; i++) {
      const x = l[i]!;
      if (x < universe && bits[x] === 0) { bits[x] = 1; total++; }
    }
  }
  const out = new Uint32Array(total);
  let n = 0;
  for (let x = 0; x < universe && n < total; x++) if (bits[x]) out[n++] = x;
  return out;
}

/** How many ids fall in [lo, hi). */
export function countInRangeTs(ids: Uint32Array, lo: number, hi: number): number {
  return lowerBound(ids, hi) - lowerBound(ids, lo);
}

/** The ids lo, lo + 1, ..., hi - 1. */
export function rangeOfIdsTs(lo: number, hi: number): Uint32Array {
  const n = Math.max(0, hi - lo);
  const out = new Uint32Array(n);
  for (let i = 0; i < n; i++) out[i] = lo + i;
  return out;
}

/** First index whose id is >= x. */
export function lowerBound(ids: Uint32Array, x: number): number {
  let lo = 0;
  let hi = ids.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (ids[mid]! < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

export interface PostingsImpl {
  decodePostings: DecodePostings;
  intersectPostings: SetOp;
  unionPostings: SetOp;
  differencePostings: SetOp;
  unionManyPostings: UnionMany;
  countInRange: CountInRange;
  rangeOfIds: RangeOfIds;
}

export const postingsTs: PostingsImpl = {
  decodePostings: decodePostingsTs,
  intersectPostings: intersectPostingsTs,
  unionPostings: unionPostingsTs,
  differencePostings: differencePostingsTs,
  unionManyPostings: unionManyPostingsTs,
  countInRange: countInRangeTs,
  rangeOfIds: rangeOfIdsTs,
};

function need(ok: boolean, what: string): void {
  if (!ok) throw new TypeError(`postings: ${what}`);
}

const isU32 = (v: unknown): v is Uint32Array => v instanceof Uint32Array;
const isIdx = (v: number) => Number.isInteger(v) && v >= 0 && v <= 2 ** 32;

/** Wraps the addon's functions with the argument checks made before crossing into C++. */
export function checkedNativePostings(native: PostingsImpl): PostingsImpl {
  return {
    decodePostings(buf, offset, length, count) {
      need(buf instanceof Uint8Array && isIdx(offset) && isIdx(length) && isIdx(count) && offset + length <= buf.length, 'decodePostings(buf, offset, length, count): bad arguments');
      return native.decodePostings(buf, offset, length, count);
    },
    intersectPostings(a, b) { need(isU32(a) && isU32(b), 'intersectPostings needs two Uint32Arrays'); return native.intersectPostings(a, b); },
    unionPostings(a, b) { need(isU32(a) && isU32(b), 'unionPostings needs two Uint32Arrays'); return native.unionPostings(a, b); },
    differencePostings(a, b) { need(isU32(a) && isU32(b), 'differencePostings needs two Uint32Arrays'); return native.differencePostings(a, b); },
    unionManyPostings(lists, universe) {
      need(Array.isArray(lists) && lists.every(isU32) && isIdx(universe), 'unionManyPostings(lists, universe): bad arguments');
      return native.unionManyPostings(lists, universe);
    },
    countInRange(ids, lo, hi) { need(isU32(ids) && Number.isFinite(lo) && Number.isFinite(hi), 'countInRange(ids, lo, hi): bad arguments'); return native.countInRange(ids, lo, hi); },
    rangeOfIds(lo, hi) { need(isIdx(lo) && isIdx(hi), 'rangeOfIds(lo, hi): bad arguments'); return native.rangeOfIds(lo, hi); },
  };
}
