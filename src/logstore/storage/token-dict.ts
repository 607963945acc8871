// The sealed dictionary file (dict.bin, before compression): each field's tokens in sorted order, as the seal's sort
// wrote them (no string per token, no JSON.stringify); readers still open the JSON form of older fractions.
import type { SortedField } from './sort-tokens.js';
/** First bytes of the binary form ("TPD" and a version); the JSON form starts with '['. */
const MAGIC = [0x54, 0x50, 0x44, 0x01] as const;
const LATIN1 = 1;
const UTF16 = 2;

export interface DictField extends SortedField {
  name: string;
}

/**
 * Layout, little-endian: magic, u32 field count, then per field: u32 name length, name (UTF-8), u32 token count,
 * u8 encoding (1: every code unit < 256, one byte each; 2: UTF-16LE, lone surrogates kept), u32 length in code
 * units of each token, then the tokens' code units in sorted order.
 */
export function encodeDict(fields: readonly DictField[]): Buffer {
  let size = 8;
  const names = fields.map((f) => Buffer.from(f.name, 'utf8'));
  for (let fi = 0; fi < fields.length; fi++)
    size += 4 + names[fi]!.length + 4 + 1 + 4 * fields[fi]!.lens.length + fields[fi]!.bytes.length;
  const out = Buffer.allocUnsafe(size);
  out.set(MAGIC, 0);
  out.writeUInt32LE(fields.length, 4);
  let p = 8;
  for (let fi = 0; fi < fields.length; fi++) {
    const { lens, bytes, wide } = fields[fi]!;
    const n = lens.length;
    p = out.writeUInt32LE(names[fi]!.length, p);
    p += names[fi]!.copy(out, p);
    p = out.writeUInt32LE(n, p);
    out[p++] = wide ? UTF16 : LATIN1;
    out.set(new Uint8Array(lens.buffer, lens.byteOffset, n * 4), p);
    p += n * 4;
    out.set(bytes, p);
    p += bytes.length;
  }
  if (p !== size) throw new Error(`dict.bin: wrote ${p} bytes of ${size}`);
  return out;
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
  for (let i = 0; i < MAGIC.length; i++) {
    if (buf[i] !== MAGIC[i]) throw new Error(`dict.bin: unknown format (first byte ${buf[0]})`);
  }
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
