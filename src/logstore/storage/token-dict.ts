// The sealed dictionary file (dict.bin, before compression): each field's tokens in sorted order, as the seal's sort
// wrote them (no string per token, no JSON.stringify); readers still open the JSON form of older fractions.
import { type DictTokenTableNative, dictTokenTableNative } from '../../native/index.js';
import type { SortedField } from './sort-tokens.js';
import { putVarint32 } from './varint.js';
/** First bytes of the binary form ("TPD" and a version: 1, or 2 front-coded); the JSON form starts with '['. */
const MAGIC = [0x54, 0x50, 0x44, 0x01] as const;
const FRONT_CODED = 0x02;
const LATIN1 = 1;
const UTF16 = 2;

export interface DictField extends SortedField {
  name: string;
}

/**
 * Layout (version 2, sealed fractions of format 4), little-endian: magic, u32 field count, then per field: u32 name
 * length, name (UTF-8), u32 token count, u8 encoding (1: every code unit < 256, one byte each; 2: UTF-16LE, lone
 * surrogates kept), u32 bytes of prefixes, then per token the varints of the code units it shares with the token
 * before and of the rest, u32 code units of the rests, then the rests' code units in sorted order (front coding:
 * sorted neighbours share prefixes, addresses and numbers most: 0.61x of version 1 after Brotli on the bench's
 * http_logs documents). Version 1 wrote a u32 length per token and every token whole, and is still read.
 */
export function encodeDict(fields: readonly DictField[]): Buffer {
  const names = fields.map((f) => Buffer.from(f.name, 'utf8'));
  const coded = fields.map(frontCode);
  let size = 8;
  for (let fi = 0; fi < fields.length; fi++)
    size += 4 + names[fi]!.length + 4 + 1 + 4 + coded[fi]!.lens.length + 4 + coded[fi]!.rest.length;
  const out = Buffer.allocUnsafe(size);
  out.set(MAGIC, 0);
  out[3] = FRONT_CODED;
  out.writeUInt32LE(fields.length, 4);
  let p = 8;
  for (let fi = 0; fi < fields.length; fi++) {
    const { lens, rest } = coded[fi]!;
    const width = fields[fi]!.wide ? 2 : 1;
    p = out.writeUInt32LE(names[fi]!.length, p);
    p += names[fi]!.copy(out, p);
    p = out.writeUInt32LE(fields[fi]!.lens.length, p);
    out[p++] = fields[fi]!.wide ? UTF16 : LATIN1;
    p = out.writeUInt32LE(lens.length, p);
    out.set(lens, p);
    p += lens.length;
    p = out.writeUInt32LE(rest.length / width, p);
    out.set(rest, p);
    p += rest.length;
  }
  if (p !== size) throw new Error(`dict.bin: wrote ${p} bytes of ${size}`);
  return out;
}

/** A sorted field's tokens front-coded: the varints of each one's shared prefix and rest, and the rests' bytes. */
function frontCode(f: SortedField): { lens: Uint8Array; rest: Uint8Array } {
  const width = f.wide ? 2 : 1;
  const n = f.lens.length;
  const lens = new Uint8Array(10 * n);
  const rest = new Uint8Array(f.bytes.length);
  const b = f.bytes;
  let lp = 0;
  let rp = 0;
  let at = 0;
  let prevAt = 0;
  let prevLen = 0;
  for (let r = 0; r < n; r++) {
    const len = f.lens[r]!;
    // Shared code units with the token before (whole units: both bytes of a UTF-16 unit).
    let k = 0;
    const max = Math.min(len, prevLen);
    outer: while (k < max) {
      for (let u = 0; u < width; u++) if (b[at + k * width + u] !== b[prevAt + k * width + u]) break outer;
      k++;
    }
    lp = putVarint32(lens, lp, k);
    lp = putVarint32(lens, lp, len - k);
    rest.set(b.subarray(at + k * width, at + len * width), rp);
    rp += (len - k) * width;
    prevAt = at;
    prevLen = len;
    at += len * width;
  }
  return { lens: lens.subarray(0, lp), rest: rest.subarray(0, rp) };
}

/** The tokens of a sorted field as strings (small fields: `_exists_`). */
export function sortedTokens(f: SortedField): string[] {
  const text = Buffer.from(f.bytes.buffer, f.bytes.byteOffset, f.bytes.byteLength).toString(
    f.wide ? 'utf16le' : 'latin1',
  );
  const out = new Array<string>(f.lens.length);
  let at = 0;
  for (let r = 0; r < f.lens.length; r++) {
    out[r] = text.slice(at, at + f.lens[r]!);
    at += f.lens[r]!;
  }
  return out;
}

