// Numeric columns of sealed fractions (num-<i>.bin, format 3): each document's number (the first keyword value of a
// field read as a number, as aggregations read it), in document order, in blocks of BLOCK_DOCS with each block's
// count of values, minimum and maximum, so aggregations read numbers without the dictionary and min/max skip blocks.
//
// File: "TPNC", u32 version (1), u32 documents, u32 documents per block; then per block (24 bytes) its u32 offset in
// the file, u32 count of documents with a value, f64 minimum, f64 maximum (NaN for a block without values); then the
// blocks. A block: u8 encoding, u8 1 when every document has a value (else a bitmap of ceil(docs / 8) bytes follows,
// bit d of byte d >> 3 set for a document with a value), then the values of the documents that have one, in order:
//   0 none; 1 frame of reference: f64 base, u8 width, (value - base) in `width` bits (integers whose range is below
//   2^32); 2 dictionary: u16 count, count x f64, u8 width, each value's index in `width` bits; 3 plain f64.
// Bit-packed values are LSB first in little-endian 32-bit words. Each block takes the smallest encoding it allows.
// All numbers are little-endian.

export const BLOCK_DOCS = 4096;
const MAGIC = 0x434e5054; // "TPNC" read as a little-endian u32
const VERSION = 1;
const HEADER = 16;
const INDEX_ENTRY = 24;
/** Distinct values a dictionary block holds at most. */
const DICT_MAX = 256;

export const NumEncoding = { None: 0, FrameOfReference: 1, Dictionary: 2, Plain: 3 } as const;

export interface NumericColumn {
  /** Each document's number; NaN when it has none. */
  values: Float64Array;
  blockDocs: number;
  /** Per block: documents with a value, the smallest and the largest. */
  present: Uint32Array;
  min: Float64Array;
  max: Float64Array;
}

/** A token read as a number the way aggregations read it: NaN for blank or non-numeric text. */
export function tokenNumber(t: string): number {
  return t.trim() === '' ? NaN : Number(t);
}

function widthOf(range: number): number {
  return range === 0 ? 0 : 32 - Math.clz32(range);
}

function packedBytes(count: number, width: number): number {
  return 4 * Math.ceil((count * width) / 32);
}

/** Packs values[0 .. count) (each below 2^width) into little-endian 32-bit words at out[at ..); returns the end. */
function pack(out: Buffer, at: number, values: Uint32Array, count: number, width: number): number {
  const words = packedBytes(count, width) >>> 2;
  const tmp = new Uint32Array(words);
  let bit = 0;
  for (let k = 0; k < count; k++) {
    const v = values[k]!;
    const w = bit >>> 5;
    const s = bit & 31;
    tmp[w] |= v << s;
    if (s + width > 32) tmp[w + 1] |= v >>> (32 - s);
    bit += width;
  }
  Buffer.from(tmp.buffer, 0, 4 * words).copy(out, at);
  return at + 4 * words;
}

/** Scratch of one block: its values with a number, their codes (offsets or dictionary indices). */
const vals = new Float64Array(BLOCK_DOCS);
const codes = new Uint32Array(BLOCK_DOCS);
/** Integer ranges below this find their dictionary index in a table (index + 1, 0: not seen), reset after use. */
const TABLE = 1 << 16;
const table = new Int32Array(TABLE);

/**
 * The distinct values of vals[0 .. p) in first-seen order when there are at most DICT_MAX, with each value's index
 * in codes; else null. Integers of a narrow range look their index up in a table, others in a Map.
 */
function dictionary(p: number, ints: boolean, min: number, max: number): Float64Array | null {
  const dict = new Float64Array(DICT_MAX);
  let size = 0;
  if (ints && max - min < TABLE) {
    let k = 0;
    for (; k < p; k++) {
      const at = vals[k]! - min;
      let i = table[at]!;
      if (i === 0) {
        if (size === DICT_MAX) break;
        dict[size] = vals[k]!;
        i = table[at] = ++size;
      }
      codes[k] = i - 1;
    }
    for (let j = 0; j < size; j++) table[dict[j]! - min] = 0;
    return k === p ? dict.subarray(0, size) : null;
  }
  const seen = new Map<number, number>();
  for (let k = 0; k < p; k++) {
    const v = vals[k]!;
    let i = seen.get(v);
    if (i === undefined) {
      if (size === DICT_MAX) return null;
      dict[size] = v;
      seen.set(v, (i = size++));
    }
    codes[k] = i;
  }
  return dict.subarray(0, size);
}

