// The active fraction: documents kept in memory (and in its write-ahead file) with an in-memory index.
import { keywordToken, tokenizeDoc, type TokenSink } from '../tokenize.js';
import type { MappingSpec } from '../mapping.js';
import { postings as P } from '../../native/index.js';
import { formatId, idCounter } from '../doc-time.js';
import { type Column, type FractionView, MISSING } from './fraction-view.js';

class GrowableU32 {
  data = new Uint32Array(16);
  length = 0;
  push(v: number): void {
    if (this.length === this.data.length) {
      const next = new Uint32Array(this.data.length * 2);
      next.set(this.data);
      this.data = next;
    }
    this.data[this.length++] = v;
  }
  view(): Uint32Array {
    return this.data.subarray(0, this.length);
  }
}

/** One token's documents, and its ordinal in the field's keyword column (-1 until used as a keyword). */
export interface ActivePosting {
  ids: number[];
  ord: number;
}

interface ActiveColumn {
  tokens: string[];
  ords: GrowableU32;
}

export class ActiveFraction implements FractionView {
  /** True while documents arrived in time order (the usual case): then local ids are time-ordered too. */
  private ordered = true;
  /** Posting lists as plain arrays: most tokens are rare, and small arrays cost far less than typed ones. */
  readonly index = new Map<string, Map<string, ActivePosting>>();
  readonly columns = new Map<string, ActiveColumn>();
  /** Per document: time, id counter, and where its bytes are (batch, offset, length). Plain number arrays
   *  hold unboxed values, so a large fraction costs the garbage collector nothing per document. */
  readonly times: number[] = [];
  private readonly counters: number[] = [];
  private readonly docBatch: number[] = [];
  private readonly docOff: number[] = [];
  private readonly docLen: number[] = [];
  private readonly batches: Uint8Array[] = [];
  minTime = Infinity;
  maxTime = -Infinity;
  rawBytes = 0;
  private current = 0;
  private readonly sink: TokenSink;

  constructor(readonly name: string, readonly mapping: MappingSpec, private readonly shardHex: string) {
    const self = this;
    let lastField = '';
    let lastMap: Map<string, ActivePosting> | undefined;
    const posting = (field: string, token: string): ActivePosting => {
      let byToken = field === lastField ? lastMap : self.index.get(field);
      if (!byToken) self.index.set(field, (byToken = new Map()));
      lastField = field;
      lastMap = byToken;
      let p = byToken.get(token);
      if (!p) byToken.set(token, (p = { ids: [self.current], ord: -1 }));
      else if (p.ids[p.ids.length - 1] !== self.current) p.ids.push(self.current);
      return p;
    };
    // Numbers of keyword fields are found by value first: no string to make and hash per document.
    const numIndex = new Map<string, Map<number, ActivePosting>>();
    let lastNumField = '';
    let lastNumMap: Map<number, ActivePosting> | undefined;
    const column = (field: string, token: string, p: ActivePosting) => {
      let col = self.columns.get(field);
      if (!col) {
        col = { tokens: [], ords: new GrowableU32() };
        self.columns.set(field, col);
      }
      if (col.ords.length > self.current) return;
      while (col.ords.length < self.current) col.ords.push(MISSING);
      if (p.ord < 0) {
        p.ord = col.tokens.length;
        col.tokens.push(token);
      }
      col.ords.push(p.ord);
    };
    this.sink = {
      token(field, token) {
        posting(field, token);
      },
      keywordNumber(field, value) {
        let byNum = field === lastNumField ? lastNumMap : numIndex.get(field);
        if (!byNum) numIndex.set(field, (byNum = new Map()));
        lastNumField = field;
        lastNumMap = byNum;
        let p = byNum.get(value);
        if (!p) {
          const token = keywordToken(String(value), self.mapping.maxTokenSize);
          p = posting(field, token);
          byNum.set(value, p);
          column(field, token, p);
          return;
        }
        if (p.ids[p.ids.length - 1] !== self.current) p.ids.push(self.current);
        if (p.ord >= 0) column(field, '', p);
        else column(field, keywordToken(String(value), self.mapping.maxTokenSize), p);
      },
      keyword(field, token) {
        const p = posting(field, token);
        column(field, token, p);
      },
    };
  }

