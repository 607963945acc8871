// Aggregations over matching documents: count, sum, min, max, avg, quantile, unique, by group and time bucket.
// Shards compute partial states per fraction; the main thread merges them and finalizes the buckets.
import { type BlockCounts, type Column, type FractionView, MISSING, missingOf } from '../storage/fraction-view.js';
import { type NumericColumn, tokenNumber } from '../storage/numeric-column.js';
import { chargeColumn, forgetColumn, touchColumn } from '../storage/column-memory.js';
import { type Sketch, quantileAdd, quantileMerge, sketchQuantile } from './quantile-sketch.js';

export const AGG_FUNCS = ['count', 'sum', 'min', 'max', 'avg', 'quantile', 'unique'] as const;
export type AggFunc = (typeof AGG_FUNCS)[number];

export interface AggSpec {
  field: string;
  func: AggFunc;
  group_by?: string;
  quantiles?: number[];
  /** Time-series bucket width in ms; 0 or absent: no time buckets. */
  interval?: number;
}

export interface AggState {
  count: number;
  sum: number;
  min: number;
  max: number;
  notExists: number;
  /** Quantile values, exact up to EXACT_VALUES; past it `sketch` (quantile-sketch.ts) holds them. */
  values?: number[];
  sketch?: Sketch;
  uniq?: Set<string>;
}

/** Bucket key "<group>\u0000<ts>" -> state; plus documents that had no group value. */
export interface AggPartial {
  buckets: Map<string, AggState>;
  noGroup: number;
}

export interface AggBucket {
  key: string;
  value: number;
  not_exists: number;
  quantiles?: number[];
  ts?: string;
}

export interface AggResult {
  buckets: AggBucket[];
  not_exists: number;
}

const numericCache = new WeakMap<readonly string[], Float64Array>();

function numbers(tokens: readonly string[]): Float64Array {
  let n = numericCache.get(tokens);
  if (!n) {
    n = new Float64Array(tokens.length);
    tokens.forEach((t, i) => {
      n![i] = tokenNumber(t);
    });
    numericCache.set(tokens, n);
  }
  return n;
}

/**
 * A field's values by document: one ordinal each (a keyword column: ords[d], MISSING for none), or several
 * (the tokens of a text or path field: ords[start[d] .. start[d + 1])).
 */
interface Values {
  tokens: readonly string[];
  start: Uint32Array | null;
  ords: ArrayLike<number>;
  /** The ordinal of a document without a value (a keyword column; column.missing). */
  missing: number;
}

const tokenCache = new WeakMap<FractionView, Map<string, { docs: number; values: Values | null }>>();

/** A number per fraction view, for the keys of what aggregations keep of it in the thread's column memory. */
const viewSerial = new WeakMap<FractionView, number>();
let serials = 0;

function memoryKey(view: FractionView, kind: string, field: string): string {
  let n = viewSerial.get(view);
  if (n === undefined) viewSerial.set(view, (n = ++serials));
  return `aggregate\0${n}\0${kind}\0${field}`;
}

/** The tokens of each document of a field without a keyword column, inverted from its posting lists. */
function tokenValues(view: FractionView, field: string): Values | null {
  let byField = tokenCache.get(view);
  if (!byField) tokenCache.set(view, (byField = new Map()));
  const n = view.docCount;
  const hit = byField.get(field);
  if (hit && hit.docs === n) {
    touchColumn(memoryKey(view, 'tokens', field));
    return hit.values;
  }
  const { tokens, lists } = view.tokenLists(field);
  let values: Values | null = null;
  if (tokens.length > 0) {
    const start = new Uint32Array(n + 1);
    for (const l of lists) for (let i = 0; i < l.length; i++) start[l[i]! + 1]++;
    for (let d = 0; d < n; d++) start[d + 1] += start[d]!;
    const pos = start.slice(0, n);
    const ords = new Uint32Array(start[n]!);
    lists.forEach((l, t) => {
      for (let i = 0; i < l.length; i++) ords[pos[l[i]!]!++] = t;
    });
    values = { tokens, start, ords, missing: MISSING };
  }
  // Two fields per fraction at most are kept: enough for a field and its group.
  if (byField.size >= 2 && !byField.has(field)) {
    const old = byField.keys().next().value!;
    byField.delete(old);
    forgetColumn(memoryKey(view, 'tokens', old));
  }
  byField.set(field, { docs: n, values });
  const kept = byField;
  chargeColumn(memoryKey(view, 'tokens', field), values ? values.start!.byteLength + 4 * values.ords.length : 0, () =>
    kept.delete(field),
  );
  return values;
}

