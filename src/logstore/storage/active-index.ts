// In-memory index of the active fraction: a forward stream of token ids per document, posting lists inverted
// from that stream on demand, and keyword columns for aggregations. The token dictionary is the document
// indexer's (native/doc-indexer.cc), the only one: no JavaScript string or Map entry per distinct token, so a
// large fraction costs the garbage collector next to nothing and its memory is counted once.
import { EXISTS_FIELD, mappedTypes, type FieldType, type MappingSpec } from '../mapping.js';
import { keywordToken, pathTokens, textTokens } from '../tokenize.js';
import { docIndexer } from '../../native/index.js';
import type { DocBatch, DocIndexer } from '../../native/doc-indexer.js';
import type { FieldTokens, SortedField } from './sort-tokens.js';
import { type Column, MISSING } from './fraction-view.js';
import { U32List, grownFilled, grownTable } from './growable.js';
import { type Segment, invertInOrder, invertRange } from './invert.js';

interface FieldState {
  name: string;
  /** Its number in fieldList, as the document indexer numbers it. */
  idx: number;
  types: readonly FieldType[];
  /** Only `keyword`: numbers are looked up by value, without making their token string. */
  keywordOnly: boolean;
  /** Token id of (_exists_, name). */
  existsTok: number;
  /** Its distinct tokens (their text and ids are in the document indexer's dictionary). */
  tokCount: number;
  /** JavaScript path only: token id of a number value, without making its token string. */
  nums: Map<number, number> | null;
  /** Token id + 1 of small non-negative integer values (0 <= v < SMALL_INTS), by value: no hashing for them. */
  smallNums: Int32Array | null;
  /** Keyword column: token id of each ordinal, and the ordinal of each document's first value. */
  colToks: U32List;
  colOrds: U32List | null;
  colView: { docs: number; col: Column } | null;
}

const AUTO_TYPES: readonly FieldType[] = ['keyword'];
/** Integers below this (status codes, sizes, ports) find their token in a table per field (at most 256 KiB, counted). */
const SMALL_INTS = 1 << 16;

export class ActiveIndex {
  private readonly fieldStates = new Map<string, FieldState | null>();
  private readonly fieldList: FieldState[] = [];
  private tokCount = 0;
  /** Per token id: its column ordinal (-1 until used as a keyword value). */
  private tokOrd = new Int32Array(1024).fill(-1);
  /** Last document each token was added for (JavaScript path): a token counts once per document. */
  private lastDoc = new Int32Array(1024).fill(-1);
  /** Token ids of every document, in document order; docEnd[d] is where document d's ids end. */
  private readonly entries = new U32List(1 << 16);
  private readonly docEnd = new U32List(1 << 12);
  private segments: Segment[] = [];
  private cur = 0;
  private readonly exists: FieldState;
  /** Scans and tokenizes whole batches (see indexBatch); told of every field and token made here. */
  private readonly indexer: DocIndexer;

  constructor(private readonly mapping: MappingSpec) {
    this.indexer = docIndexer(mapping);
    this.exists = this.newField(EXISTS_FIELD, ['keyword'], false);
  }

  get docCount(): number {
    return this.docEnd.length;
  }

  get tokenCount(): number {
    return this.tokCount;
  }

  /**
   * Bytes this index holds: the forward stream and columns as filled (they grow by doubling, so up to twice
   * that is allocated), the per-token slots as allocated, and the dictionary as the document indexer reports it
   * (its hash tables and key bytes; counted once, nothing mirrors it). Posting lists inverted for queries are not
   * counted: they are rebuilt on demand and dropped at the seal.
   */
  get memoryBytes(): number {
    let cols = 0;
    for (const fs of this.fieldList) {
      if (fs.colOrds) cols += 4 * fs.colOrds.length + 4 * fs.colToks.length;
      if (fs.smallNums) cols += fs.smallNums.byteLength;
      if (fs.nums) cols += 64 * fs.nums.size;
    }
    return (
      4 * (this.entries.length + this.docEnd.length) +
      this.tokOrd.byteLength +
      this.lastDoc.byteLength +
      cols +
      this.indexer.bytes
    );
  }

  private newField(name: string, types: readonly FieldType[], withExists = true, fromIndexer = false): FieldState {
    const fs: FieldState = {
      name,
      idx: this.fieldList.length,
      types,
      keywordOnly: types.length === 1 && types[0] === 'keyword',
      existsTok: -1,
      tokCount: 0,
      nums: null,
      smallNums: null,
      colToks: new U32List(16),
      colOrds: null,
      colView: null,
    };
    fs.nums = fs.keywordOnly ? new Map() : null;
    this.fieldStates.set(name, fs);
    this.fieldList.push(fs);
    if (withExists && !fromIndexer) {
      if (this.indexer.learnField(name) !== fs.idx) throw new Error(`document indexer out of step at field ${name}`);
      fs.existsTok = this.tokenOf(this.exists, name);
    }
    return fs;
  }

