// Scratch buffers of a search: reused once given back, never handed out twice at once, and only those handed out.
import { describe, expect, it } from 'vitest';
import { ScratchPool, giveBack, takeScratch } from '../../../src/logstore/search/scratch.js';

describe('search scratch buffers', () => {
  it('hands out distinct buffers while in use, and reuses one given back for a request that fits', () => {
    const a = takeScratch(1000);
    const b = takeScratch(1000);
    expect(a.length).toBe(1000);
    expect(a.buffer).not.toBe(b.buffer);
    a.fill(1);
    b.fill(2);
    expect(a.every((x) => x === 1)).toBe(true);
    giveBack(a.subarray(10, 20));
    const c = takeScratch(1200);
    expect(c.buffer).toBe(a.buffer);
    // Taken again: not free until given back again.
    expect(takeScratch(1200).buffer).not.toBe(c.buffer);
    giveBack(c);
    giveBack(b);
  });

  it('ignores buffers it did not hand out and a second give-back; keeps none past 8 MB', () => {
    const mine = takeScratch(100);
    giveBack(mine);
    giveBack(mine);
    const x = takeScratch(100);
    const y = takeScratch(100);
    expect(x.buffer).not.toBe(y.buffer);
    const foreign = Buffer.allocUnsafeSlow(1 << 16);
    giveBack(foreign);
    for (let i = 0; i < 8; i++) expect(takeScratch(1 << 16).buffer).not.toBe(foreign.buffer);
    const big = takeScratch(9 << 20);
    expect(big.buffer.byteLength).toBeGreaterThanOrEqual(9 << 20);
    giveBack(big);
    expect(takeScratch(9 << 20).buffer).not.toBe(big.buffer);
  });

  it('makes a new buffer a quarter larger than asked, in 4 KB pages', () => {
    expect(takeScratch(1).buffer.byteLength).toBe(4096);
    expect(takeScratch(100_000).buffer.byteLength).toBe(126_976);
  });
});

describe('ScratchPool', () => {
  it('keeps at most maxKept buffers of at most maxKeptBytes, the larger ones first', () => {
    const pool = new ScratchPool(2, 1 << 20);
    const [a, b, c] = [pool.take(10_000), pool.take(50_000), pool.take(100_000)];
    const big = pool.take(2 << 20);
    for (const x of [a, b, c, big]) pool.give(x);
    // a went first, then b; c replaced a (smaller); big is past maxKeptBytes.
    expect(pool.keptBytes).toBe(b.buffer.byteLength + c.buffer.byteLength);
    expect(pool.take(70_000).buffer).toBe(c.buffer);
    expect(pool.take(40_000).buffer).toBe(b.buffer);
    expect(pool.take(1000).buffer).not.toBe(a.buffer);
  });
});
