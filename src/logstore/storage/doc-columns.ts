// Column-wise document blocks (fraction formats 4 and 5): a block of JSON documents split into their key sequences
// with the exact bytes between values ("shapes") and each field's values as streams, so that one Brotli pass sees like
// next to like; decoding gives back every document byte for byte.
import { decodeDocBlockNative, encodeDocBlockNative } from '../../native/index.js';
import type { DocRef } from './fraction-view.js';

/**
 * Layout of a block (before compression; every number an unsigned LEB128 varint, `bytes` a varint length and the
 * bytes):
 *
 *   u8 version (1, or 2 with column references)  docs  total bytes of the documents
 *   fields  then per field: bytes (its key, as written between the quotes)
 *   version 2: per field a varint, 0 or 1 + the keyword column (meta.json `columns` index) its values may refer to
 *   shapes  then per shape: slots, per slot a field index, then slots + 1 literals (bytes: what lies between values)
 *   per document: 0 (kept verbatim) or 1 + its shape
 *   verbatim documents: bytes each, in order
 *   per field, six sections, each bytes: kinds (u8 per value, in document order), string references, string
 *   bytes, integers, raw values, addresses
 *
 * A value's kind says where it is: STRING (its reference: 0 = a string new to the column in this block, its bytes
 * next in the string bytes; k = the column's k-th distinct string), INTEGER (a zigzag varint; the value was written
 * as the shortest decimal of an integer of at most 15 digits), TIME (the string is the ISO 8601 form of the
 * document's time, as Date.toISOString writes it: nothing stored), RAW (bytes: numbers in other spellings, true,
 * false, null, nested objects and arrays) or IPV4 (a string of four decimal octets without leading zeros: 4 bytes in
 * the addresses); in version 2 also COLUMN and COLUMN_BARE (the value is the field's keyword column token of the
 * document, byte for byte, between quotes or bare: nothing stored; the decoder takes the token from the column and
 * the dictionary). A document the scanner does not split (not an object, text after it, an unterminated string) is
 * kept verbatim; split or not, the bytes decoded are the bytes encoded, which the encoder does not assume: every
 * typed value is checked to print back as it was. native/doc-columns.cc makes and decodes the same blocks.
 */
const VERSION = 1;
const VERSION_REFS = 2;
const STRING = 0;
const INTEGER = 1;
const TIME = 2;
const RAW = 3;
const IPV4 = 4;
const COLUMN = 5;
const COLUMN_BARE = 6;
/** A document without a value in a keyword column. */
const NO_TOKEN = 0xffffffff;

/**
 * A keyword column's tokens by document, for references: document i's token is table[starts[o], starts[o + 1]) for
 * o = ords[i] (NO_TOKEN: none). The seal gives the active fraction's ordinals, a reader the sealed ranks; the bytes
 * of a token are the same (tokenTable).
 */
export interface ColumnTokens {
  table: Buffer;
  starts: Uint32Array;
  ords: Uint32Array;
}

/** A field whose values the encoder may replace by a reference to its keyword column `column`. */
export interface DocColumnRef {
  /** The field's key as written between the quotes. */
  key: Buffer;
  column: number;
  tokens: ColumnTokens;
}

/**
 * The token table of a column (see ColumnTokens) from its tokens by ordinal: a token that is not all ASCII is empty
 * here (so only ASCII tokens, whose code units are their UTF-8 bytes, are referred to by text). The seal and the
 * reader both make their tables with this function.
 */