  private field(name: string): FieldState | null {
    const fs = this.fieldStates.get(name);
    if (fs !== undefined) return fs === this.exists ? null : fs; // a document's own `_exists_` field is kept, not indexed
    const types = mappedTypes(this.mapping, name) ?? (this.mapping.auto ? AUTO_TYPES : null);
    if (!types) {
      this.fieldStates.set(name, null);
      return null;
    }
    return this.newField(name, types);
  }

  /** The id of a token the JavaScript path made (the document indexer looks it up, or adds it). */
  private tokenOf(fs: FieldState, token: string): number {
    const t = this.indexer.learnToken(fs.idx, token);
    if (t === this.tokCount) this.newToken(fs);
    else if (t > this.tokCount || t < 0) throw new Error(`document indexer out of step at token ${t}`);
    return t;
  }

  /** Counts the next token id, made in field `fs`. */
  private newToken(fs: FieldState): void {
    const t = this.tokCount++;
    fs.tokCount++;
    if (t >= this.lastDoc.length) {
      this.lastDoc = grownFilled(this.lastDoc);
      this.tokOrd = grownFilled(this.tokOrd);
    }
  }

  private add(t: number): void {
    if (this.lastDoc[t] === this.cur) return;
    this.lastDoc[t] = this.cur;
    this.entries.push(t);
  }

  /** The first keyword value of a field in a document is its column value. */
  private setColumn(fs: FieldState, t: number): void {
    let ords = fs.colOrds;
    if (!ords) ords = fs.colOrds = new U32List(Math.max(16, this.cur + 1));
    if (ords.length > this.cur) return;
    while (ords.length < this.cur) ords.push(MISSING);
    let o = this.tokOrd[t]!;
    if (o < 0) {
      o = fs.colToks.length;
      this.tokOrd[t] = o;
      fs.colToks.push(t);
    }
    ords.push(o);
  }

  private visit(value: unknown, name: string): void {
    if (value === null || value === undefined) return;
    if (typeof value === 'object') {
      if (Array.isArray(value)) {
        for (const v of value) this.visit(v, name);
        return;
      }
      for (const k in value as Record<string, unknown>)
        this.visit((value as Record<string, unknown>)[k], name ? `${name}.${k}` : k);
      return;
    }
    const fs = this.field(name);
    if (fs === null) return;
    const max = this.mapping.maxTokenSize;
    if (typeof value === 'number' && fs.keywordOnly) {
      this.add(fs.existsTok);
      let t: number | undefined;
      if (value >= 0 && value < SMALL_INTS && (value | 0) === value) {
        let small = fs.smallNums;
        if (small === null || value >= small.length) small = fs.smallNums = grownTable(small, value);
        t = small[value]! - 1;
        if (t < 0) {
          t = this.tokenOf(fs, keywordToken(String(value), max));
          small[value] = t + 1;
        }
      } else {
        t = fs.nums!.get(value);
        if (t === undefined) {
          t = this.tokenOf(fs, keywordToken(String(value), max));
          fs.nums!.set(value, t);
        }
      }
      this.add(t);
      this.setColumn(fs, t);
      return;
    }
    let s: string;
    if (typeof value === 'string') s = value;
    else if (typeof value === 'number' || typeof value === 'boolean') s = String(value);
    else return;
    this.add(fs.existsTok);
    for (const type of fs.types) {
      switch (type) {
        case 'keyword': {
          const t = this.tokenOf(fs, keywordToken(s, max));
          this.add(t);
          this.setColumn(fs, t);
          break;
        }
        case 'text':
          for (const tok of textTokens(s, max)) this.add(this.tokenOf(fs, tok));
          break;
        case 'path':
          for (const tok of pathTokens(s, max)) this.add(this.tokenOf(fs, tok));
          break;
        case 'exists':
          break;
      }
    }
  }

  /**
   * Scans and tokenizes documents first .. first + count - 1 of a batch in one call (native/doc-indexer.cc) and
   * takes in the fields and tokens it made; addIndexed then adds each document the batch did not leave to addDoc.
   */
  indexBatch(buf: Uint8Array, offs: Int32Array, first: number, count: number, now: number): DocBatch {
    const b = this.indexer.index(buf, offs, first, count, now);
    const made: FieldState[] = [];
    for (const name of b.newFields) {
      const types = mappedTypes(this.mapping, name) ?? AUTO_TYPES;
      made.push(this.newField(name, types, true, true));
    }
    const nf = b.newTokFields;
    for (let k = 0; k < nf.length; k++) this.newToken(this.fieldList[nf[k]!]!);
    for (const fs of made) fs.existsTok = this.indexer.find(this.exists.idx, fs.name);
    return b;
  }

