// Sealing: a sealed fraction answers every read exactly as the active fraction it was sealed from did,
// with its dictionary in JavaScript string order (the order its readers binary-search in).
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { parseMapping } from '../../../src/logstore/mapping.js';
import { ActiveFraction } from '../../../src/logstore/storage/active-fraction.js';
import { MISSING } from '../../../src/logstore/storage/fraction-view.js';
import { sealFraction } from '../../../src/logstore/storage/seal.js';
import { SealedFraction } from '../../../src/logstore/storage/sealed-fraction.js';
import { compress, decompress } from '../../../src/logstore/storage/fraction-files.js';
import { decodeDict } from '../../../src/logstore/storage/token-dict.js';
import { mulberry32 } from '../../helpers/prng.js';

const rng = mulberry32;

// Characters whose UTF-16 order differs from their UTF-8 (code point) order, and shared prefixes.
const ALPHABET = ['a', 'b', 'ab', '.', '1', '10', '2', 'é', 'ß', '\uffee', '😀', '𝔸', '\ue000', 'z'];

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function build(n: number, ordered: boolean, seed: number): ActiveFraction {
  const mapping = parseMapping('mapping-list:\n  - {name: ip, type: keyword}\n  - {name: msg, type: text}\n  - {name: code, type: keyword}\n  - {name: tag, type: keyword}\n');
  const frac = new ActiveFraction('frac-0000000001', mapping, '03');
  const r = rng(seed);
  const word = () => {
    let w = '';
    const len = 1 + ((r() * 4) | 0);
    for (let i = 0; i < len; i++) w += ALPHABET[(r() * ALPHABET.length) | 0];
    return w;
  };
  for (let i = 0; i < n; i++) {
    const doc: Record<string, unknown> = { ip: `${(r() * 20) | 0}.${(r() * 20) | 0}`, msg: `${word()} ${word()} ${word()}`, code: (r() * 7) | 0 };
    if (r() < 0.5) doc['tag'] = word();
    const bytes = Buffer.from(JSON.stringify(doc));
    const time = ordered ? 1_000_000 + i * 10 : 1_000_000 + ((r() * n) | 0) * 10;
    frac.add(doc, bytes, 0, bytes.length, time, i + 1);
  }
  return frac;
}

function sorted(xs: string[]): string[] {
  return [...xs].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

describe('sealFraction', () => {
  for (const ordered of [true, false]) {
    it(`keeps every posting list, column and document (${ordered ? 'time-ordered' : 'out-of-order'} arrival)`, () => {
      const active = build(3000, ordered, ordered ? 1 : 2);
      const dir = mkdtempSync(path.join(os.tmpdir(), 'tidepool-seal-'));
      dirs.push(dir);
      sealFraction(active, path.join(dir, 'frac'));
      const sealed = new SealedFraction(path.join(dir, 'frac'));
      const n = active.docCount;
      expect(sealed.docCount).toBe(n);
      // Sealed local id of each active document, through its id.
      const newOf = Array.from({ length: n }, (_, i) => sealed.find(active.id(i)));
      expect(new Set(newOf).size).toBe(n);
      const all = Array.from({ length: n }, (_, i) => i);
      expect(all.map((i) => sealed.time(newOf[i]!))).toEqual(all.map((i) => active.time(i)));
      expect(sealed.data(newOf as number[]).map((d) => Buffer.from(d).toString())).toEqual(all.map((i) => Buffer.from(active.doc(i)).toString()));
      expect(all.every((i) => i === 0 || sealed.time(i) >= sealed.time(i - 1))).toBe(true);
      for (const field of ['ip', 'msg', 'code', 'tag', '_exists_']) {
        const a = active.tokenLists(field);
        const s = sealed.tokenLists(field);
        expect(s.tokens).toEqual(sorted(a.tokens));
        const got = a.tokens.map((t) => Array.from(sealed.postings(field, t)));
        expect(got).toEqual(a.lists.map((l) => Array.from(Uint32Array.from(l, (x) => newOf[x]!).sort())));
        const ac = active.column(field);
        const sc = sealed.column(field);
        expect(sc === null).toBe(ac === null);
        if (!ac || !sc) continue;
        const value = (c: typeof ac, o: number) => (o === MISSING ? null : c.tokens[o]);
        expect(all.map((i) => value(sc, sc.ords[newOf[i]!]!))).toEqual(all.map((i) => value(ac, ac.ords[i]!)));
      }
      sealed.close();
    });
  }

  it('opens a fraction and lists its fields without reading the dictionary; older fractions read it', () => {
    const active = build(200, true, 4);
    const dir = mkdtempSync(path.join(os.tmpdir(), 'tidepool-seal-'));
    dirs.push(dir);
    const frac = path.join(dir, 'frac');
    sealFraction(active, frac);
    const want = sorted(active.fields());
    expect(new SealedFraction(frac).fields()).toEqual(want);
    // A fraction sealed before meta.json listed its fields: they come from the dictionary.
    const meta = JSON.parse(readFileSync(path.join(frac, 'meta.json'), 'utf8')) as Record<string, unknown>;
    delete meta['seen'];
    writeFileSync(path.join(frac, 'meta.json'), JSON.stringify(meta));
    expect(new SealedFraction(frac).fields()).toEqual(want);
    // With the field list in meta.json, a fraction whose dictionary cannot be read still opens.
    sealFraction(active, frac);
    rmSync(path.join(frac, 'dict.bin'));
    expect(new SealedFraction(frac).fields()).toEqual(want);
  });

  it('reads a fraction whose dictionary is in the JSON form of fractions sealed before the binary one', () => {
    const active = build(2000, false, 6);
    const dir = mkdtempSync(path.join(os.tmpdir(), 'tidepool-seal-'));
    dirs.push(dir);
    const frac = path.join(dir, 'frac');
    sealFraction(active, frac);
    const fields = ['ip', 'msg', 'code', 'tag', '_exists_'];
    const read = () => {
      const sealed = new SealedFraction(frac);
      const out = fields.map((f) => {
        const { tokens, lists } = sealed.tokenLists(f);
        return { tokens, lists: lists.map((l) => Array.from(l)), first: tokens.length ? Array.from(sealed.postings(f, tokens[0]!)) : [] };
      });
      sealed.close();
      return out;
    };
    const binary = readFileSync(path.join(frac, 'dict.bin'));
    const dict = decodeDict(decompress(binary));
    // Both encodings of the binary form are used: one byte per unit (ip) and UTF-16 (msg holds '😀').
    expect(dict.map(([f]) => f)).toEqual(['_exists_', 'code', 'ip', 'msg', 'tag']);
    const want = read();
    expect(want[0]!.tokens).toEqual(sorted(active.tokenLists('ip').tokens));
    writeFileSync(path.join(frac, 'dict.bin'), compress(Buffer.from(JSON.stringify(dict))));
    expect(readFileSync(path.join(frac, 'dict.bin')).equals(binary)).toBe(false);
    expect(read()).toEqual(want);
  });
});
