// Seals an active fraction into immutable files (format 5): documents sorted by (time, id) in column-wise compressed
// blocks (referring to keyword columns), a sorted token dictionary, delta-varint posting lists, keyword columns and
// numeric columns.
import { mkdirSync, renameSync, rmSync } from 'node:fs';
import path from 'node:path';
import { encodePostingsInto } from '../../native/postings.js';
import { EXISTS_FIELD } from '../mapping.js';
import type { ActiveFraction } from './active-fraction.js';
import { MISSING } from './fraction-view.js';
import { type DictField, encodeDict, sortedTokens } from './token-dict.js';
import { encodeClientIds } from './client-ids.js';
import {
  BLOCK_BYTES,
  COLUMN_QUALITY,
  DOC_QUALITY,
  FILES,
  OFFSETS_QUALITY,
  FRACTION_FORMAT,
  type FileCheck,
  type FractionMeta,
  POSTINGS_CHUNK,
  bytesOf,
  compress,
  fsyncDir,
  writeFileDurable,
} from './fraction-files.js';
import { crc32c } from './crc32c.js';
import { encodeNumericColumn, tokenNumbers } from './numeric-column.js';
import { type DocColumnRef, encodeDocBlock } from './doc-columns.js';
import { encodeIdTails, encodeOffsets, encodeTimes, toPlanes } from './sealed-arrays.js';
import { shortenPostings } from './dense-postings.js';

/**
 * The seal runs a few times a minute per shard, so V8 compiles each of its loops on the spot (on-stack
 * replacement) while it runs, and a loop it compiled inside one large function is the whole function compiled
 * again, with code for the loops after it that have not run yet and so deoptimize. Each loop is therefore a small
 * function of its own over typed arrays: one short compile each (a profile of 1 M documents had 83 compiles of the
 * single sealFraction, about 1.5 s of compile threads' time, more than its loops ran).
 */

/** Local ids in (time, tail) order; identity (no sort) when documents arrived in time order. */
function timeOrder(frac: ActiveFraction, n: number, identity: boolean): Uint32Array {
  const order = new Uint32Array(n);
  for (let i = 0; i < n; i++) order[i] = i;
  if (!identity) {
    const times = frac.times;
    order.sort((a, b) => times[a]! - times[b]! || frac.tail(a) - frac.tail(b));
  }
  return order;
}

/** New id of each local id (the inverse of `order`). */
function inverse(order: Uint32Array): Uint32Array {
  const n = order.length;
  const newOf = new Uint32Array(n);
  for (let i = 0; i < n; i++) newOf[order[i]!] = i;
  return newOf;
}

/** Times in sealed order. */
function timesInOrder(frac: ActiveFraction, order: Uint32Array): Float64Array {
  const n = order.length;
  const times = frac.times;
  const sortedTimes = new Float64Array(n);
  for (let i = 0; i < n; i++) sortedTimes[i] = times[order[i]!]!;
  return sortedTimes;
}

/** Where the block that starts at sealed id `start` ends: BLOCK_BYTES of documents, at least one. */
function blockEnd(frac: ActiveFraction, order: Uint32Array, start: number): number {
  const n = order.length;
  let end = start;
  let bytes = 0;
  while (end < n && (end === start || bytes < BLOCK_BYTES)) bytes += frac.docLength(order[end++]!);
  return end;
}

/**
 * Every posting list in dictionary order, encoded into one buffer (5 bytes per id at most), with each token's
 * offset and count, and each token's rank in its field's sorted dictionary (by token id, for the keyword columns).
 */
function encodeAllPostings(
  dictIds: Uint32Array[],
  tokenCount: number,
  inverted: { start: Uint32Array; data: Uint32Array },
) {
  const offs = new Uint32Array(tokenCount + 1);
  const counts = new Uint32Array(tokenCount);
  const rankOf = new Uint32Array(inverted.start.length);
  const postings = Buffer.allocUnsafe(inverted.data.length * 5);
  let k = 0;
  for (const sortedIds of dictIds)
    k = encodeField(sortedIds, inverted.start, inverted.data, postings, offs, counts, rankOf, k);
  return { offs, counts, rankOf, postings: postings.subarray(0, offs[k]!) };
}

/** One field's lists (see encodeAllPostings), from dictionary slot `k` on (offs[k] is where they start); returns the
 *  next slot, its offset filled. */
function encodeField(
  sortedIds: Uint32Array,
  start: Uint32Array,
  data: Uint32Array,
  postings: Buffer,
  offs: Uint32Array,
  counts: Uint32Array,
  rankOf: Uint32Array,
  k: number,
): number {
  let pOff = offs[k]!;
  for (let r = 0; r < sortedIds.length; r++) {
    const t = sortedIds[r]!;
    rankOf[t] = r;
    const lo = start[t]!;
    const hi = start[t + 1]!;
    offs[k] = pOff;
    counts[k] = hi - lo;
    pOff = shortenPostings(data, lo, hi, postings, pOff, encodePostingsInto(data, postings, pOff, lo, hi));
    k++;
  }
  offs[k] = pOff;
  return k;
}

