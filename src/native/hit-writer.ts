// Search hits as the API returns them, {"id":"<24 hex>","data":<stored document>,"time":"<ISO 8601>"}: the
// TypeScript twins of native/hit-writer.cc (used without the addon), same arguments and results.
import { ISO_TIME_BYTES, writeIsoTime } from '../logstore/search/hit-json.js';

/**
 * Writes hits j = 0 .. count - 1, the documents of block index b = first + j * step (step 1 or -1): bytes
 * raw[offsets[b] .. offsets[b + 1]), id ids[12 * (base + b) ..] (binary), time times[base + b], at out[pos ..];
 * hit j's start goes to hitOffs[at + j], its time to hitTimes[at + j], its id as hex to idsHex[24 * (at + j) ..].
 * Returns the position after the last hit, or -1 (nothing written) when `out` is too small or a time is before
 * 1970 or past 9999. Throws on indexes outside the arrays.
 */
export type WriteHits = (
  out: Uint8Array, pos: number, raw: Uint8Array, offsets: Uint32Array, first: number, count: number, step: number,
  ids: Uint8Array, times: Float64Array, base: number, idsHex: Uint8Array, hitOffs: Uint32Array, hitTimes: Float64Array, at: number,
) => number;

/** Hits from .. to - 1 (hit k is json[offs[k] .. offs[k + 1])) at out[pos ..], comma-separated; the end, or -1 when `out` is too small. */
export type JoinHits = (out: Uint8Array, pos: number, json: Uint8Array, offs: Uint32Array, from: number, to: number) => number;

/** {"id":"(7) id(24) ","data":(9) ,"time":"(9) time(24) "}(2): a hit's bytes besides its document. */
export const HIT_BYTES = 75;
const MAX_TIME = 253_402_300_800_000;
const HEX = new TextEncoder().encode('0123456789abcdef');
const ID_OPEN = [123, 34, 105, 100, 34, 58, 34]; // {"id":"
const DATA_OPEN = [34, 44, 34, 100, 97, 116, 97, 34, 58]; // ","data":
const TIME_OPEN = [44, 34, 116, 105, 109, 101, 34, 58, 34]; // ,"time":"

function bad(what: string): never {
  throw new RangeError(what);
}

function put(out: Uint8Array, p: number, bytes: readonly number[]): number {
  for (let i = 0; i < bytes.length; i++) out[p + i] = bytes[i]!;
  return p + bytes.length;
}

export const writeHitsTs: WriteHits = (out, pos, raw, offsets, first, count, step, ids, times, base, idsHex, hitOffs, hitTimes, at) => {
  const last = first + (count - 1) * step;
  const lo = Math.min(first, last);
  const hi = Math.max(first, last);
  if (!(count >= 1) || (step !== 1 && step !== -1) || lo < 0 || hi + 2 > offsets.length || base < 0 || base + hi >= times.length ||
    12 * (base + hi + 1) > ids.length || pos < 0 || at < 0 || at + count > hitOffs.length || at + count > hitTimes.length || 24 * (at + count) > idsHex.length) {
    bad('writeHits: bad range');
  }
  if (offsets[lo]! > offsets[hi + 1]! || offsets[hi + 1]! > raw.length) bad('writeHits: offsets outside the block');
  let need = 0;
  for (let b = lo; b <= hi; b++) {
    const t = times[base + b]!;
    if (!(t >= 0 && t < MAX_TIME) || offsets[b]! > offsets[b + 1]!) return -1;
    need += HIT_BYTES + offsets[b + 1]! - offsets[b]!;
  }
  if (pos + need > out.length) return -1;
  let p = pos;
  for (let j = 0, b = first; j < count; j++, b += step) {
    const time = times[base + b]!;
    hitOffs[at + j] = p;
    hitTimes[at + j] = time;
    p = put(out, p, ID_OPEN);
    const id = 12 * (base + b);
    const h = 24 * (at + j);
    for (let k = 0; k < 12; k++) {
      const x = ids[id + k]!;
      idsHex[h + 2 * k] = out[p++] = HEX[x >> 4]!;
      idsHex[h + 2 * k + 1] = out[p++] = HEX[x & 15]!;
    }
    p = put(out, p, DATA_OPEN);
    out.set(raw.subarray(offsets[b]!, offsets[b + 1]!), p);
    p += offsets[b + 1]! - offsets[b]!;
    p = put(out, p, TIME_OPEN);
    writeIsoTime(time, out, p);
    p += ISO_TIME_BYTES;
    out[p++] = 34;
    out[p++] = 125;
  }
  return p;
};

export const joinHitsTs: JoinHits = (out, pos, json, offs, from, to) => {
  if (pos < 0 || from < 0 || to < from || to + 1 > offs.length) bad('joinHits: bad range');
  if (to === from) return pos;
  let need = to - from - 1;
  for (let k = from; k < to; k++) {
    if (offs[k]! > offs[k + 1]! || offs[k + 1]! > json.length) bad('joinHits: offsets outside the hits');
    need += offs[k + 1]! - offs[k]!;
  }
  if (pos + need > out.length) return -1;
  let p = pos;
  for (let k = from; k < to; k++) {
    if (k > from) out[p++] = 44;
    out.set(json.subarray(offs[k]!, offs[k + 1]!), p);
    p += offs[k + 1]! - offs[k]!;
  }
  return p;
};