function valuesOf(view: FractionView, field: string): Values | null {
  const col = view.column(field);
  return col ? { tokens: col.tokens, start: null, ords: col.ords, missing: missingOf(col) } : tokenValues(view, field);
}

function newState(): AggState {
  return { count: 0, sum: 0, min: Infinity, max: -Infinity, notExists: 0 };
}

export function emptyPartial(): AggPartial {
  return { buckets: new Map(), noGroup: 0 };
}

/** A fraction's matching local ids: a list, ascending, or every id of [lo, hi) (never made into a list). */
export type Matches = Uint32Array | { lo: number; hi: number };

const NO_IDS = new Uint32Array(0);

function idList(m: Matches): Uint32Array {
  if (m instanceof Uint32Array) return m;
  const out = new Uint32Array(Math.max(0, m.hi - m.lo));
  for (let i = 0; i < out.length; i++) out[i] = m.lo + i;
  return out;
}

/**
 * Adds the documents `which` of one fraction (a list or an id range) to `partial`: the fraction's own partial, merged in. Every path
 * merges a fraction's sums whole, so an answer depends only on the fractions' order, never on which thread read
 * which of them (a search reads its shard's active fraction on the shard thread, the sealed ones elsewhere).
 */
export function aggregateFraction(view: FractionView, which: Matches, spec: AggSpec, into: AggPartial): void {
  const groupField = spec.func === 'count' && !spec.group_by ? spec.field : spec.group_by;
  // A numeric function over a field with a numeric column reads that column only, not its keyword column too (a
  // numeric column is made only for a keyword column's field, so the field has no tokens per document).
  const numericOnly =
    spec.func !== 'count' && spec.func !== 'unique' && groupField !== spec.field && !!view.numeric?.(spec.field);
  let fv = numericOnly ? null : valuesOf(view, spec.field);
  const gv = groupField ? (groupField === spec.field ? fv : valuesOf(view, groupField)) : null;
  const interval = spec.interval && spec.interval > 0 ? spec.interval : 0;
  if (!fv?.start && !gv?.start) {
    const numeric = spec.func === 'count' || spec.func === 'unique' ? null : numbersOf(view, spec.field, fv);
    if (
      aggregateColumns(
        view,
        which,
        spec,
        groupField !== undefined,
        gv as Column | null,
        fv as Column | null,
        numeric,
        into,
      )
    )
      return;
  }
  const matches = idList(which);
  if (numericOnly) fv = valuesOf(view, spec.field);
  const nums = fv && spec.func !== 'count' && spec.func !== 'unique' ? numbers(fv.tokens) : null;
  const partial = emptyPartial();
  for (let i = 0; i < matches.length; i++) {
    const local = matches[i]!;
    // Group ordinals of the document: gv.ords[gs .. ge) (a text or path group has one per token).
    let gs = 0;
    let ge = 1;
    if (groupField) {
      if (!gv) {
        partial.noGroup++;
        continue;
      }
      gs = gv.start ? gv.start[local]! : local;
      ge = gv.start ? gv.start[local + 1]! : gv.ords[local] === gv.missing ? local : local + 1;
      if (gs === ge) {
        partial.noGroup++;
        continue;
      }
    }
    const fs = !fv ? 0 : fv.start ? fv.start[local]! : local;
    const fe = !fv ? 0 : fv.start ? fv.start[local + 1]! : fv.ords[local] === fv.missing ? local : local + 1;
    for (let g = gs; g < ge; g++) {
      let key = groupField ? gv!.tokens[gv!.ords[g]!]! : '';
      if (interval) key += `\0${Math.floor(view.time(local) / interval) * interval}`;
      let st = partial.buckets.get(key);
      if (!st) partial.buckets.set(key, (st = newState()));
      if (fs === fe) {
        st.notExists++;
        continue;
      }
      if (spec.func === 'count') {
        st.count++;
        continue;
      }
      if (spec.func === 'unique') {
        st.uniq ??= new Set();
        for (let k = fs; k < fe; k++) st.uniq.add(fv!.tokens[fv!.ords[k]!]!);
        st.count++;
        continue;
      }
      // Numeric functions read the first value (keyword fields have one).
      const v = nums![fv!.ords[fs]!]!;
      if (Number.isNaN(v)) {
        st.notExists++;
        continue;
      }
      st.count++;
      st.sum += v;
      if (v < st.min) st.min = v;
      if (v > st.max) st.max = v;
      if (spec.func === 'quantile') quantileAdd(st, v);
    }
  }
  mergePartials(into, partial);
}

