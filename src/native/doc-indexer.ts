// Document indexer (native/doc-indexer.cc, twin DocIndexerTs): a batch of NDJSON documents into the active
// fraction's token ids in one call. It keeps the fraction's only dictionary; ActiveIndex numbers what it adds and reads it back.
import { mappedTypes, type MappingSpec } from '../logstore/mapping.js';
import { type FieldTokens, type SortedField, sortField } from '../logstore/storage/sort-tokens.js';
import { LEAF_NUMBER, LEAF_STRING, scanDoc, scannedDocTime, type Leaf } from './doc-scan.js';

/** What one index() call found, for documents first .. first + count - 1 of the batch (numbered 0 .. count - 1). */
export interface DocBatch {
  /** Document time in ms, or NaN: the document takes the JavaScript path (JSON.parse and ActiveIndex's walk). */
  times: Float64Array;
  /** Token ids of document i (each once, in ActiveIndex.visit's order) are toks[ends[i - 1] .. ends[i]). */
  ends: Uint32Array;
  toks: Uint32Array;
  /** Keyword column values of document i: (field number, token id) pairs in cols[2 * colEnds[i - 1] .. 2 * colEnds[i]) / 2. */
  colEnds: Uint32Array;
  cols: Uint32Array;
  /** Fields made by this call, numbered on from the ones before (0 is `_exists_`). */
  newFields: string[];
  /** The field of each token made by this call (numbered on from the ones before). */
  newTokFields: Uint32Array;
}

export interface DocIndexer {
  index(buf: Uint8Array, offs: Int32Array, first: number, count: number, now: number): DocBatch;
  /** A field the JavaScript path made (with its `_exists_` token); returns its number. */
  learnField(name: string): number;
  /** A token the JavaScript path made (or an existing one); returns its id. */
  learnToken(field: number, text: string): number;
  /** The id of a token, or -1. */
  find(field: number, text: string): number;
  /** Every token of a field with its id. */
  fieldTokens(field: number): FieldTokens;
  /**
   * The tokens of a field whose place is in [from, to), and the end of the places so far: a token's place never
   * changes and tokens added later come at `end` or after, so a reader can take a large dictionary a range at a time
   * while tokens are added in between (the addon's places are bytes of the field's key arena, this one's are counts).
   */
  fieldTokensIn(field: number, from: number, to: number): { tokens: FieldTokens; end: number };
  /** A field's tokens sorted as JavaScript sorts strings, for the seal. */
  sortedField(field: number): SortedField;
  /** Frees the dictionary now (its fraction is sealed); only `bytes` may be read after. */
  release(): void;
  /** Bytes it holds. */
  readonly bytes: number;
}

export type DocIndexerFactory = (mapping: MappingSpec) => DocIndexer;

/** Mapping types as the native side reads them: one letter per type, in mapping order. */
export function typeLetters(types: readonly string[]): string {
  return types.map((t) => t[0]).join('');
}

/** Paths ActiveIndex handles differently (Object.prototype names read from mapping.fields, `_exists_` itself). */
const JS_ONLY = ['_exists_', '__proto__', 'constructor', 'hasOwnProperty', 'isPrototypeOf', 'propertyIsEnumerable', 'toLocaleString', 'toString', 'valueOf', '__defineGetter__', '__defineSetter__', '__lookupGetter__', '__lookupSetter__'];
const NOT_INDEXED = -1;
const NEW_FIELD = -3;

interface TsField {
  types: string;
  existsTok: number;
  colStamp: number;
}

/** The TypeScript twin of native/doc-indexer.cc: the same answers from the same calls. */
export class DocIndexerTs implements DocIndexer {
  private readonly fields: TsField[] = [{ types: 'k', existsTok: -1, colStamp: 0 }];
  private readonly paths = new Map<string, number>(JS_ONLY.map((p) => [p, -2]));
  private readonly tokens: Map<string, number>[] = [new Map()];
  private nextTok = 0;
  private lastDoc = new Uint32Array(1024);
  private stamp = 0;
  private readonly maxTok: number;
  // Output of the current call.
  private toks: number[] = [];
  private cols: number[] = [];
  private newFields: string[] = [];
  private newTokFields: number[] = [];

