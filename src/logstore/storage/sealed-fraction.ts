// Reader of a sealed fraction: loads the small parts lazily, reads posting lists and blocks on demand, and checks
// every byte it reads against the checksums of meta.json (format 2), throwing FractionDamagedError on a mismatch.
import { isUtf8 } from 'node:buffer';
import { closeSync, openSync, readFileSync, readSync, statSync } from 'node:fs';
import path from 'node:path';
import { postings as P } from '../../native/index.js';
import {
  type BlockCounts,
  type Column,
  type DocRef,
  type DocRun,
  type FractionView,
  MISSING,
  missingOf,
} from './fraction-view.js';
import {
  FILES,
  FractionDamagedError,
  type FractionMeta,
  POSTINGS_CHUNK,
  decompress,
  f64Of,
  u32Of,
} from './fraction-files.js';
import { crc32c } from './crc32c.js';
import { SealedClientIds, docHasClientId } from './client-ids.js';
import { decodeDictLazy, fieldTokenTable } from './token-dict.js';
import {
  BLOCK_DOCS,
  type NumericBlocks,
  type NumericBounds,
  type NumericColumn,
  decodeNumericColumn,
  numericRangeIds,
  readNumericBlocks,
  tokenNumber,
} from './numeric-column.js';
import { rangeNumber } from '../query/plan.js';
import { chargeColumn, forgetColumn, releaseColumns, touchColumn } from './column-memory.js';
import { type ColumnTokens, blockColumns, decodeDocBlock, tokenTableOfBytes } from './doc-columns.js';
import { decodeIds, decodeOffsets, decodeTimes, fromPlanes, narrow, narrowFromPlanes } from './sealed-arrays.js';
import { decodeShort, isShort } from './dense-postings.js';

/** A decompressed block of documents: where each starts in `raw`, and whether all of them are valid UTF-8. */
interface Block {
  offsets: Uint32Array;
  raw: Buffer;
  utf8: boolean;
}

/** Decompressed blocks kept per fraction. */
const BLOCK_CACHE = 16;

interface FieldDict {
  readonly tokens: string[];
  /** Index of the field's first token in offsets/counts. */
  base: number;
}

/** A field of the dictionary whose tokens are decoded when first read (most searches read a few fields). */
class LazyFieldDict implements FieldDict {
  constructor(
    readonly base: number,
    private readonly decode: () => string[],
  ) {}

  get tokens(): string[] {
    return this.decode();
  }
}

/**
 * A field's tokens as numbers (as a range reads them), for range filters: a range compares numbers instead of
 * testing each token's text. (Not sorted: a sort of a million tokens costs more than many passes over them.)
 */
interface RangeIndex {
  /** Each token's number, by its index in the field's dictionary; NaN for a token a range does not read as one. */
  nums: Float64Array;
  /**
   * The numeric column answers ranges exactly: a document has at most one token in the field, and every token
   * reads as the same number (or as none) both as a range reads it and as the column holds it.
   */
  column: boolean;
}

/**
 * How a sealed fraction answers a numeric range (tests force one way): "auto" takes the cheaper by the estimate
 * of numericRange, "column" the numeric column whenever it is exact, "dictionary" the posting lists.
 */
export const NUMERIC_RANGE: { mode: 'auto' | 'column' | 'dictionary' } = { mode: 'auto' };

/**
 * Estimated cost, in nanoseconds, of the two ways to a numeric range (measured on the bench's documents:
 * bench/results/numeric-range.md): a posting list read costs a read call and its checksummed chunk, each of its
 * ids a decode and a union step; a column block decoded costs per document, a block taken whole per id written.
 */
const COST = { list: 3000, listId: 3, decodedDoc: 8, wholeDoc: 1 };