export function tokenTable(count: number, token: (o: number) => string): { table: Buffer; starts: Uint32Array } {
  const starts = new Uint32Array(count + 1);
  const texts: string[] = new Array(count);
  let bytes = 0;
  for (let o = 0; o < count; o++) {
    const t = token(o);
    const ascii = /^[\x00-\x7f]*$/.test(t);
    texts[o] = ascii ? t : '';
    bytes += ascii ? t.length : 0;
  }
  const table = Buffer.allocUnsafe(bytes);
  let p = 0;
  for (let o = 0; o < count; o++) {
    starts[o] = p;
    p += table.write(texts[o]!, p, 'latin1');
  }
  starts[count] = p;
  return { table, starts };
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * tokenTable from a field's sorted tokens as bytes (one byte a code unit) and their lengths, without strings: the same
 * table (ASCII tokens as their bytes, others empty) by rank.
 */
export function tokenTableOfBytes(bytes: Buffer, lens: Uint32Array): { table: Buffer; starts: Uint32Array } {
  const n = lens.length;
  const starts = new Uint32Array(n + 1);
  let high = false;
  for (let k = 0; k < bytes.length && !high; k++) high = bytes[k]! >= 0x80;
  if (!high) {
    // Every token ASCII (the usual case): the bytes are the table.
    let q = 0;
    for (let r = 0; r < n; r++) {
      starts[r] = q;
      q += lens[r]!;
    }
    starts[n] = q;
    return { table: bytes.subarray(0, q), starts };
  }
  const table = Buffer.allocUnsafe(bytes.length);
  let p = 0;
  let q = 0;
  for (let r = 0; r < n; r++) {
    const l = lens[r]!;
    starts[r] = q;
    let ascii = true;
    for (let k = p; k < p + l; k++) if (bytes[k]! >= 0x80) ascii = false;
    if (ascii) {
      if (l < 32) for (let k = p; k < p + l; k++) table[q++] = bytes[k]!;
      else {
        table.set(bytes.subarray(p, p + l), q);
        q += l;
      }
    }
    p += l;
  }
  starts[n] = q;
  return { table: table.subarray(0, q), starts };
}

/** A growable byte buffer with varint writers. */
class Out {
  buf: Buffer;
  len = 0;
  constructor(size = 256) {
    this.buf = Buffer.allocUnsafe(size);
  }
  private room(n: number): void {
    if (this.len + n <= this.buf.length) return;
    const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.len + n));
    this.buf.copy(next, 0, 0, this.len);
    this.buf = next;
  }
  byte(b: number): void {
    this.room(1);
    this.buf[this.len++] = b;
  }
  /** A non-negative integer below 2^53. */
  varint(v: number): void {
    this.room(8);
    const buf = this.buf;
    let p = this.len;
    while (v >= 0x80) {
      buf[p++] = (v % 0x80) | 0x80;
      v = Math.floor(v / 0x80);
    }
    buf[p++] = v;
    this.len = p;
  }
  bytes(src: Uint8Array, start: number, end: number): void {
    this.varint(end - start);
    this.room(end - start);
    if (end - start < 16) for (let i = start; i < end; i++) this.buf[this.len++] = src[i]!;
    else {
      this.buf.set(src.subarray(start, end), this.len);
      this.len += end - start;
    }
  }
  section(o: Out): void {
    this.bytes(o.buf, 0, o.len);
  }
  result(): Buffer {
    return this.buf.subarray(0, this.len);
  }
}

function isSpace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

function skipSpace(b: Uint8Array, p: number, e: number): number {
  while (p < e && isSpace(b[p]!)) p++;
  return p;
}

/** End (after the closing quote) of the string whose opening quote is at `p`, or -1. */
function stringEnd(b: Uint8Array, p: number, e: number): number {
  for (let i = p + 1; i < e; i++) {
    const c = b[i]!;
    if (c === BACKSLASH) i++;
    else if (c === QUOTE) return i + 1;
  }
  return -1;
}

/** End of the value that starts at `p` (a string, an object or array with its nesting, or a bare word), or -1. */
function valueEnd(b: Uint8Array, p: number, e: number): number {
  const c = b[p];
  if (c === QUOTE) return stringEnd(b, p, e);
  if (c === 0x7b || c === 0x5b) {
    let depth = 0;
    for (let i = p; i < e; i++) {
      const d = b[i]!;
      if (d === QUOTE) {
        const s = stringEnd(b, i, e);
        if (s < 0) return -1;
        i = s - 1;
      } else if (d === 0x7b || d === 0x5b) depth++;
      else if (d === 0x7d || d === 0x5d) {
        if (--depth === 0) return i + 1;
      }
    }
    return -1;
  }
  let i = p;
  while (i < e) {
    const d = b[i]!;
    if (d === 0x2c || d === 0x7d || d === 0x5d || d === 0x3a || d === QUOTE || isSpace(d)) break;
    i++;
  }
  return i > p ? i : -1;
}

/**
 * Splits the document b[s, e) into slots (reading nothing outside it: b is a batch of documents): spans[4k .. 4k + 3]
 * = key start, key end (inside the quotes), value start, value end. Returns the slot count, or -1 when the document
 * is not an object of key-value pairs followed by nothing but whitespace.
 */