/** One block's bytes (see the file comment), with its count of values, bounds and encoding. */
function encodeBlock(block: Float64Array): { body: Buffer; present: number; min: number; max: number; kind: number } {
  const n = block.length;
  let p = 0;
  let min = Infinity;
  let max = -Infinity;
  let ints = true;
  let negZero = false;
  for (let d = 0; d < n; d++) {
    const v = block[d]!;
    if (v !== v) continue;
    vals[p++] = v;
    if (v < min) min = v;
    if (v > max) max = v;
    if (ints && !Number.isInteger(v)) ints = false;
    if (v === 0 && 1 / v < 0) negZero = true;
  }
  const all = p === n;
  const head = 2 + (all ? 0 : Math.ceil(n / 8));
  if (p === 0) {
    const body = Buffer.alloc(head);
    body[0] = NumEncoding.None;
    return { body, present: 0, min: NaN, max: NaN, kind: NumEncoding.None };
  }
  // -0 keeps its sign only in plain f64 (integer offsets and a dictionary of equal values take it for 0).
  const forOk = ints && !negZero && max - min < 2 ** 32;
  const forWidth = forOk ? widthOf(max - min) : 0;
  const forSize = forOk ? 9 + packedBytes(p, forWidth) : Infinity;
  // A dictionary is smaller only with an index narrower than the offsets (or no frame of reference at all).
  const dict = !negZero && (!forOk || forWidth > 2) ? dictionary(p, ints, min, max) : null;
  const dictWidth = dict ? widthOf(dict.length - 1) : 0;
  const dictSize = dict ? 3 + 8 * dict.length + packedBytes(p, dictWidth) : Infinity;
  const plainSize = 8 * p;
  const kind =
    forSize <= dictSize && forSize <= plainSize
      ? NumEncoding.FrameOfReference
      : dictSize <= plainSize
        ? NumEncoding.Dictionary
        : NumEncoding.Plain;
  const size = kind === NumEncoding.FrameOfReference ? forSize : kind === NumEncoding.Dictionary ? dictSize : plainSize;
  const body = Buffer.alloc(head + size);
  body[0] = kind;
  body[1] = all ? 1 : 0;
  if (!all) for (let d = 0; d < n; d++) if (block[d] === block[d]) body[2 + (d >>> 3)] |= 1 << (d & 7);
  let at = head;
  if (kind === NumEncoding.FrameOfReference) {
    body.writeDoubleLE(min, at);
    body[at + 8] = forWidth;
    for (let k = 0; k < p; k++) codes[k] = vals[k]! - min;
    pack(body, at + 9, codes, p, forWidth);
  } else if (kind === NumEncoding.Dictionary) {
    body.writeUInt16LE(dict!.length, at);
    at += 2;
    for (let i = 0; i < dict!.length; i++) body.writeDoubleLE(dict![i]!, at + 8 * i);
    at += 8 * dict!.length;
    body[at] = dictWidth;
    pack(body, at + 1, codes, p, dictWidth);
  } else {
    for (let k = 0; k < p; k++) body.writeDoubleLE(vals[k]!, at + 8 * k);
  }
  return { body, present: p, min, max, kind };
}