function lowerBoundStr(arr: readonly string[], x: string): number {
  let lo = 0;
  let hi = arr.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (arr[mid]! < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

export class SealedFraction implements FractionView {
  readonly timeOrdered = true;
  readonly meta: FractionMeta;
  private timesArr: Float64Array | null = null;
  private idsBuf: Buffer | null = null;
  private dict: Map<string, FieldDict> | null = null;
  private offs: Uint32Array | null = null;
  private counts: Uint32Array | null = null;
  private readonly cols = new Map<string, Column>();
  /** Keyword columns as document blocks refer to them (format 5), by meta.json `columns` index. */
  private readonly colTokens = new Map<number, ColumnTokens>();
  private readonly nums = new Map<string, NumericColumn>();
  /** Numeric columns read for range filters and not decoded: their bytes and block index (about 2 bytes a value). */
  private readonly numBlocks = new Map<string, NumericBlocks>();
  private readonly rangeIndexes = new Map<string, RangeIndex>();
  private readonly blockCountsOf = new Map<string, BlockCounts | null>();
  private postingsFd = -1;
  private docsFd = -1;
  /** Recently decompressed document blocks, oldest first (a small LRU). */
  private readonly blockCache = new Map<number, Block>();
  /** The block docRef() read last, and its first and end local ids: neighbours skip the search and the LRU. */
  private last: Block | null = null;
  private lastLo = 0;
  private lastHi = 0;
  private readonly ref: DocRef = { buf: Buffer.alloc(0), start: 0, end: 0 };
  private readonly run: DocRun = {
    raw: Buffer.alloc(0),
    offsets: new Uint32Array(1),
    first: 0,
    end: 0,
    utf8: false,
    ids: Buffer.alloc(0),
    times: new Float64Array(0),
  };
  private readonly clientIds: SealedClientIds | null;

  /** 1 at [k] once chunk k of postings.bin matched its checksum (the files never change while open). */
  private readonly chunkOk: Uint8Array;

  /** Opens the fraction: reads meta.json and checks it and the length of every file (a few stat calls). */
  constructor(readonly dir: string) {
    this.meta = readMeta(dir);
    this.chunkOk = new Uint8Array(this.meta.postingsChunks?.length ?? 0);
    this.clientIds = this.meta.clientIds ? new SealedClientIds(path.join(dir, FILES.clientIds)) : null;
  }

  private damaged(file: string, detail: string): FractionDamagedError {
    return new FractionDamagedError(this.dir, file, detail);
  }

  /** `len` bytes of an open file at `off`; a short read is damage (the file was cut). */
  private readAt(fd: number, file: string, off: number, len: number): Buffer {
    const buf = Buffer.allocUnsafe(len);
    let got = 0;
    while (got < len) {
      const r = readSync(fd, buf, got, len - got, off + got);
      if (r === 0) throw this.damaged(file, `${len} bytes expected at offset ${off}, the file ends after ${got}`);
      got += r;
    }
    return buf;
  }

  /** Decompresses bytes of `file`; a format-1 fraction (no checksums) shows damage only here. */
  private inflate(file: string, buf: Uint8Array): Buffer {
    try {
      return decompress(buf);
    } catch (err) {
      throw this.damaged(file, `decompression failed (${(err as Error).message})`);
    }
  }

  /** Checks the chunks of postings.bin that [off, off + len) touches, each once. */
  private checkPostings(off: number, len: number): void {
    const crcs = this.meta.postingsChunks;
    if (!crcs || len === 0) return;
    const size = this.meta.files?.[FILES.postings]?.bytes ?? 0;
    for (let k = Math.floor(off / POSTINGS_CHUNK); k * POSTINGS_CHUNK < off + len; k++) {
      if (this.chunkOk[k]) continue;
      if (k >= crcs.length)
        throw this.damaged(FILES.postings, `offset ${off + len} is past the last checksummed chunk`);
      const start = k * POSTINGS_CHUNK;
      const chunk = this.readAt(this.postingsFd, FILES.postings, start, Math.min(POSTINGS_CHUNK, size - start));
      if (crc32c(chunk) !== crcs[k])
        throw this.damaged(FILES.postings, `checksum mismatch in bytes ${start}..${start + chunk.length}`);
      this.chunkOk[k] = 1;
    }
  }

  /** Whether a document stored here carries client id `id` (`h` = clientIdHash(id)). */
  hasClientId(id: string, h: number): boolean {
    if (!this.clientIds) return false;
    for (const local of this.clientIds.candidates(h)) {
      const r = this.docRef(local);
      if (docHasClientId(r.buf, r.start, r.end, id)) return true;
    }
    return false;
  }

  get name(): string {
    return this.meta.name;
  }
  get docCount(): number {
    return this.meta.docCount;
  }
  get minTime(): number {
    return this.meta.minTime;
  }
  get maxTime(): number {
    return this.meta.maxTime;
  }

  /** A whole compressed file, checked against its checksum (format 2) and decompressed. */
  private read(file: string): Buffer {
    return this.inflate(file, this.readChecked(file));
  }

  /** A whole file, checked against its checksum (format 2). */
  private readChecked(file: string): Buffer {
    let buf: Buffer;
    try {
      buf = readFileSync(path.join(this.dir, file));
    } catch (err) {
      throw this.damaged(file, (err as Error).message);
    }
    const want = this.meta.files?.[file];
    if (want && (buf.length !== want.bytes || crc32c(buf) !== want.crc))
      throw this.damaged(
        file,
        buf.length !== want.bytes ? `${buf.length} bytes, ${want.bytes} written` : 'checksum mismatch',
      );
    return buf;
  }

  /** Runs `decode` over bytes of `file`, a failure being damage. */
  private decoded<T>(file: string, decode: () => T): T {
    try {
      return decode();
    } catch (err) {
      if (err instanceof FractionDamagedError) throw err;
      throw this.damaged(file, `does not decode (${(err as Error).message})`);
    }
  }

  /** Format 4 and on (smaller forms of times, ids, offsets, dense lists, document blocks). */
  private get compact(): boolean {
    return this.meta.format >= 4;
  }

  private times(): Float64Array {
    if (this.timesArr) return this.timesArr;
    const buf = this.read(FILES.times);
    this.timesArr = this.compact ? this.decoded(FILES.times, () => decodeTimes(buf, this.docCount)) : f64Of(buf);
    return this.timesArr;
  }

  private loadDict(): Map<string, FieldDict> {
    if (this.dict) return this.dict;
    const raw = this.decoded(FILES.dict, () => decodeDictLazy(this.read(FILES.dict)));
    const dict = new Map<string, FieldDict>();
    let base = 0;
    for (const f of raw) {
      dict.set(f.name, new LazyFieldDict(base, () => this.decoded(FILES.dict, f.tokens)));
      base += f.count;
    }
    const oc = this.read(FILES.offsets);
    if (this.compact) {
      const { offs, counts } = this.decoded(FILES.offsets, () => decodeOffsets(oc, base));
      this.offs = offs;
      this.counts = counts;
    } else {
      const u32 = u32Of(oc);
      this.offs = u32.subarray(0, base + 1);
      this.counts = u32.subarray(base + 1);
    }
    this.postingsFd = openSync(path.join(this.dir, FILES.postings), 'r');
    this.dict = dict;
    return dict;
  }

  private list(k: number): Uint32Array {
    const off = this.offs![k]!;
    const len = this.offs![k + 1]! - off;
    this.checkPostings(off, len);
    const buf = this.readAt(this.postingsFd, FILES.postings, off, len);
    const count = this.counts![k]!;
    try {
      if (this.compact && isShort(len, count)) return decodeShort(buf, len, count);
      return P.decodePostings(buf, 0, len, count);
    } catch (err) {
      throw this.damaged(FILES.postings, `posting list ${k} does not decode (${(err as Error).message})`);
    }
  }

  universe(from: number, to: number): Uint32Array {
    const [lo, hi] = this.timeRange(from, to);
    return P.rangeOfIds(lo, hi);
  }

  timeRange(from: number, to: number): [number, number] {
    // The whole fraction without its times (an aggregation over everything need not decode them).
    if (from <= this.minTime && to >= this.maxTime) return [0, this.docCount];
    const t = this.times();
    const lo = from <= this.minTime ? 0 : lowerBoundF(t, from);
    const hi = to >= this.maxTime ? t.length : lowerBoundF(t, to, true);
    return [lo, Math.max(lo, hi)];
  }

  postings(field: string, token: string): Uint32Array {
    const fd = this.loadDict().get(field);
    if (!fd) return new Uint32Array(0);
    const i = lowerBoundStr(fd.tokens, token);
    if (i >= fd.tokens.length || fd.tokens[i] !== token) return new Uint32Array(0);
    return this.list(fd.base + i);
  }

  postingsCount(field: string, token: string): number {
    const fd = this.loadDict().get(field);
    if (!fd) return 0;
    const i = lowerBoundStr(fd.tokens, token);
    if (i >= fd.tokens.length || fd.tokens[i] !== token) return 0;
    return this.counts![fd.base + i]!;
  }

  postingsWhere(field: string, accept: (token: string) => boolean, prefix?: string, upTo?: string): Uint32Array[] {
    const fd = this.loadDict().get(field);
    const out: Uint32Array[] = [];
    if (!fd) return out;
    const start = prefix ? lowerBoundStr(fd.tokens, prefix) : 0;
    for (let i = start; i < fd.tokens.length; i++) {
      const tok = fd.tokens[i]!;
      if (prefix && !tok.startsWith(prefix) && upTo === undefined) break;
      if (upTo !== undefined && tok > upTo) break;
      if (accept(tok)) out.push(this.list(fd.base + i));
    }
    return out;
  }

  tokenLists(field: string): { tokens: string[]; lists: Uint32Array[] } {
    const fd = this.loadDict().get(field);
    if (!fd) return { tokens: [], lists: [] };
    return { tokens: fd.tokens, lists: fd.tokens.map((_, i) => this.list(fd.base + i)) };
  }

  time(local: number): number {
    return this.times()[local]!;
  }

  private ids(): Buffer {
    if (this.idsBuf) return this.idsBuf;
    const buf = this.read(FILES.ids);
    this.idsBuf = this.compact ? this.decoded(FILES.ids, () => decodeIds(buf, this.times(), this.docCount)) : buf;
    return this.idsBuf;
  }

  id(local: number): string {
    return this.ids().toString('hex', local * 12, local * 12 + 12);
  }

  find(id: string): number {
    const ids = this.ids();
    const key = Buffer.from(id, 'hex');
    if (key.length !== 12) return -1;
    let lo = 0;
    let hi = this.docCount;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (ids.compare(key, 0, 12, mid * 12, mid * 12 + 12) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo < this.docCount && ids.compare(key, 0, 12, lo * 12, lo * 12 + 12) === 0 ? lo : -1;
  }

  private block(index: number): Block {
    const hit = this.blockCache.get(index);
    if (hit) {
      this.blockCache.delete(index);
      this.blockCache.set(index, hit);
      return hit;
    }
    if (this.docsFd < 0) this.docsFd = openSync(path.join(this.dir, FILES.docs), 'r');
    const [off, len, , crc] = this.meta.blocks[index]!;
    const buf = this.readAt(this.docsFd, FILES.docs, off, len);
    if (crc !== undefined && crc32c(buf) !== crc)
      throw this.damaged(FILES.docs, `checksum mismatch in block ${index} (bytes ${off}..${off + len})`);
    const inflated = this.inflate(FILES.docs, buf);
    const first = this.meta.blocks[index]![2];
    const end = index + 1 < this.meta.blocks.length ? this.meta.blocks[index + 1]![2] : this.docCount;
    const { raw, offsets } = this.compact
      ? this.decoded(FILES.docs, () => decodeDocBlock(inflated, this.times(), first, this.blockRefs(inflated)))
      : this.decoded(FILES.docs, () => rowBlock(inflated));
    const count = offsets.length - 1;
    if (count !== end - first)
      throw this.damaged(FILES.docs, `block ${index} holds ${count} documents, ${end - first} expected`);
    const block = { offsets, raw, utf8: isUtf8(raw.subarray(offsets[0]!, offsets[count]!)) };
    this.blockCache.set(index, block);
    if (this.blockCache.size > BLOCK_CACHE) this.blockCache.delete(this.blockCache.keys().next().value!);
    return block;
  }

  /** The keyword columns a document block refers to (format 5), by meta.json `columns` index. */
  private blockRefs(inflated: Buffer): (ColumnTokens | undefined)[] {
    const out: (ColumnTokens | undefined)[] = [];
    if (this.meta.format < 5) return out;
    let dict: Buffer | null = null;
    for (const c of blockColumns(inflated)) {
      if (c >= this.meta.columns.length) continue;
      out[c] = this.colTokens.get(c) ?? this.columnTokens(c, (dict ??= this.read(FILES.dict)));
      touchColumn(this.key('refs', this.meta.columns[c]!));
    }
    return out;
  }

  /**
   * Keyword column c's tokens by document, as document blocks refer to them: its ranks (col-<c>.bin) and its field's
   * tokens from the decompressed `dict` as one table by rank (fieldTokenTable: no strings made, no other field
   * decoded, no offsets read), made once while the fraction is open and kept in the thread's column memory.
   */
  private columnTokens(c: number, dict: Buffer): ColumnTokens {
    const field = this.meta.columns[c]!;
    const ft = this.decoded(FILES.dict, () => fieldTokenTable(dict, field, tokenTableOfBytes));
    // The seal refers only to fields of one byte a code unit.
    if (!ft || ft.wide) throw this.damaged(FILES.docs, `a block refers to the column of ${field}, not referable`);
    // Blocks look ranks up as u32 with 0xffffffff for none: a column kept narrow for aggregations (1 or 2 bytes a
    // document, its own "none") is widened, not passed as it is.
    const kept = this.cols.get(field);
    let ords = kept ? widen(kept.ords, missingOf(kept)) : undefined;
    if (!ords) {
      const file = FILES.column(c);
      const buf = this.read(file);
      ords = this.decoded(file, () => fromPlanes(buf));
      if (ords.length !== this.docCount)
        throw this.damaged(file, `${ords.length} documents, the fraction has ${this.docCount}`);
    }
    const ct: ColumnTokens = { table: ft.table, starts: ft.starts, ords };
    this.colTokens.set(c, ct);
    chargeColumn(this.key('refs', field), ct.table.length + ct.starts.byteLength + ords.byteLength, () =>
      this.colTokens.delete(c),
    );
    return ct;
  }

  private blockOf(local: number): number {
    const blocks = this.meta.blocks;
    let lo = 0;
    let hi = blocks.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (blocks[mid]![2] <= local) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  data(locals: readonly number[]): Uint8Array[] {
    return locals.map((local) => {
      const r = this.docRef(local);
      return r.buf.subarray(r.start, r.end);
    });
  }

  /** Makes the block holding `local` the last one read. */
  private seek(local: number): Block {
    if (!this.last || local < this.lastLo || local >= this.lastHi) {
      const k = this.blockOf(local);
      const blocks = this.meta.blocks;
      this.last = this.block(k);
      this.lastLo = blocks[k]![2];
      this.lastHi = k + 1 < blocks.length ? blocks[k + 1]![2] : this.meta.docCount;
    }
    return this.last;
  }

  docRun(local: number): DocRun {
    const b = this.seek(local);
    const r = this.run;
    r.raw = b.raw;
    r.offsets = b.offsets;
    r.first = this.lastLo;
    r.end = this.lastHi;
    r.utf8 = b.utf8;
    r.ids = this.ids();
    r.times = this.times();
    return r;
  }

  docRef(local: number): DocRef {
    const b = this.seek(local);
    const i = local - this.lastLo;
    this.ref.buf = b.raw;
    this.ref.start = b.offsets[i]!;
    this.ref.end = b.offsets[i + 1]!;
    this.ref.utf8 = b.utf8;
    return this.ref;
  }

  /** The key of a kept column in the thread's column memory (column-memory.ts). */
  private key(kind: string, field: string): string {
    return `${this.dir}\0${kind}\0${field}`;
  }

  column(field: string): Column | null {
    const cached = this.cols.get(field);
    if (cached) {
      touchColumn(this.key('col', field));
      return cached;
    }
    const i = this.meta.columns.indexOf(field);
    if (i < 0) return null;
    const fd = this.loadDict().get(field)!;
    const file = FILES.column(i);
    const buf = this.read(file);
    const values = fd.tokens.length;
    // In the narrowest array that holds its ordinals (one byte a document for a field of at most 255 values).
    const { ords, missing } = this.compact
      ? this.decoded(file, () => narrowFromPlanes(buf, values))
      : narrow(u32Of(buf), values);
    if (ords.length !== this.docCount)
      throw this.damaged(file, `${ords.length} documents, the fraction has ${this.docCount}`);
    const col: Column = { tokens: fd.tokens, ords, missing };
    this.cols.set(field, col);
    chargeColumn(this.key('col', field), (col.ords as Uint8Array).byteLength, () => this.cols.delete(field));
    return col;
  }

  numeric(field: string): NumericColumn | null {
    const cached = this.nums.get(field);
    if (cached) {
      touchColumn(this.key('num', field));
      return cached;
    }
    const i = this.meta.numeric?.indexOf(field) ?? -1;
    if (i < 0) return null;
    const file = FILES.numeric(i);
    let col: NumericColumn;
    try {
      col = decodeNumericColumn(this.numBlocks.get(field)?.buf ?? this.readChecked(file));
    } catch (err) {
      if (err instanceof FractionDamagedError) throw err;
      throw this.damaged(file, (err as Error).message);
    }
    if (col.values.length !== this.docCount)
      throw this.damaged(file, `${col.values.length} documents, the fraction has ${this.docCount}`);
    this.nums.set(field, col);
    chargeColumn(this.key('num', field), col.values.byteLength + 16 * col.present.length + 4 * col.present.length, () =>
      this.nums.delete(field),
    );
    // The decoded column answers ranges too: its bytes go.
    if (this.numBlocks.delete(field)) forgetColumn(this.key('numBytes', field));
    return col;
  }

  /** A numeric column's bytes and block index, read and checked whole but not decoded; null without one. */
  private numericBlocks(field: string): NumericBlocks | null {
    const cached = this.numBlocks.get(field);
    if (cached) {
      touchColumn(this.key('numBytes', field));
      return cached;
    }
    const i = this.meta.numeric?.indexOf(field) ?? -1;
    if (i < 0) return null;
    const file = FILES.numeric(i);
    let nb: NumericBlocks;
    try {
      nb = readNumericBlocks(this.readChecked(file));
    } catch (err) {
      if (err instanceof FractionDamagedError) throw err;
      throw this.damaged(file, (err as Error).message);
    }
    if (nb.docs !== this.docCount) throw this.damaged(file, `${nb.docs} documents, the fraction has ${this.docCount}`);
    this.numBlocks.set(field, nb);
    chargeColumn(this.key('numBytes', field), nb.buf.length + 20 * nb.present.length, () =>
      this.numBlocks.delete(field),
    );
    return nb;
  }

  singleValued(field: string): boolean {
    const fd = this.loadDict().get(field);
    // No such field: every list of it is empty (disjoint).
    if (!fd) return true;
    // rangeIndex's "column" holds exactly when the lists hold one id per document with a token (at most one each).
    return this.rangeIndex(field, fd).column;
  }

  private rangeIndex(field: string, fd: FieldDict): RangeIndex {
    const hit = this.rangeIndexes.get(field);
    if (hit) {
      touchColumn(this.key('range', field));
      return hit;
    }
    const counts = this.counts!;
    const all = fd.tokens.length;
    const nums = new Float64Array(all);
    let k = 0;
    let listed = 0;
    let agree = true;
    for (let t = 0; t < all; t++) {
      const tok = fd.tokens[t]!;
      const v = rangeNumber(tok);
      nums[t] = v;
      if (v === v) k++;
      // The column holds tokenNumber (blanks and hex read as numbers there, not in a range).
      else if (tokenNumber(tok) === tokenNumber(tok)) agree = false;
      listed += counts[fd.base + t]!;
    }
    // One token at most per document: the lists hold as many ids as there are documents with a token. Every token
    // a number: those are the documents with a value in the column; else the keyword column counts them (a
    // keyword field's documents with a token are those with a column value).
    let column = false;
    const nb = agree ? this.numericBlocks(field) : null;
    if (nb) {
      let withToken = 0;
      if (k === all) for (let b = 0; b < nb.present.length; b++) withToken += nb.present[b]!;
      else {
        const c = this.meta.columns.indexOf(field);
        const raw = c < 0 || this.cols.has(field) ? null : this.read(FILES.column(c));
        const kept = this.cols.get(field);
        const ords = c < 0 ? null : (kept?.ords ?? (this.compact ? fromPlanes(raw!) : u32Of(raw!)));
        const missing = kept ? missingOf(kept) : MISSING;
        if (!ords) withToken = -1;
        else for (let d = 0; d < ords.length; d++) if (ords[d] !== missing) withToken++;
      }
      column = withToken === listed;
    }
    const ri: RangeIndex = { nums, column };
    this.rangeIndexes.set(field, ri);
    chargeColumn(this.key('range', field), nums.byteLength + 8, () => this.rangeIndexes.delete(field));
    return ri;
  }

  /**
   * The documents of [from, to) whose token of `field` is a number in the range `r`: the ids, from the numeric
   * column (blocks skipped or taken whole by their bounds); or the posting lists of the tokens in the range (found
   * by comparing the tokens' numbers, read from their text once per fraction), for the caller to unite; whichever
   * the estimate says is cheaper. Same answer as a pass over the dictionary accepting each token a range accepts.
   */
  numericRange(
    field: string,
    r: NumericBounds,
    from: number,
    to: number,
    tick: () => void,
  ): Uint32Array | Uint32Array[] {
    const fd = this.loadDict().get(field);
    if (!fd) return [];
    const ri = this.rangeIndex(field, fd);
    const { nums } = ri;
    const { lo, hi, loIncl, hiIncl } = r;
    const counts = this.counts!;
    // The tokens in the range (what a pass over the dictionary accepts), and the ids of their lists.
    const accepted: number[] = [];
    let ids = 0;
    for (let t = 0; t < nums.length; t++) {
      if ((t & 0xffff) === 0) tick();
      const v = nums[t]!;
      if (!((loIncl ? v >= lo : v > lo) && (hiIncl ? v <= hi : v < hi))) continue;
      accepted.push(t);
      ids += counts[fd.base + t]!;
    }
    const mode = NUMERIC_RANGE.mode;
    if (ri.column && mode !== 'dictionary' && accepted.length > 0) {
      const col = this.nums.get(field);
      if (col) touchColumn(this.key('num', field));
      const nb = col
        ? {
            buf: Buffer.alloc(0),
            docs: col.values.length,
            blockDocs: col.blockDocs,
            present: col.present,
            min: col.min,
            max: col.max,
          }
        : this.numericBlocks(field)!;
      const dictionary = COST.list * accepted.length + COST.listId * ids;
      if (mode === 'column' || columnCost(nb, r, from, to, col !== undefined) < dictionary)
        return numericRangeIds(nb, col?.values ?? null, r, from, to, tick);
    }
    const out: Uint32Array[] = [];
    for (const t of accepted) {
      tick();
      out.push(this.list(fd.base + t));
    }
    return out;
  }

  blockCounts(field: string): BlockCounts | null {
    const hit = this.blockCountsOf.get(field);
    if (hit !== undefined) {
      if (hit) touchColumn(this.key('counts', field));
      return hit;
    }
    const col = this.column(field);
    let bc: BlockCounts | null = null;
    if (col && col.tokens.length <= 256) {
      const groups = col.tokens.length;
      bc = { blockDocs: BLOCK_DOCS, groups, counts: blockCountsOfColumn(col.ords, missingOf(col), groups) };
    }
    this.blockCountsOf.set(field, bc);
    if (bc) chargeColumn(this.key('counts', field), bc.counts.byteLength, () => this.blockCountsOf.delete(field));
    return bc;
  }

  timeArray(): Float64Array {
    return this.times();
  }

  fields(): string[] {
    return this.meta.seen ?? this.loadDict().get('_exists_')?.tokens ?? [];
  }

  close(): void {
    releaseColumns(`${this.dir}\0`);
    this.cols.clear();
    this.nums.clear();
    this.numBlocks.clear();
    this.rangeIndexes.clear();
    this.blockCountsOf.clear();
    this.clientIds?.close();
    if (this.postingsFd >= 0) closeSync(this.postingsFd);
    if (this.docsFd >= 0) closeSync(this.docsFd);
    this.postingsFd = -1;
    this.docsFd = -1;
  }
}

/** The estimated cost of a range over a numeric column's blocks in [from, to) (COST): as numericRangeIds reads them. */
function columnCost(nb: NumericBlocks, r: NumericBounds, from: number, to: number, decoded: boolean): number {
  const bd = nb.blockDocs;
  let cost = 0;
  for (let b = Math.floor(Math.max(0, from) / bd); b * bd < Math.min(nb.docs, to); b++) {
    const p = nb.present[b]!;
    if (p === 0) continue;
    const mn = nb.min[b]!;
    const mx = nb.max[b]!;
    if (!(r.loIncl ? mx >= r.lo : mx > r.lo) || !(r.hiIncl ? mn <= r.hi : mn < r.hi)) continue;
    const docs = Math.min(nb.docs, (b + 1) * bd) - b * bd;
    const whole = p === docs && (r.loIncl ? mn >= r.lo : mn > r.lo) && (r.hiIncl ? mx <= r.hi : mx < r.hi);
    cost += docs * (whole ? COST.wholeDoc : decoded ? COST.wholeDoc + COST.decodedDoc / 4 : COST.decodedDoc);
  }
  return cost;
}

/** A document block of formats 1-3: u32 count, u32 length of each document, then the documents. */
function rowBlock(raw: Buffer): { raw: Buffer; offsets: Uint32Array } {
  const count = raw.readUInt32LE(0);
  const offsets = new Uint32Array(count + 1);
  let p = 4 + 4 * count;
  for (let i = 0; i < count; i++) {
    offsets[i] = p;
    p += raw.readUInt32LE(4 + 4 * i);
  }
  offsets[count] = p;
  if (p > raw.length) throw new Error(`documents end at ${p}, the block at ${raw.length}`);
  return { raw, offsets };
}

function blockCountsOfColumn(ords: ArrayLike<number>, missing: number, groups: number): Uint32Array {
  const n = ords.length;
  const counts = new Uint32Array(Math.ceil(n / BLOCK_DOCS) * groups);
  for (let d = 0; d < n; d++) {
    const o = ords[d]!;
    if (o !== missing) counts[Math.floor(d / BLOCK_DOCS) * groups + o]++;
  }
  return counts;
}

/** meta.json of the fraction in `dir`, checked (format 2: its own checksum and every file's length). */
function readMeta(dir: string): FractionMeta {
  let text: string;
  let meta: FractionMeta;
  try {
    text = readFileSync(path.join(dir, FILES.meta), 'utf8');
    meta = JSON.parse(text) as FractionMeta;
  } catch (err) {
    throw new FractionDamagedError(dir, FILES.meta, (err as Error).message);
  }
  if (typeof meta !== 'object' || meta === null || !Array.isArray(meta.blocks) || typeof meta.docCount !== 'number') {
    throw new FractionDamagedError(dir, FILES.meta, 'not the metadata of a fraction');
  }
  if (meta.format < 2) return meta;
  const { check, ...rest } = meta;
  if (check !== crc32c(Buffer.from(JSON.stringify(rest))))
    throw new FractionDamagedError(dir, FILES.meta, 'checksum mismatch');
  for (const [file, want] of Object.entries(meta.files ?? {})) {
    let size: number;
    try {
      size = statSync(path.join(dir, file)).size;
    } catch (err) {
      throw new FractionDamagedError(dir, file, (err as Error).message);
    }
    if (size !== want.bytes) throw new FractionDamagedError(dir, file, `${size} bytes, ${want.bytes} written`);
  }
  return meta;
}

/** First index with t[i] >= x (or > x when `after`). */
function lowerBoundF(t: Float64Array, x: number, after = false): number {
  let lo = 0;
  let hi = t.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (after ? t[mid]! <= x : t[mid]! < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Ranks as u32 with 0xffffffff for none, from a keyword column kept in any width with `missing` for none. */
function widen(ords: ArrayLike<number>, missing: number): Uint32Array {
  if (ords instanceof Uint32Array && missing === 0xffffffff) return ords;
  const out = new Uint32Array(ords.length);
  for (let i = 0; i < ords.length; i++) {
    const o = ords[i]!;
    out[i] = o === missing ? 0xffffffff : o;
  }
  return out;
}