/** Each document's number of a field (NaN: none), and the numeric column it was read from, if any. */
interface Numbers {
  values: Float64Array;
  col: NumericColumn | null;
}

const derivedCache = new WeakMap<FractionView, Map<string, { docs: number; values: Float64Array }>>();

/**
 * A keyword field's numbers by document: a sealed fraction's numeric column (format 3), else the number of each
 * document's column token (the active fraction, older fractions), made once per fraction and size.
 */
function numbersOf(view: FractionView, field: string, fv: Values | null): Numbers | null {
  const col = view.numeric?.(field) ?? null;
  if (col) return { values: col.values, col };
  if (!fv) return null;
  let byField = derivedCache.get(view);
  if (!byField) derivedCache.set(view, (byField = new Map()));
  const n = view.docCount;
  const hit = byField.get(field);
  if (hit && hit.docs === n) {
    touchColumn(memoryKey(view, 'numbers', field));
    return { values: hit.values, col: null };
  }
  const values = derive(fv.ords, fv.missing, numbers(fv.tokens), n);
  if (byField.size >= 2 && !byField.has(field)) {
    const old = byField.keys().next().value!;
    byField.delete(old);
    forgetColumn(memoryKey(view, 'numbers', old));
  }
  byField.set(field, { docs: n, values });
  const kept = byField;
  chargeColumn(memoryKey(view, 'numbers', field), values.byteLength, () => kept.delete(field));
  return { values, col: null };
}

function derive(ords: ArrayLike<number>, missing: number, nums: Float64Array, n: number): Float64Array {
  const values = new Float64Array(n);
  for (let d = 0; d < n; d++) {
    const o = ords[d]!;
    values[d] = o === missing ? NaN : nums[o]!;
  }
  return values;
}

/** Time buckets of a fraction's matches: bucket k (time in [k * interval, (k + 1) * interval)) is slot k - lo. */
function bucketRange(times: Float64Array, p: Place, interval: number): [lo: number, count: number] {
  let lo = Infinity;
  let hi = -Infinity;
  for (let i = 0; i < p.n; i++) {
    const k = Math.floor(times[p.lo >= 0 ? p.lo + i : p.matches[i]!]! / interval);
    if (k < lo) lo = k;
    if (k > hi) hi = k;
  }
  return p.n ? [lo, hi - lo + 1] : [0, 1];
}

/** Slots (group x time bucket) past which the generic path (a map of buckets) takes over. */
const MAX_SLOTS = 1 << 20;

/** Per slot (group ordinal x time bucket): the running state of the documents in it. */
interface Slots {
  count: Float64Array;
  sum: Float64Array;
  min: Float64Array;
  max: Float64Array;
  notExists: Float64Array;
  quantiles: AggState[] | null;
  noGroup: number;
}

/** Where the documents of one fraction's matches fall: group ordinals, and time buckets when `times` is given. */
interface Place {
  /** The matching ids (unused when `lo` >= 0), and how many there are. */
  matches: Uint32Array;
  n: number;
  /** Documents of the fraction (its last block may be short). */
  docs: number;
  /** The first id when the matches are the contiguous ids lo .. lo + length - 1 (read without the list), else -1. */
  lo: number;
  grouped: boolean;
  gOrds: ArrayLike<number> | undefined;
  /** The group ordinal of a document without a group value. */
  gMissing: number;
  times: Float64Array | null;
  interval: number;
  kLo: number;
  buckets: number;
}