function split(b: Uint8Array, s: number, e: number, spans: number[]): number {
  let p = skipSpace(b, s, e);
  if (p >= e || b[p] !== 0x7b) return -1;
  p = skipSpace(b, p + 1, e);
  let n = 0;
  if (p < e && b[p] === 0x7d) p++;
  else
    for (;;) {
      if (p >= e || b[p] !== QUOTE) return -1;
      const ke = stringEnd(b, p, e);
      if (ke < 0) return -1;
      spans[4 * n] = p + 1;
      spans[4 * n + 1] = ke - 1;
      p = skipSpace(b, ke, e);
      if (p >= e || b[p] !== 0x3a) return -1;
      p = skipSpace(b, p + 1, e);
      if (p >= e) return -1;
      const ve = valueEnd(b, p, e);
      if (ve < 0) return -1;
      spans[4 * n + 2] = p;
      spans[4 * n + 3] = ve;
      n++;
      p = skipSpace(b, ve, e);
      if (p < e && b[p] === 0x2c) {
        p = skipSpace(b, p + 1, e);
        continue;
      }
      if (p >= e || b[p] !== 0x7d) return -1;
      p++;
      break;
    }
  return skipSpace(b, p, e) === e ? n : -1;
}

/** The integer written at b[s, e) when it is the shortest decimal of a safe integer below 2^52 in size, else null. */
function canonicalInt(b: Uint8Array, s: number, e: number): number | null {
  let p = s;
  const neg = b[p] === 0x2d;
  if (neg) p++;
  const digits = e - p;
  if (digits < 1 || digits > 15) return null;
  if (b[p] === 0x30 && (digits > 1 || neg)) return null;
  let v = 0;
  for (; p < e; p++) {
    const d = b[p]! - 0x30;
    if (d < 0 || d > 9) return null;
    v = v * 10 + d;
  }
  return neg ? -v : v;
}

interface FieldCol {
  /** The keyword column its values may refer to, or null. */
  ref: DocColumnRef | null;
  kinds: Out;
  refs: Out;
  strs: Out;
  ints: Out;
  raws: Out;
  ips: Out;
  /** Distinct strings so far (null once they proved mostly distinct), how many strings, how many were repeats. */
  strings: Map<string | number, number> | null;
  values: number;
  hits: number;
}

function newCol(ref: DocColumnRef | null): FieldCol {
  return {
    ref,
    kinds: new Out(),
    refs: new Out(),
    strs: new Out(),
    ints: new Out(),
    raws: new Out(),
    ips: new Out(),
    strings: new Map(),
    values: 0,
    hits: 0,
  };
}

/** A shape met in the block being encoded: its literals one after the other, where each ends, its fields. */
interface Shape {
  id: number;
  lits: Buffer;
  litEnds: number[];
  fields: number[];
}

function newShape(
  id: number,
  b: Buffer,
  s: number,
  e: number,
  spans: number[],
  n: number,
  fieldIds: Map<string, number>,
): Shape {
  const parts: Buffer[] = [];
  const litEnds: number[] = [];
  const fields: number[] = [];
  let at = s;
  let len = 0;
  for (let k = 0; k <= n; k++) {
    const to = k < n ? spans[4 * k + 2]! : e;
    parts.push(b.subarray(at, to));
    len += to - at;
    litEnds.push(len);
    if (k < n) {
      fields.push(fieldIds.get(b.toString('latin1', spans[4 * k]!, spans[4 * k + 1]!))!);
      at = spans[4 * k + 3]!;
    }
  }
  return { id, lits: Buffer.concat(parts), litEnds, fields };
}

/** Whether the document's literals (the bytes around its n values) are those of `sh` (then so are its keys). */
function sameShape(sh: Shape, b: Buffer, s: number, e: number, spans: number[], n: number): boolean {
  if (sh.fields.length !== n) return false;
  const lits = sh.lits;
  let at = s;
  let q = 0;
  for (let k = 0; k <= n; k++) {
    const to = k < n ? spans[4 * k + 2]! : e;
    if (sh.litEnds[k]! - q !== to - at) return false;
    for (; at < to; at++, q++) if (lits[q] !== b[at]) return false;
    if (k < n) at = spans[4 * k + 3]!;
  }
  return true;
}

/**
 * Appends to `out` the four octets of b[s, e) when it is an IPv4 address written as four decimal numbers
 * 0-255 without leading zeros, joined by dots (the form that prints back the same); false otherwise.
 */
