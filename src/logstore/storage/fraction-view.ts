// What search and aggregation read from a fraction, active (in memory) or sealed (files).
import type { Plan } from '../query/plan.js';
import type { NumericBounds, NumericColumn } from './numeric-column.js';

export interface Column {
  /** Token of each ordinal. */
  tokens: readonly string[];
  /** Ordinal of each local doc id; `missing` when the doc has no value. */
  ords: ArrayLike<number>;
  /**
   * The ordinal of a document without a value: MISSING, unless the ordinals are narrower (a sealed column of at
   * most 255 values keeps one byte a document, 255 for none; of at most 65 535, two bytes, 65 535 for none).
   */
  missing?: number;
}

export const MISSING = 0xffffffff;

/** The ordinal of `col`'s documents without a value. */
export function missingOf(col: Column): number {
  return col.missing ?? MISSING;
}

/** Per block of a keyword column: how many of its documents have each value. */
export interface BlockCounts {
  blockDocs: number;
  groups: number;
  /** counts[b * groups + g]: documents of block b whose value is ordinal g. */
  counts: Uint32Array;
}

/** Where a stored document's bytes are: buf[start .. end). */
export interface DocRef {
  buf: Buffer;
  start: number;
  end: number;
  /** True when the bytes are known to be valid UTF-8 (a sealed block checked once); else unknown. */
  utf8?: boolean;
}

/**
 * The decompressed block holding a document, for writing a run of its neighbours at once: document local `l`
 * (first <= l < end) is raw[offsets[l - first] .. offsets[l - first + 1]); every document's time is times[l]
 * and its binary id ids[12 * l .. 12 * l + 12].
 */
export interface DocRun {
  raw: Uint8Array;
  offsets: Uint32Array;
  first: number;
  end: number;
  /** True when the block's documents are known to be valid UTF-8. */
  utf8: boolean;
  ids: Uint8Array;
  times: Float64Array;
}

/** Local ids sorted by (time, id); `rank[local]` is a document's position in `order`. */
export interface TimeOrder {
  order: Uint32Array;
  rank: Uint32Array;
  lo: number;
  hi: number;
}

export interface FractionView {
  readonly name: string;
  readonly docCount: number;
  readonly minTime: number;
  readonly maxTime: number;
  /** True when local ids are ordered by (time, id), so the newest matches are the highest ids. */
  readonly timeOrdered: boolean;
  /** Local ids whose time is in [from, to], ascending. */
  universe(from: number, to: number): Uint32Array;
  /** The same ids as [lo, hi) without materializing them, when ids are time-ordered; else null. */
  timeRange(from: number, to: number): [lo: number, hi: number] | null;
  /**
   * For a fraction whose ids are not time-ordered: its local ids sorted by (time, id), and the positions
   * [lo, hi) of that order whose time is in [from, to]. Absent (or null) when ids are time-ordered.
   */
  byTime?(from: number, to: number): TimeOrder | null;
  /** The length of a token's posting list without reading it (a sealed fraction's dictionary holds it). */
  postingsCount?(field: string, token: string): number;
  /** Posting list of one token, ascending (empty when absent). */
  postings(field: string, token: string): Uint32Array;
  /** Posting lists of every token of `field` accepted by `accept`; `prefix` narrows the scan when given. */
  postingsWhere(field: string, accept: (token: string) => boolean, prefix?: string, upTo?: string): Uint32Array[];
  time(local: number): number;
  id(local: number): string;
  /** Local id of a document id, or -1. */
  find(id: string): number;
  /** The stored document bytes. */
  data(locals: readonly number[]): Uint8Array[];
  /** Where one document's bytes are, without a copy or a view; the object is reused by the next call. */
  docRef(local: number): DocRef;
  /** The block holding document `local` (a sealed fraction's; absent elsewhere); the object is reused by the next call. */
  docRun?(local: number): DocRun;
  /** Keyword values by doc, for aggregations; null when the field has no keyword values here. */
  column(field: string): Column | null;
  /**
   * A sealed fraction's numeric column of a field (format 3): each document's number, NaN for none, with per-block
   * counts and bounds. Absent or null elsewhere: aggregations read numbers from the keyword column then.
   */
  numeric?(field: string): NumericColumn | null;
  /**
   * True when a document of a sealed fraction holds at most one token of `field` (so the posting lists of its
   * tokens are disjoint: an in(...) counts by adding lengths). Absent, or false, when not known.
   */
  singleValued?(field: string): boolean;
  /**
   * A sealed fraction's documents in [from, to) whose token of `field` is a number in range `r` (what a numeric
   * range accepts): their ids ascending, from the numeric column, or the posting lists of the tokens in the range,
   * for the caller to unite. Absent elsewhere: a range scans the dictionary then. `tick` is called per step.
   */
  numericRange?(
    field: string,
    r: NumericBounds,
    from: number,
    to: number,
    tick: () => void,
  ): Uint32Array | Uint32Array[];
  /**
   * A sealed fraction's per-block value counts of a keyword column with few values (at most 256), made from the
   * column when first asked: a count grouped by the field adds a whole block matched at once. Absent or null elsewhere.
   */
  blockCounts?(field: string): BlockCounts | null;
  /** Each document's time by local id, when the fraction holds them in one array. */
  timeArray?(): Float64Array;
  /** Every token of a field with its posting list (text and path fields aggregate by token). */
  tokenLists(field: string): { tokens: string[]; lists: Uint32Array[] };
  /** Field names seen in this fraction. */
  fields(): string[];
  /**
   * A dictionary-scanning leaf of the plan (pattern, anyField, range) already scanned over this fraction: the union
   * of its matching lists, null when the deadline passed during the scan, undefined when not scanned (the usual
   * case: evaluate() scans). The active fraction's scans run in slices beforehand (storage/active-search.ts).
   */
  scanned?(leaf: Plan): Uint32Array | null | undefined;
}