/** Encodes a column of numbers (NaN: no value); `kinds` counts the blocks of each encoding when given. */
export function encodeNumericColumn(values: Float64Array, kinds?: number[]): Buffer {
  const n = values.length;
  const blocks = Math.ceil(n / BLOCK_DOCS);
  const header = Buffer.alloc(HEADER + INDEX_ENTRY * blocks);
  header.writeUInt32LE(MAGIC, 0);
  header.writeUInt32LE(VERSION, 4);
  header.writeUInt32LE(n, 8);
  header.writeUInt32LE(BLOCK_DOCS, 12);
  const bodies: Buffer[] = [header];
  let off = header.length;
  for (let b = 0; b < blocks; b++) {
    const e = encodeBlock(values.subarray(b * BLOCK_DOCS, Math.min(n, (b + 1) * BLOCK_DOCS)));
    const at = HEADER + INDEX_ENTRY * b;
    header.writeUInt32LE(off, at);
    header.writeUInt32LE(e.present, at + 4);
    header.writeDoubleLE(e.min, at + 8);
    header.writeDoubleLE(e.max, at + 16);
    if (kinds) kinds[e.kind] = (kinds[e.kind] ?? 0) + 1;
    bodies.push(e.body);
    off += e.body.length;
  }
  return Buffer.concat(bodies, off);
}

/** The packed words of unpack(), copied out aligned (plus one word past them). */
let wordScratch = new Uint32Array(BLOCK_DOCS + 1);

/** Unpacks `count` values of `width` bits at buf[at ..) into out[0 .. count). */
function unpack(buf: Buffer, at: number, count: number, width: number, out: Uint32Array): void {
  const words = packedBytes(count, width) >>> 2;
  if (at + 4 * words > buf.length) throw new Error('packed values past the end');
  if (width === 0) {
    out.fill(0, 0, count);
    return;
  }
  if (wordScratch.length < words + 1) wordScratch = new Uint32Array(words + 1);
  const w32 = wordScratch;
  new Uint8Array(w32.buffer, 0, 4 * words).set(buf.subarray(at, at + 4 * words));
  w32[words] = 0;
  const mask = width === 32 ? 0xffffffff : (1 << width) - 1;
  let bit = 0;
  for (let k = 0; k < count; k++) {
    const w = bit >>> 5;
    const s = bit & 31;
    let v = w32[w]! >>> s;
    if (s + width > 32) v |= w32[w + 1]! << (32 - s);
    out[k] = v & mask;
    bit += width;
  }
}

/** A numeric column's bytes and block index, read without decoding any block (the file is checked whole first). */
export interface NumericBlocks {
  buf: Buffer;
  docs: number;
  blockDocs: number;
  /** Per block: documents with a value, the smallest and the largest (NaN for a block without values). */
  present: Uint32Array;
  min: Float64Array;
  max: Float64Array;
}

/** The header and block index of a numeric column; throws on bytes that are not one. */
export function readNumericBlocks(buf: Buffer): NumericBlocks {
  if (buf.length < HEADER || buf.readUInt32LE(0) !== MAGIC) throw new Error('not a numeric column');
  if (buf.readUInt32LE(4) !== VERSION) throw new Error(`numeric column version ${buf.readUInt32LE(4)}`);
  const n = buf.readUInt32LE(8);
  const bd = buf.readUInt32LE(12);
  if (bd === 0) throw new Error('numeric column with empty blocks');
  const blocks = Math.ceil(n / bd);
  if (buf.length < HEADER + INDEX_ENTRY * blocks) throw new Error('numeric column index cut short');
  const present = new Uint32Array(blocks);
  const min = new Float64Array(blocks);
  const max = new Float64Array(blocks);
  for (let b = 0; b < blocks; b++) {
    const e = HEADER + INDEX_ENTRY * b;
    present[b] = buf.readUInt32LE(e + 4);
    min[b] = buf.readDoubleLE(e + 8);
    max[b] = buf.readDoubleLE(e + 16);
  }
  return { buf, docs: n, blockDocs: bd, present, min, max };
}

/** Scratch of decodeNumericBlock: a block's values in order, and their packed codes. */
let denseScratch = new Float64Array(BLOCK_DOCS);
let codeScratch = new Uint32Array(BLOCK_DOCS);

/**
 * Decodes block `b` into out[0 .. docs of the block): each document's number, NaN for none. Throws on a block that
 * does not decode (cut short, bytes left over, an index past its dictionary, counts that disagree).
 */