  constructor(private readonly mapping: MappingSpec) {
    this.maxTok = Math.max(1, mapping.maxTokenSize);
  }

  /** Its Maps and strings live on the JavaScript heap: 112 bytes a token (measured with V8's heap statistics). */
  get bytes(): number {
    return 112 * this.nextTok;
  }

  find(field: number, text: string): number {
    this.live();
    return this.tokens[field]?.get(text) ?? -1;
  }

  fieldTokens(field: number): FieldTokens {
    this.live();
    const m = this.tokens[field] ?? new Map<string, number>();
    const lens = new Uint32Array(m.size);
    const ids = new Uint32Array(m.size);
    let i = 0;
    for (const [tok, t] of m) {
      lens[i] = tok.length;
      ids[i++] = t;
    }
    return { text: [...m.keys()].join(''), lens, ids };
  }

  fieldTokensIn(field: number, from: number, to: number): { tokens: FieldTokens; end: number } {
    this.live();
    const m = this.tokens[field] ?? new Map<string, number>();
    const texts: string[] = [];
    const lens: number[] = [];
    const ids: number[] = [];
    let i = 0;
    for (const [tok, t] of m) {
      if (i >= to) break;
      if (i++ < from) continue;
      texts.push(tok);
      lens.push(tok.length);
      ids.push(t);
    }
    return { tokens: { text: texts.join(''), lens: Uint32Array.from(lens), ids: Uint32Array.from(ids) }, end: m.size };
  }

  sortedField(field: number): SortedField {
    return sortField(this.fieldTokens(field));
  }

  private released = false;

  /** Throws once released (as the native indexer does). */
  private live(): void {
    if (this.released) throw new Error('document indexer released: its fraction is sealed');
  }

  release(): void {
    this.released = true;
    this.tokens.length = 0;
    this.paths.clear();
    this.nextTok = 0;
    this.lastDoc = new Uint32Array(0);
  }

  private typesOf(path: string): string | null {
    const t = mappedTypes(this.mapping, path);
    if (t) return typeLetters(t);
    return this.mapping.auto ? 'k' : null;
  }

  private newField(name: string, types: string): number {
    const f = this.fields.length;
    this.fields.push({ types, existsTok: -1, colStamp: 0 });
    this.tokens.push(new Map());
    if (!this.paths.has(name)) this.paths.set(name, f);
    this.fields[f]!.existsTok = this.token(0, name);
    return f;
  }

  learnField(name: string): number {
    this.live();
    return this.newField(name, this.typesOf(name) ?? '');
  }

  learnToken(field: number, text: string): number {
    this.live();
    const m = this.tokens[field]!;
    const t = m.get(text);
    if (t !== undefined) return t;
    return this.make(m, text);
  }

  private make(m: Map<string, number>, text: string): number {
    const t = this.nextTok++;
    m.set(text, t);
    if (t >= this.lastDoc.length) {
      const next = new Uint32Array(this.lastDoc.length * 2);
      next.set(this.lastDoc);
      this.lastDoc = next;
    }
    return t;
  }

  private token(field: number, text: string): number {
    const m = this.tokens[field]!;
    const t = m.get(text);
    if (t !== undefined) return t;
    this.newTokFields.push(field);
    return this.make(m, text);
  }

  private add(t: number): void {
    if (this.lastDoc[t] === this.stamp) return;
    this.lastDoc[t] = this.stamp;
    this.toks.push(t);
  }

  private keyword(f: number, v: string): void {
    const t = this.token(f, (v.length > this.maxTok ? v.slice(0, this.maxTok) : v).toLowerCase());
    this.add(t);
    const fs = this.fields[f]!;
    if (fs.colStamp !== this.stamp) {
      fs.colStamp = this.stamp;
      this.cols.push(f, t);
    }
  }

