// Client-supplied document ids (`_id` of a bulk action): their hash, the shard they route to, and the
// per-fraction lookup that tells whether an id is stored already (sealed fractions keep a sorted hash file).
import { closeSync, openSync, readSync } from 'node:fs';

const NONE: readonly number[] = Object.freeze([]);

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
  // The high bits of a multiplicative hash: the low bits of the hash stay uniform within each shard
  // (taking h % shards would leave, say, only even hashes in shard 0 and crowd its tables).
  return Math.floor(((Math.imul(clientIdHash(id), 0x9e3779b1) >>> 0) / 2 ** 32) * shards);
}

/** Ids written into JSON as they are: printable ASCII without quote or backslash. */
const PLAIN_ASCII = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;

/** Bytes withClientIdInto() may write for a document of `len` bytes and this id. */
export function withClientIdBound(len: number, id: string): number {
  let b = 10;
  for (let i = 0; i < id.length; i++) {
    const c = id.charCodeAt(i);
    b +=
      c < 0x20 ? 6 : c === 0x22 || c === 0x5c ? 2 : c < 0x80 ? 1 : c < 0x800 ? 2 : c >= 0xd800 && c <= 0xdfff ? 6 : 3;
  }
  return len + b;
}

/** Writes the document with `"_id":<id>` as its first field at out[pos] (`doc` is a JSON object, possibly
 *  after blanks) and returns the bytes written. */
export function withClientIdInto(out: Buffer, pos: number, doc: Uint8Array, id: string): number {
  let open = 0;
  while (open < doc.length && doc[open] !== 0x7b) open++;
  let next = open + 1;
  while (next < doc.length && (doc[next] === 0x20 || doc[next] === 0x09 || doc[next] === 0x0a || doc[next] === 0x0d))
    next++;
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
 * Client ids of the active fraction: an open-addressing table of (hash, local id) in typed arrays, so a
 * fraction of millions of ids costs the garbage collector nothing per id (a Map of strings would be traced
 * at every major collection). A hash match is confirmed against the stored document.
 */
export class ClientIdTable {
  private hashes = new Uint32Array(1024);
  /** local id + 1; 0: empty slot. */
  private locals = new Uint32Array(1024);
  size = 0;
  /** log2 of the table size; slots come from the high bits of a multiplicative hash. */
  private bits = 10;

  add(h: number, local: number): void {
    if (2 * (this.size + 1) > this.hashes.length) this.grow();
    this.put(h, local);
    this.size++;
  }

  private slot(h: number): number {
    return Math.imul(h ^ (h >>> 15), 0x2c1b3c6d) >>> (32 - this.bits);
  }

  private put(h: number, local: number): void {
    const mask = this.hashes.length - 1;
    let i = this.slot(h);
    while (this.locals[i] !== 0) i = (i + 1) & mask;
    this.hashes[i] = h;
    this.locals[i] = local + 1;
  }

  private grow(): void {
    const oldH = this.hashes;
    const oldL = this.locals;
    this.hashes = new Uint32Array(oldH.length * 2);
    this.locals = new Uint32Array(oldL.length * 2);
    this.bits++;
    for (let i = 0; i < oldH.length; i++) if (oldL[i] !== 0) this.put(oldH[i]!, oldL[i]! - 1);
  }

  /** Local ids whose id hashes to `h` (no allocation when there is none, the usual answer). */
  candidates(h: number): readonly number[] {
    let out: number[] | null = null;
    const mask = this.hashes.length - 1;
    for (let i = this.slot(h); this.locals[i] !== 0; i = (i + 1) & mask)
      if (this.hashes[i] === h) (out ??= []).push(this.locals[i]! - 1);
    return out ?? NONE;
  }

  /** Every (hash, local id) pair. */
  entries(): { hashes: Uint32Array; locals: Uint32Array } {
    const hashes = new Uint32Array(this.size);
    const locals = new Uint32Array(this.size);
    let k = 0;
    for (let i = 0; i < this.hashes.length; i++) {
      if (this.locals[i] === 0) continue;
      hashes[k] = this.hashes[i]!;
      locals[k++] = this.locals[i]! - 1;
    }
    return { hashes, locals };
  }
}

/** Whether stored document bytes carry client id `id`: the `_id` ingest puts first, else the parsed field. */
export function docHasClientId(buf: Buffer, start: number, end: number, id: string): boolean {
  const head = `{"_id":${JSON.stringify(id)}`;
  const len = Buffer.byteLength(head);
  if (
    end - start > len &&
    buf.toString('utf8', start, start + len) === head &&
    (buf[start + len] === 0x2c || buf[start + len] === 0x7d)
  )
    return true;
  const doc = JSON.parse(buf.toString('utf8', start, end)) as Record<string, unknown>;
  return doc._id === id;
}

/**
 * The client-ids file of a sealed fraction: u32 n, then n hashes ascending, then the local id of each
 * (little-endian). Only the hashes are read into memory (4 bytes per id, on the first lookup); a hash that
 * matches reads its local ids from the file and the caller compares the stored document's `_id`.
 */
export function encodeClientIds(hashes: Uint32Array, locals: ArrayLike<number>): Buffer {
  const n = hashes.length;
  const out = Buffer.allocUnsafe(4 + 8 * n);
  out.writeUInt32LE(n, 0);
  const put = (i: number, h: number, local: number) => {
    out.writeUInt32LE(h, 4 + 4 * i);
    out.writeUInt32LE(local, 4 + 4 * n + 4 * i);
  };
  if (n < 2 ** 21) {
    // hash * 2^21 + entry index stays below 2^53: one native sort of doubles, no comparator calls.
    const keys = new Float64Array(n);
    for (let i = 0; i < n; i++) keys[i] = hashes[i]! * 2 ** 21 + i;
    keys.sort();
    for (let i = 0; i < n; i++) {
      const k = keys[i]!;
      const e = k % 2 ** 21;
      put(i, (k - e) / 2 ** 21, locals[e]!);
    }
    return out;
  }
  const order = Array.from({ length: n }, (_, i) => i).sort(
    (a, b) => hashes[a]! - hashes[b]! || locals[a]! - locals[b]!,
  );
  for (let i = 0; i < n; i++) put(i, hashes[order[i]!]!, locals[order[i]!]!);
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
  candidates(h: number): readonly number[] {
    const hashes = this.load();
    let i = findHash(hashes, h);
    if (i < 0) return NONE;
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