export function decodeNumericBlock(nb: NumericBlocks, b: number, out: Float64Array): void {
  const { buf, blockDocs: bd } = nb;
  const blocks = nb.present.length;
  if (denseScratch.length < bd) {
    denseScratch = new Float64Array(bd);
    codeScratch = new Uint32Array(bd);
  }
  const scratch = codeScratch;
  const e = HEADER + INDEX_ENTRY * b;
  let at = buf.readUInt32LE(e);
  const p = nb.present[b]!;
  const first = b * bd;
  const docs = Math.min(nb.docs, first + bd) - first;
  if (at + 2 > buf.length || p > docs) throw new Error(`numeric column block ${b} out of bounds`);
  // The block ends where the next begins (the last at the end of the file): a cut or a changed length shows.
  const end = b + 1 < blocks ? buf.readUInt32LE(e + INDEX_ENTRY) : buf.length;
  const kind = buf[at]!;
  const all = buf[at + 1] === 1;
  // Values of a block where every document has one go straight to `out`.
  const dense = all && p === docs ? out : denseScratch;
  const bitmap = at + 2;
  at += 2 + (all ? 0 : Math.ceil(docs / 8));
  let bodyEnd = at;
  if (bodyEnd > end) throw new Error(`numeric column block ${b} cut short`);
  switch (kind) {
    case NumEncoding.None:
      if (p !== 0) throw new Error(`numeric column block ${b}: no values, ${p} counted`);
      break;
    case NumEncoding.FrameOfReference: {
      if (at + 9 > end) throw new Error(`numeric column block ${b} cut short`);
      const base = buf.readDoubleLE(at);
      const width = buf[at + 8]!;
      bodyEnd = at + 9 + packedBytes(p, width);
      if (width > 32 || bodyEnd > end) throw new Error(`numeric column block ${b} cut short`);
      unpack(buf, at + 9, p, width, scratch);
      for (let k = 0; k < p; k++) dense[k] = base + scratch[k]!;
      break;
    }
    case NumEncoding.Dictionary: {
      if (at + 2 > end) throw new Error(`numeric column block ${b} cut short`);
      const count = buf.readUInt16LE(at);
      at += 2;
      if (at + 8 * count + 1 > end) throw new Error(`numeric column block ${b} cut short`);
      const dict = new Float64Array(count);
      for (let i = 0; i < count; i++) dict[i] = buf.readDoubleLE(at + 8 * i);
      at += 8 * count;
      const width = buf[at]!;
      bodyEnd = at + 1 + packedBytes(p, width);
      if (width > 32 || bodyEnd > end) throw new Error(`numeric column block ${b} cut short`);
      unpack(buf, at + 1, p, width, scratch);
      for (let k = 0; k < p; k++) {
        const v = scratch[k]!;
        if (v >= count) throw new Error(`numeric column block ${b}: index ${v} past its dictionary`);
        dense[k] = dict[v]!;
      }
      break;
    }
    case NumEncoding.Plain:
      bodyEnd = at + 8 * p;
      if (bodyEnd > end) throw new Error(`numeric column block ${b} cut short`);
      for (let k = 0; k < p; k++) dense[k] = buf.readDoubleLE(at + 8 * k);
      break;
    default:
      throw new Error(`numeric column block ${b}: unknown encoding ${kind}`);
  }
  if (bodyEnd !== end) throw new Error(`numeric column block ${b}: ${end - bodyEnd} bytes left over`);
  if (kind === NumEncoding.None) {
    out.fill(NaN, 0, docs);
    return;
  }
  if (all) {
    if (p !== docs) throw new Error(`numeric column block ${b}: ${p} values for ${docs} documents`);
    return;
  }
  let k = 0;
  for (let d = 0; d < docs; d++) {
    if ((buf[bitmap + (d >>> 3)]! & (1 << (d & 7))) === 0) {
      out[d] = NaN;
      continue;
    }
    if (k >= p) throw new Error(`numeric column block ${b}: more documents marked than ${p} values`);
    out[d] = dense[k++]!;
  }
  if (k !== p) throw new Error(`numeric column block ${b}: ${k} documents marked, ${p} values`);
}

