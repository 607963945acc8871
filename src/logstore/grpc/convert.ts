// Conversions between the store API's protobuf messages (store.proto) and the log store's own values.
import type { AggPartial, AggSpec, AggState } from '../aggregate/aggregate.js';
import type { Sketch } from '../aggregate/quantile-sketch.js';

export interface PbAggQuery {
  field: string;
  func: string;
  group_by: string;
  quantiles: number[];
  interval: number;
}
export interface PbSketch {
  pos_keys: number[];
  pos_counts: number[];
  neg_keys: number[];
  neg_counts: number[];
  zero: number;
  count: number;
}
export interface PbAggBucketState {
  key: string;
  count: number;
  sum: number;
  min: number;
  max: number;
  not_exists: number;
  values: number[];
  uniq: string[];
  sketch: PbSketch | null;
}
export interface PbAggPartial {
  buckets: PbAggBucketState[];
  no_group: number;
}
export interface PbDoc {
  id: string;
  data: Uint8Array;
  time: number;
}

export function aggToPb(a: AggSpec): PbAggQuery {
  return {
    field: a.field,
    func: a.func,
    group_by: a.group_by ?? '',
    quantiles: a.quantiles ?? [],
    interval: a.interval ?? 0,
  };
}

export function aggFromPb(a: PbAggQuery): AggSpec {
  const spec: AggSpec = { field: a.field, func: a.func as AggSpec['func'] };
  if (a.group_by) spec.group_by = a.group_by;
  if (a.quantiles.length) spec.quantiles = a.quantiles;
  if (a.interval > 0) spec.interval = a.interval;
  return spec;
}

export function partialToPb(p: AggPartial): PbAggPartial {
  const buckets: PbAggBucketState[] = [];
  for (const [key, s] of p.buckets) {
    buckets.push({
      key,
      count: s.count,
      sum: s.sum,
      min: s.min,
      max: s.max,
      not_exists: s.notExists,
      values: s.values ?? [],
      uniq: s.uniq ? [...s.uniq] : [],
      sketch: s.sketch
        ? {
            pos_keys: [...s.sketch.pos.keys()],
            pos_counts: [...s.sketch.pos.values()],
            neg_keys: [...s.sketch.neg.keys()],
            neg_counts: [...s.sketch.neg.values()],
            zero: s.sketch.zero,
            count: s.sketch.count,
          }
        : null,
    });
  }
  return { buckets, no_group: p.noGroup };
}

export function partialFromPb(p: PbAggPartial): AggPartial {
  const buckets = new Map<string, AggState>();
  for (const b of p.buckets) {
    const s: AggState = { count: b.count, sum: b.sum, min: b.min, max: b.max, notExists: b.not_exists };
    if (b.values.length) s.values = b.values;
    if (b.uniq.length) s.uniq = new Set(b.uniq);
    if (b.sketch) {
      const k: Sketch = { pos: new Map(), neg: new Map(), zero: b.sketch.zero, count: b.sketch.count };
      b.sketch.pos_keys.forEach((key, i) => k.pos.set(key, b.sketch!.pos_counts[i]!));
      b.sketch.neg_keys.forEach((key, i) => k.neg.set(key, b.sketch!.neg_counts[i]!));
      s.sketch = k;
    }
    buckets.set(b.key, s);
  }
  return { buckets, noGroup: p.no_group };
}
