// randomBytesPooled: independent copies of the requested size, also across refills of the pool.
import { describe, expect, it } from 'vitest';
import { randomBytesPooled } from '../../../src/pooler/random-pool.js';

describe('randomBytesPooled', () => {
  it('returns independent copies of the requested size across pool refills', () => {
    const seen = new Set<string>();
    for (let i = 0; i < 3000; i++) {
      const b = randomBytesPooled(4);
      expect(b.length).toBe(4);
      seen.add(b.toString('hex'));
    }
    // 3000 draws of 32 bits: a collision is possible but rare; a stuck pool would give a handful.
    expect(seen.size).toBeGreaterThan(2990);
    const a = randomBytesPooled(16);
    const copy = Buffer.from(a);
    for (let i = 0; i < 600; i++) randomBytesPooled(8);
    expect(a.equals(copy)).toBe(true);
    expect(() => randomBytesPooled(1000)).toThrow(RangeError);
  });
});