/** A keyword column in sealed order: per document, the rank of its token in the field's sorted dictionary. */
function columnRanks(
  col: { ords: Uint32Array; count: number },
  ordMap: Uint32Array,
  order: Uint32Array | null,
  n: number,
): Uint32Array {
  const src = col.ords;
  const ords = new Uint32Array(n);
  for (let i = 0; i < n; i++) {
    const o = src[order === null ? i : order[i]!]!;
    ords[i] = o === MISSING ? MISSING : ordMap[o]!;
  }
  return ords;
}

/** Column ordinal -> rank in the sorted dictionary, for one field's tokens. */
function ordinalRanks(frac: ActiveFraction, sortedIds: Uint32Array, rankOf: Uint32Array, count: number): Uint32Array {
  const ordMap = new Uint32Array(count).fill(MISSING);
  for (let r = 0; r < sortedIds.length; r++) {
    const t = sortedIds[r]!;
    const o = frac.index.columnOrdinal(t);
    if (o >= 0) ordMap[o] = rankOf[t]!;
  }
  return ordMap;
}

/**
 * A keyword column's numbers, per sealed document (NaN: no value, or not a number), from its ranks and its field's
 * sorted dictionary; null when the field's tokens are mostly not numbers (see tokenNumbers).
 */
function columnNumbers(ranks: Uint32Array, sorted: DictField): Float64Array | null {
  const bytes = Buffer.from(sorted.bytes.buffer, sorted.bytes.byteOffset, sorted.bytes.byteLength);
  const enc = sorted.wide ? 'utf16le' : 'latin1';
  const unit = sorted.wide ? 2 : 1;
  let at = 0;
  const lens = sorted.lens;
  // tokenNumbers asks for the tokens in order, so each is the next run of bytes; a field of words or addresses is
  // given up after a few tokens, before its dictionary is made into strings.
  const nums = tokenNumbers(lens.length, (r) => bytes.toString(enc, at, (at += unit * lens[r]!)));
  if (!nums) return null;
  const n = ranks.length;
  const out = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const r = ranks[i]!;
    out[i] = r === MISSING ? NaN : nums[r]!;
  }
  return out;
}

/**
 * A keyword column's tokens by active ordinal as doc-columns.ts tokenTable makes them (ASCII tokens as their bytes,
 * others empty), from the field's sorted dictionary of one byte per code unit, without making strings.
 */
function ordinalTable(frac: ActiveFraction, sorted: DictField, count: number): { table: Buffer; starts: Uint32Array } {
  const { ids, lens, bytes } = sorted;
  const at = new Uint32Array(count);
  const len = new Uint32Array(count);
  let p = 0;
  let total = 0;
  for (let r = 0; r < ids.length; r++) {
    const l = lens[r]!;
    const o = frac.index.columnOrdinal(ids[r]!);
    if (o >= 0) {
      let ascii = true;
      for (let k = p; k < p + l; k++) if (bytes[k]! >= 0x80) ascii = false;
      if (ascii) {
        at[o] = p;
        len[o] = l;
        total += l;
      }
    }
    p += l;
  }
  const table = Buffer.allocUnsafe(total);
  const starts = new Uint32Array(count + 1);
  let q = 0;
  for (let o = 0; o < count; o++) {
    starts[o] = q;
    table.set(bytes.subarray(at[o]!, at[o]! + len[o]!), q);
    q += len[o]!;
  }
  starts[count] = q;
  return { table, starts };
}

/** Active ordinals of a keyword column in sealed order. */
function ordsInOrder(ords: Uint32Array, order: Uint32Array | null, n: number): Uint32Array {
  if (order === null) return ords.subarray(0, n);
  const out = new Uint32Array(n);
  for (let i = 0; i < n; i++) out[i] = ords[order[i]!]!;
  return out;
}

/** Local ids of client-id entries renumbered to sealed ids. */
function renumber(locals: Uint32Array | number[], newOf: Uint32Array): void {
  for (let i = 0; i < locals.length; i++) locals[i] = newOf[locals[i]!]!;
}

/** Writes `frac` into `<dir>` (through `<dir>.tmp` and a rename) and returns its metadata and disk size. */
/**
 * Format 5 refers a document block's values to a keyword column only when the field has at least this many tokens in
 * the fraction. A field of few values costs its blocks little (Brotli and the block's own string references: on the
 * bench's 200 000 http_logs documents status, 8 values, 0.31 bytes a document; service, 5 values, 0.17), while the
 * reader of a fraction's first block reads each referred column whole (col-<i>.bin, 800 KB decompressed here):
 * referring only clientip and size took the first read of the newest 100 from 24.1 to 17.1 ms of CPU, of 5 000
 * documents from 26.9 to 14.5 (same run, medians of 31), for 29.32 bytes a document on disk against 28.50 (0.188x of
 * the raw NDJSON against 0.183x). bench/results/logstore-format5.md.
 */