function ipv4(b: Buffer, s: number, e: number, out: Out): boolean {
  let p = s;
  let v0 = 0;
  let v1 = 0;
  let v2 = 0;
  for (let k = 0; k < 4; k++) {
    const from = p;
    let v = 0;
    while (p < e && b[p]! >= 0x30 && b[p]! <= 0x39 && p - from < 3) v = v * 10 + b[p++]! - 0x30;
    const len = p - from;
    if (len === 0 || v > 255 || (len > 1 && b[from] === 0x30)) return false;
    if (k < 3) {
      if (p >= e || b[p] !== 0x2e) return false;
      p++;
    }
    if (k === 0) v0 = v;
    else if (k === 1) v1 = v;
    else if (k === 2) v2 = v;
    else {
      if (p !== e) return false;
      out.byte(v0);
      out.byte(v1);
      out.byte(v2);
      out.byte(v);
    }
  }
  return true;
}

/** A map key for the bytes b[s, e): a number for up to 6 bytes (no string made), else their latin1 string. */
function stringKey(b: Buffer, s: number, e: number): string | number {
  if (e - s > 6) return b.toString('latin1', s, e);
  let v = (e - s) * 2 ** 48;
  for (let i = s, m = 1; i < e; i++, m *= 256) v += b[i]! * m;
  return v;
}

/** Whether a[at, at + len) are the bytes of b at `bAt`. */
function sameBytes(b: Buffer, a: Buffer, at: number, len: number, bAt: number): boolean {
  for (let i = 0; i < len; i++) if (a[at + i] !== b[bAt + i]) return false;
  return true;
}

/**
 * Encodes documents first..end-1 as one column-wise block (see encodeDocBlockTs): in the addon when it is built, from
 * the documents copied one after the other (the same bytes either way).
 */
export function encodeDocBlock(
  doc: (i: number) => DocRef,
  times: ArrayLike<number>,
  first: number,
  end: number,
  refs: readonly DocColumnRef[] = [],
): Buffer {
  if (!encodeDocBlockNative) return encodeDocBlockTs(doc, times, first, end, refs);
  let bytes = 0;
  for (let i = first; i < end; i++) {
    const r = doc(i);
    bytes += r.end - r.start;
  }
  const raw = Buffer.allocUnsafe(bytes);
  const offsets = new Uint32Array(end - first + 1);
  let p = 0;
  for (let i = first; i < end; i++) {
    const r = doc(i);
    offsets[i - first] = p;
    p += r.buf.copy(raw, p, r.start, r.end);
  }
  offsets[end - first] = p;
  const t =
    times instanceof Float64Array
      ? times.subarray(first, end)
      : Float64Array.from({ length: end - first }, (_, k) => times[first + k]!);
  return encodeDocBlockNative(
    raw,
    offsets,
    t,
    refs.map((r) => [r.key, r.column, r.tokens.table, r.tokens.starts, r.tokens.ords.subarray(first, end)]),
  );
}

/**
 * Encodes documents first..end-1 (`doc(i)` gives each one's bytes; the object may be reused) whose times are
 * times[i], as one column-wise block (see the layout above). With `refs` (version 2), a value of a field named
 * there that is byte for byte its document's token in the column (refs[k].tokens.ords[i]) is written as a reference.
 */
