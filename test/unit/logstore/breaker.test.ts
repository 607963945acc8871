// The proxy's per-shard write breaker: opens after N failures in a row, lets one probe through after the
// cooldown, closes on the probe's success and reopens on its failure; looking at it changes nothing.
import { describe, expect, it } from 'vitest';
import { Breaker } from '../../../src/logstore/cluster/breaker.js';
import { shardsOf } from '../../../src/logstore/cluster/cluster.js';

describe('write breaker', () => {
  it('opens, probes once after the cooldown, closes or reopens', () => {
    const b = new Breaker(2, 1000);
    b.failure(0);
    expect(b.available(1)).toBe(true);
    b.failure(10);
    expect(b.open).toBe(true);
    expect(b.available(500)).toBe(false);
    // Asking does not take the probe: a shard that was not chosen stays available.
    expect(b.available(1010)).toBe(true);
    expect(b.available(1010)).toBe(true);
    b.taken();
    expect(b.available(1020)).toBe(false);
    b.failure(1030);
    expect(b.available(1500)).toBe(false);
    expect(b.available(2030)).toBe(true);
    b.taken();
    b.success();
    expect(b.open).toBe(false);
    expect(b.available(2040)).toBe(true);
  });

  it('groups hot_stores into shards of hot_replicas consecutive stores, and refuses a count that does not divide', () => {
    expect(shardsOf(['a:1', 'b:1', 'c:1', 'd:1'], 2)).toEqual([
      ['a:1', 'b:1'],
      ['c:1', 'd:1'],
    ]);
    expect(shardsOf(['a:1', 'b:1'], 1)).toEqual([['a:1'], ['b:1']]);
    expect(() => shardsOf(['a:1', 'b:1', 'c:1'], 2)).toThrow(
      /lists 3 stores, which cluster.hot_replicas \(2\) does not divide/,
    );
  });
});
