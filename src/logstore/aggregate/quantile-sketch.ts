// Quantiles that merge across shards and stores in bounded memory: a bucket keeps its values exactly up to
// EXACT_VALUES, then a log-bucketed sketch (DDSketch's mapping) with relative error at most SKETCH_ALPHA.
// Each value always lands in the same sketch bucket, so the answer depends only on the values, never on how
// they were split across shards or merged: single mode and a cluster give the same quantiles.

/** Values kept as they are (nearest-rank quantiles, exact) before a bucket switches to the sketch. */
export const EXACT_VALUES = 2048;
/** Relative accuracy of a sketched quantile: the answer is within 1% of a value of the requested rank. */
export const SKETCH_ALPHA = 0.01;

const GAMMA = (1 + SKETCH_ALPHA) / (1 - SKETCH_ALPHA);
const LOG_GAMMA = Math.log(GAMMA);

export interface Sketch {
  /** Bucket key -> count, for positive values (key = ceil(log_gamma(v))) and for negative ones (of -v). */
  pos: Map<number, number>;
  neg: Map<number, number>;
  zero: number;
  count: number;
}

export function newSketch(): Sketch {
  return { pos: new Map(), neg: new Map(), zero: 0, count: 0 };
}

const keyOf = (v: number) => Math.ceil(Math.log(v) / LOG_GAMMA);
/** The value a bucket stands for: within SKETCH_ALPHA (relative) of every value in it. */
const valueOf = (key: number) => (2 * GAMMA ** key) / (GAMMA + 1);

export function sketchAdd(s: Sketch, v: number, n = 1): void {
  s.count += n;
  if (v > 0) s.pos.set(keyOf(v), (s.pos.get(keyOf(v)) ?? 0) + n);
  else if (v < 0) s.neg.set(keyOf(-v), (s.neg.get(keyOf(-v)) ?? 0) + n);
  else s.zero += n;
}

export function sketchOf(values: readonly number[]): Sketch {
  const s = newSketch();
  for (const v of values) sketchAdd(s, v);
  return s;
}

export function sketchMerge(into: Sketch, from: Sketch): Sketch {
  for (const [k, c] of from.pos) into.pos.set(k, (into.pos.get(k) ?? 0) + c);
  for (const [k, c] of from.neg) into.neg.set(k, (into.neg.get(k) ?? 0) + c);
  into.zero += from.zero;
  into.count += from.count;
  return into;
}

/** The value of nearest rank ceil(q * count), as the bucket that holds it stands for it. */
export function sketchQuantile(s: Sketch, q: number): number {
  if (s.count === 0) return NaN;
  let rank = Math.min(s.count, Math.max(1, Math.ceil(q * s.count)));
  // Most negative first: negative buckets by falling key, then zeros, then positive buckets by rising key.
  for (const k of [...s.neg.keys()].sort((a, b) => b - a)) {
    rank -= s.neg.get(k)!;
    if (rank <= 0) return -valueOf(k);
  }
  rank -= s.zero;
  if (rank <= 0) return 0;
  const keys = [...s.pos.keys()].sort((a, b) => a - b);
  for (const k of keys) {
    rank -= s.pos.get(k)!;
    if (rank <= 0) return valueOf(k);
  }
  return valueOf(keys[keys.length - 1]!);
}

/** What a quantile bucket holds: its exact values, or the sketch once they passed EXACT_VALUES. */
export interface QuantileState {
  values?: number[];
  sketch?: Sketch;
}

export function quantileAdd(st: QuantileState, v: number): void {
  if (st.sketch) {
    sketchAdd(st.sketch, v);
    return;
  }
  (st.values ??= []).push(v);
  if (st.values.length > EXACT_VALUES) {
    st.sketch = sketchOf(st.values);
    st.values = undefined;
  }
}

export function quantileMerge(into: QuantileState, from: QuantileState): void {
  if (!from.values && !from.sketch) return;
  if (into.sketch || from.sketch || (into.values?.length ?? 0) + (from.values?.length ?? 0) > EXACT_VALUES) {
    const s = into.sketch ?? sketchOf(into.values ?? []);
    if (from.sketch) sketchMerge(s, from.sketch);
    else for (const v of from.values ?? []) sketchAdd(s, v);
    into.sketch = s;
    into.values = undefined;
    return;
  }
  (into.values ??= []).push(...from.values!);
}
