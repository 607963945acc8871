// Test helper: equality of large typed arrays without vitest's element-by-element deep-equality cost.
import { expect } from 'vitest';

type NumberList = ArrayLike<number>;

/** Asserts got equals want (same length, same elements); a mismatch falls back to toEqual for a readable diff. */
export function expectSameNumbers(got: NumberList, want: NumberList): void {
  let same = got.length === want.length;
  for (let i = 0; same && i < got.length; i++) same = got[i] === want[i];
  if (!same) expect(Array.from(got)).toEqual(Array.from(want));
}