/** The i-th match's slot, or -1 when it has no group value. */
function slotOf(p: Place, local: number): number {
  let s = 0;
  if (p.grouped) {
    if (!p.gOrds) return -1;
    const g = p.gOrds[local]!;
    if (g === p.gMissing) return -1;
    s = g * p.buckets;
  }
  if (p.times) s += Math.floor(p.times[local]! / p.interval) - p.kLo;
  return s;
}

/**
 * The length of the block of `bd` ids (fewer for the fraction's last) starting at the i-th match when the matches
 * hold all of it (ids ascending, so its last is length - 1 further), else 0.
 */
function wholeBlock(p: Place, i: number, local: number, bd: number): number {
  if (local % bd !== 0) return 0;
  const len = Math.min(bd, p.docs - local);
  return i + len <= p.n && (p.lo >= 0 || p.matches[i + len - 1] === local + len - 1) ? len : 0;
}

/**
 * count: documents with a value of the field per slot. Grouped by the field itself, a whole block matched adds its
 * per-value counts (`blocks`) at once.
 */
function countSlots(
  p: Place,
  fOrds: ArrayLike<number> | undefined,
  fMissing: number,
  same: boolean,
  blocks: BlockCounts | null,
  sl: Slots,
) {
  const { matches, lo, n } = p;
  const count = sl.count;
  const notExists = sl.notExists;
  const bd = blocks ? blocks.blockDocs : 0;
  let noGroup = 0;
  let i = 0;
  while (i < n) {
    const local = lo >= 0 ? lo + i : matches[i]!;
    const len = blocks ? wholeBlock(p, i, local, bd) : 0;
    if (len > 0) {
      const g0 = (local / bd) * blocks!.groups;
      let had = 0;
      for (let g = 0; g < blocks!.groups; g++) {
        const c = blocks!.counts[g0 + g]!;
        count[g] += c;
        had += c;
      }
      noGroup += len - had;
      i += len;
      continue;
    }
    i++;
    const s = slotOf(p, local);
    if (s < 0) noGroup++;
    else if (same || (fOrds !== undefined && fOrds[local] !== fMissing)) count[s]++;
    else notExists[s]++;
  }
  sl.noGroup += noGroup;
}

/** Slot x value marks past which unique keeps a set of ordinals per slot instead of one byte per pair. */
const UNIQUE_MARKS = 1 << 22;

/**
 * unique: documents with a value of the field per slot, and which of the column's values occur in each (marks by
 * ordinal, made into the value strings once per slot at the end).
 */
function uniqueSlots(p: Place, fCol: Column | null, sl: Slots): (Set<number> | Uint8Array)[] {
  const { matches, lo, n } = p;
  const values = fCol ? fCol.tokens.length : 0;
  const slots = sl.count.length;
  const dense = slots * values <= UNIQUE_MARKS;
  const marks = dense ? new Uint8Array(slots * values) : null;
  const sets: Set<number>[] = [];
  const fOrds = fCol?.ords;
  const fMissing = fCol ? missingOf(fCol) : MISSING;
  let noGroup = 0;
  for (let i = 0; i < n; i++) {
    const local = lo >= 0 ? lo + i : matches[i]!;
    const s = slotOf(p, local);
    if (s < 0) {
      noGroup++;
      continue;
    }
    const o = fOrds ? fOrds[local]! : fMissing;
    if (o === fMissing) {
      sl.notExists[s]++;
      continue;
    }
    sl.count[s]++;
    if (marks) marks[s * values + o] = 1;
    else (sets[s] ??= new Set()).add(o);
  }
  sl.noGroup += noGroup;
  if (!marks) return sets;
  return Array.from({ length: slots }, (_, s) => marks.subarray(s * values, (s + 1) * values));
}

/** The values a slot's unique marks name (ordinals of `tokens`). */
function uniqueValues(marks: Set<number> | Uint8Array | undefined, tokens: readonly string[]): Set<string> {
  const out = new Set<string>();
  if (!marks) return out;
  if (marks instanceof Uint8Array) {
    for (let o = 0; o < marks.length; o++) if (marks[o]) out.add(tokens[o]!);
  } else for (const o of marks) out.add(tokens[o]!);
  return out;
}

const Fn = { Min: 0, Max: 1, Sum: 2, All: 3 } as const;
type Fn = (typeof Fn)[keyof typeof Fn];

