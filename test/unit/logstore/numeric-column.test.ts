// Numeric columns (num-<i>.bin): every value, missing value and block bound read back as written, in every
// encoding a block can take, and bytes that are not a column are refused; a range over a column (blocks skipped,
// taken whole or decoded) finds what a pass over every value finds.
import { describe, expect, it } from 'vitest';
import {
  BLOCK_DOCS,
  NumEncoding,
  type NumericBounds,
  decodeNumericColumn,
  encodeNumericColumn,
  numericRangeIds,
  readNumericBlocks,
} from '../../../src/logstore/storage/numeric-column.js';
import { mulberry32 } from '../../helpers/prng.js';

/** Per block, how it was built: a mix of missing values, small integers, wide integers, negatives and floats. */
function randomColumn(seed: number, blocks: number): Float64Array {
  const r = mulberry32(seed);
  const n = blocks * BLOCK_DOCS - ((r() * 100) | 0);
  const out = new Float64Array(n);
  for (let b = 0; b * BLOCK_DOCS < n; b++) {
    const shape = (r() * 8) | 0;
    const missing = [0, 0.001, 0.3, 1][(r() * 4) | 0]!;
    for (let d = b * BLOCK_DOCS; d < Math.min(n, (b + 1) * BLOCK_DOCS); d++) {
      if (r() < missing) {
        out[d] = NaN;
        continue;
      }
      const x = r();
      out[d] = [
        () => [200, 304, 404, 500][(x * 4) | 0]!, // few values: a dictionary
        () => (x * 50_000) | 0, // a frame of reference
        () => Math.floor((x - 0.5) * 2 ** 40), // wide integers, negative ones
        () => (x - 0.5) * 1e6, // floats: plain
        () => ((x * 64) | 0) / 8 - 4, // a few floats: a dictionary
        () => 7, // one value: width 0
        () => (x < 0.5 ? -0 : [Infinity, -Infinity, 2 ** 53, -(2 ** 60)][(x * 8) & 3]!), // -0 and extremes
        () => 1e15 + ((x * 1000) | 0), // large, narrow range
      ][shape]!();
    }
  }
  return out;
}

describe('numeric columns', () => {
  for (const seed of [1, 2, 3, 4, 5]) {
    it(`read back every value and block bound as written (seed ${seed})`, () => {
      const values = randomColumn(seed, 24);
      const kinds: number[] = [];
      const col = decodeNumericColumn(encodeNumericColumn(values, kinds));
      expect(col.values.length).toBe(values.length);
      for (let d = 0; d < values.length; d++) {
        if (!Object.is(col.values[d], values[d])) throw new Error(`doc ${d}: ${col.values[d]} for ${values[d]}`);
      }
      for (let b = 0; b * BLOCK_DOCS < values.length; b++) {
        const block = Array.from(values.subarray(b * BLOCK_DOCS, (b + 1) * BLOCK_DOCS)).filter((v) => v === v);
        expect(col.present[b]).toBe(block.length);
        expect(col.min[b]).toBe(block.length ? Math.min(...block) : NaN);
        expect(col.max[b]).toBe(block.length ? Math.max(...block) : NaN);
      }
      if (seed === 1) {
        // Over the seeds every encoding is taken; this one takes all four.
        for (const k of Object.values(NumEncoding)) expect(kinds[k] ?? 0).toBeGreaterThan(0);
      }
    });
  }

  it('an empty column, and a last block shorter than the others', () => {
    expect(decodeNumericColumn(encodeNumericColumn(new Float64Array(0))).values.length).toBe(0);
    const v = Float64Array.from({ length: BLOCK_DOCS + 3 }, (_, i) => (i % 5 === 0 ? NaN : i));
    expect(Array.from(decodeNumericColumn(encodeNumericColumn(v)).values)).toEqual(Array.from(v));
  });

  it('packs small integers in a few bits: status codes in 2, sizes in 16', () => {
    const r = mulberry32(9);
    const status = Float64Array.from({ length: BLOCK_DOCS }, () => [200, 304, 404, 500][(r() * 4) | 0]!);
    const size = Float64Array.from({ length: BLOCK_DOCS }, () => (r() * 50_000) | 0);
    expect(encodeNumericColumn(status).length).toBeLessThan(16 + 24 + 64 + BLOCK_DOCS / 4);
    expect(encodeNumericColumn(size).length).toBeLessThan(16 + 24 + 64 + 2 * BLOCK_DOCS);
  });

  it('refuses bytes that are not a column, or cut short', () => {
    const buf = encodeNumericColumn(randomColumn(6, 3));
    expect(() => decodeNumericColumn(Buffer.from('not a column at all'))).toThrow(/not a numeric column/);
    expect(() => decodeNumericColumn(buf.subarray(0, 30))).toThrow();
    expect(() => decodeNumericColumn(buf.subarray(0, buf.length - 40))).toThrow();
  });

  for (const seed of [1, 2, 3]) {
    it(`a range over the column finds what a pass over every value finds (seed ${seed})`, () => {
      const values = randomColumn(seed, 12);
      // Runs of one value and of ascending values: blocks inside a range, outside it, and across it.
      for (let d = 0; d < 2 * BLOCK_DOCS; d++) values[d] = d < BLOCK_DOCS ? 300 : d;
      const buf = encodeNumericColumn(values);
      const nb = readNumericBlocks(buf);
      const col = decodeNumericColumn(buf);
      const r = mulberry32(seed + 50);
      const present = Array.from(values).filter((v) => v === v);
      const bound = () =>
        [
          () => present[(r() * present.length) | 0]!,
          () => (r() - 0.5) * 1e5,
          () => [Infinity, -Infinity, 0, -0, 300, 2 ** 53][(r() * 6) | 0]!,
        ][(r() * 3) | 0]!();
      for (let k = 0; k < 200; k++) {
        let lo = bound();
        let hi = bound();
        if (lo > hi) [lo, hi] = [hi, lo];
        const q: NumericBounds = { lo, hi, loIncl: r() < 0.5, hiIncl: r() < 0.5 };
        const from = r() < 0.5 ? 0 : (r() * values.length) | 0;
        const to = r() < 0.5 ? values.length : from + ((r() * 3 * BLOCK_DOCS) | 0);
        const want: number[] = [];
        for (let d = from; d < Math.min(to, values.length); d++) {
          const v = values[d]!;
          if ((q.loIncl ? v >= lo : v > lo) && (q.hiIncl ? v <= hi : v < hi)) want.push(d);
        }
        const what = `${JSON.stringify(q)} [${from}, ${to})`;
        expect(Array.from(numericRangeIds(nb, null, q, from, to, () => {})), what).toEqual(want);
        expect(Array.from(numericRangeIds(nb, col.values, q, from, to, () => {})), what).toEqual(want);
      }
    });
  }
});