/** Decodes a numeric column; throws on bytes that are not one. */
export function decodeNumericColumn(buf: Buffer): NumericColumn {
  const nb = readNumericBlocks(buf);
  const n = nb.docs;
  const bd = nb.blockDocs;
  const values = new Float64Array(n);
  for (let b = 0; b < nb.present.length; b++) {
    const first = b * bd;
    decodeNumericBlock(nb, b, values.subarray(first, Math.min(n, first + bd)));
  }
  return { values, blockDocs: bd, present: nb.present, min: nb.min, max: nb.max };
}

/** A numeric range: lo and hi (-Infinity, Infinity when open), each inclusive or not. */
export interface NumericBounds {
  lo: number;
  hi: number;
  loIncl: boolean;
  hiIncl: boolean;
}

/**
 * Documents [from, to) whose number is in the range, ascending, from a numeric column: a block whose bounds miss
 * the range is skipped, one whose bounds lie inside it with a value in every document is taken whole, and only the
 * others are decoded (or read from `values`, the decoded column, when given). `tick` is called once per block.
 */
export function numericRangeIds(
  nb: NumericBlocks,
  values: Float64Array | null,
  r: NumericBounds,
  from: number,
  to: number,
  tick: () => void,
): Uint32Array {
  const { lo, hi, loIncl, hiIncl } = r;
  const bd = nb.blockDocs;
  from = Math.max(0, from);
  to = Math.min(nb.docs, to);
  if (to <= from) return new Uint32Array(0);
  let out = new Uint32Array(Math.min(to - from, 1 << 16));
  let len = 0;
  const room = (more: number) => {
    if (len + more <= out.length) return;
    const next = new Uint32Array(Math.min(to - from, Math.max(len + more, 2 * out.length)));
    next.set(out.subarray(0, len));
    out = next;
  };
  const block = values ? null : new Float64Array(bd);
  for (let b = Math.floor(from / bd); b * bd < to; b++) {
    tick();
    const p = nb.present[b]!;
    if (p === 0) continue;
    const mn = nb.min[b]!;
    const mx = nb.max[b]!;
    // Every value v of the block has mn <= v <= mx: when mx fails the lower bound or mn the upper one, all do.
    if (!(loIncl ? mx >= lo : mx > lo) || !(hiIncl ? mn <= hi : mn < hi)) continue;
    const first = b * bd;
    const docs = Math.min(nb.docs, first + bd) - first;
    const s = Math.max(from, first);
    const e = Math.min(to, first + docs);
    room(e - s);
    if (p === docs && (loIncl ? mn >= lo : mn > lo) && (hiIncl ? mx <= hi : mx < hi)) {
      for (let d = s; d < e; d++) out[len++] = d;
      continue;
    }
    let vals: Float64Array;
    let off: number;
    if (values) {
      vals = values;
      off = 0;
    } else {
      decodeNumericBlock(nb, b, block!);
      vals = block!;
      off = first;
    }
    for (let d = s; d < e; d++) {
      const v = vals[d - off]!;
      if ((loIncl ? v >= lo : v > lo) && (hiIncl ? v <= hi : v < hi)) out[len++] = d;
    }
  }
  return out.subarray(0, len);
}

/**
 * The number of each token of a field's dictionary (NaN when it is not one), for its numeric column. Null when the field is not worth a numeric column: fewer
 * than half of the first tokens read are numbers (IP addresses, words), judged after 32.
 */
export function tokenNumbers(count: number, token: (i: number) => string): Float64Array | null {
  const nums = new Float64Array(count);
  let numeric = 0;
  for (let i = 0; i < count; i++) {
    const v = tokenNumber(token(i));
    nums[i] = v;
    if (v === v) numeric++;
    if (i >= 31 && numeric * 2 < i + 1) return null;
  }
  return numeric > 0 ? nums : null;
}
