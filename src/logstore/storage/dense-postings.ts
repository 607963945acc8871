// Format 4's short forms of dense posting lists: a run of consecutive ids (a field every document has, a word in
// every line) or a bitmap (a value most documents share), in place of one delta varint per id.
import { postings as P } from '../../native/index.js';
import { putVarint32 } from './varint.js';

/** A list of `count` ids stored in fewer than `count` bytes (delta varints take one at least) is in a short form. */
const RUN = 0;
const BITMAP = 1;
/** Lists shorter than this stay delta varints. */
const MIN_IDS = 8;

/**
 * Rewrites ids[lo, hi), just written as delta varints at out[start, end), in a short form when one is smaller:
 * u8 0 and the varint of the first id (ids first .. first + count - 1), or u8 1, the varint of the first id and a
 * bitmap of ceil((last - first + 1) / 8) bytes (bit j of byte j >> 3, LSB first, for id first + j). Returns the end.
 */
export function shortenPostings(
  ids: Uint32Array,
  lo: number,
  hi: number,
  out: Uint8Array,
  start: number,
  end: number,
): number {
  const count = hi - lo;
  if (count < MIN_IDS) return end;
  const first = ids[lo]!;
  const span = ids[hi - 1]! - first + 1;
  if (span === count) {
    out[start] = RUN;
    return putVarint32(out, start + 1, first);
  }
  const bytes = Math.ceil(span / 8);
  if (1 + 5 + bytes >= end - start) return end;
  out[start] = BITMAP;
  const at = putVarint32(out, start + 1, first);
  out.fill(0, at, at + bytes);
  for (let i = lo; i < hi; i++) {
    const j = ids[i]! - first;
    out[at + (j >>> 3)] |= 1 << (j & 7);
  }
  return at + bytes;
}

/** Per byte value: how many bits are set, and which (BIT_AT[8 * byte + k], lowest first). */
const BIT_COUNT = new Uint8Array(256);
const BIT_AT = new Uint8Array(256 * 8);
for (let b = 0; b < 256; b++) for (let j = 0; j < 8; j++) if (b & (1 << j)) BIT_AT[8 * b + BIT_COUNT[b]!++] = j;

/** Whether a list of `count` ids in `len` bytes is in a short form. */
export function isShort(len: number, count: number): boolean {
  return len < count;
}

/** The ids of a short-form list buf[0, len); throws when they are not `count` ascending ids below 2^32. */
export function decodeShort(buf: Uint8Array, len: number, count: number): Uint32Array {
  let p = 1;
  let first = 0;
  let shift = 0;
  for (;;) {
    if (p >= len || shift > 28) throw new Error('a short posting list without its first id');
    const b = buf[p++]!;
    first += (b & 0x7f) * 2 ** shift;
    shift += 7;
    if (b < 0x80) break;
  }
  if (buf[0] === RUN) {
    if (p !== len || first + count > 2 ** 32) throw new Error('a run of ids that does not fit');
    return P.rangeOfIds(first, first + count);
  }
  if (buf[0] !== BITMAP) throw new Error(`posting list form ${buf[0]}`);
  if (first + (len - p) * 8 > 2 ** 32) throw new Error('a bitmap of ids past 2^32');
  const out = new Uint32Array(count);
  let n = 0;
  for (let q = p; q < len; q++) {
    const bits = buf[q]!;
    if (bits === 0) continue;
    const c = BIT_COUNT[bits]!;
    if (n + c > count) throw new Error(`a bitmap of more than ${count} ids`);
    const base = first + (q - p) * 8;
    const at = bits * 8;
    for (let j = 0; j < c; j++) out[n + j] = base + BIT_AT[at + j]!;
    n += c;
  }
  if (n !== count) throw new Error(`a bitmap of ${n} ids, ${count} expected`);
  return out;
}