export function encodeDocBlockTs(
  doc: (i: number) => DocRef,
  times: ArrayLike<number>,
  first: number,
  end: number,
  refs: readonly DocColumnRef[] = [],
): Buffer {
  const fieldIds = new Map<string, number>();
  const fieldKeys: Buffer[] = [];
  const cols: FieldCol[] = [];
  const shapeIds = new Map<string, Shape>();
  const shapes = new Out(1024);
  const perDoc = new Out(end - first + 16);
  const verbatim = new Out(64);
  const spans: number[] = [];
  let last: Shape | null = null;
  const iso = new IsoWriter();
  const isoBytes = Buffer.alloc(24);
  let total = 0;
  for (let i = first; i < end; i++) {
    const r = doc(i);
    const b = r.buf;
    const s = r.start;
    const e = r.end;
    total += e - s;
    const n = split(b, s, e, spans);
    if (n < 0) {
      perDoc.varint(0);
      verbatim.bytes(b, s, e);
      continue;
    }
    let shape: Shape | undefined = last !== null && sameShape(last, b, s, e, spans, n) ? last : undefined;
    if (shape === undefined) {
      // The shape's key: each slot's field and the literals between values, as one string.
      let key = '';
      let at = s;
      for (let k = 0; k < n; k++) {
        const name = b.toString('latin1', spans[4 * k]!, spans[4 * k + 1]!);
        let f = fieldIds.get(name);
        if (f === undefined) {
          f = fieldKeys.length;
          fieldIds.set(name, f);
          const keyBytes = Buffer.from(b.subarray(spans[4 * k]!, spans[4 * k + 1]!));
          fieldKeys.push(keyBytes);
          cols.push(newCol(refs.find((r) => r.key.equals(keyBytes)) ?? null));
        }
        const vs = spans[4 * k + 2]!;
        key += `${f}:${vs - at}:${b.toString('latin1', at, vs)}`;
        at = spans[4 * k + 3]!;
      }
      key += `${e - at}:${b.toString('latin1', at, e)}`;
      shape = shapeIds.get(key);
      if (shape === undefined) {
        shape = newShape(shapeIds.size, b, s, e, spans, n, fieldIds);
        shapeIds.set(key, shape);
        shapes.varint(n);
        for (let k = 0; k < n; k++) shapes.varint(shape.fields[k]!);
        let from = s;
        for (let k = 0; k < n; k++) {
          shapes.bytes(b, from, spans[4 * k + 2]!);
          from = spans[4 * k + 3]!;
        }
        shapes.bytes(b, from, e);
      }
      last = shape;
    }
    perDoc.varint(shape.id + 1);
    const fields = shape.fields;
    let timeOk = -1;
    for (let k = 0; k < n; k++) {
      const col = cols[fields[k]!]!;
      const vs = spans[4 * k + 2]!;
      const ve = spans[4 * k + 3]!;
      const c = b[vs]!;
      const ref = col.ref;
      if (ref !== null) {
        const o = ref.tokens.ords[i]!;
        if (o !== NO_TOKEN && o + 1 < ref.tokens.starts.length) {
          const ts = ref.tokens.starts[o]!;
          const tl = ref.tokens.starts[o + 1]! - ts;
          const quoted = c === QUOTE ? 1 : 0;
          if (ve - vs - 2 * quoted === tl && sameBytes(b, ref.tokens.table, ts, tl, vs + quoted)) {
            col.kinds.byte(quoted ? COLUMN : COLUMN_BARE);
            continue;
          }
        }
      }
      if (c === QUOTE) {
        if (ve - vs === 26) {
          if (timeOk < 0) timeOk = iso.valid(times[i]!) ? (iso.write(isoBytes, 0, times[i]!), 1) : 0;
          if (timeOk === 1 && sameBytes(b, isoBytes, 0, 24, vs + 1)) {
            col.kinds.byte(TIME);
            continue;
          }
        }
        if (ve - vs <= 17 && ve - vs >= 9 && ipv4(b, vs + 1, ve - 1, col.ips)) {
          col.kinds.byte(IPV4);
          continue;
        }
        col.kinds.byte(STRING);
        if (col.strings !== null) {
          const text = stringKey(b, vs + 1, ve - 1);
          const seen = col.strings.get(text);
          col.values++;
          if (seen !== undefined) {
            col.refs.varint(seen);
            col.hits++;
            continue;
          }
          col.strings.set(text, col.strings.size + 1);
          // Mostly distinct strings (addresses, messages): stop looking them up; Brotli finds what repeats.
          if (col.values === 64 && col.hits < 8) col.strings = null;
        }
        col.refs.varint(0);
        col.strs.bytes(b, vs + 1, ve - 1);
        continue;
      }
      if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
        const v = canonicalInt(b, vs, ve);
        if (v !== null) {
          col.kinds.byte(INTEGER);
          col.ints.varint(v < 0 ? -2 * v - 1 : 2 * v);
          continue;
        }
      }
      col.kinds.byte(RAW);
      col.raws.bytes(b, vs, ve);
    }
  }
  const out = new Out(total >>> 2);
  out.byte(refs.length > 0 ? VERSION_REFS : VERSION);
  out.varint(end - first);
  out.varint(total);
  out.varint(fieldKeys.length);
  for (const k of fieldKeys) out.bytes(k, 0, k.length);
  if (refs.length > 0) for (const col of cols) out.varint(col.ref === null ? 0 : col.ref.column + 1);
  out.varint(shapeIds.size);
  out.bytes(shapes.buf, 0, shapes.len);
  out.section(perDoc);
  out.section(verbatim);
  for (const col of cols) {
    out.section(col.kinds);
    out.section(col.refs);
    out.section(col.strs);
    out.section(col.ints);
    out.section(col.raws);
    out.section(col.ips);
  }
  return out.result();
}

