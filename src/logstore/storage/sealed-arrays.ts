// Format 4's forms of a sealed fraction's times, ids and posting-list offsets (before Brotli): varints of
// differences, which is what those sorted or nearly constant arrays compress to best.
import { putVarint } from './varint.js';

/** Reads varints from `buf`, checking its end: each call returns one value. */
class Varints {
  p = 0;
  constructor(
    private readonly buf: Uint8Array,
    start: number,
  ) {
    this.p = start;
  }
  next(): number {
    const buf = this.buf;
    let v = 0;
    let mul = 1;
    for (;;) {
      if (this.p >= buf.length || mul > 2 ** 49) throw new Error(`bad varint at byte ${this.p}`);
      const b = buf[this.p++]!;
      v += (b & 0x7f) * mul;
      if (b < 0x80) return v;
      mul *= 0x80;
    }
  }
  get done(): boolean {
    return this.p === this.buf.length;
  }
}

const zigzag = (v: number) => (v < 0 ? -2 * v - 1 : 2 * v);
const unzigzag = (z: number) => (z % 2 === 0 ? z / 2 : -(z + 1) / 2);

/** Times in [-2^50, 2^50] whole milliseconds: differences fit a zigzag varint of at most 8 bytes. */
const TIME_LIMIT = 2 ** 50;

/**
 * Times in sealed order: u8 1 then the zigzag varint of each time's difference from the one before (the first from
 * 0) when every time is a whole number of milliseconds within 2^50 of 0; else u8 0 then each as a little-endian f64.
 */
export function encodeTimes(times: Float64Array): Uint8Array {
  const n = times.length;
  let whole = true;
  for (let i = 0; i < n && whole; i++) {
    const t = times[i]!;
    whole = Number.isInteger(t) && t >= -TIME_LIMIT && t <= TIME_LIMIT;
  }
  if (!whole) {
    const out = new Uint8Array(1 + 8 * n);
    out.set(new Uint8Array(times.buffer, times.byteOffset, 8 * n), 1);
    return out;
  }
  const out = new Uint8Array(1 + 8 * n);
  out[0] = 1;
  let p = 1;
  let prev = 0;
  for (let i = 0; i < n; i++) {
    const t = times[i]!;
    p = putVarint(out, p, zigzag(t - prev));
    prev = t;
  }
  return out.subarray(0, p);
}

export function decodeTimes(buf: Uint8Array, n: number): Float64Array {
  const out = new Float64Array(n);
  if (buf[0] === 0) {
    if (buf.length !== 1 + 8 * n) throw new Error(`${buf.length - 1} bytes of times for ${n} documents`);
    new Uint8Array(out.buffer).set(buf.subarray(1));
    return out;
  }
  if (buf[0] !== 1) throw new Error(`times coded ${buf[0]}`);
  const r = new Varints(buf, 1);
  let t = 0;
  for (let i = 0; i < n; i++) out[i] = t += unzigzag(r.next());
  if (!r.done) throw new Error(`times run past ${n} documents`);
  return out;
}

/**
 * The id tails (the 6 bytes after an id's time: shard and counter, below 2^48) in sealed order, as zigzag varints
 * of differences: an id's first 6 bytes are its time, which times.bin holds already.
 */
export function encodeIdTails(tail: (i: number) => number, n: number): Uint8Array {
  const out = new Uint8Array(8 * n);
  let p = 0;
  let prev = 0;
  for (let i = 0; i < n; i++) {
    const t = tail(i);
    p = putVarint(out, p, zigzag(t - prev));
    prev = t;
  }
  return out.subarray(0, p);
}

/** Writes a non-negative integer below 2^48 big-endian in 6 bytes (Buffer.writeUIntBE without its checks). */
export function writeU48(out: Uint8Array, at: number, v: number): void {
  const hi = Math.floor(v / 2 ** 24);
  const lo = v - hi * 2 ** 24;
  out[at] = hi >>> 16;
  out[at + 1] = (hi >>> 8) & 0xff;
  out[at + 2] = hi & 0xff;
  out[at + 3] = lo >>> 16;
  out[at + 4] = (lo >>> 8) & 0xff;
  out[at + 5] = lo & 0xff;
}

/** The 12-byte ids of `n` documents from their times and the tails encodeIdTails wrote. */
export function decodeIds(buf: Uint8Array, times: Float64Array, n: number): Buffer {
  const ids = Buffer.allocUnsafe(12 * n);
  const r = new Varints(buf, 0);
  let tail = 0;
  for (let i = 0; i < n; i++) {
    tail += unzigzag(r.next());
    if (tail < 0 || tail >= 2 ** 48) throw new Error(`id tail ${tail} of document ${i}`);
    writeU48(ids, 12 * i, times[i]!);
    writeU48(ids, 12 * i + 6, tail);
  }
  if (!r.done) throw new Error(`ids run past ${n} documents`);
  return ids;
}

