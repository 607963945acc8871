// Aggregations over matching documents: count, sum, min, max, avg, quantile, unique, by group and time bucket.
// Shards compute partial states per fraction; the main thread merges them and finalizes the buckets.
import { type Column, type FractionView, MISSING } from '../storage/fraction-view.js';
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
      n![i] = t.trim() === '' ? NaN : Number(t);
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
}

const tokenCache = new WeakMap<FractionView, Map<string, { docs: number; values: Values | null }>>();

/** The tokens of each document of a field without a keyword column, inverted from its posting lists. */
function tokenValues(view: FractionView, field: string): Values | null {
  let byField = tokenCache.get(view);
  if (!byField) tokenCache.set(view, (byField = new Map()));
  const n = view.docCount;
  const hit = byField.get(field);
  if (hit && hit.docs === n) return hit.values;
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
    values = { tokens, start, ords };
  }
  // Two fields per fraction at most are kept: enough for a field and its group.
  if (byField.size >= 2 && !byField.has(field)) byField.delete(byField.keys().next().value!);
  byField.set(field, { docs: n, values });
  return values;
}

function valuesOf(view: FractionView, field: string): Values | null {
  const col = view.column(field);
  return col ? { tokens: col.tokens, start: null, ords: col.ords } : tokenValues(view, field);
}

function newState(): AggState {
  return { count: 0, sum: 0, min: Infinity, max: -Infinity, notExists: 0 };
}

export function emptyPartial(): AggPartial {
  return { buckets: new Map(), noGroup: 0 };
}

/**
 * Adds the documents `matches` of one fraction to `partial`: the fraction's own partial, merged in. Every path
 * merges a fraction's sums whole, so an answer depends only on the fractions' order, never on which thread read
 * which of them (a search reads its shard's active fraction on the shard thread, the sealed ones elsewhere).
 */
export function aggregateFraction(view: FractionView, matches: Uint32Array, spec: AggSpec, into: AggPartial): void {
  const fv = valuesOf(view, spec.field);
  const groupField = spec.func === 'count' && !spec.group_by ? spec.field : spec.group_by;
  const gv = groupField ? (groupField === spec.field ? fv : valuesOf(view, groupField)) : null;
  const nums = fv && spec.func !== 'count' && spec.func !== 'unique' ? numbers(fv.tokens) : null;
  const interval = spec.interval && spec.interval > 0 ? spec.interval : 0;
  if (!interval && spec.func !== 'quantile' && spec.func !== 'unique' && !fv?.start && !gv?.start) {
    aggregateByOrdinal(matches, spec, groupField !== undefined, gv as Column | null, fv as Column | null, nums, into);
    return;
  }
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
      ge = gv.start ? gv.start[local + 1]! : gv.ords[local] === MISSING ? local : local + 1;
      if (gs === ge) {
        partial.noGroup++;
        continue;
      }
    }
    const fs = !fv ? 0 : fv.start ? fv.start[local]! : local;
    const fe = !fv ? 0 : fv.start ? fv.start[local + 1]! : fv.ords[local] === MISSING ? local : local + 1;
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

/** The common case (no time buckets, a running value) over typed arrays indexed by group ordinal. */
function aggregateByOrdinal(
  matches: Uint32Array,
  spec: AggSpec,
  grouped: boolean,
  groupCol: Column | null,
  fieldCol: Column | null,
  nums: Float64Array | null,
  partial: AggPartial,
): void {
  const groups = grouped ? (groupCol?.tokens.length ?? 0) : 1;
  const count = new Float64Array(groups);
  const sum = new Float64Array(groups);
  const min = new Float64Array(groups).fill(Infinity);
  const max = new Float64Array(groups).fill(-Infinity);
  const notExists = new Float64Array(groups);
  const gOrds = groupCol?.ords;
  const fOrds = fieldCol?.ords;
  const isCount = spec.func === 'count';
  let noGroup = 0;
  for (let i = 0; i < matches.length; i++) {
    const local = matches[i]!;
    let g = 0;
    if (grouped) {
      g = gOrds ? gOrds[local]! : MISSING;
      if (g === MISSING) {
        noGroup++;
        continue;
      }
    }
    const o = fOrds ? fOrds[local]! : MISSING;
    if (o === MISSING) {
      notExists[g]++;
      continue;
    }
    if (isCount) {
      count[g]++;
      continue;
    }
    const v = nums![o]!;
    if (v !== v) {
      notExists[g]++;
      continue;
    }
    count[g]++;
    sum[g] += v;
    if (v < min[g]!) min[g] = v;
    if (v > max[g]!) max[g] = v;
  }
  partial.noGroup += noGroup;
  const from: AggPartial = { buckets: new Map(), noGroup: 0 };
  for (let g = 0; g < groups; g++) {
    if (count[g] === 0 && notExists[g] === 0) continue;
    from.buckets.set(grouped ? groupCol!.tokens[g]! : '', {
      count: count[g]!,
      sum: sum[g]!,
      min: min[g]!,
      max: max[g]!,
      notExists: notExists[g]!,
    });
  }
  mergePartials(partial, from);
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