  get docCount(): number {
    return this.times.length;
  }

  get timeOrdered(): boolean {
    return this.ordered;
  }

  /** Indexes one document; its bytes stay in `buf` (a batch buffer shared by many documents). */
  add(doc: Record<string, unknown>, buf: Uint8Array, off: number, len: number, time: number, counter: number): void {
    this.current = this.times.length;
    if (this.current > 0 && time < this.times[this.current - 1]!) this.ordered = false;
    tokenizeDoc(doc, this.mapping, this.sink);
    this.times.push(time);
    this.counters.push(counter);
    if (this.batches[this.batches.length - 1] !== buf) this.batches.push(buf);
    this.docBatch.push(this.batches.length - 1);
    this.docOff.push(off);
    this.docLen.push(len);
    this.rawBytes += len;
    if (time < this.minTime) this.minTime = time;
    if (time > this.maxTime) this.maxTime = time;
  }

  timeRange(from: number, to: number): [number, number] | null {
    if (!this.ordered) return null;
    const lo = firstAtLeast(this.times, from, false);
    return [lo, Math.max(lo, firstAtLeast(this.times, to, true))];
  }

  universe(from: number, to: number): Uint32Array {
    const n = this.times.length;
    if (from <= this.minTime && to >= this.maxTime) return P.rangeOfIds(0, n);
    if (this.ordered) return P.rangeOfIds(firstAtLeast(this.times, from, false), firstAtLeast(this.times, to, true));
    const out = new Uint32Array(n);
    let k = 0;
    for (let i = 0; i < n; i++) {
      const t = this.times[i]!;
      if (t >= from && t <= to) out[k++] = i;
    }
    return out.slice(0, k);
  }

  postings(field: string, token: string): Uint32Array {
    const p = this.index.get(field)?.get(token);
    return p ? Uint32Array.from(p.ids) : new Uint32Array(0);
  }

  postingsWhere(field: string, accept: (token: string) => boolean): Uint32Array[] {
    const out: Uint32Array[] = [];
    const byToken = this.index.get(field);
    if (!byToken) return out;
    for (const [tok, p] of byToken) if (accept(tok)) out.push(Uint32Array.from(p.ids));
    return out;
  }

  time(local: number): number {
    return this.times[local]!;
  }

  id(local: number): string {
    return formatId(this.times[local]!, this.shardHex, this.counters[local]!);
  }

  /** The id counter of a document: ids of one fraction come from one counter, in order. */
  counter(local: number): number {
    return this.counters[local]!;
  }

  find(id: string): number {
    if (this.counters.length === 0 || id.length !== 24) return -1;
    const local = (idCounter(id) - this.counters[0]! + 2 ** 40) % 2 ** 40;
    if (local < this.counters.length && this.id(local) === id) return local;
    for (let i = 0; i < this.counters.length; i++) if (this.id(i) === id) return i;
    return -1;
  }

  data(locals: readonly number[]): Uint8Array[] {
    return locals.map((l) => this.doc(l));
  }

  doc(local: number): Uint8Array {
    const off = this.docOff[local]!;
    return this.batches[this.docBatch[local]!]!.subarray(off, off + this.docLen[local]!);
  }

  column(field: string): Column | null {
    const col = this.columns.get(field);
    if (!col) return null;
    while (col.ords.length < this.times.length) col.ords.push(MISSING);
    return { tokens: col.tokens, ords: col.ords.view() };
  }

  fields(): string[] {
    return [...(this.index.get('_exists_')?.keys() ?? [])];
  }
}

/** First index whose time is >= t (or > t when `after`), in a non-decreasing array. */
function firstAtLeast(times: readonly number[], t: number, after: boolean): number {
  let lo = 0;
  let hi = times.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (after ? times[mid]! <= t : times[mid]! < t) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