/**
 * Writes times as Date.toISOString does (24 characters, YYYY-MM-DDTHH:mm:ss.sssZ), for whole milliseconds in the
 * years 0000 to 9999: the first 14 characters are those of the time's hour, made by Date once an hour, then
 * mm:ss.sssZ.
 */
class IsoWriter {
  private hour = NaN;
  private readonly prefix = Buffer.alloc(14);

  valid(t: number): boolean {
    return Number.isInteger(t) && t >= -62167219200000 && t <= 253402300799999;
  }

  /** Writes the form of a valid time at out[p], returns the end. */
  write(out: Buffer, p: number, t: number): number {
    const hour = Math.floor(t / 3_600_000);
    if (hour !== this.hour) {
      this.prefix.write(new Date(t).toISOString(), 0, 14, 'latin1');
      this.hour = hour;
    }
    for (let k = 0; k < 14; k++) out[p++] = this.prefix[k]!;
    const ms = t - hour * 3_600_000;
    const min = Math.floor(ms / 60_000);
    const sec = Math.floor((ms - min * 60_000) / 1000);
    const milli = ms - min * 60_000 - sec * 1000;
    out[p] = 0x30 + Math.floor(min / 10);
    out[p + 1] = 0x30 + (min % 10);
    out[p + 2] = 0x3a;
    out[p + 3] = 0x30 + Math.floor(sec / 10);
    out[p + 4] = 0x30 + (sec % 10);
    out[p + 5] = 0x2e;
    out[p + 6] = 0x30 + Math.floor(milli / 100);
    out[p + 7] = 0x30 + (Math.floor(milli / 10) % 10);
    out[p + 8] = 0x30 + (milli % 10);
    out[p + 9] = 0x5a;
    return p + 10;
  }
}

/** Reads varints and byte spans of a decoded block, checking every bound. */
class In {
  p: number;
  constructor(
    readonly buf: Buffer,
    start: number,
    readonly end: number,
  ) {
    this.p = start;
  }
  varint(): number {
    const buf = this.buf;
    let v = 0;
    let mul = 1;
    for (;;) {
      if (this.p >= this.end || mul > 2 ** 49) throw new Error(`bad varint at ${this.p}`);
      const b = buf[this.p++]!;
      v += (b & 0x7f) * mul;
      if (b < 0x80) return v;
      mul *= 0x80;
    }
  }
  /** A varint length and the bytes after it: returns where they start (this.p is then after them). */
  span(): number {
    const len = this.varint();
    const at = this.p;
    if (len > this.end - at) throw new Error(`a span of ${len} bytes at ${at} runs past ${this.end}`);
    this.p = at + len;
    return at;
  }
  sub(): In {
    const at = this.span();
    return new In(this.buf, at, this.p);
  }
}

interface ColIn {
  /** The column its references read, or null. */
  col: ColumnTokens | null;
  kinds: In;
  refs: In;
  strs: In;
  ints: In;
  raws: In;
  ips: In;
  /** Start and end of each distinct string of the column, in order of first use. */
  strStart: number[];
  strEnd: number[];
}

function copy(src: Buffer, s: number, e: number, out: Buffer, p: number): number {
  if (e - s < 64) {
    for (let i = s; i < e; i++) out[p++] = src[i]!;
    return p;
  }
  return p + src.copy(out, p, s, e);
}

function writeOctet(out: Buffer, p: number, v: number): number {
  if (v >= 100) out[p++] = 0x30 + Math.floor(v / 100);
  if (v >= 10) out[p++] = 0x30 + (Math.floor(v / 10) % 10);
  out[p++] = 0x30 + (v % 10);
  return p;
}

/** Digits (and sign) of the integer whose zigzag form is `z`. */
function digits(z: number): number {
  return String(z % 2 === 0 ? z / 2 : -(z + 1) / 2).length;
}

/** Writes the integer whose zigzag form is `z` in decimal at out[p], returns the end. */
function writeInt(out: Buffer, p: number, z: number): number {
  let v = z / 2;
  if (z % 2 !== 0) {
    out[p++] = 0x2d;
    v = (z + 1) / 2;
  }
  if (v < 10) {
    out[p] = 0x30 + v;
    return p + 1;
  }
  let n = 0;
  for (let x = v; x >= 1; x = Math.floor(x / 10)) n++;
  for (let k = p + n - 1; k >= p; k--) {
    const q = Math.floor(v / 10);
    out[k] = 0x30 + (v - q * 10);
    v = q;
  }
  return p + n;
}