/** Fields and their sorted tokens, from either form of dict.bin. */
export function decodeDict(buf: Buffer): [string, string[]][] {
  if (buf.length === 0 || buf[0] === 0x5b) return JSON.parse(buf.toString('utf8')) as [string, string[]][];
  for (let i = 0; i < MAGIC.length - 1; i++) {
    if (buf[i] !== MAGIC[i]) throw new Error(`dict.bin: unknown format (first byte ${buf[0]})`);
  }
  if (buf[3] === FRONT_CODED) return decodeFrontCoded(buf);
  if (buf[3] !== MAGIC[3]) throw new Error(`dict.bin: unknown format (version ${buf[3]})`);
  const out: [string, string[]][] = [];
  const fieldCount = buf.readUInt32LE(4);
  let p = 8;
  for (let fi = 0; fi < fieldCount; fi++) {
    const nameLen = buf.readUInt32LE(p);
    p += 4;
    const name = buf.toString('utf8', p, p + nameLen);
    p += nameLen;
    const n = buf.readUInt32LE(p);
    const enc = buf[p + 4];
    p += 5;
    if (enc !== LATIN1 && enc !== UTF16) throw new Error(`dict.bin: unknown token encoding ${enc} in field ${name}`);
    const lensAt = p;
    let total = 0;
    for (let r = 0; r < n; r++) total += buf.readUInt32LE(lensAt + 4 * r);
    p += 4 * n;
    const width = enc === UTF16 ? 2 : 1;
    if (p + total * width > buf.length) throw new Error(`dict.bin: field ${name} runs past the end of the file`);
    const text = buf.toString(enc === UTF16 ? 'utf16le' : 'latin1', p, p + total * width);
    p += total * width;
    const tokens = new Array<string>(n);
    let at = 0;
    for (let r = 0; r < n; r++) {
      const len = buf.readUInt32LE(lensAt + 4 * r);
      tokens[r] = text.slice(at, at + len);
      at += len;
    }
    out.push([name, tokens]);
  }
  if (p !== buf.length) throw new Error(`dict.bin: ${buf.length - p} bytes after the last field`);
  return out;
}

/** Where one field of a version 2 dictionary is in its buffer (see encodeDict). */
interface CodedField {
  name: string;
  n: number;
  enc: number;
  lensAt: number;
  lensEnd: number;
  restAt: number;
  units: number;
}

/** The fields of a version 2 dictionary (see encodeDict), their tokens not decoded. */
function frontCodedFields(buf: Buffer): CodedField[] {
  const out: CodedField[] = [];
  const need = (p: number, bytes: number, what: string) => {
    if (p + bytes > buf.length) throw new Error(`dict.bin: ${what} runs past the end of the file`);
  };
  need(0, 8, 'the header');
  const fieldCount = buf.readUInt32LE(4);
  let p = 8;
  for (let fi = 0; fi < fieldCount; fi++) {
    need(p, 4, `field ${fi}`);
    const nameLen = buf.readUInt32LE(p);
    p += 4;
    need(p, nameLen + 9, `field ${fi}`);
    const name = buf.toString('utf8', p, p + nameLen);
    p += nameLen;
    const n = buf.readUInt32LE(p);
    const enc = buf[p + 4]!;
    if (enc !== LATIN1 && enc !== UTF16) throw new Error(`dict.bin: unknown token encoding ${enc} in field ${name}`);
    const lensBytes = buf.readUInt32LE(p + 5);
    p += 9;
    need(p, lensBytes + 4, `field ${name}`);
    const lensAt = p;
    const lensEnd = p + lensBytes;
    p = lensEnd;
    const units = buf.readUInt32LE(p);
    p += 4;
    const width = enc === UTF16 ? 2 : 1;
    need(p, units * width, `field ${name}`);
    const restAt = p;
    p += units * width;
    out.push({ name, n, enc, lensAt, lensEnd, restAt, units });
  }
  if (p !== buf.length) throw new Error(`dict.bin: ${buf.length - p} bytes after the last field`);
  return out;
}

