// The log-linear histogram behind the percentiles: bucket bounds, quantiles within a bucket's error, merging by adding.
import { describe, expect, it } from 'vitest';
import {
  LOG_BUCKETS,
  LogHistogram,
  logBucketMiddle,
  logBucketOf,
  percentilesOf,
  quantileOf,
} from '../../../src/pooler/log-histogram.js';

describe('log histogram', () => {
  it('puts each duration in the bucket whose range holds it; the middle is within 6.25%', () => {
    for (const us of [1, 1.2, 7, 99, 1000, 20_000, 123_456, 3_000_000, 86_400_000_000]) {
      const i = logBucketOf(us);
      expect(i).toBeGreaterThan(0);
      expect(i).toBeLessThan(LOG_BUCKETS);
      const mid = logBucketMiddle(i);
      if (i < LOG_BUCKETS - 1) expect(Math.abs(mid - us) / us).toBeLessThanOrEqual(0.0625);
    }
    expect(logBucketOf(0)).toBe(0);
    expect(logBucketOf(0.5)).toBe(0);
    expect(logBucketOf(-3)).toBe(0);
    expect(logBucketOf(Number.NaN)).toBe(0);
    expect(logBucketOf(1e30)).toBe(LOG_BUCKETS - 1);
    // Monotonic: a longer duration never lands in an earlier bucket.
    let last = 0;
    for (let us = 1; us < 1e7; us *= 1.01) {
      const i = logBucketOf(us);
      expect(i).toBeGreaterThanOrEqual(last);
      last = i;
    }
  });

  it('quantiles of known samples', () => {
    const counts = new Float64Array(LOG_BUCKETS);
    for (let i = 0; i < 90; i++) counts[logBucketOf(10_000)]!++;
    for (let i = 0; i < 9; i++) counts[logBucketOf(50_000)]!++;
    counts[logBucketOf(1_000_000)]!++;
    const p = percentilesOf(counts);
    expect(Math.abs(p.p50 - 10_000) / 10_000).toBeLessThanOrEqual(0.0625);
    expect(Math.abs(p.p95 - 50_000) / 50_000).toBeLessThanOrEqual(0.0625);
    expect(Math.abs(p.p99 - 50_000) / 50_000).toBeLessThanOrEqual(0.0625);
    expect(Math.abs(quantileOf(counts, 1) - 1_000_000) / 1_000_000).toBeLessThanOrEqual(0.0625);
    expect(percentilesOf(new Float64Array(LOG_BUCKETS))).toEqual({ p50: 0, p95: 0, p99: 0 });
  });

  it('a window covers the last complete period and the current one; windows merge by adding', () => {
    const block = new Float64Array(LOG_BUCKETS + 3);
    const h = new LogHistogram(block, 3);
    h.observeUs(100);
    h.roll();
    h.observeUs(200);
    expect(h.window().reduce((a, b) => a + b, 0)).toBe(2);
    h.roll();
    h.observeUs(400);
    // The 100 us sample is two periods old now.
    const w = h.window();
    expect(w.reduce((a, b) => a + b, 0)).toBe(2);
    expect(w[logBucketOf(100)]).toBe(0);
    const other = new LogHistogram(new Float64Array(LOG_BUCKETS), 0);
    other.observeUs(400);
    const merged = other.addWindow(h.window());
    expect(merged[logBucketOf(400)]).toBe(2);
    expect(merged[logBucketOf(200)]).toBe(1);
  });
});