/**
 * Where each posting list starts (offs, one more than the lists) and how many ids it holds (counts): the varint of
 * each list's length in bytes, then the varint of each count.
 */
export function encodeOffsets(offs: Uint32Array, counts: Uint32Array): Uint8Array {
  const out = new Uint8Array(5 * (offs.length + counts.length));
  let p = 0;
  for (let k = 0; k + 1 < offs.length; k++) p = putVarint(out, p, offs[k + 1]! - offs[k]!);
  for (let k = 0; k < counts.length; k++) p = putVarint(out, p, counts[k]!);
  return out.subarray(0, p);
}

/** offs (lists + 1 entries, from 0) and counts of `lists` posting lists, as encodeOffsets wrote them. */
export function decodeOffsets(buf: Uint8Array, lists: number): { offs: Uint32Array; counts: Uint32Array } {
  const offs = new Uint32Array(lists + 1);
  const counts = new Uint32Array(lists);
  const r = new Varints(buf, 0);
  let at = 0;
  for (let k = 0; k < lists; k++) {
    at += r.next();
    if (at > 0xffffffff) throw new Error(`posting list ${k} ends past 2^32`);
    offs[k + 1] = at;
  }
  for (let k = 0; k < lists; k++) counts[k] = r.next();
  if (!r.done) throw new Error(`offsets run past ${lists} lists`);
  return { offs, counts };
}

/**
 * The bytes of 32-bit values as four planes (every value's byte 0, then every byte 1, ...): keyword columns (ranks
 * in a dictionary, mostly below 2^24) compress to 0.7-0.8 of their size so, at Brotli's quality 0.
 */
export function toPlanes(bytes: Uint8Array): Uint8Array {
  const n = bytes.length >>> 2;
  const out = new Uint8Array(4 * n);
  for (let i = 0; i < n; i++) {
    out[i] = bytes[4 * i]!;
    out[n + i] = bytes[4 * i + 1]!;
    out[2 * n + i] = bytes[4 * i + 2]!;
    out[3 * n + i] = bytes[4 * i + 3]!;
  }
  return out;
}

/** The 32-bit values of toPlanes' output, in a fresh aligned array. */
export function fromPlanes(planes: Uint8Array): Uint32Array {
  if (planes.length % 4 !== 0) throw new Error(`${planes.length} bytes are not whole 32-bit values`);
  const n = planes.length >>> 2;
  const out = new Uint32Array(n);
  for (let i = 0; i < n; i++)
    out[i] = (planes[i]! | (planes[n + i]! << 8) | (planes[2 * n + i]! << 16) | (planes[3 * n + i]! << 24)) >>> 0;
  return out;
}

/** A keyword column's ordinals kept in memory, and the ordinal of a document without a value. */
export interface NarrowOrds {
  ords: Uint8Array | Uint16Array | Uint32Array;
  missing: number;
}

/**
 * The narrowest form of a column of `values` distinct values: one byte a document when there are at most 255 (255
 * for none), two at most 65 535 (65 535 for none), else four (0xffffffff for none, as on disk). A column of a
 * field with few values (status, level, service) then takes a quarter of the memory.
 */
function narrowWidth(values: number): 1 | 2 | 4 {
  return values <= 0xff ? 1 : values <= 0xffff ? 2 : 4;
}

/**
 * fromPlanes in the narrowest form (narrowWidth): every ordinal below 2^8 (2^16) but "none" (all ones), so the
 * first plane (two) hold the whole value.
 */
export function narrowFromPlanes(planes: Uint8Array, values: number): NarrowOrds {
  if (planes.length % 4 !== 0) throw new Error(`${planes.length} bytes are not whole 32-bit values`);
  const n = planes.length >>> 2;
  const width = narrowWidth(values);
  if (width === 4) return { ords: fromPlanes(planes), missing: 0xffffffff };
  if (width === 1) return { ords: planes.slice(0, n), missing: 0xff };
  const out = new Uint16Array(n);
  for (let i = 0; i < n; i++) out[i] = planes[i]! | (planes[n + i]! << 8);
  return { ords: out, missing: 0xffff };
}

/** 32-bit ordinals (0xffffffff for none) in the narrowest form (narrowWidth). */
export function narrow(ords: Uint32Array, values: number): NarrowOrds {
  const width = narrowWidth(values);
  if (width === 4) return { ords, missing: 0xffffffff };
  const out = width === 1 ? new Uint8Array(ords.length) : new Uint16Array(ords.length);
  const missing = width === 1 ? 0xff : 0xffff;
  for (let i = 0; i < ords.length; i++) {
    const o = ords[i]!;
    out[i] = o === 0xffffffff ? missing : o;
  }
  return { ords: out, missing };
}
