// Reader of a sealed fraction: loads the small parts lazily, reads posting lists and blocks on demand.
import { isUtf8 } from 'node:buffer';
import { closeSync, openSync, readFileSync, readSync } from 'node:fs';
import path from 'node:path';
import { postings as P } from '../../native/index.js';
import { type Column, type DocRef, type DocRun, type FractionView } from './fraction-view.js';
import { FILES, type FractionMeta, decompress, f64Of, u32Of } from './fraction-files.js';
import { SealedClientIds, docHasClientId } from './client-ids.js';
import { decodeDict } from './token-dict.js';

/** A decompressed block of documents: where each starts in `raw`, and whether all of them are valid UTF-8. */
interface Block {
  offsets: Uint32Array;
  raw: Buffer;
  utf8: boolean;
}

/** Decompressed blocks kept per fraction. */
const BLOCK_CACHE = 16;

interface FieldDict {
  tokens: string[];
  /** Index of the field's first token in offsets/counts. */
  base: number;
}

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
  private postingsFd = -1;
  private docsFd = -1;
  /** Recently decompressed document blocks, oldest first (a small LRU). */
  private readonly blockCache = new Map<number, Block>();
  /** The block docRef() read last, and its first and end local ids: neighbours skip the search and the LRU. */
  private last: Block | null = null;
  private lastLo = 0;
  private lastHi = 0;
  private readonly ref: DocRef = { buf: Buffer.alloc(0), start: 0, end: 0 };
  private readonly run: DocRun = { raw: Buffer.alloc(0), offsets: new Uint32Array(1), first: 0, end: 0, utf8: false, ids: Buffer.alloc(0), times: new Float64Array(0) };
  private readonly clientIds: SealedClientIds | null;

  constructor(readonly dir: string) {
    this.meta = JSON.parse(readFileSync(path.join(dir, FILES.meta), 'utf8')) as FractionMeta;
    this.clientIds = this.meta.clientIds ? new SealedClientIds(path.join(dir, FILES.clientIds)) : null;
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

  get name(): string { return this.meta.name; }
  get docCount(): number { return this.meta.docCount; }
  get minTime(): number { return this.meta.minTime; }
  get maxTime(): number { return this.meta.maxTime; }

  private read(file: string): Buffer {
    return decompress(readFileSync(path.join(this.dir, file)));
  }

  private times(): Float64Array {
    return (this.timesArr ??= f64Of(this.read(FILES.times)));
  }

  private loadDict(): Map<string, FieldDict> {
    if (this.dict) return this.dict;
    const raw = decodeDict(this.read(FILES.dict));
    const dict = new Map<string, FieldDict>();
    let base = 0;
    for (const [f, tokens] of raw) {
      dict.set(f, { tokens, base });
      base += tokens.length;
    }
    const oc = u32Of(this.read(FILES.offsets));
    this.offs = oc.subarray(0, base + 1);
    this.counts = oc.subarray(base + 1);
    this.postingsFd = openSync(path.join(this.dir, FILES.postings), 'r');
    this.dict = dict;
    return dict;
  }

  private list(k: number): Uint32Array {
    const off = this.offs![k]!;
    const len = this.offs![k + 1]! - off;
    const buf = Buffer.allocUnsafe(len);
    let got = 0;
    while (got < len) {
      const r = readSync(this.postingsFd, buf, got, len - got, off + got);
      if (r === 0) break;
      got += r;
    }
    return P.decodePostings(buf, 0, got, this.counts![k]!);
  }

  universe(from: number, to: number): Uint32Array {
    const [lo, hi] = this.timeRange(from, to);
    return P.rangeOfIds(lo, hi);
  }

  timeRange(from: number, to: number): [number, number] {
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
    return (this.idsBuf ??= this.read(FILES.ids));
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
    const [off, len] = this.meta.blocks[index]!;
    const buf = Buffer.allocUnsafe(len);
    let got = 0;
    while (got < len) {
      const r = readSync(this.docsFd, buf, got, len - got, off + got);
      if (r === 0) break;
      got += r;
    }
    const raw = decompress(buf);
    const count = raw.readUInt32LE(0);
    const offsets = new Uint32Array(count + 1);
    let p = 4 + 4 * count;
    for (let i = 0; i < count; i++) {
      offsets[i] = p;
      p += raw.readUInt32LE(4 + 4 * i);
    }
    offsets[count] = p;
    const block = { offsets, raw, utf8: isUtf8(raw.subarray(offsets[0]!, p)) };
    this.blockCache.set(index, block);
    if (this.blockCache.size > BLOCK_CACHE) this.blockCache.delete(this.blockCache.keys().next().value!);
    return block;
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

  column(field: string): Column | null {
    const cached = this.cols.get(field);
    if (cached) return cached;
    const i = this.meta.columns.indexOf(field);
    if (i < 0) return null;
    const fd = this.loadDict().get(field)!;
    const col: Column = { tokens: fd.tokens, ords: u32Of(this.read(FILES.column(i))) };
    this.cols.set(field, col);
    return col;
  }

  fields(): string[] {
    return this.meta.seen ?? this.loadDict().get('_exists_')?.tokens ?? [];
  }

  close(): void {
    this.clientIds?.close();
    if (this.postingsFd >= 0) closeSync(this.postingsFd);
    if (this.docsFd >= 0) closeSync(this.docsFd);
    this.postingsFd = -1;
    this.docsFd = -1;
  }
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
