// Sealing: a sealed fraction answers every read exactly as the active fraction it was sealed from did,
// with its dictionary in JavaScript string order (the order its readers binary-search in).
import { cpSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { parseMapping } from '../../../src/logstore/mapping.js';
import { ActiveFraction } from '../../../src/logstore/storage/active-fraction.js';
import { missingOf } from '../../../src/logstore/storage/fraction-view.js';
import { sealFraction } from '../../../src/logstore/storage/seal.js';
import { SealedFraction } from '../../../src/logstore/storage/sealed-fraction.js';
import { FractionDamagedError, compress, decompress } from '../../../src/logstore/storage/fraction-files.js';
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
  const mapping = parseMapping(
    'mapping-list:\n  - {name: ip, type: keyword}\n  - {name: msg, type: text}\n  - {name: code, type: keyword}\n  - {name: tag, type: keyword}\n',
  );
  const frac = new ActiveFraction('frac-0000000001', mapping, '03');
  const r = rng(seed);
  const word = () => {
    let w = '';
    const len = 1 + ((r() * 4) | 0);
    for (let i = 0; i < len; i++) w += ALPHABET[(r() * ALPHABET.length) | 0];
    return w;
  };
  for (let i = 0; i < n; i++) {
    const doc: Record<string, unknown> = {
      ip: `${(r() * 20) | 0}.${(r() * 20) | 0}`,
      msg: `${word()} ${word()} ${word()}`,
      code: (r() * 7) | 0,
    };
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

/** A copy of a fraction sealed by a format 3 build (test/fixtures/sealed-format-3, see its make.mjs). */
function format3Copy(): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tidepool-seal-'));
  dirs.push(dir);
  cpSync(path.join(__dirname, '../../fixtures/sealed-format-3/frac'), path.join(dir, 'frac'), { recursive: true });
  return path.join(dir, 'frac');
}

/** Rewrites a format 3 fraction's meta.json as format 1 wrote it (no checksums), after `edit`: old files then read as such. */
function asFormat1(frac: string, edit: (meta: Record<string, unknown>) => void = () => {}): void {
  const meta = JSON.parse(readFileSync(path.join(frac, 'meta.json'), 'utf8')) as Record<string, unknown>;
  meta['format'] = 1;
  delete meta['check'];
  delete meta['files'];
  delete meta['postingsChunks'];
  meta['blocks'] = (meta['blocks'] as number[][]).map((b) => b.slice(0, 3));
  edit(meta);
  writeFileSync(path.join(frac, 'meta.json'), JSON.stringify(meta));
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
      expect(sealed.data(newOf as number[]).map((d) => Buffer.from(d).toString())).toEqual(
        all.map((i) => Buffer.from(active.doc(i)).toString()),
      );
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
        // A sealed column is kept in the narrowest array its ordinals fit (one byte up to 255 values).
        const width = sc.tokens.length <= 0xff ? 1 : sc.tokens.length <= 0xffff ? 2 : 4;
        expect((sc.ords as Uint8Array).BYTES_PER_ELEMENT).toBe(width);
        const value = (c: typeof ac, o: number) => (o === missingOf(c) ? null : c.tokens[o]);
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
    // A fraction sealed before meta.json listed its fields (and before checksums): they come from the dictionary.
    asFormat1(frac, (meta) => delete meta['seen']);
    expect(new SealedFraction(frac).fields()).toEqual(want);
    // With the field list in meta.json, a (format 1) fraction whose dictionary cannot be read still opens.
    sealFraction(active, frac);
    asFormat1(frac);
    rmSync(path.join(frac, 'dict.bin'));
    expect(new SealedFraction(frac).fields()).toEqual(want);
  });

  it('reads a fraction whose dictionary is in the JSON form of fractions sealed before the binary one', () => {
    const frac = format3Copy();
    const fields = new SealedFraction(frac).meta.fields;
    const read = () => {
      const sealed = new SealedFraction(frac);
      const out = fields.map((f) => {
        const { tokens, lists } = sealed.tokenLists(f);
        return {
          tokens,
          lists: lists.map((l) => Array.from(l)),
          first: tokens.length ? Array.from(sealed.postings(f, tokens[0]!)) : [],
        };
      });
      sealed.close();
      return out;
    };
    const binary = readFileSync(path.join(frac, 'dict.bin'));
    const dict = decodeDict(decompress(binary));
    expect(dict.map(([f]) => f)).toEqual(fields);
    // Both encodings of the binary form are used: one byte per unit (clientip) and UTF-16 (level holds '😀').
    const wide = (f: string) => dict.find(([name]) => name === f)![1].some((t) => /[^\u0000-\u00ff]/.test(t));
    expect([wide('clientip'), wide('level')]).toEqual([false, true]);
    const want = read();
    expect(want[1]!.tokens.length).toBeGreaterThan(100);
    writeFileSync(path.join(frac, 'dict.bin'), compress(Buffer.from(JSON.stringify(dict))));
    asFormat1(frac);
    expect(readFileSync(path.join(frac, 'dict.bin')).equals(binary)).toBe(false);
    expect(read()).toEqual(want);
  });

  describe('checksums', () => {
    /** A fresh fraction of 3000 documents (several document blocks), sealed into a directory of its own. */
    const sealedCopy = (): string => {
      const dir = mkdtempSync(path.join(os.tmpdir(), 'tidepool-seal-'));
      dirs.push(dir);
      const frac = path.join(dir, 'frac');
      sealFraction(build(3000, true, 11), frac);
      return frac;
    };
    const flip = (file: string, at: number) => {
      const b = readFileSync(file);
      for (let i = 0; i < 64 && at + i < b.length; i++) b[at + i]! ^= 0x5a;
      writeFileSync(file, b);
    };
    /** Every read a search makes: each field's lists, each document. */
    const readAll = (frac: string) => {
      const sealed = new SealedFraction(frac);
      try {
        for (const f of sealed.meta.fields) sealed.tokenLists(f);
        for (let i = 0; i < sealed.docCount; i++) sealed.docRef(i);
      } finally {
        sealed.close();
      }
    };
    const damage = (fn: () => void, what = ''): FractionDamagedError => {
      try {
        fn();
      } catch (err) {
        expect(err).toBeInstanceOf(FractionDamagedError);
        return err as FractionDamagedError;
      }
      throw new Error(`no damage found ${what}`);
    };

    it('reads an intact fraction, and finds 64 changed bytes in the middle of each file kind when it reads them', () => {
      const frac = sealedCopy();
      const meta = JSON.parse(readFileSync(path.join(frac, 'meta.json'), 'utf8')) as {
        format: number;
        blocks: number[][];
        postingsChunks: number[];
      };
      expect(meta.format).toBe(5);
      expect(meta.blocks.length).toBeGreaterThan(1);
      expect(meta.blocks.every((b) => b.length === 4)).toBe(true);
      readAll(frac);
      const files = ['docs.bin', 'postings.bin', 'dict.bin', 'offsets.bin', 'times.bin', 'ids.bin', 'col-0.bin'];
      for (const file of [...files, 'num-0.bin']) {
        const f = sealedCopy();
        flip(path.join(f, file), Math.floor(statSync(path.join(f, file)).size / 2));
        // Opening checks lengths only: changed bytes are found by the read of them.
        const err = damage(() => {
          readAll(f);
          const sealed = new SealedFraction(f);
          sealed.id(0);
          sealed.time(0);
          for (const c of sealed.meta.columns) sealed.column(c);
          for (const c of sealed.meta.numeric ?? []) sealed.numeric(c);
        }, file);
        expect(err.file).toBe(file);
        expect(err.fraction).toBe('frac');
      }
    });

    it('finds a changed or cut file when it opens the fraction', () => {
      let f = sealedCopy();
      flip(path.join(f, 'meta.json'), 40);
      expect(damage(() => new SealedFraction(f)).file).toBe('meta.json');
      f = sealedCopy();
      // A number changed inside meta.json still parses: its checksum finds it.
      const text = readFileSync(path.join(f, 'meta.json'), 'utf8');
      writeFileSync(path.join(f, 'meta.json'), text.replace('"docCount":3000', '"docCount":3001'));
      expect(damage(() => new SealedFraction(f)).detail).toMatch(/checksum/);
      f = sealedCopy();
      const docs = readFileSync(path.join(f, 'docs.bin'));
      writeFileSync(path.join(f, 'docs.bin'), docs.subarray(0, docs.length >> 1));
      expect(damage(() => new SealedFraction(f)).file).toBe('docs.bin');
      f = sealedCopy();
      rmSync(path.join(f, 'postings.bin'));
      expect(damage(() => new SealedFraction(f)).file).toBe('postings.bin');
    });

    it('reads a format 1 fraction (no checksums), whose damage shows as a block that does not decompress', () => {
      const f = format3Copy();
      asFormat1(f);
      readAll(f);
      flip(path.join(f, 'docs.bin'), 100);
      const err = damage(() => readAll(f));
      expect(err.file).toBe('docs.bin');
      expect(err.detail).toMatch(/decompress/);
    });
  });
});