/**
 * Per block of a numeric column and value of a keyword group (one group when ungrouped): what the block's documents
 * add to each slot, for a block matched whole. Made from the two columns in one pass the first time a sealed
 * fraction is aggregated so, and kept with the column (at most two groupings per column).
 */
interface GroupBlocks {
  blockDocs: number;
  groups: number;
  /** [b * groups + g] */
  count: Float64Array;
  notExists: Float64Array;
  min: Float64Array;
  max: Float64Array;
  /** Null when a sum in another order could round differently (a value not an integer, or |sum| reaching 2^53). */
  sum: Float64Array | null;
  /** [b]: documents without a group value. */
  noGroup: Float64Array;
}

/** Groups past which no per-block summary is made (it costs blocks x groups). */
const BLOCK_GROUPS_MAX = 256;
/** Per numeric column, by the group column's ordinals (the array a sealed fraction keeps; null: ungrouped). */
const groupBlocksCache = new WeakMap<NumericColumn, Map<ArrayLike<number> | null, GroupBlocks>>();

function groupBlocks(col: NumericColumn, groupCol: Column | null, grouped: boolean): GroupBlocks | null {
  if (grouped && (!groupCol || groupCol.tokens.length > BLOCK_GROUPS_MAX)) return null;
  let byGroup = groupBlocksCache.get(col);
  if (!byGroup) groupBlocksCache.set(col, (byGroup = new Map()));
  const key = grouped ? groupCol!.ords : null;
  const hit = byGroup.get(key);
  if (hit) return hit;
  const gb = grouped
    ? summarize(col, groupCol!.ords, missingOf(groupCol!), groupCol!.tokens.length)
    : summarize(col, null, MISSING, 1);
  if (byGroup.size >= 2) byGroup.delete(byGroup.keys().next().value!);
  byGroup.set(key, gb);
  return gb;
}

function summarize(col: NumericColumn, gOrds: ArrayLike<number> | null, gMissing: number, groups: number): GroupBlocks {
  const vals = col.values;
  const n = vals.length;
  const bd = col.blockDocs;
  const blocks = Math.ceil(n / bd);
  const size = blocks * groups;
  const gb: GroupBlocks = {
    blockDocs: bd,
    groups,
    count: new Float64Array(size),
    notExists: new Float64Array(size),
    min: new Float64Array(size).fill(Infinity),
    max: new Float64Array(size).fill(-Infinity),
    sum: new Float64Array(size),
    noGroup: new Float64Array(blocks),
  };
  const { count, notExists, min, max, sum, noGroup } = gb;
  let exact = true;
  let abs = 0;
  for (let d = 0; d < n; d++) {
    const b = (d / bd) | 0;
    const g = gOrds ? gOrds[d]! : 0;
    if (g === gMissing) {
      noGroup[b]++;
      continue;
    }
    const v = vals[d]!;
    const s = b * groups + g;
    if (v !== v) {
      notExists[s]++;
      continue;
    }
    count[s]++;
    sum![s] += v;
    if (v < min[s]!) min[s] = v;
    if (v > max[s]!) max[s] = v;
    if (exact && !Number.isInteger(v)) exact = false;
    abs += Math.abs(v);
  }
  if (!exact || !(abs < 2 ** 53)) gb.sum = null;
  return gb;
}

/**
 * Numeric functions over each document's number (NaN: none): min and max keep only their bound, sum and avg their
 * sum, quantile everything. A block matched whole takes its bounds from the column (ungrouped min and max) or its
 * per-group summary (`gb`) at once.
 */
