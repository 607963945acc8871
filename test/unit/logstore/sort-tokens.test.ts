// The seal's dictionary sort orders strings exactly as JavaScript's `<` does.
import { describe, expect, it } from 'vitest';
import { sortedOrder } from '../../../src/logstore/storage/sort-tokens.js';
import { mulberry32 } from '../../helpers/prng.js';

const rng = mulberry32;

const byJs = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

function check(strs: string[]): void {
  const got = Array.from(sortedOrder(strs), (i) => strs[i]!);
  expect(got).toEqual([...strs].sort(byJs));
}

describe('sortedOrder', () => {
  it('sorts empty, single and duplicate inputs', () => {
    check([]);
    check(['x']);
    check(['b', 'a', 'b', '', 'a', '']);
  });

  it('sorts client addresses with shared prefixes like Array.prototype.sort', () => {
    const r = rng(3);
    const ips = Array.from(
      { length: 20_000 },
      () => `${(r() * 223 + 1) | 0}.${(r() * 255) | 0}.${(r() * 255) | 0}.${(r() * 40) | 0}`,
    );
    check([...new Set(ips)]);
  });

  it('orders by UTF-16 code units (surrogates before U+E000-U+FFFF), prefixes first, wide ranges by comparison', () => {
    const r = rng(5);
    const units = ['a', 'ab', '.', '1', 'é', 'ß', '\uffee', '😀', '𝔸', '\ue000', '\u0000', 'z', '中', '\ud7ff'];
    for (const size of [5, 40, 300, 5000]) {
      const strs = Array.from({ length: size }, () => {
        let s = '';
        const len = (r() * 6) | 0;
        for (let i = 0; i < len; i++) s += units[(r() * units.length) | 0];
        return s;
      });
      check(strs);
    }
    const narrow = Array.from({ length: 2000 }, (_, i) => `k${String.fromCharCode(0x41 + (i % 26))}${i}`);
    check(narrow.reverse());
  });
});
