// Client-supplied document ids (`_id` of a bulk action): their hash, the shard they route to, and the
// per-fraction lookup that tells whether an id is stored already (sealed fractions keep a sorted hash file).
import { closeSync, openSync, readSync } from 'node:fs';

/** FNV-1a over the UTF-16 code units, then murmur3's finalizer: uniform enough to interpolate on. */
export function clientIdHash(id: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < id.length; i++) h = Math.imul(h ^ id.charCodeAt(i), 0x01000193);
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** The shard every copy of one id goes to, so that one shard's check sees them all (Elasticsearch routes by id too). */
export function routeClientId(id: string, shards: number): number {
  return (Math.imul(clientIdHash(id), 0x9e3779b1) >>> 0) % shards;
}

/** Ids written into JSON as they are: printable ASCII without quote or backslash. */
const PLAIN_ASCII = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;

/** Bytes withClientIdInto() may write for a document of `len` bytes and this id. */
export function withClientIdBound(len: number, id: string): number {
  let b = 10;
  for (let i = 0; i < id.length; i++) {
    const c = id.charCodeAt(i);
    b += c < 0x20 ? 6 : c === 0x22 || c === 0x5c ? 2 : c < 0x80 ? 1 : c < 0x800 ? 2 : c >= 0xd800 && c <= 0xdfff ? 6 : 3;
  }
  return len + b;
}

/** Writes the document with `"_id":<id>` as its first field at out[pos] (`doc` is a JSON object, possibly
 *  after blanks) and returns the bytes written. */
export function withClientIdInto(out: Buffer, pos: number, doc: Uint8Array, id: string): number {
  let open = 0;
  while (open < doc.length && doc[open] !== 0x7b) open++;
  let next = open + 1;
  while (next < doc.length && (doc[next] === 0x20 || doc[next] === 0x09 || doc[next] === 0x0a || doc[next] === 0x0d)) next++;
  const empty = doc[next] === 0x7d;
  let p = pos + out.write('{"_id":', pos, 'latin1');
  p += PLAIN_ASCII.test(id) ? out.write(`"${id}"`, p, 'latin1') : out.write(JSON.stringify(id), p);
  if (!empty) out[p++] = 0x2c;
  const rest = doc.subarray(empty ? next : open + 1);
  out.set(rest, p);
  p += rest.length;
  return p - pos;
}

/** The document bytes with `"_id":<id>` as their first field. */
export function withClientId(doc: Uint8Array, id: string): Buffer {
  const out = Buffer.allocUnsafe(withClientIdBound(doc.length, id));
  return out.subarray(0, withClientIdInto(out, 0, doc, id));
}

/**
 * The client-ids file of a sealed fraction: u32 n, then n hashes ascending, then the local id of each
 * (little-endian). Only the hashes are read into memory (4 bytes per id, on the first lookup); a hash that
 * matches reads its local ids from the file and the caller compares the stored document's `_id`.
 */
export function encodeClientIds(entries: [id: string, local: number][]): Buffer {
  const n = entries.length;
  const out = Buffer.allocUnsafe(4 + 8 * n);
  out.writeUInt32LE(n, 0);
  const put = (i: number, h: number, local: number) => {
    out.writeUInt32LE(h, 4 + 4 * i);
    out.writeUInt32LE(local, 4 + 4 * n + 4 * i);
  };
  if (n < 2 ** 21) {
    // hash * 2^21 + entry index stays below 2^53: one native sort of doubles, no comparator calls.
    const keys = new Float64Array(n);
    for (let i = 0; i < n; i++) keys[i] = clientIdHash(entries[i]![0]) * 2 ** 21 + i;
    keys.sort();
    for (let i = 0; i < n; i++) {
      const k = keys[i]!;
      const e = k % 2 ** 21;
      put(i, (k - e) / 2 ** 21, entries[e]![1]);
    }
    return out;
  }
  const hashed = entries.map(([id, local]) => [clientIdHash(id), local] as const).sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  for (let i = 0; i < n; i++) put(i, hashed[i]![0], hashed[i]![1]);
  return out;
}

/** First index of `h` in the ascending `hashes`, or -1: interpolation search (the hashes are uniform). */
export function findHash(hashes: Uint32Array, h: number): number {
  let lo = 0;
  let hi = hashes.length - 1;
  while (lo <= hi) {
    const a = hashes[lo]!;
    const b = hashes[hi]!;
    if (h < a || h > b) return -1;
    let mid = a === b ? lo : lo + Math.floor(((h - a) / (b - a)) * (hi - lo));
    if (mid < lo) mid = lo;
    else if (mid > hi) mid = hi;
    const v = hashes[mid]!;
    if (v < h) lo = mid + 1;
    else if (v > h) hi = mid - 1;
    else {
      while (mid > 0 && hashes[mid - 1] === h) mid--;
      return mid;
    }
  }
  return -1;
}

export class SealedClientIds {
  private hashes: Uint32Array | null = null;
  private fd = -1;

  constructor(private readonly file: string) {}

  private load(): Uint32Array {
    if (this.hashes) return this.hashes;
    this.fd = openSync(this.file, 'r');
    const head = Buffer.alloc(4);
    readSync(this.fd, head, 0, 4, 0);
    const n = head.readUInt32LE(0);
    const bytes = Buffer.allocUnsafeSlow(4 * n);
    let got = 0;
    while (got < bytes.length) {
      const r = readSync(this.fd, bytes, got, bytes.length - got, 4 + got);
      if (r === 0) break;
      got += r;
    }
    this.hashes = new Uint32Array(bytes.buffer, bytes.byteOffset, n);
    return this.hashes;
  }

  /** Local ids whose client id hashes to `h` (candidates: the caller checks the document). */
  candidates(h: number): number[] {
    const hashes = this.load();
    let i = findHash(hashes, h);
    if (i < 0) return [];
    const out: number[] = [];
    const b = Buffer.alloc(4);
    for (; i < hashes.length && hashes[i] === h; i++) {
      readSync(this.fd, b, 0, 4, 4 + 4 * hashes.length + 4 * i);
      out.push(b.readUInt32LE(0));
    }
    return out;
  }

  close(): void {
    if (this.fd >= 0) closeSync(this.fd);
    this.fd = -1;
    this.hashes = null;
  }
}