  /** Adds document i of an indexBatch answer (one whose time is not NaN). */
  addIndexed(b: DocBatch, i: number): void {
    this.cur = this.docEnd.length;
    const from = i === 0 ? 0 : b.ends[i - 1]!;
    const to = b.ends[i]!;
    const e = this.entries;
    if (e.length + to - from > e.data.length) e.grow(e.length + to - from);
    // A loop, not set(subarray()): a view per document would be garbage per document.
    const data = e.data;
    const toks = b.toks;
    let at = e.length;
    for (let k = from; k < to; k++) data[at++] = toks[k]!;
    e.length = at;
    for (let c = i === 0 ? 0 : b.colEnds[i - 1]!; c < b.colEnds[i]!; c++)
      this.setColumn(this.fieldList[b.cols[2 * c]!]!, b.cols[2 * c + 1]!);
    this.docEnd.push(e.length);
  }

  /** Indexes the next document: every field of the mapping (or every field, in auto mode), and `_exists_`. */
  addDoc(doc: Record<string, unknown>): void {
    this.cur = this.docEnd.length;
    this.visit(doc, '');
    this.docEnd.push(this.entries.length);
  }

  /** Inverts documents [lo, hi) of the forward stream into posting lists. */
  private invert(lo: number, hi: number): Segment {
    return invertRange(this.entries.data, this.docEnd.data, this.tokCount, lo, hi);
  }

  /** Brings the posting lists up to the last document: inverts the new tail, or everything when the tail is large. */
  private refresh(): Segment[] {
    const n = this.docEnd.length;
    const done = this.segments.length ? this.segments[this.segments.length - 1]!.docHi : 0;
    if (done === n) return this.segments;
    if (this.segments.length > 0 && this.segments.length < 8 && (n - done) * 4 < done)
      this.segments.push(this.invert(done, n));
    else this.segments = [this.invert(0, n)];
    return this.segments;
  }

  /** Posting lists of every token, for sealing: token t's ids are data[start[t] .. start[t + 1]). */
  all(): { start: Uint32Array; data: Uint32Array } {
    const segs = this.refresh();
    if (segs.length !== 1) this.segments = [this.invert(0, this.docEnd.length)];
    return this.segments[0] ?? { start: new Uint32Array(this.tokCount + 1), data: new Uint32Array(0) };
  }

  /**
   * Posting lists of every token over the documents renumbered by `order` (new id i is document order[i]), for the
   * seal of a fraction whose documents arrived out of time order: each list comes out sorted in the new ids.
   */
  allInOrder(order: Uint32Array): { start: Uint32Array; data: Uint32Array } {
    if (order.length !== this.docEnd.length)
      throw new Error(`allInOrder: ${order.length} documents in the order, ${this.docEnd.length} indexed`);
    return invertInOrder(this.entries.data, this.docEnd.data, this.tokCount, order);
  }

  /**
   * The posting lists as of now, for a search that reads them over several slices (storage/active-search.ts):
   * segments are never changed once made, so these keep giving the lists of the documents indexed now, whatever
   * comes after (later documents go to segments added after them, or to a new whole inversion).
   */
  segmentsNow(): Segment[] {
    return [...this.refresh()];
  }

  /** Token t's list over `segs` (segmentsNow()), or over every document now. */
  listOf(t: number, segs: Segment[] = this.refresh()): Uint32Array {
    if (segs.length === 1) {
      const s = segs[0]!;
      return t < s.tokens ? s.data.slice(s.start[t]!, s.start[t + 1]!) : new Uint32Array(0);
    }
    let len = 0;
    for (const s of segs) if (t < s.tokens) len += s.start[t + 1]! - s.start[t]!;
    const out = new Uint32Array(len);
    let p = 0;
    for (const s of segs) {
      if (t >= s.tokens) continue;
      out.set(s.data.subarray(s.start[t]!, s.start[t + 1]!), p);
      p += s.start[t + 1]! - s.start[t]!;
    }
    return out;
  }

  postings(field: string, token: string, segs?: Segment[]): Uint32Array {
    const fs = this.fieldStates.get(field);
    const t = fs ? this.indexer.find(fs.idx, token) : -1;
    return t < 0 ? new Uint32Array(0) : this.listOf(t, segs);
  }

