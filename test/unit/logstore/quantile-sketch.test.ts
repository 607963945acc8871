// Quantiles: exact up to EXACT_VALUES, then a sketch within SKETCH_ALPHA; the same answer however the values
// were split over shards and merged (what makes a cluster answer as single mode does).
import { describe, expect, it } from 'vitest';
import { quantile } from '../../../src/logstore/aggregate/aggregate.js';
import {
  EXACT_VALUES,
  SKETCH_ALPHA,
  type QuantileState,
  quantileAdd,
  quantileMerge,
  sketchQuantile,
} from '../../../src/logstore/aggregate/quantile-sketch.js';
import { mulberry32 } from '../../helpers/prng.js';

const QS = [0, 0.01, 0.25, 0.5, 0.9, 0.99, 0.999, 1];

function answer(st: QuantileState): number[] {
  if (st.sketch) return QS.map((q) => sketchQuantile(st.sketch!, q));
  const sorted = Float64Array.from(st.values ?? []).sort();
  return QS.map((q) => quantile(sorted, q));
}

function values(n: number, seed: number): number[] {
  const r = mulberry32(seed);
  return Array.from({ length: n }, (_, i) =>
    i % 50 === 0 ? 0 : ((r() < 0.2 ? -1 : 1) * Math.floor(r() * r() * 1e6)) / 10,
  );
}

describe('quantile sketch', () => {
  it(`is exact up to ${EXACT_VALUES} values`, () => {
    const vs = values(EXACT_VALUES, 1);
    const st: QuantileState = {};
    for (const v of vs) quantileAdd(st, v);
    expect(st.sketch).toBeUndefined();
    const sorted = Float64Array.from(vs).sort();
    expect(answer(st)).toEqual(QS.map((q) => quantile(sorted, q)));
  });

  it(`past it, each quantile is within ${SKETCH_ALPHA * 100}% of the exact value of its rank`, () => {
    const vs = values(50_000, 2);
    const st: QuantileState = {};
    for (const v of vs) quantileAdd(st, v);
    expect(st.sketch).toBeDefined();
    const sorted = Float64Array.from(vs).sort();
    answer(st).forEach((got, i) => {
      const want = quantile(sorted, QS[i]!);
      expect(Math.abs(got - want)).toBeLessThanOrEqual(Math.abs(want) * SKETCH_ALPHA + 1e-9);
    });
  });

  it('gives the same answer however the values are split into shards and merged', () => {
    for (const n of [100, EXACT_VALUES + 1, 20_000]) {
      const vs = values(n, 3);
      const whole: QuantileState = {};
      for (const v of vs) quantileAdd(whole, v);
      const r = mulberry32(n);
      for (let trial = 0; trial < 5; trial++) {
        const parts: QuantileState[] = Array.from({ length: 1 + Math.floor(r() * 6) }, () => ({}));
        for (const v of vs) quantileAdd(parts[Math.floor(r() * parts.length)]!, v);
        // Merge in a random order into an empty state, as a proxy merges its stores' answers.
        const merged: QuantileState = {};
        for (const p of parts.sort(() => r() - 0.5)) quantileMerge(merged, p);
        expect(answer(merged)).toEqual(answer(whole));
      }
    }
  });
});
