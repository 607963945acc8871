// The sealed dictionary's binary form: every field's tokens come back in order, whatever their code units; the JSON
// form of older fractions still reads; damaged files are refused.
import { describe, expect, it } from 'vitest';
import { sortField } from '../../../src/logstore/storage/sort-tokens.js';
import { decodeDict, decodeDictLazy, encodeDict } from '../../../src/logstore/storage/token-dict.js';
import { mulberry32 } from '../../helpers/prng.js';

const byJs = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

function encode(fields: [string, string[]][]): Buffer {
  return encodeDict(
    fields.map(([name, strs]) => {
      return {
        name,
        ...sortField({
          text: strs.join(''),
          lens: Uint32Array.from(strs, (s) => s.length),
          ids: Uint32Array.from(strs, (_, i) => i),
        }),
      };
    }),
  );
}

function roundTrip(fields: [string, string[]][]): [string, string[]][] {
  return decodeDict(encode(fields));
}

describe('token dictionary file', () => {
  it('round-trips Latin-1, UTF-16, astral, lone surrogates, empty tokens and empty fields, sorted', () => {
    const r = mulberry32(7);
    const units = ['a', 'Z', '0', '.', 'é', '\u00ff', '\u0000', '中', '😀', '\ud800', '\udfff', '\uffff', ' '];
    const words = (pick: string[]) => [
      ...new Set(
        Array.from({ length: 3000 }, () => {
          let s = '';
          const len = (r() * 7) | 0;
          for (let i = 0; i < len; i++) s += pick[(r() * pick.length) | 0];
          return s;
        }),
      ),
    ];
    const fields: [string, string[]][] = [
      ['latin', words(units.slice(0, 7))],
      ['wide', words(units)],
      ['none', []],
      ['é名', ['', 'x']],
    ];
    expect(roundTrip(fields)).toEqual(fields.map(([f, t]) => [f, [...t].sort(byJs)]));
    // Decoded one field at a time, in any order (a search reads the fields it needs): the same tokens, each field's
    // array made once.
    const lazy = decodeDictLazy(encode(fields));
    expect(lazy.map((f) => [f.name, f.count])).toEqual(fields.map(([f, t]) => [f, t.length]));
    for (const k of [2, 0, 3, 1, 0]) {
      expect(lazy[k]!.tokens()).toEqual([...fields[k]![1]].sort(byJs));
      expect(lazy[k]!.tokens()).toBe(lazy[k]!.tokens());
    }
  });

  it('reads the JSON form and refuses unknown or truncated files', () => {
    const json: [string, string[]][] = [['f', ['a', 'b\ud800']]];
    expect(decodeDict(Buffer.from(JSON.stringify(json)))).toEqual(json);
    const bin = encodeDict([
      { name: 'f', ids: Uint32Array.of(1, 0), lens: Uint32Array.of(1, 2), bytes: Buffer.from('abb'), wide: false },
    ]);
    expect(decodeDict(bin)).toEqual([['f', ['a', 'bb']]]);
    expect(decodeDictLazy(Buffer.from(JSON.stringify(json))).map((f) => [f.name, f.tokens()])).toEqual(json);
    expect(() => decodeDictLazy(bin.subarray(0, bin.length - 1))).toThrow(/past the end/);
    // A field whose prefixes are damaged is refused when its tokens are read.
    const bad = Buffer.from(bin);
    bad[bad.indexOf(Buffer.from('f')) + 1 + 9] = 0x7f;
    const lazyBad = decodeDictLazy(bad);
    expect(() => lazyBad[0]!.tokens()).toThrow(/dict.bin: field f/);
    expect(() => decodeDict(Buffer.from('XYZ\u0001'))).toThrow(/unknown format/);
    expect(() => decodeDict(bin.subarray(0, bin.length - 1))).toThrow(/past the end/);
    expect(() => decodeDict(Buffer.concat([bin, Buffer.from([0])]))).toThrow(/after the last field/);
  });
});