  private text(f: number, v: string): void {
    for (const w of v.toLowerCase().split(/[^a-z0-9_]+/)) if (w) this.add(this.token(f, w.length > this.maxTok ? w.slice(0, this.maxTok) : w));
  }

  private pathTokens(f: number, v: string): void {
    const s = v.toLowerCase();
    const emit = (len: number) => this.add(this.token(f, s.slice(0, Math.min(len, this.maxTok))));
    for (let i = 1; i < s.length; i++) if (s[i] === '/') emit(i);
    if (s.length > 0 && !s.endsWith('/')) emit(s.length);
    else if (s.length > 1) emit(s.length - 1);
  }

  /** Fields of the leaves (NEW_FIELD when not made yet), or null when a leaf needs the JavaScript path. */
  private check(leaves: Leaf[]): number[] | null {
    const out: number[] = [];
    for (const l of leaves) {
      let f = this.paths.get(l.path);
      let types: string | null = null;
      if (f === undefined) {
        types = this.typesOf(l.path);
        if (types === null) {
          this.paths.set(l.path, NOT_INDEXED);
          f = NOT_INDEXED;
        } else f = NEW_FIELD;
      } else if (f >= 0) types = this.fields[f]!.types;
      if (f === -2) return null;
      out.push(f);
      if (types === null || !/[ktp]/.test(types)) continue;
      if (l.kind === LEAF_STRING && !l.ascii) return null;
      if (l.kind === LEAF_NUMBER && !l.canon) return null;
    }
    return out;
  }

  private commit(leaves: Leaf[], fields: number[]): void {
    this.stamp++;
    for (let i = 0; i < leaves.length; i++) {
      let f = fields[i]!;
      if (f === NOT_INDEXED) continue;
      const l = leaves[i]!;
      if (f === NEW_FIELD) {
        const known = this.paths.get(l.path);
        if (known === undefined) {
          f = this.newField(l.path, this.typesOf(l.path)!);
          this.newFields.push(l.path);
        } else f = known;
      }
      const fs = this.fields[f]!;
      this.add(fs.existsTok);
      for (const type of fs.types) {
        if (type === 'k') this.keyword(f, l.value);
        else if (type === 't') this.text(f, l.value);
        else if (type === 'p') this.pathTokens(f, l.value);
      }
    }
  }

  index(buf: Uint8Array, offs: Int32Array, first: number, count: number, now: number): DocBatch {
    this.live();
    if (first < 0 || count < 0 || 2 * (first + count) > offs.length) throw new RangeError('docIndexerIndex: bad range');
    this.toks = [];
    this.cols = [];
    this.newFields = [];
    this.newTokFields = [];
    const times = new Float64Array(count);
    const ends = new Uint32Array(count);
    const colEnds = new Uint32Array(count);
    for (let i = 0; i < count; i++) {
      const start = offs[2 * (first + i)]!;
      const len = offs[2 * (first + i) + 1]!;
      if (start < 0 || len < 0 || start + len > buf.length) throw new RangeError('docIndexerIndex: a document lies outside the buffer');
      times[i] = NaN;
      const doc = scanDoc(buf, start, start + len);
      const t = doc ? scannedDocTime(doc, now) : NaN;
      const fields = doc && !Number.isNaN(t) ? this.check(doc.leaves) : null;
      if (doc && fields) {
        times[i] = t;
        this.commit(doc.leaves, fields);
      }
      ends[i] = this.toks.length;
      colEnds[i] = this.cols.length / 2;
    }
    return {
      times, ends, toks: Uint32Array.from(this.toks), colEnds, cols: Uint32Array.from(this.cols), newFields: this.newFields,
      newTokFields: Uint32Array.from(this.newTokFields),
    };
  }
}