/** One field's tokens whole, one after the other (code units, one byte each unless `wide`), and their lengths. */
function frontCodedBytes(buf: Buffer, f: CodedField): { bytes: Buffer; lens: Uint32Array; wide: boolean } {
  const { name, n, enc, lensAt, lensEnd, restAt, units } = f;
  const width = enc === UTF16 ? 2 : 1;
  // Every token takes at least two bytes of varints (so a damaged count allocates nothing large).
  if (2 * n > lensEnd - lensAt) throw new Error(`dict.bin: field ${name}: its prefixes run past the end of the file`);
  let q = lensAt;
  const varint = () => {
    let v = 0;
    for (let shift = 0; ; shift += 7) {
      if (q >= lensEnd || shift > 28)
        throw new Error(`dict.bin: field ${name}: its prefixes run past the end of the file`);
      const b = buf[q++]!;
      v += (b & 0x7f) * 2 ** shift;
      if (b < 0x80) return v;
    }
  };
  // The tokens whole, one after the other (each prefix copied from the token before), then one string of them.
  const lens = new Uint32Array(n);
  const rests = new Uint32Array(n);
  let total = 0;
  let restUnits = 0;
  for (let r = 0; r < n; r++) {
    const shared = varint();
    const rest = varint();
    if (shared > (r ? lens[r - 1]! : 0) || restUnits + rest > units)
      throw new Error(`dict.bin: field ${name}: token ${r} runs past the end of the file`);
    lens[r] = shared + rest;
    rests[r] = rest;
    total += shared + rest;
    restUnits += rest;
  }
  if (q !== lensEnd || restUnits !== units) throw new Error(`dict.bin: field ${name}: bytes after its last token`);
  const whole = Buffer.allocUnsafe(total * width);
  let w = 0;
  let prevAt = 0;
  let from = restAt;
  for (let r = 0; r < n; r++) {
    const restBytes = rests[r]! * width;
    const sharedBytes = lens[r]! * width - restBytes;
    const at = w;
    for (let i = 0; i < sharedBytes; i++) whole[w++] = whole[prevAt + i]!;
    for (let i = 0; i < restBytes; i++) whole[w++] = buf[from++]!;
    prevAt = at;
  }
  return { bytes: whole, lens, wide: enc === UTF16 };
}

/** The tokens of one field of a version 2 dictionary. */
function frontCodedTokens(buf: Buffer, f: CodedField): string[] {
  const { bytes, lens, wide } = frontCodedBytes(buf, f);
  const text = bytes.toString(wide ? 'utf16le' : 'latin1');
  const tokens = new Array<string>(lens.length);
  let at = 0;
  for (let r = 0; r < lens.length; r++) {
    tokens[r] = text.slice(at, at + lens[r]!);
    at += lens[r]!;
  }
  return tokens;
}

/**
 * One field's sorted tokens as bytes (code units, one byte each unless `wide`) and their lengths in code units, from
 * a version 2 dict.bin, without making strings (what document blocks that refer to keyword columns need, format 5);
 * null when the field is not in it. Throws when the file is not version 2 or does not decode.
 */
export function fieldTokenBytes(
  buf: Buffer,
  field: string,
): { bytes: Buffer; lens: Uint32Array; wide: boolean } | null {
  if (buf.length < 4 || buf[3] !== FRONT_CODED) throw new Error('dict.bin: not front-coded');
  for (let i = 0; i < MAGIC.length - 1; i++) {
    if (buf[i] !== MAGIC[i]) throw new Error(`dict.bin: unknown format (first byte ${buf[0]})`);
  }
  const f = frontCodedFields(buf).find((x) => x.name === field);
  return f ? frontCodedBytes(buf, f) : null;
}

/**
 * One field's token table by rank, as document blocks that refer to keyword columns read it (format 5): the same
 * table and starts as `tokenTableOfBytes(fieldTokenBytes(buf, field))` (doc-columns.ts: ASCII tokens as their bytes,
 * others empty), made in one pass when no token has a byte of 128 or more (the usual case: the tokens one after the
 * other are the table, their lengths' running sums the starts; no lengths array, no second pass over the bytes).
 * null when the field is not in `buf`; `wide` when it holds UTF-16 (not referable). Throws as fieldTokenBytes does.
 * `slow` is doc-columns.ts tokenTableOfBytes (passed in: that module imports this one's neighbours); `native` the
 * addon's pass (null: the TypeScript twin, asciiTable).
 */
export function fieldTokenTable(
  buf: Buffer,
  field: string,
  slow: (bytes: Buffer, lens: Uint32Array) => { table: Buffer; starts: Uint32Array },
  native: DictTokenTableNative | null = dictTokenTableNative,
): { table: Buffer; starts: Uint32Array; wide: boolean } | null {
  if (buf.length < 4 || buf[3] !== FRONT_CODED) throw new Error('dict.bin: not front-coded');
  for (let i = 0; i < MAGIC.length - 1; i++) {
    if (buf[i] !== MAGIC[i]) throw new Error(`dict.bin: unknown format (first byte ${buf[0]})`);
  }
  const f = frontCodedFields(buf).find((x) => x.name === field);
  if (!f) return null;
  if (f.enc === LATIN1) {
    if (2 * f.n > f.lensEnd - f.lensAt)
      throw new Error(`dict.bin: field ${f.name}: its prefixes run past the end of the file`);
    const got = native?.(buf, f.lensAt, f.lensEnd, f.restAt, f.n, f.units);
    if (got) return { table: got[0], starts: got[1], wide: false };
    const t = asciiTable(buf, f);
    if (t) return { ...t, wide: false };
  }
  const { bytes, lens, wide } = frontCodedBytes(buf, f);
  return wide ? { table: bytes, starts: lens, wide } : { ...slow(bytes, lens), wide };
}