/**
 * Decodes a block made by encodeDocBlock (see decodeDocBlockTs), in the addon when it is built and takes the block
 * (it leaves damaged blocks and times before 1970 to the TypeScript twin, which throws or decodes them).
 */
export function decodeDocBlock(
  buf: Buffer,
  times: Float64Array,
  first: number,
  columns: readonly (ColumnTokens | undefined)[] = [],
): { raw: Buffer; offsets: Uint32Array } {
  const fast = decodeDocBlockNative?.(
    buf,
    times,
    first,
    columns.map((c) => (c ? [c.table, c.starts, c.ords] : undefined)),
  );
  if (fast) return { raw: fast[0], offsets: fast[1] };
  return decodeDocBlockTs(buf, times, first, columns);
}

/** The keyword columns (meta.json `columns` indexes) a block's references read: none before version 2. */
export function blockColumns(buf: Buffer): number[] {
  if (buf[0] !== VERSION_REFS) return [];
  const head = new In(buf, 1, buf.length);
  head.varint();
  head.varint();
  const fieldCount = head.varint();
  for (let f = 0; f < fieldCount; f++) head.span();
  const out: number[] = [];
  for (let f = 0; f < fieldCount; f++) {
    const c = head.varint();
    if (c > 0 && !out.includes(c - 1)) out.push(c - 1);
  }
  return out;
}

/**
 * Decodes a block made by encodeDocBlock: the documents concatenated, and where each starts (offsets[i]; the last
 * entry is the end). times[first + i] is document i's time, columns[c] the tokens of keyword column c by document
 * (for references, version 2). Throws on any inconsistency (a damaged block).
 */
