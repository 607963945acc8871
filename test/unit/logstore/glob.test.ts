// The wildcard matcher against two oracles (a RegExp and a dynamic program) on seeded random patterns and tokens.
import { describe, expect, it } from 'vitest';
import { compileGlob, globMatches } from '../../../src/logstore/query/glob.js';
import { mulberry32 } from '../../helpers/prng.js';

/** The classic table: m[i][j] is whether pattern[0..i) matches text[0..j) (`*` any run, others themselves). */
function dpMatches(pattern: string, text: string): boolean {
  let prev = new Array<boolean>(text.length + 1).fill(false);
  prev[0] = true;
  for (const c of pattern) {
    const cur = new Array<boolean>(text.length + 1).fill(false);
    if (c === '*') {
      cur[0] = prev[0]!;
      for (let j = 1; j <= text.length; j++) cur[j] = prev[j]! || cur[j - 1]!;
    } else {
      for (let j = 1; j <= text.length; j++) cur[j] = prev[j - 1]! && text[j - 1] === c;
    }
    prev = cur;
  }
  return prev[text.length]!;
}

function reMatches(segments: string[], text: string): boolean {
  const esc = segments.map((s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
  return new RegExp(`^${esc.join('.*')}$`, 's').test(text);
}

describe('globMatches', () => {
  it('agrees with a RegExp and a dynamic program on random patterns and tokens', () => {
    const rnd = mulberry32(20261128);
    // A two-letter alphabet (plus a dot and a newline, which a RegExp treats specially) makes matches common.
    const alphabet = ['a', 'a', 'a', 'a', 'b', '.', '\n'];
    const pick = (n: number) =>
      Array.from({ length: n }, () => alphabet[Math.floor(rnd() * alphabet.length)]!).join('');
    let matched = 0;
    for (let n = 0; n < 20_000; n++) {
      const text = pick(Math.floor(rnd() * 9));
      const segments = Array.from({ length: 1 + Math.floor(rnd() * 5) }, () => pick(Math.floor(rnd() * 3)));
      const got = globMatches(compileGlob(segments), text);
      const pattern = segments.join('*');
      expect(got, `${JSON.stringify(segments)} ~ ${JSON.stringify(text)}`).toBe(dpMatches(pattern, text));
      expect(got).toBe(reMatches(segments, text));
      if (got) matched++;
    }
    // Both answers are well represented, so agreement means something.
    expect(matched).toBeGreaterThan(1_000);
    expect(matched).toBeLessThan(18_000);
  });

  it('one segment is an exact value; stars at the ends and in a row', () => {
    expect(globMatches(compileGlob(['abc']), 'abc')).toBe(true);
    expect(globMatches(compileGlob(['abc']), 'abcd')).toBe(false);
    expect(globMatches(compileGlob(['', '']), '')).toBe(true);
    expect(globMatches(compileGlob(['a', '', '', 'a']), 'a')).toBe(false);
    expect(globMatches(compileGlob(['a', '', '', 'a']), 'aa')).toBe(true);
    expect(globMatches(compileGlob(['ab', 'ba']), 'aba')).toBe(false);
  });

  it('answers the pattern that made a RegExp backtrack for minutes at once', () => {
    // m:*x*x*...*x*y against a 72-character token of x: a RegExp tries every split of the x's among the stars.
    const segments = ['', ...Array<string>(20).fill('x'), 'y'];
    const g = compileGlob(segments);
    const token = 'x'.repeat(72);
    for (let i = 0; i < 10_000; i++) expect(globMatches(g, token)).toBe(false);
    expect(globMatches(g, `${token}y`)).toBe(true);
  });
});
