// The sealed dictionary's binary form: every field's tokens come back in order, whatever their code units; the JSON
// form of older fractions still reads; damaged files are refused.
import { describe, expect, it } from 'vitest';
import { sortField } from '../../../src/logstore/storage/sort-tokens.js';
import { tokenTableOfBytes } from '../../../src/logstore/storage/doc-columns.js';
import {
  decodeDict,
  decodeDictLazy,
  encodeDict,
  fieldTokenBytes,
  fieldTokenTable,
} from '../../../src/logstore/storage/token-dict.js';
import { dictTokenTableNative } from '../../../src/native/index.js';
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

  it("makes a field's token table in one pass, the addon as its twin, the same as from its tokens", () => {
    const r = mulberry32(11);
    const word = (alphabet: string) =>
      Array.from({ length: (r() * 9) | 0 }, () => alphabet[(r() * alphabet.length) | 0]).join('');
    const fields: [string, string[]][] = [
      ['ip', Array.from({ length: 4000 }, () => `10.${(r() * 256) | 0}.${(r() * 256) | 0}.${(r() * 256) | 0}`)],
      ['ascii', Array.from({ length: 500 }, () => word('ab.1\u0000\u007f'))],
      ['latin', Array.from({ length: 500 }, () => word('ab.1é\u0080\u00ff'))],
      ['wide', Array.from({ length: 50 }, () => word('ab中'))],
      ['long', Array.from({ length: 50 }, () => word('ab').repeat(20))],
      ['none', []],
    ];
    const enc = encodeDict(
      fields.map(([name, strs]) => ({
        name,
        ...sortField({
          text: [...new Set(strs)].join(''),
          lens: Uint32Array.from(new Set(strs), (s) => s.length),
          ids: Uint32Array.from(new Set(strs), (_, i) => i),
        }),
      })),
    );
    const impls = [null, dictTokenTableNative].filter((f, i) => i === 0 || f !== null);
    for (const [name] of fields) {
      const ft = fieldTokenBytes(enc, name)!;
      for (const native of impls) {
        const got = fieldTokenTable(enc, name, tokenTableOfBytes, native)!;
        expect(got.wide).toBe(ft.wide);
        if (ft.wide) continue;
        const want = tokenTableOfBytes(ft.bytes, ft.lens);
        expect(Array.from(got.starts)).toEqual(Array.from(want.starts));
        expect(got.table.toString('hex')).toBe(want.table.toString('hex'));
      }
    }
    expect(fieldTokenTable(enc, 'absent', tokenTableOfBytes)).toBeNull();
  });

  it('refuses a damaged dictionary in the one-pass table, or stays in bounds, the addon as its twin', () => {
    const r = mulberry32(12);
    const ips = [...new Set(Array.from({ length: 300 }, () => `10.0.${(r() * 256) | 0}.${(r() * 256) | 0}`))];
    const enc = encodeDict([
      {
        name: 'ip',
        ...sortField({
          text: ips.join(''),
          lens: Uint32Array.from(ips, (s) => s.length),
          ids: Uint32Array.from(ips, (_, i) => i),
        }),
      },
    ]);
    const run = (buf: Buffer, native: typeof dictTokenTableNative) => {
      try {
        const got = fieldTokenTable(buf, 'ip', tokenTableOfBytes, native);
        if (!got || got.wide) return { none: true };
        expect(got.starts[got.starts.length - 1]).toBeLessThanOrEqual(got.table.length);
        for (let i = 1; i < got.starts.length; i++) expect(got.starts[i]).toBeGreaterThanOrEqual(got.starts[i - 1]!);
        return { table: got.table.toString('hex'), starts: Array.from(got.starts) };
      } catch (err) {
        expect(err).toBeInstanceOf(Error);
        return { error: (err as Error).message };
      }
    };
    let threw = 0;
    for (let k = 0; k < 400; k++) {
      const bad = Buffer.from(enc);
      for (let j = 0; j <= k % 3; j++) {
        // Mostly the prefixes' varints and the token count, sometimes anywhere.
        const at = k % 4 === 0 ? (r() * bad.length) | 0 : 12 + ((r() * Math.min(700, bad.length - 12)) | 0);
        bad[at] = (r() * 256) | 0;
      }
      const twin = run(bad, null);
      if ('error' in twin) threw++;
      if (dictTokenTableNative) expect(run(bad, dictTokenTableNative)).toEqual(twin);
    }
    expect(threw).toBeGreaterThan(50);
    expect(run(enc.subarray(0, enc.length - 1), null)).toHaveProperty('error');
  });
});