export function decodeDocBlockTs(
  buf: Buffer,
  times: ArrayLike<number>,
  first: number,
  columns: readonly (ColumnTokens | undefined)[] = [],
): { raw: Buffer; offsets: Uint32Array } {
  const head = new In(buf, 0, buf.length);
  const version = buf[0];
  if (version !== VERSION && version !== VERSION_REFS)
    throw new Error(`document block version ${buf[0]}, expected ${VERSION} or ${VERSION_REFS}`);
  head.p = 1;
  const count = head.varint();
  const total = head.varint();
  if (count > buf.length * 8 + 1 || total > 2 ** 31) throw new Error(`${count} documents of ${total} bytes`);
  const fieldCount = head.varint();
  for (let f = 0; f < fieldCount; f++) head.span();
  const fieldColumn: (ColumnTokens | null)[] = [];
  for (let f = 0; f < fieldCount; f++) {
    if (version !== VERSION_REFS) {
      fieldColumn.push(null);
      continue;
    }
    const c = head.varint();
    if (c === 0) fieldColumn.push(null);
    else {
      const col = columns[c - 1];
      if (!col) throw new Error(`field ${f} refers to keyword column ${c - 1}, not given`);
      fieldColumn.push(col);
    }
  }
  const shapeCount = head.varint();
  const shapesIn = head.sub();
  // Per shape: its slots' fields, and its literals' starts and ends in `buf`.
  const shapeSlots: number[][] = [];
  const shapeLits: number[][] = [];
  for (let s = 0; s < shapeCount; s++) {
    const n = shapesIn.varint();
    if (n > shapesIn.end - shapesIn.p) throw new Error(`shape ${s} of ${n} slots`);
    const slots: number[] = [];
    for (let k = 0; k < n; k++) {
      const f = shapesIn.varint();
      if (f >= fieldCount) throw new Error(`shape ${s} names field ${f} of ${fieldCount}`);
      slots.push(f);
    }
    const lits: number[] = [];
    for (let k = 0; k <= n; k++) {
      const at = shapesIn.span();
      lits.push(at, shapesIn.p);
    }
    shapeSlots.push(slots);
    shapeLits.push(lits);
  }
  const perDoc = head.sub();
  const verbatim = head.sub();
  const cols: ColIn[] = [];
  for (let f = 0; f < fieldCount; f++) {
    cols.push({
      col: fieldColumn[f]!,
      kinds: head.sub(),
      refs: head.sub(),
      strs: head.sub(),
      ints: head.sub(),
      raws: head.sub(),
      ips: head.sub(),
      strStart: [],
      strEnd: [],
    });
  }
  const raw = Buffer.allocUnsafe(total);
  const offsets = new Uint32Array(count + 1);
  let p = 0;
  const iso = new IsoWriter();
  for (let i = 0; i < count; i++) {
    offsets[i] = p;
    const sh = perDoc.varint();
    if (sh === 0) {
      const at = verbatim.span();
      if (verbatim.p - at > total - p) throw new Error('documents longer than the block says');
      p = copy(buf, at, verbatim.p, raw, p);
      continue;
    }
    if (sh > shapeCount) throw new Error(`document ${i} has shape ${sh - 1} of ${shapeCount}`);
    const slots = shapeSlots[sh - 1]!;
    const lits = shapeLits[sh - 1]!;
    for (let k = 0; k <= slots.length; k++) {
      const ls = lits[2 * k]!;
      const le = lits[2 * k + 1]!;
      if (le - ls > total - p) throw new Error('documents longer than the block says');
      p = copy(buf, ls, le, raw, p);
      if (k === slots.length) break;
      const col = cols[slots[k]!]!;
      const kinds = col.kinds;
      if (kinds.p >= kinds.end) throw new Error(`field ${slots[k]} has fewer values than its documents`);
      const kind = buf[kinds.p++]!;
      let vs: number;
      let ve: number;
      if (kind === STRING) {
        const ref = col.refs.varint();
        if (ref === 0) {
          vs = col.strs.span();
          ve = col.strs.p;
          col.strStart.push(vs);
          col.strEnd.push(ve);
        } else {
          if (ref > col.strStart.length) throw new Error(`string ${ref} of ${col.strStart.length}`);
          vs = col.strStart[ref - 1]!;
          ve = col.strEnd[ref - 1]!;
        }
        if (ve - vs + 2 > total - p) throw new Error('documents longer than the block says');
        raw[p++] = QUOTE;
        p = copy(buf, vs, ve, raw, p);
        raw[p++] = QUOTE;
      } else if (kind === INTEGER) {
        const z = col.ints.varint();
        if (17 > total - p && digits(z) > total - p) throw new Error('documents longer than the block says');
        p = writeInt(raw, p, z);
      } else if (kind === TIME) {
        if (26 > total - p) throw new Error('documents longer than the block says');
        const t = times[first + i]!;
        if (!iso.valid(t)) throw new Error(`document ${i}: a time value without an ISO form`);
        raw[p++] = QUOTE;
        p = iso.write(raw, p, t);
        raw[p++] = QUOTE;
      } else if (kind === IPV4) {
        const ips = col.ips;
        if (ips.p + 4 > ips.end) throw new Error(`field ${slots[k]} has fewer addresses than its documents`);
        // Writes past the end of `raw` are dropped; the check after them finds them.
        raw[p++] = QUOTE;
        p = writeOctet(raw, p, buf[ips.p]!);
        raw[p++] = 0x2e;
        p = writeOctet(raw, p, buf[ips.p + 1]!);
        raw[p++] = 0x2e;
        p = writeOctet(raw, p, buf[ips.p + 2]!);
        raw[p++] = 0x2e;
        p = writeOctet(raw, p, buf[ips.p + 3]!);
        raw[p++] = QUOTE;
        ips.p += 4;
        if (p > total) throw new Error('documents longer than the block says');
      } else if (kind === COLUMN || kind === COLUMN_BARE) {
        const ct = col.col;
        if (ct === null) throw new Error(`field ${slots[k]} refers to no column`);
        if (first + i >= ct.ords.length) throw new Error(`document ${first + i} past its column`);
        const o = ct.ords[first + i]!;
        if (o === NO_TOKEN || o + 1 >= ct.starts.length) throw new Error(`document ${first + i}: no column token`);
        const ts = ct.starts[o]!;
        const te = ct.starts[o + 1]!;
        if (ts > te || te > ct.table.length) throw new Error(`column token ${o} out of its table`);
        const q = kind === COLUMN ? 2 : 0;
        if (te - ts + q > total - p) throw new Error('documents longer than the block says');
        if (q) raw[p++] = QUOTE;
        p = copy(ct.table, ts, te, raw, p);
        if (q) raw[p++] = QUOTE;
      } else if (kind === RAW) {
        vs = col.raws.span();
        ve = col.raws.p;
        if (ve - vs > total - p) throw new Error('documents longer than the block says');
        p = copy(buf, vs, ve, raw, p);
      } else throw new Error(`value kind ${kind}`);
    }
  }
  offsets[count] = p;
  if (p !== total) throw new Error(`${p} bytes of documents decoded, the block says ${total}`);
  return { raw, offsets };
}