function numberSlots(
  p: Place,
  vals: Float64Array | undefined,
  fn: Fn,
  col: NumericColumn | null,
  gb: GroupBlocks | null,
  sl: Slots,
) {
  const { matches, lo, n } = p;
  const { count, sum, min, max, notExists, quantiles } = sl;
  const bd = col ? col.blockDocs : gb ? gb.blockDocs : 0;
  let noGroup = 0;
  let i = 0;
  while (i < n) {
    const local = lo >= 0 ? lo + i : matches[i]!;
    const len = bd > 0 ? wholeBlock(p, i, local, bd) : 0;
    if (len > 0) {
      const b = local / bd;
      if (col) {
        const k = col.present[b]!;
        notExists[0] += len - k;
        if (k > 0) {
          count[0] += k;
          if (col.min[b]! < min[0]!) min[0] = col.min[b]!;
          if (col.max[b]! > max[0]!) max[0] = col.max[b]!;
        }
      } else {
        const G = gb!.groups;
        noGroup += gb!.noGroup[b]!;
        for (let g = 0, s0 = b * G; g < G; g++) {
          const c = gb!.count[s0 + g]!;
          notExists[g] += gb!.notExists[s0 + g]!;
          if (c === 0) continue;
          count[g] += c;
          if (fn === Fn.Min) {
            if (gb!.min[s0 + g]! < min[g]!) min[g] = gb!.min[s0 + g]!;
          } else if (fn === Fn.Max) {
            if (gb!.max[s0 + g]! > max[g]!) max[g] = gb!.max[s0 + g]!;
          } else sum[g] += gb!.sum![s0 + g]!;
        }
      }
      i += len;
      continue;
    }
    i++;
    const s = slotOf(p, local);
    if (s < 0) {
      noGroup++;
      continue;
    }
    const v = vals ? vals[local]! : NaN;
    if (v !== v) {
      notExists[s]++;
      continue;
    }
    count[s]++;
    if (fn === Fn.Min) {
      if (v < min[s]!) min[s] = v;
    } else if (fn === Fn.Max) {
      if (v > max[s]!) max[s] = v;
    } else {
      sum[s] += v;
      if (fn === Fn.All) {
        if (v < min[s]!) min[s] = v;
        if (v > max[s]!) max[s] = v;
        if (quantiles) quantileAdd((quantiles[s] ??= newState()), v);
      }
    }
  }
  sl.noGroup += noGroup;
}

/**
 * Aggregation over columns with typed arrays indexed by slot (group ordinal x time bucket): keyword group and
 * field, every function. Each slot adds its documents in the order the generic path does, so sums and
 * quantiles come out the same. False when the slots would be too many (the caller takes the generic path).
 */
function aggregateColumns(
  view: FractionView,
  which: Matches,
  spec: AggSpec,
  grouped: boolean,
  groupCol: Column | null,
  fieldCol: Column | null,
  numeric: Numbers | null,
  partial: AggPartial,
): boolean {
  const interval = spec.interval && spec.interval > 0 ? spec.interval : 0;
  const groups = grouped ? (groupCol?.tokens.length ?? 0) : 1;
  const list = which instanceof Uint32Array ? which : null;
  const range = which instanceof Uint32Array ? null : which;
  const n = list ? list.length : Math.max(0, range!.hi - range!.lo);
  const place: Place = {
    matches: list ?? NO_IDS,
    n,
    docs: view.docCount,
    lo: list ? (n > 0 && list[n - 1]! - list[0]! === n - 1 ? list[0]! : -1) : n > 0 ? range!.lo : -1,
    grouped,
    gOrds: grouped ? groupCol?.ords : undefined,
    gMissing: groupCol ? missingOf(groupCol) : MISSING,
    times: null,
    interval,
    kLo: 0,
    buckets: 1,
  };
  if (interval) {
    place.times = view.timeArray?.() ?? null;
    if (!place.times) return false;
    [place.kLo, place.buckets] = bucketRange(place.times, place, interval);
  }
  const { kLo, buckets } = place;
  const slots = groups * buckets;
  if (slots > MAX_SLOTS) return false;
  const sl: Slots = {
    count: new Float64Array(slots),
    sum: new Float64Array(slots),
    min: new Float64Array(slots).fill(Infinity),
    max: new Float64Array(slots).fill(-Infinity),
    notExists: new Float64Array(slots),
    quantiles: spec.func === 'quantile' ? new Array<AggState>(slots) : null,
    noGroup: 0,
  };
  let unique: (Set<number> | Uint8Array)[] | null = null;
  if (spec.func === 'unique') unique = uniqueSlots(place, fieldCol, sl);
  else if (spec.func === 'count') {
    const same = grouped && groupCol !== null && groupCol === fieldCol;
    const blocks = same && !interval ? (view.blockCounts?.(spec.field) ?? null) : null;
    countSlots(place, fieldCol?.ords, fieldCol ? missingOf(fieldCol) : MISSING, same, blocks, sl);
  } else {
    const fn = spec.func === 'min' ? Fn.Min : spec.func === 'max' ? Fn.Max : spec.func === 'quantile' ? Fn.All : Fn.Sum;
    const minMax = fn === Fn.Min || fn === Fn.Max;
    const ncol = !interval && fn !== Fn.All ? (numeric?.col ?? null) : null;
    // Ungrouped min and max read the column's own block bounds; grouped ones, and sums, a per-group summary.
    const col = !grouped && minMax ? ncol : null;
    let gb = ncol && !col ? groupBlocks(ncol, groupCol, grouped) : null;
    if (gb && !minMax && !gb.sum) gb = null;
    numberSlots(place, numeric?.values, fn, col, gb, sl);
  }
  partial.noGroup += sl.noGroup;
  const from: AggPartial = { buckets: new Map(), noGroup: 0 };
  for (let s = 0; s < slots; s++) {
    if (sl.count[s] === 0 && sl.notExists[s] === 0) continue;
    const g = (s / buckets) | 0;
    let key = grouped ? groupCol!.tokens[g]! : '';
    if (interval) key += `\0${(kLo + (s - g * buckets)) * interval}`;
    const st: AggState = sl.quantiles?.[s] ?? newState();
    st.count = sl.count[s]!;
    st.sum = sl.sum[s]!;
    st.min = sl.min[s]!;
    st.max = sl.max[s]!;
    st.notExists = sl.notExists[s]!;
    if (unique && sl.count[s]) st.uniq = uniqueValues(unique[s], fieldCol!.tokens);
    from.buckets.set(key, st);
  }
  mergePartials(partial, from);
  return true;
}

