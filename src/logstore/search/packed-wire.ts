// Packed hits as one byte string for the store API (StoreSearchResponse.hits): a store sends a search's hits in
// the layout packed-hits.ts keeps them in, and the proxy merges from those bytes without a message per document.
import os from 'node:os';
import type { HitList, PackedHits } from './packed-hits.js';

/*
 * Layout, little-endian: u32 n, u32 0 (padding), f64 times[n], u32 offs[n + 1] (into the JSON, offs[0] = 0),
 * the ids (24 ASCII bytes each), then the hits' JSON ({"id","data","time"} each, pipes applied) back to back.
 */
const HEAD = 8;
const LE = os.endianness() === 'LE';

/** The size of encodeHits(list). */
export function hitsWireSize(list: HitList): number {
  const n = list.length;
  let jsonSize = 0;
  for (let i = 0; i < n; i++) {
    const offs = list.parts[list.part[i]!]!.offs;
    const k = list.index[i]!;
    jsonSize += offs[k + 1]! - offs[k]!;
  }
  return HEAD + 8 * n + 4 * (n + 1) + 24 * n + jsonSize;
}

/**
 * Writes the hits of `list` (all of them, in order) at out[at ..] in the layout above (hitsWireSize(list) bytes):
 * times and offsets through typed-array views when aligned, ids copied from each part's id string once.
 */
export function writeHits(list: HitList, out: Buffer, at: number): void {
  const n = list.length;
  const timesAt = at + HEAD;
  const offsAt = timesAt + 8 * n;
  const idsAt = offsAt + 4 * (n + 1);
  const jsonAt = idsAt + 24 * n;
  out.writeUInt32LE(n, at);
  out.writeUInt32LE(0, at + 4);
  const times =
    LE && (out.byteOffset + timesAt) % 8 === 0 ? new Float64Array(out.buffer, out.byteOffset + timesAt, n) : null;
  const offsView =
    LE && (out.byteOffset + offsAt) % 4 === 0 ? new Uint32Array(out.buffer, out.byteOffset + offsAt, n + 1) : null;
  const ids = list.parts.map((p) => Buffer.from(p.ids, 'latin1'));
  const bytes = new Uint8Array(out.buffer, out.byteOffset, out.byteLength);
  let pos = 0;
  // The JSON of hits that follow each other in one part is contiguous there: copied as one run.
  let runPart = -1;
  let runStart = 0;
  let runEnd = 0;
  let runAt = 0;
  for (let i = 0; i < n; i++) {
    const part = list.part[i]!;
    const p = list.parts[part]!;
    const k = list.index[i]!;
    if (times) times[i] = p.times[k]!;
    else out.writeDoubleLE(p.times[k]!, timesAt + 8 * i);
    if (offsView) offsView[i] = pos;
    else out.writeUInt32LE(pos, offsAt + 4 * i);
    const id = ids[part]!;
    for (let b = 0, from = k * 24, to = idsAt + 24 * i; b < 24; b++) bytes[to + b] = id[from + b]!;
    const start = p.offs[k]!;
    const end = p.offs[k + 1]!;
    if (part !== runPart || start !== runEnd) {
      if (runPart >= 0) bytes.set(list.parts[runPart]!.json.subarray(runStart, runEnd), runAt);
      runPart = part;
      runStart = start;
      runAt = jsonAt + pos;
    }
    runEnd = end;
    pos += end - start;
  }
  if (runPart >= 0) bytes.set(list.parts[runPart]!.json.subarray(runStart, runEnd), runAt);
  out.writeUInt32LE(pos, offsAt + 4 * n);
}

/** The hits of `list` (all of them, in order) as the bytes of StoreSearchResponse.hits. */
export function encodeHits(list: HitList): Buffer {
  const out = Buffer.allocUnsafe(hitsWireSize(list));
  writeHits(list, out, 0);
  return out;
}

/** An error in the bytes a store sent (the search counts as that store failing). */
function bad(what: string): Error {
  return new Error(`the store's packed hits are malformed: ${what}`);
}

/**
 * The hits of StoreSearchResponse.hits. The JSON stays a view into `buf` (no copy); times and offsets are
 * copied (aligned arrays). Lengths and offsets are checked, so that bad bytes fail here, not in a merge.
 */
export function decodeHits(buf: Uint8Array): PackedHits {
  if (buf.length < HEAD) throw bad(`${buf.length} bytes`);
  const b = Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength);
  const n = b.readUInt32LE(0);
  const offsAt = HEAD + 8 * n;
  const idsAt = offsAt + 4 * (n + 1);
  const jsonAt = idsAt + 24 * n;
  if (jsonAt > b.length) throw bad(`${n} hits in ${b.length} bytes`);
  const times = new Float64Array(n);
  const offs = new Uint32Array(n + 1);
  if (LE) {
    new Uint8Array(times.buffer).set(b.subarray(HEAD, offsAt));
    new Uint8Array(offs.buffer).set(b.subarray(offsAt, idsAt));
  } else {
    for (let i = 0; i < n; i++) times[i] = b.readDoubleLE(HEAD + 8 * i);
    for (let i = 0; i <= n; i++) offs[i] = b.readUInt32LE(offsAt + 4 * i);
  }
  const json = b.subarray(jsonAt);
  if (offs[0] !== 0 || offs[n] !== json.length) throw bad('the offsets do not span the JSON');
  for (let i = 0; i < n; i++) if (offs[i]! > offs[i + 1]!) throw bad(`hit ${i} ends before it starts`);
  return { times, ids: b.toString('latin1', idsAt, jsonAt), json, offs };
}
