// Posting lists: the native addon and the TypeScript twins agree with each other and with a naive model.
import { describe, expect, it } from 'vitest';
import { addon } from '../../../src/native/index.js';
import {
  checkedNativePostings,
  encodePostings,
  encodePostingsInto,
  postingsTs,
  type PostingsImpl,
} from '../../../src/native/postings.js';
import { mulberry32 } from '../../helpers/prng.js';
import { expectSameNumbers } from '../../helpers/typed-arrays.js';

const rng = mulberry32;

function randomList(r: () => number, universe: number, density: number): Uint32Array {
  const out: number[] = [];
  for (let i = 0; i < universe; i++) if (r() < density) out.push(i);
  return Uint32Array.from(out);
}

function naive(a: Uint32Array, b: Uint32Array) {
  const sa = new Set(a);
  const sb = new Set(b);
  const sorted = (s: Iterable<number>) => Uint32Array.from([...s].sort((x, y) => x - y));
  return {
    and: sorted([...sa].filter((x) => sb.has(x))),
    or: sorted(new Set([...sa, ...sb])),
    minus: sorted([...sa].filter((x) => !sb.has(x))),
  };
}

const native: PostingsImpl | null =
  addon && typeof addon.decodePostings === 'function' ? checkedNativePostings(addon as unknown as PostingsImpl) : null;

describe('posting lists', () => {
  it('the native addon is built (the twins are compared against it)', () => {
    expect(native).not.toBeNull();
  });

  it('native and TypeScript twins agree on random lists, and both agree with a naive model', () => {
    const r = rng(42);
    const impls = native ? [postingsTs, native] : [postingsTs];
    for (let round = 0; round < 200; round++) {
      const universe = 1 + Math.floor(r() * 5000);
      const a = randomList(r, universe, r() * r());
      const b = randomList(r, universe, r() < 0.2 ? 0.001 : r());
      const c = randomList(r, universe, r() * 0.1);
      const want = naive(a, b);
      const encA = encodePostings(a);
      const lo = Math.floor(r() * universe);
      const hi = lo + Math.floor(r() * (universe - lo + 1));
      const results = impls.map((p) => ({
        decoded: p.decodePostings(encA, 0, encA.length, a.length),
        and: p.intersectPostings(a, b),
        or: p.unionPostings(a, b),
        minus: p.differencePostings(a, b),
        many: p.unionManyPostings([a, b, c], universe),
        count: p.countInRange(a, lo, hi),
        range: p.rangeOfIds(lo, hi),
      }));
      for (const res of results) {
        expectSameNumbers(res.decoded, a);
        expectSameNumbers(res.and, want.and);
        expectSameNumbers(res.or, want.or);
        expectSameNumbers(res.minus, want.minus);
        expectSameNumbers(res.many, naive(want.or, c).or);
        expect(res.count).toBe(Array.from(a).filter((x) => x >= lo && x < hi).length);
        expect(res.range.length).toBe(hi - lo);
        if (hi > lo) expect([res.range[0], res.range[res.range.length - 1]]).toEqual([lo, hi - 1]);
      }
      // Every list above matched the same model, so the twins agree on those; the range is compared whole here.
      if (results.length === 2) expectSameNumbers(results[1]!.range, results[0]!.range);
    }
  });

  it('decodes large gaps and stops at truncated input without reading past it', () => {
    const ids = Uint32Array.from([0, 1, 127, 128, 16_383, 16_384, 2 ** 21, 2 ** 28, 2 ** 32 - 1]);
    const enc = encodePostings(ids);
    for (const p of native ? [postingsTs, native] : [postingsTs]) {
      expect(p.decodePostings(enc, 0, enc.length, ids.length)).toEqual(ids);
      expect(p.decodePostings(enc, 0, 3, ids.length).length).toBeLessThan(ids.length);
    }
  });

  it('encodes many lists into one buffer, each decodable at its offset and equal to its own encoding', () => {
    const r = rng(7);
    const lists = Array.from({ length: 200 }, (_, i) =>
      randomList(r, 1 + ((r() * 5000) | 0), i % 3 === 0 ? 0.9 : r() * 0.05),
    );
    const total = lists.reduce((s, l) => s + l.length, 0);
    const out = new Uint8Array(total * 5);
    let pos = 0;
    for (const list of lists) {
      const start = pos;
      pos = encodePostingsInto(list, out, pos);
      expectSameNumbers(out.subarray(start, pos), encodePostings(list));
      for (const p of native ? [postingsTs, native] : [postingsTs])
        expectSameNumbers(p.decodePostings(out, start, pos - start, list.length), list);
    }
    // The same lists as ranges of one concatenated array (as the seal encodes them) give the same bytes.
    const all = new Uint32Array(total);
    let at = 0;
    for (const list of lists) {
      all.set(list, at);
      at += list.length;
    }
    const ranged = new Uint8Array(total * 5);
    let rpos = 0;
    at = 0;
    for (const list of lists) {
      rpos = encodePostingsInto(all, ranged, rpos, at, at + list.length);
      at += list.length;
    }
    expect(rpos).toBe(pos);
    expect(ranged.subarray(0, rpos)).toEqual(out.subarray(0, pos));
  });

  it('rejects bad arguments in TypeScript before they reach C++', () => {
    if (!native) return;
    expect(() => native.decodePostings(new Uint8Array(4), 2, 10, 1)).toThrow(TypeError);
    expect(() => native.intersectPostings([1, 2] as unknown as Uint32Array, new Uint32Array(1))).toThrow(TypeError);
    expect(() => native.rangeOfIds(-1, 5)).toThrow(TypeError);
  });
});