export function mergePartials(into: AggPartial, from: AggPartial): AggPartial {
  into.noGroup += from.noGroup;
  for (const [k, s] of from.buckets) {
    const t = into.buckets.get(k);
    if (!t) {
      into.buckets.set(k, s);
      continue;
    }
    t.count += s.count;
    t.sum += s.sum;
    t.min = Math.min(t.min, s.min);
    t.max = Math.max(t.max, s.max);
    t.notExists += s.notExists;
    quantileMerge(t, s);
    if (s.uniq) {
      t.uniq ??= new Set();
      for (const u of s.uniq) t.uniq.add(u);
    }
  }
  return into;
}

/** Exact quantile by the nearest-rank method on sorted values. */
export function quantile(sorted: ArrayLike<number>, q: number): number {
  if (sorted.length === 0) return NaN;
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil(q * sorted.length)));
  return sorted[rank - 1]!;
}

function finalValue(spec: AggSpec, s: AggState): number {
  switch (spec.func) {
    case 'count':
      return s.count;
    case 'sum':
      return s.sum;
    case 'min':
      return s.count ? s.min : NaN;
    case 'max':
      return s.count ? s.max : NaN;
    case 'avg':
      return s.count ? s.sum / s.count : NaN;
    case 'unique':
      return s.uniq?.size ?? 0;
    case 'quantile':
      return NaN;
  }
}

export function finalizeAgg(spec: AggSpec, partial: AggPartial): AggResult {
  const buckets: AggBucket[] = [];
  for (const [k, s] of partial.buckets) {
    const sep = k.indexOf('\0');
    const key = sep >= 0 ? k.slice(0, sep) : k;
    const b: AggBucket = { key, value: finalValue(spec, s), not_exists: s.notExists };
    if (spec.func === 'quantile') {
      const qs = spec.quantiles && spec.quantiles.length ? spec.quantiles : [0.5];
      if (s.sketch) b.quantiles = qs.map((q) => sketchQuantile(s.sketch!, q));
      else {
        const sorted = Float64Array.from(s.values ?? []).sort();
        b.quantiles = qs.map((q) => quantile(sorted, q));
      }
      b.value = b.quantiles[0]!;
    }
    if (sep >= 0) b.ts = new Date(Number(k.slice(sep + 1))).toISOString();
    if (Number.isNaN(b.value)) b.value = 0;
    buckets.push(b);
  }
  buckets.sort(
    (a, b) =>
      (a.ts ?? '').localeCompare(b.ts ?? '') ||
      (spec.func === 'count' ? b.value - a.value : 0) ||
      (a.key < b.key ? -1 : a.key > b.key ? 1 : 0),
  );
  return { buckets, not_exists: partial.noGroup };
}
