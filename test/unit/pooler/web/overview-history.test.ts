// The overview ring: samples oldest first, the oldest dropped once 15 minutes of them are kept.
import { describe, expect, it } from 'vitest';
import { OverviewHistory } from '../../../../src/pooler/web/overview-history.js';
import type { Overview } from '../../../../src/pooler/control.js';

describe('OverviewHistory', () => {
  it('keeps seconds / interval samples, oldest first, and drops the oldest past that', () => {
    let n = 0;
    const h = new OverviewHistory(() => ({ tps: ++n }) as unknown as Overview, 2000, 10);
    expect(h.list()).toEqual([]);
    for (let i = 0; i < 3; i++) h.sample(1_000_000 + i * 2000);
    expect(h.list().map((s) => s.overview.tps)).toEqual([1, 2, 3]);
    expect(h.list().map((s) => s.t)).toEqual([1000, 1002, 1004]);
    for (let i = 3; i < 12; i++) h.sample(1_000_000 + i * 2000);
    // 10 s at 2 s: the last five samples.
    expect(h.list().map((s) => s.overview.tps)).toEqual([8, 9, 10, 11, 12]);
  });
});
