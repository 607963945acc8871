// Seals an active fraction into immutable files: documents sorted by (time, id), compressed blocks,
// a sorted token dictionary, delta-varint posting lists and keyword columns.
import { mkdirSync, renameSync, rmSync } from 'node:fs';
import path from 'node:path';
import { encodePostingsInto } from '../../native/postings.js';
import { EXISTS_FIELD } from '../mapping.js';
import type { ActiveFraction } from './active-fraction.js';
import { MISSING } from './fraction-view.js';
import { type DictField, encodeDict, sortedTokens } from './token-dict.js';
import { encodeClientIds } from './client-ids.js';
import { BLOCK_BYTES, COLUMN_QUALITY, DOC_QUALITY, FILES, OFFSETS_QUALITY, FRACTION_FORMAT, type FractionMeta, bytesOf, compress, fsyncDir, writeFileDurable } from './fraction-files.js';

/** Writes a non-negative integer below 2^48 big-endian in 6 bytes (Buffer.writeUIntBE without its checks). */
function writeU48(out: Buffer, at: number, v: number): void {
  const hi = Math.floor(v / 2 ** 24);
  const lo = v - hi * 2 ** 24;
  out[at] = hi >>> 16;
  out[at + 1] = (hi >>> 8) & 0xff;
  out[at + 2] = hi & 0xff;
  out[at + 3] = lo >>> 16;
  out[at + 4] = (lo >>> 8) & 0xff;
  out[at + 5] = lo & 0xff;
}