/** Version 2 (see encodeDict). */
function decodeFrontCoded(buf: Buffer): [string, string[]][] {
  return frontCodedFields(buf).map((f) => [f.name, frontCodedTokens(buf, f)]);
}

/** A field of a dictionary: its name, its count of tokens, and its tokens, decoded when first asked for. */
export interface LazyDictField {
  name: string;
  count: number;
  tokens: () => string[];
}

/**
 * decodeDict, each field's tokens decoded only when asked for (version 2; the older forms are decoded whole): an
 * aggregation over `status` then makes no strings of the addresses' or the words' tokens.
 */
export function decodeDictLazy(buf: Buffer): LazyDictField[] {
  if (buf.length < 4 || buf[0] !== MAGIC[0] || buf[1] !== MAGIC[1] || buf[2] !== MAGIC[2] || buf[3] !== FRONT_CODED)
    return decodeDict(buf).map(([name, tokens]) => ({ name, count: tokens.length, tokens: () => tokens }));
  const fields = frontCodedFields(buf);
  // The bytes are let go once every field is decoded (the strings hold the tokens then).
  const src = { buf: buf as Buffer | null, left: fields.length };
  return fields.map((f) => {
    let done: string[] | null = null;
    const tokens = () => {
      if (!done) {
        done = frontCodedTokens(src.buf!, f);
        if (--src.left === 0) src.buf = null;
      }
      return done;
    };
    return { name: f.name, count: f.n, tokens };
  });
}
/**
 * fieldTokenTable's pass over a one-byte field (twin of the addon's dictTokenTable, which does it when built): null
 * (nothing decoded) when a byte of its rests is 128 or more (then some token is not ASCII and the caller takes the
 * general path); else the table and starts. Checks what frontCodedBytes checks, with the same messages.
 */
function asciiTable(buf: Buffer, f: CodedField): { table: Buffer; starts: Uint32Array } | null {
  const { name, n, lensAt, lensEnd, restAt, units } = f;
  for (let k = restAt; k < restAt + units; k++) if (buf[k]! >= 0x80) return null;
  // First pass: the lengths (checked), as running sums, so the table is allocated once at its size.
  const starts = new Uint32Array(n + 1);
  const rests = new Uint32Array(n);
  let q = lensAt;
  let total = 0;
  let restUnits = 0;
  let prevLen = 0;
  for (let r = 0; r < n; r++) {
    let shared = 0;
    let rest = 0;
    for (let part = 0; part < 2; part++) {
      let v = 0;
      for (let shift = 0; ; shift += 7) {
        if (q >= lensEnd || shift > 28)
          throw new Error(`dict.bin: field ${name}: its prefixes run past the end of the file`);
        const b = buf[q++]!;
        v += (b & 0x7f) * 2 ** shift;
        if (b < 0x80) break;
      }
      if (part === 0) shared = v;
      else rest = v;
    }
    if (shared > prevLen || restUnits + rest > units)
      throw new Error(`dict.bin: field ${name}: token ${r} runs past the end of the file`);
    starts[r] = total;
    rests[r] = rest;
    prevLen = shared + rest;
    total += prevLen;
    restUnits += rest;
  }
  starts[n] = total;
  if (q !== lensEnd || restUnits !== units) throw new Error(`dict.bin: field ${name}: bytes after its last token`);
  // Second pass: each token's shared prefix from the one before (the bytes just written), then its rest.
  const table = Buffer.allocUnsafe(total);
  let from = restAt;
  let prevAt = 0;
  for (let r = 0; r < n; r++) {
    const at = starts[r]!;
    const rest = rests[r]!;
    const shared = starts[r + 1]! - at - rest;
    for (let i = 0; i < shared; i++) table[at + i] = table[prevAt + i]!;
    const w = at + shared;
    if (rest < 16) for (let i = 0; i < rest; i++) table[w + i] = buf[from + i]!;
    else buf.copy(table, w, from, from + rest);
    from += rest;
    prevAt = at;
  }
  return { table, starts };
}