interface NativeDocIndexerFns {
  docIndexerNew(names: string[], types: string[], auto: boolean, maxTokenSize: number): unknown;
  docIndexerIndex(h: unknown, buf: Uint8Array, offs: Int32Array, first: number, count: number, now: number): DocBatch;
  docIndexerLearnField(h: unknown, name: string): number;
  docIndexerLearnToken(h: unknown, field: number, text: string): number;
  docIndexerFind(h: unknown, field: number, text: string): number;
  docIndexerFieldTokens(
    h: unknown,
    field: number,
    from?: number,
    to?: number,
  ): { text?: string; units?: Uint16Array; lens: Uint32Array; ids: Uint32Array; end: number };
  docIndexerSortedField(h: unknown, field: number): SortedField;
  docIndexerRelease(h: unknown): void;
  docIndexerBytes(h: unknown): number;
}

/**
 * The native indexer behind the DocIndexer interface: a class, not an object of closures made per indexer. A
 * fraction's indexer lives until its seal, and optimized code that called one indexer's closures held them as
 * constants: at every seal it was thrown away and compiled again for the next indexer's closures.
 */
class NativeDocIndexer implements DocIndexer {
  constructor(private readonly addon: NativeDocIndexerFns, private readonly h: unknown) {}

  index(buf: Uint8Array, offs: Int32Array, first: number, count: number, now: number): DocBatch {
    return this.addon.docIndexerIndex(this.h, buf, offs, first, count, now);
  }

  learnField(name: string): number {
    return this.addon.docIndexerLearnField(this.h, name);
  }

  learnToken(field: number, text: string): number {
    return this.addon.docIndexerLearnToken(this.h, field, text);
  }

  find(field: number, text: string): number {
    return this.addon.docIndexerFind(this.h, field, text);
  }

  fieldTokens(field: number): FieldTokens {
    const { text, units, lens, ids } = this.addon.docIndexerFieldTokens(this.h, field);
    // Code units (not all ASCII) are decoded here: Buffer's UTF-16LE keeps lone surrogates.
    return { text: text ?? Buffer.from(units!.buffer, units!.byteOffset, units!.byteLength).toString('utf16le'), lens, ids };
  }

  fieldTokensIn(field: number, from: number, to: number): { tokens: FieldTokens; end: number } {
    const { text, units, lens, ids, end } = this.addon.docIndexerFieldTokens(this.h, field, from, to);
    const t = text ?? Buffer.from(units!.buffer, units!.byteOffset, units!.byteLength).toString('utf16le');
    return { tokens: { text: t, lens, ids }, end };
  }

  sortedField(field: number): SortedField {
    return this.addon.docIndexerSortedField(this.h, field);
  }

  release(): void {
    this.addon.docIndexerRelease(this.h);
  }

  get bytes(): number {
    return this.addon.docIndexerBytes(this.h);
  }
}

/**
 * One empty batch answer, kept for the life of the thread. The addon builds each answer as a plain object, property
 * by property, so its shape (V8 map) is reached by transitions that V8 holds weakly: between two seals a shard's
 * full collection found no answer alive, dropped the shapes, and threw away the optimized code of every function
 * that read an answer (the ingest path, at every seal), which was then compiled again.
 */
let shapeKeeper: DocBatch | null = null;

/** The native indexer behind the DocIndexer interface. */
export function nativeDocIndexer(addon: NativeDocIndexerFns): DocIndexerFactory {
  return (mapping) => {
    const names = Object.keys(mapping.fields);
    const h = addon.docIndexerNew(names, names.map((n) => typeLetters(mapping.fields[n]!)), mapping.auto, mapping.maxTokenSize);
    shapeKeeper ??= addon.docIndexerIndex(h, new Uint8Array(0), new Int32Array(0), 0, 0, 0);
    return new NativeDocIndexer(addon, h);
  };
}

export const docIndexerTs: DocIndexerFactory = (mapping) => new DocIndexerTs(mapping);