/** Writes `frac` into `<dir>` (through `<dir>.tmp` and a rename) and returns its metadata and disk size. */
export function sealFraction(frac: ActiveFraction, dir: string): { meta: FractionMeta; diskBytes: number } {
  const tmp = `${dir}.tmp`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  const n = frac.docCount;
  const order = new Uint32Array(n);
  for (let i = 0; i < n; i++) order[i] = i;
  const times = frac.times;
  // Documents that arrived in time order (the usual case) keep their ids: no sort, no remapping.
  const identity = frac.timeOrdered;
  if (!identity) order.sort((a, b) => times[a]! - times[b]! || frac.tail(a) - frac.tail(b));
  const newOf = new Uint32Array(n);
  for (let i = 0; i < n; i++) newOf[order[i]!] = i;
  let disk = 0;
  const put = (name: string, data: Uint8Array) => {
    writeFileDurable(path.join(tmp, name), data);
    disk += data.length;
  };

  const sortedTimes = new Float64Array(n);
  // Ids in binary (the 24 hex digits as 12 bytes): 6 of time, 1 of shard, 5 of counter, big-endian.
  const idBytes = Buffer.allocUnsafe(n * 12);
  for (let i = 0; i < n; i++) {
    const old = order[i]!;
    sortedTimes[i] = times[old]!;
    writeU48(idBytes, i * 12, times[old]!);
    writeU48(idBytes, i * 12 + 6, frac.tail(old));
  }
  put(FILES.times, compress(bytesOf(sortedTimes)));
  put(FILES.ids, compress(idBytes));

  // Document blocks: u32 count, u32 length of each document, then the documents.
  const blocks: [number, number, number][] = [];
  const parts: Buffer[] = [];
  let fileOff = 0;
  for (let start = 0; start < n;) {
    let end = start;
    let bytes = 0;
    while (end < n && (end === start || bytes < BLOCK_BYTES)) {
      const r = frac.docRef(order[end++]!);
      bytes += r.end - r.start;
    }
    const raw = Buffer.allocUnsafe(4 + 4 * (end - start) + bytes);
    raw.writeUInt32LE(end - start, 0);
    let p = 4 + 4 * (end - start);
    for (let i = start; i < end; i++) {
      const r = frac.docRef(order[i]!);
      raw.writeUInt32LE(r.end - r.start, 4 + 4 * (i - start));
      p += r.buf.copy(raw, p, r.start, r.end);
    }
    const c = compress(raw, DOC_QUALITY);
    blocks.push([fileOff, c.length, start]);
    parts.push(c);
    fileOff += c.length;
    start = end;
  }
  put(FILES.docs, Buffer.concat(parts));

  // Dictionary, offsets, postings. Every list is encoded into one buffer (5 bytes per id at most), and each
  // token's rank in its field's sorted dictionary is kept by token id for the keyword columns below.
  // Lists in the sealed ids: inverted straight in (time, id) order when documents arrived out of it (concurrent
  // senders), so every list comes out sorted, with no remapping and sort of each list.
  const inverted = identity ? frac.index.all() : frac.index.allInOrder(order);
  const fields = frac.index.fields().map((f) => f.name).sort();
  const dict: DictField[] = [];
  // Token ids of each field's dictionary, in its sorted order.
  const dictIds: Uint32Array[] = [];
  let seen: string[] = [];
  let tokenCount = 0;
  for (const f of fields) {
    // Sorted by the document indexer (native/dict-sort.cc): ids, lengths and code units in sorted order.
    const sorted = frac.index.sortedDictionary(f);
    if (f === EXISTS_FIELD) seen = sortedTokens(sorted);
    dict.push({ name: f, ...sorted });
    dictIds.push(sorted.ids);
    tokenCount += sorted.ids.length;
  }
  const offs = new Uint32Array(tokenCount + 1);
  const counts = new Uint32Array(tokenCount);
  const rankOf = new Uint32Array(inverted.start.length);
  const postings = Buffer.allocUnsafe(inverted.data.length * 5);
  let k = 0;
  let pOff = 0;
  for (const sortedIds of dictIds) {
    for (let r = 0; r < sortedIds.length; r++) {
      const t = sortedIds[r]!;
      rankOf[t] = r;
      const lo = inverted.start[t]!;
      const hi = inverted.start[t + 1]!;
      offs[k] = pOff;
      counts[k] = hi - lo;
      pOff = encodePostingsInto(inverted.data, postings, pOff, lo, hi);
      k++;
    }
  }
  offs[k] = pOff;
  put(FILES.dict, compress(encodeDict(dict)));
  const offsAndCounts = new Uint32Array(offs.length + counts.length);
  offsAndCounts.set(offs, 0);
  offsAndCounts.set(counts, offs.length);
  put(FILES.offsets, compress(bytesOf(offsAndCounts), OFFSETS_QUALITY));
  put(FILES.postings, postings.subarray(0, pOff));

  // Keyword columns: per doc, the ordinal of its token in the field's sorted dictionary.
  const columns: string[] = [];
  for (let fi = 0; fi < fields.length; fi++) {
    const f = fields[fi]!;
    const col = frac.index.columnOrds(f);
    if (!col) continue;
    const ordMap = new Uint32Array(col.count).fill(MISSING);
    for (const t of dictIds[fi]!) {
      const o = frac.index.columnOrdinal(t);
      if (o >= 0) ordMap[o] = rankOf[t]!;
    }
    const ords = new Uint32Array(n);
    for (let i = 0; i < n; i++) {
      const o = col.ords[identity ? i : order[i]!]!;
      ords[i] = o === MISSING ? MISSING : ordMap[o]!;
    }
    put(FILES.column(columns.length), compress(bytesOf(ords), COLUMN_QUALITY));
    columns.push(f);
  }

  if (frac.clientIds.size > 0) {
    const { hashes, locals } = frac.clientIds.entries();
    for (let i = 0; i < locals.length; i++) locals[i] = newOf[locals[i]!]!;
    put(FILES.clientIds, encodeClientIds(hashes, locals));
  }

  const meta: FractionMeta = {
    format: FRACTION_FORMAT, name: frac.name, docCount: n,
    minTime: n ? sortedTimes[0]! : 0, maxTime: n ? sortedTimes[n - 1]! : 0,
    rawBytes: frac.rawBytes, blocks, fields, columns, seen,
    clientIds: frac.clientIds.size, idShards: frac.idShards(),
  };
  const metaBytes = Buffer.from(JSON.stringify(meta));
  put(FILES.meta, metaBytes);
  fsyncDir(tmp);
  rmSync(dir, { recursive: true, force: true });
  renameSync(tmp, dir);
  fsyncDir(path.dirname(dir));
  return { meta, diskBytes: disk };
}