export const REF_MIN_TOKENS = 64;

export function sealFraction(frac: ActiveFraction, dir: string): { meta: FractionMeta; diskBytes: number } {
  const tmp = `${dir}.tmp`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  const n = frac.docCount;
  // Documents that arrived in time order (the usual case) keep their ids: no sort, no remapping.
  const identity = frac.timeOrdered;
  const order = timeOrder(frac, n, identity);
  let disk = 0;
  // Every file's length and checksum, checked when the fraction is opened (lengths) and read (checksums).
  const files: Record<string, FileCheck> = {};
  const put = (name: string, data: Uint8Array) => {
    writeFileDurable(path.join(tmp, name), data);
    files[name] = { bytes: data.length, crc: crc32c(data) };
    disk += data.length;
  };

  const sortedTimes = timesInOrder(frac, order);
  put(FILES.times, compress(encodeTimes(sortedTimes)));
  put(FILES.ids, compress(encodeIdTails((i) => frac.tail(order[i]!), n)));

  const fields = frac.index
    .fields()
    .map((f) => f.name)
    .sort();
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

  // Format 5: a document's value that is byte for byte its keyword column's token is stored as a reference to the
  // column (every keyword field whose tokens are one byte a code unit and that has REF_MIN_TOKENS tokens or more;
  // the column index is its place in `columns`).
  const refs: DocColumnRef[] = [];
  let columnIndex = 0;
  for (let fi = 0; fi < fields.length; fi++) {
    const col = frac.index.columnOrds(fields[fi]!);
    if (!col) continue;
    if (!dict[fi]!.wide && dict[fi]!.lens.length >= REF_MIN_TOKENS)
      refs.push({
        key: Buffer.from(fields[fi]!),
        column: columnIndex,
        tokens: {
          ...ordinalTable(frac, dict[fi]!, col.count),
          ords: ordsInOrder(col.ords, identity ? null : order, n),
        },
      });
    columnIndex++;
  }

  // Document blocks, column-wise (doc-columns.ts).
  const blocks: [number, number, number, number][] = [];
  const parts: Buffer[] = [];
  let fileOff = 0;
  const docOf = (i: number) => frac.docRef(order[i]!);
  for (let start = 0; start < n;) {
    const end = blockEnd(frac, order, start);
    const c = compress(encodeDocBlock(docOf, sortedTimes, start, end, refs), DOC_QUALITY);
    blocks.push([fileOff, c.length, start, crc32c(c)]);
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
  const { offs, counts, rankOf, postings } = encodeAllPostings(dictIds, tokenCount, inverted);
  put(FILES.dict, compress(encodeDict(dict)));
  put(FILES.offsets, compress(encodeOffsets(offs, counts), OFFSETS_QUALITY));
  put(FILES.postings, postings);
  const postingsChunks: number[] = [];
  for (let at = 0; at < postings.length; at += POSTINGS_CHUNK)
    postingsChunks.push(crc32c(postings, at, Math.min(postings.length, at + POSTINGS_CHUNK)));

  // Keyword columns: per doc, the ordinal of its token in the field's sorted dictionary; and the numeric column of
  // each whose tokens are numbers (what numeric aggregations read).
  const columns: string[] = [];
  const numeric: string[] = [];
  for (let fi = 0; fi < fields.length; fi++) {
    const f = fields[fi]!;
    const col = frac.index.columnOrds(f);
    if (!col) continue;
    const ords = columnRanks(col, ordinalRanks(frac, dictIds[fi]!, rankOf, col.count), identity ? null : order, n);
    put(FILES.column(columns.length), compress(toPlanes(bytesOf(ords)), COLUMN_QUALITY));
    columns.push(f);
    const nums = columnNumbers(ords, dict[fi]!);
    if (nums) {
      put(FILES.numeric(numeric.length), encodeNumericColumn(nums));
      numeric.push(f);
    }
  }

  if (frac.clientIds.size > 0) {
    const { hashes, locals } = frac.clientIds.entries();
    renumber(locals, inverse(order));
    put(FILES.clientIds, encodeClientIds(hashes, locals));
  }

  const meta: FractionMeta = {
    format: FRACTION_FORMAT,
    name: frac.name,
    docCount: n,
    minTime: n ? sortedTimes[0]! : 0,
    maxTime: n ? sortedTimes[n - 1]! : 0,
    rawBytes: frac.rawBytes,
    blocks,
    fields,
    columns,
    numeric,
    seen,
    clientIds: frac.clientIds.size,
    idShards: frac.idShards(),
    files,
    postingsChunks,
  };
  meta.check = crc32c(Buffer.from(JSON.stringify(meta)));
  const metaBytes = Buffer.from(JSON.stringify(meta));
  writeFileDurable(path.join(tmp, FILES.meta), metaBytes);
  disk += metaBytes.length;
  fsyncDir(tmp);
  rmSync(dir, { recursive: true, force: true });
  renameSync(tmp, dir);
  fsyncDir(path.dirname(dir));
  return { meta, diskBytes: disk };
}