  postingsWhere(field: string, accept: (token: string) => boolean, segs?: Segment[]): Uint32Array[] {
    const out: Uint32Array[] = [];
    const { tokens, ids } = this.tokenTexts(field);
    for (let i = 0; i < tokens.length; i++) if (accept(tokens[i]!)) out.push(this.listOf(ids[i]!, segs));
    return out;
  }

  tokenLists(field: string, segs?: Segment[]): { tokens: string[]; lists: Uint32Array[] } {
    const { tokens, ids } = this.tokenTexts(field);
    return { tokens, lists: Array.from(ids, (t) => this.listOf(t, segs)) };
  }

  /**
   * A field's dictionary as the document indexer copies it out (token i is the next lens[i] characters of `text`,
   * with id ids[i]), or null when it has no token: for a scan that a search runs in slices.
   */
  dictionary(field: string): FieldTokens | null {
    const fs = this.fieldStates.get(field);
    if (!fs || fs.tokCount === 0) return null;
    return this.indexer.fieldTokens(fs.idx);
  }

  /**
   * Part of a field's dictionary: the tokens whose place is in [from, to), and where places end now (see
   * DocIndexer.fieldTokensIn); null when the field has no token.
   */
  dictionaryIn(field: string, from: number, to: number): { tokens: FieldTokens; end: number } | null {
    const fs = this.fieldStates.get(field);
    if (!fs || fs.tokCount === 0) return null;
    return this.indexer.fieldTokensIn(fs.idx, from, to);
  }

  /** A field's tokens as strings, with their ids (in no set order). */
  private tokenTexts(field: string): { tokens: string[]; ids: Uint32Array } {
    const fs = this.fieldStates.get(field);
    if (!fs || fs.tokCount === 0) return { tokens: [], ids: new Uint32Array(0) };
    const { text, lens, ids } = this.indexer.fieldTokens(fs.idx);
    const tokens = new Array<string>(lens.length);
    let at = 0;
    for (let i = 0; i < lens.length; i++) {
      tokens[i] = text.slice(at, at + lens[i]!);
      at += lens[i]!;
    }
    return { tokens, ids };
  }

  /**
   * Frees the document indexer's dictionary once the fraction is sealed and dropped (nothing is read after): its
   * memory is native, and the finalizer that would free it waits for a collection and an event-loop turn that a
   * busy shard thread does not take; without this, the dictionaries of sealed fractions piled up bulk after bulk.
   */
  release(): void {
    this.indexer.release();
  }

  /** A field's dictionary sorted (for the seal). */
  sortedDictionary(field: string): SortedField {
    const fs = this.fieldStates.get(field);
    return fs
      ? this.indexer.sortedField(fs.idx)
      : { ids: new Uint32Array(0), lens: new Uint32Array(0), bytes: new Uint8Array(0), wide: false };
  }

  /** Indexed field names (with `_exists_`) that have tokens. */
  fields(): { name: string }[] {
    return this.fieldList.filter((f) => f.tokCount > 0);
  }

  /** Column ordinal of token id `t` in its field's keyword column, or -1 if no document has it as a column value. */
  columnOrdinal(t: number): number {
    return this.tokOrd[t] ?? -1;
  }

  column(field: string): Column | null {
    const fs = this.fieldStates.get(field);
    const c = this.columnOrds(field);
    if (!fs || !c) return null;
    const n = this.docEnd.length;
    if (fs.colView && fs.colView.docs === n) return fs.colView.col;
    const { tokens: texts, ids } = this.tokenTexts(field);
    const at = new Int32Array(this.tokCount);
    for (let i = 0; i < ids.length; i++) at[ids[i]!] = i;
    const colToks = fs.colToks.view();
    const tokens = Array.from(colToks, (t) => texts[at[t]!]!);
    const col: Column = { tokens, ords: c.ords };
    fs.colView = { docs: n, col };
    return col;
  }

  /** A keyword column's ordinals, one per document, and how many distinct values (no token strings made). */
  columnOrds(field: string): { ords: Uint32Array; count: number } | null {
    const fs = this.fieldStates.get(field);
    const ords = fs?.colOrds;
    if (!fs || !ords) return null;
    const n = this.docEnd.length;
    while (ords.length < n) ords.push(MISSING);
    return { ords: ords.data.subarray(0, n), count: fs.colToks.length };
  }

  /** Names of the fields documents had (the tokens of `_exists_`: every field but `_exists_` has one). */
  seenFields(): string[] {
    const out: string[] = [];
    for (const fs of this.fieldList) if (fs !== this.exists) out.push(fs.name);
    return out;
  }
}
