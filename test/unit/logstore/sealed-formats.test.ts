// Formats 4 and 5 of sealed fractions: column-wise document blocks give back every document byte for byte (with
// values referring to their keyword columns since format 5), the compact times, ids, offsets and dense posting lists
// read back as written, and fractions sealed by format 3 and 4 builds read the same as today's seal of their
// documents.
import { cpSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { parseMapping } from '../../../src/logstore/mapping.js';
import { ActiveFraction } from '../../../src/logstore/storage/active-fraction.js';
import {
  type ColumnTokens,
  type DocColumnRef,
  blockColumns,
  decodeDocBlock,
  decodeDocBlockTs,
  encodeDocBlock,
  encodeDocBlockTs,
  tokenTable,
  tokenTableOfBytes,
} from '../../../src/logstore/storage/doc-columns.js';
import { FRACTION_FORMAT, decompress } from '../../../src/logstore/storage/fraction-files.js';
import { decodeDocBlockNative, encodeDocBlockNative } from '../../../src/native/index.js';
import { decodeShort, isShort, shortenPostings } from '../../../src/logstore/storage/dense-postings.js';
import type { DocRef } from '../../../src/logstore/storage/fraction-view.js';
import {
  decodeIds,
  decodeOffsets,
  decodeTimes,
  encodeIdTails,
  encodeOffsets,
  encodeTimes,
  fromPlanes,
  toPlanes,
  writeU48,
} from '../../../src/logstore/storage/sealed-arrays.js';
import { sealFraction } from '../../../src/logstore/storage/seal.js';
import { SealedFraction } from '../../../src/logstore/storage/sealed-fraction.js';
import { encodePostingsInto } from '../../../src/native/postings.js';
import { httpLogsDoc } from '../../../bench/http-logs.js';
import { oddDocument } from '../../helpers/odd-json.js';
import { mulberry32 } from '../../helpers/prng.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function tmp(): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tidepool-formats-'));
  dirs.push(dir);
  return dir;
}

/** Encodes documents as one block and decodes it: the documents it gives back, as buffers. */
function roundTrip(docs: Buffer[], times: Float64Array): Buffer[] {
  const ref: DocRef = { buf: Buffer.alloc(0), start: 0, end: 0 };
  // Each document inside a larger buffer, as in a batch: the encoder must use only its own bytes.
  const pad = (d: Buffer) => Buffer.concat([Buffer.from('{"x":1}'), d, Buffer.from('"}')]);
  const padded = docs.map(pad);
  const block = encodeDocBlock(
    (i) => {
      ref.buf = padded[i]!;
      ref.start = 7;
      ref.end = 7 + docs[i]!.length;
      return ref;
    },
    times,
    0,
    docs.length,
  );
  const { raw, offsets } = decodeDocBlock(block, times, 0);
  expect(offsets.length).toBe(docs.length + 1);
  return docs.map((_, i) => raw.subarray(offsets[i]!, offsets[i + 1]!));
}

describe('column-wise document blocks', () => {
  it('give back random documents byte for byte (key orders, escapes, unicode, numbers, nesting, whitespace)', () => {
    for (let seed = 1; seed <= 20; seed++) {
      const r = mulberry32(seed);
      const n = 1 + ((r() * 400) | 0);
      const times = new Float64Array(n);
      const docs: Buffer[] = [];
      let t = Date.parse('2026-11-20T00:00:00Z') + ((r() * 1e9) | 0);
      for (let i = 0; i < n; i++) {
        t += (r() * 2000) | 0;
        times[i] = t;
        docs.push(Buffer.from(oddDocument(r, t)));
      }
      const got = roundTrip(docs, times);
      for (let i = 0; i < n; i++) expect(got[i]!.equals(docs[i]!), docs[i]!.toString()).toBe(true);
    }
  });

  it("give back the bench's http_logs documents, whose times and addresses take no bytes of their own", () => {
    const r = mulberry32(1);
    const n = 2000;
    const docs = Array.from({ length: n }, (_, i) => Buffer.from(httpLogsDoc(i, n, r)));
    const times = Float64Array.from(docs, (d) =>
      Date.parse((JSON.parse(d.toString()) as { timestamp: string }).timestamp),
    );
    const got = roundTrip(docs, times);
    for (let i = 0; i < n; i++) expect(got[i]!.equals(docs[i]!)).toBe(true);
  });

  it('keep documents they cannot split verbatim, and times without an ISO form as strings', () => {
    const docs = [
      '[1,2]',
      '"just a string"',
      '{"a":1} trailing',
      '{"a":',
      '{"a" 1}',
      '',
      '   ',
      '{}',
      ' { } ',
      '{"a":"unterminated}',
      '{"a":[1,{"b":"]"}],"c":{"d":"}"}}',
      '{"t":"2026-11-20T00:00:00.000Z","u":"2026-11-20T00:00:00.000Z"}',
      '{"t":"+010000-01-01T00:00:00.000Z"}',
      '{"ip":"1.2.3.4","ip":"001.2.3.4","ip":"1.2.3.4\\u0000"}',
      '{"n":9007199254740993,"m":-0,"k":0123,"z":-,"e":1e400}',
    ].map((d) => Buffer.from(d));
    docs.push(Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x3a, 0x22, 0xc3, 0x28, 0x22, 0x7d]));
    // Typed values at the very end of a block (the decoder's room checks).
    docs.push(Buffer.from('{"n":-7,"t":"2026-11-20T00:00:00.000Z","ip":"1.2.3.4"}'));
    const t = Date.parse('2026-11-20T00:00:00Z');
    const times = Float64Array.from(docs, (_, i) => (i === docs.length - 1 ? t : [t, t + 0.5, 8.7e15, NaN][i % 4]!));
    const got = roundTrip(docs, times);
    for (let i = 0; i < docs.length; i++) expect(got[i]!.toString('hex')).toBe(docs[i]!.toString('hex'));
  });

  it('throw on a damaged block rather than read past it (every byte of a block changed in turn)', () => {
    const r = mulberry32(5);
    const n = 50;
    const times = Float64Array.from({ length: n }, (_, i) => 1_795_000_000_000 + i * 1000);
    const docs = Array.from({ length: n }, (_, i) => Buffer.from(oddDocument(r, times[i]!)));
    const ref: DocRef = { buf: Buffer.alloc(0), start: 0, end: 0 };
    const block = encodeDocBlock((i) => ((ref.buf = docs[i]!), (ref.end = docs[i]!.length), ref), times, 0, n);
    let threw = 0;
    for (let at = 0; at < block.length; at++) {
      const bad = Buffer.from(block);
      bad[at] ^= 0x55;
      try {
        const { raw, offsets } = decodeDocBlock(bad, times, 0);
        expect(offsets[offsets.length - 1]).toBeLessThanOrEqual(raw.length);
      } catch (err) {
        expect(err).toBeInstanceOf(Error);
        threw++;
      }
    }
    expect(threw).toBeGreaterThan(0);
  });
});

/**
 * Keyword columns for `keys` over `docs` as the seal and a reader give them: per document a token that is mostly its
 * value's text (so that references are taken where the bytes agree: escapes, 1e3, -0 and non-ASCII do not), else
 * another token or none. The encoder's ordinals are in order of first use, the reader's sorted (as ranks are).
 */
function columnsOf(docs: Buffer[], keys: string[], r: () => number): { enc: DocColumnRef[]; dec: ColumnTokens[] } {
  const enc: DocColumnRef[] = [];
  const dec: ColumnTokens[] = [];
  keys.forEach((key, c) => {
    const tokens = docs.map((d): string | null => {
      let v: unknown;
      try {
        v = (JSON.parse(d.toString()) as Record<string, unknown>)[key];
      } catch {
        v = undefined;
      }
      const x = r();
      if (x < 0.75 && (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean')) return String(v);
      if (x < 0.85) return ['other', '', 'é', '1', 'true', '1.2.3.4'][(r() * 6) | 0]!;
      return null;
    });
    const distinct = [...new Set(tokens.filter((t): t is string => t !== null))];
    const sorted = [...distinct].sort();
    const ordsOf = (list: string[]) => {
      const at = new Map(list.map((t, o) => [t, o]));
      return Uint32Array.from(tokens, (t) => (t === null ? 0xffffffff : at.get(t)!));
    };
    enc.push({
      key: Buffer.from(key),
      column: c,
      tokens: { ...tokenTable(distinct.length, (o) => distinct[o]!), ords: ordsOf(distinct) },
    });
    dec.push({ ...tokenTable(sorted.length, (o) => sorted[o]!), ords: ordsOf(sorted) });
  });
  return { enc, dec };
}

describe('document blocks referring to keyword columns (format 5)', () => {
  const KEYS = ['ip', 'n', 'level', 'msg', 'é', 'timestamp', 'clientip', 'size', 'status', 'service'];

  it('give back random and http_logs documents byte for byte, the addon writing the twin bytes', () => {
    const ref: DocRef = { buf: Buffer.alloc(0), start: 0, end: 0 };
    for (let seed = 1; seed <= 16; seed++) {
      const r = mulberry32(300 + seed);
      const n = 1 + ((r() * 600) | 0);
      let t = Date.parse('2026-11-20T00:00:00Z');
      const times = new Float64Array(n);
      const docs: Buffer[] = [];
      for (let i = 0; i < n; i++) {
        times[i] = t += (r() * 3000) | 0;
        docs.push(Buffer.from(seed % 2 ? oddDocument(r, t) : httpLogsDoc(i, n, r)));
      }
      const { enc, dec } = columnsOf(docs, KEYS, r);
      const doc = (i: number) => ((ref.buf = docs[i]!), (ref.end = docs[i]!.length), ref);
      for (const from of [0, n >> 2]) {
        const ts = encodeDocBlockTs(doc, times, from, n, enc);
        expect(encodeDocBlock(doc, times, from, n, enc).toString('hex')).toBe(ts.toString('hex'));
        expect(blockColumns(ts).every((c) => c < KEYS.length)).toBe(true);
        for (const decode of [decodeDocBlock, decodeDocBlockTs]) {
          const { raw, offsets } = decode(ts, times, from, dec);
          for (let i = from; i < n; i++)
            expect(raw.subarray(offsets[i - from]!, offsets[i - from + 1]!).toString('hex')).toBe(
              docs[i]!.toString('hex'),
            );
        }
        // The columns are needed: without them the block does not decode.
        expect(() => decodeDocBlock(ts, times, from)).toThrow(/column/);
      }
      if (seed % 2 === 0) {
        // http_logs: the address, the size, the status and the service all refer to their columns.
        const plain = encodeDocBlockTs(doc, times, 0, n);
        const refs = encodeDocBlockTs(doc, times, 0, n, enc);
        expect(refs[0]).toBe(2);
        expect(blockColumns(refs)).toEqual(expect.arrayContaining([6, 7, 8, 9]));
        expect(refs.length).toBeLessThan(plain.length - 2 * n);
      }
    }
    expect(() =>
      encodeDocBlockNative!(Buffer.from('{}'), Uint32Array.from([0, 2]), new Float64Array(1), [
        [Buffer.from('a'), 0, Buffer.alloc(0), new Uint32Array(1), new Uint32Array(2)],
      ]),
    ).toThrow(TypeError);
  });

  it("make the same token table from a dictionary's bytes as from its tokens (non-ASCII tokens empty)", () => {
    const r = mulberry32(9);
    for (const alphabet of ['ab.1', 'ab.1é\u0080\u00ff']) {
      const tokens = Array.from({ length: 300 }, () =>
        Array.from({ length: (r() * 6) | 0 }, () => alphabet[(r() * alphabet.length) | 0]).join(''),
      );
      const want = tokenTable(tokens.length, (o) => tokens[o]!);
      const got = tokenTableOfBytes(
        Buffer.from(tokens.join(''), 'latin1'),
        Uint32Array.from(tokens, (t) => t.length),
      );
      expect(Array.from(got.starts)).toEqual(Array.from(want.starts));
      expect(got.table.toString('hex')).toBe(want.table.toString('hex'));
    }
  });

  it('throw on damaged blocks or columns, or stay in bounds, the addon as its twin', () => {
    const ref: DocRef = { buf: Buffer.alloc(0), start: 0, end: 0 };
    const twin = (block: Buffer, times: Float64Array, cols: ColumnTokens[]) => {
      try {
        const { raw, offsets } = decodeDocBlockTs(block, times, 0, cols);
        expect(offsets[offsets.length - 1]).toBeLessThanOrEqual(raw.length);
        return { raw: raw.toString('hex'), offsets: Array.from(offsets) };
      } catch (err) {
        expect(err).toBeInstanceOf(Error);
        return { error: (err as Error).message };
      }
    };
    let threw = 0;
    let same = 0;
    for (let seed = 1; seed <= 6; seed++) {
      const r = mulberry32(400 + seed);
      const n = 1 + ((r() * 200) | 0);
      let t = Date.parse('2026-11-20T00:00:00Z');
      const times = new Float64Array(n);
      const docs: Buffer[] = [];
      for (let i = 0; i < n; i++) {
        times[i] = t += (r() * 3000) | 0;
        docs.push(Buffer.from(seed % 2 ? oddDocument(r, t) : httpLogsDoc(i, n, r)));
      }
      const { enc, dec } = columnsOf(docs, KEYS, r);
      const block = encodeDocBlock((i) => ((ref.buf = docs[i]!), (ref.end = docs[i]!.length), ref), times, 0, n, enc);
      const check = (bad: Buffer, cols: ColumnTokens[]) => {
        const want = twin(bad, times, cols);
        if ('error' in want) threw++;
        const got = decodeDocBlockNative!(
          bad,
          times,
          0,
          cols.map((c) => [c.table, c.starts, c.ords]),
        );
        if (got) {
          same++;
          expect({ raw: got[0].toString('hex'), offsets: Array.from(got[1]) }).toEqual(want);
        }
      };
      for (let k = 0; k < 300; k++) {
        const bad = Buffer.from(block);
        bad[(r() * bad.length) | 0] ^= 1 + ((r() * 255) | 0);
        check(bad, dec);
      }
      // Columns that do not hold what the block refers to: ords past the table, tables cut short, too few documents.
      for (let k = 0; k < 40; k++) {
        const cols = dec.map((c) => ({ table: c.table, starts: c.starts, ords: Uint32Array.from(c.ords) }));
        const c = cols[(r() * cols.length) | 0]!;
        if (k % 4 === 0) c.ords[(r() * n) | 0] = (r() * 2 ** 32) >>> 0;
        else if (k % 4 === 1) c.table = c.table.subarray(0, (r() * c.table.length) | 0);
        else if (k % 4 === 2) c.ords = c.ords.subarray(0, (r() * n) | 0);
        else c.starts = Uint32Array.from(c.starts, (x) => (r() < 0.1 ? (r() * 2 ** 32) >>> 0 : x));
        check(block, cols);
      }
    }
    expect(threw).toBeGreaterThan(0);
    expect(same).toBeGreaterThan(0);
  });
});

describe('the addon decodes document blocks as its TypeScript twin', () => {
  const native = decodeDocBlockNative;
  /** The twin's answer: the bytes and offsets, or the error it throws. */
  const twin = (block: Buffer, times: Float64Array) => {
    try {
      const { raw, offsets } = decodeDocBlockTs(block, times, 0);
      return { raw: raw.toString('hex'), offsets: Array.from(offsets) };
    } catch (err) {
      return { error: (err as Error).message };
    }
  };

  // No skip: without the addon (not built, TIDEPOOL_NATIVE=0) this fails saying why.
  it('gives the same bytes for every block, and leaves the twin every block it doubts', () => {
    if (!native) throw new Error('the native addon has no decodeDocBlock: build it (npx node-gyp rebuild)');
    const ref: DocRef = { buf: Buffer.alloc(0), start: 0, end: 0 };
    let decoded = 0;
    let flips = 0;
    for (let seed = 1; seed <= 12; seed++) {
      const r = mulberry32(100 + seed);
      const n = 1 + ((r() * 300) | 0);
      // Times from 1960 on: those before 1970 are left to the twin.
      let t = Date.parse(seed % 4 === 0 ? '1969-12-31T23:00:00Z' : '2026-11-20T00:00:00Z');
      const times = new Float64Array(n);
      const docs: Buffer[] = [];
      for (let i = 0; i < n; i++) {
        times[i] = t += (r() * 3000) | 0;
        docs.push(Buffer.from(seed % 2 ? oddDocument(r, t) : httpLogsDoc(i, n, r)));
      }
      const block = encodeDocBlock((i) => ((ref.buf = docs[i]!), (ref.end = docs[i]!.length), ref), times, 0, n);
      const want = twin(block, times);
      const got = native!(block, times, 0);
      if (seed % 4 !== 0) expect(got).not.toBeNull();
      if (got) {
        decoded++;
        expect({ raw: got[0].toString('hex'), offsets: Array.from(got[1]) }).toEqual(want);
      }
      for (let k = 0; k < 300; k++) {
        const bad = Buffer.from(block);
        bad[(r() * bad.length) | 0] ^= 1 + ((r() * 255) | 0);
        const g = native!(bad, times, 0);
        if (!g) continue;
        flips++;
        expect({ raw: g[0].toString('hex'), offsets: Array.from(g[1]) }).toEqual(twin(bad, times));
      }
      expect(native!(block.subarray(0, block.length >> 1), times, 0)).toBeNull();
    }
    expect(decoded).toBeGreaterThan(6);
    expect(flips).toBeGreaterThan(0);
    expect(() => native!(Buffer.alloc(0) as unknown as Uint8Array, new Float64Array(0), 0)).not.toThrow();
  });
});

describe('the addon encodes document blocks as its TypeScript twin', () => {
  // No skip: without the addon (not built, TIDEPOOL_NATIVE=0) this fails saying why.
  it('writes the same bytes for the same documents', () => {
    if (!encodeDocBlockNative)
      throw new Error('the native addon has no encodeDocBlock: build it (npx node-gyp rebuild)');
    const ref: DocRef = { buf: Buffer.alloc(0), start: 0, end: 0 };
    for (let seed = 1; seed <= 16; seed++) {
      const r = mulberry32(200 + seed);
      const n = 1 + ((r() * 1500) | 0);
      // Before 1970, around it, and now; whole and fractional milliseconds; documents inside larger buffers.
      let t = [Date.parse('1969-12-31T23:59:00Z'), Date.parse('2026-11-20T00:00:00Z'), -62167219200000][seed % 3]!;
      const times = new Float64Array(n);
      const docs: Buffer[] = [];
      for (let i = 0; i < n; i++) {
        times[i] = t += seed % 5 === 0 ? r() * 10 : (r() * 3000) | 0;
        const text = [oddDocument(r, t), httpLogsDoc(i, n, r), httpLogsDoc(i, n, r), '{"a":1} x', '[', ''][i % 6]!;
        docs.push(Buffer.concat([Buffer.from('{"'), Buffer.from(text), Buffer.from('}')]));
      }
      const doc = (i: number) => ((ref.buf = docs[i]!), (ref.start = 2), (ref.end = docs[i]!.length - 1), ref);
      const ts = encodeDocBlockTs(doc, times, 0, n);
      expect(encodeDocBlock(doc, times, 0, n).toString('hex')).toBe(ts.toString('hex'));
      // A block from the middle of the times, as the seal asks.
      const from = n >> 2;
      expect(encodeDocBlock(doc, times, from, n).equals(encodeDocBlockTs(doc, times, from, n))).toBe(true);
      const { raw, offsets } = decodeDocBlock(ts, times, 0);
      for (let i = 0; i < n; i++)
        expect(raw.subarray(offsets[i]!, offsets[i + 1]!).equals(docs[i]!.subarray(2, -1))).toBe(true);
    }
    expect(() => encodeDocBlockNative!(Buffer.alloc(4), Uint32Array.from([0, 5]), new Float64Array(1))).toThrow(
      RangeError,
    );
    expect(() => encodeDocBlockNative!(Buffer.alloc(4), Uint32Array.from([0, 2]), new Float64Array(2))).toThrow(
      RangeError,
    );
  });
});

describe('compact arrays and dense posting lists', () => {
  it('read back times, ids, offsets and keyword columns as written', () => {
    const r = mulberry32(9);
    for (const kind of ['whole', 'fraction', 'negative']) {
      const n = 500;
      const times = new Float64Array(n);
      let t = kind === 'negative' ? -5e12 : 1.79e12;
      for (let i = 0; i < n; i++) times[i] = t += kind === 'fraction' ? r() * 10 : (r() * 100) | 0;
      expect(Array.from(decodeTimes(encodeTimes(times), n))).toEqual(Array.from(times));
      const tails = Array.from({ length: n }, () => Math.floor(r() * 2 ** 48));
      const ids = decodeIds(
        encodeIdTails((i) => tails[i]!, n),
        times,
        n,
      );
      const want = Buffer.alloc(12 * n);
      for (let i = 0; i < n; i++) {
        writeU48(want, 12 * i, times[i]!);
        writeU48(want, 12 * i + 6, tails[i]!);
      }
      expect(ids.equals(want)).toBe(true);
    }
    const offs = Uint32Array.from([0, 3, 3, 70000, 2 ** 32 - 1]);
    const counts = Uint32Array.from([1, 0, 65000, 7]);
    const back = decodeOffsets(encodeOffsets(offs, counts), 4);
    expect([Array.from(back.offs), Array.from(back.counts)]).toEqual([Array.from(offs), Array.from(counts)]);
    const ranks = Uint32Array.from({ length: 999 }, (_, i) => (i % 5 === 0 ? 0xffffffff : Math.floor(r() * 2 ** 32)));
    const planes = toPlanes(new Uint8Array(ranks.buffer));
    expect(Array.from(fromPlanes(planes))).toEqual(Array.from(ranks));
    expect(() => fromPlanes(planes.subarray(1))).toThrow();
    expect(() => decodeTimes(Buffer.from([1, 0x80]), 1)).toThrow();
    expect(() => decodeOffsets(Buffer.from([1, 2, 3]), 1)).toThrow();
  });

  it('store runs and dense lists short and read them back; sparse lists stay delta varints', () => {
    const r = mulberry32(11);
    const lists: number[][] = [[], [5], [0, 1, 2, 3, 4, 5, 6, 7], [100, 101, 102, 103, 104, 105, 106, 107, 108]];
    for (let k = 0; k < 200; k++) {
      const density = [0.001, 0.1, 0.5, 0.9, 0.999, 1][k % 6]!;
      const from = (r() * 2 ** 20) | 0;
      const ids: number[] = [];
      for (let i = from; i < from + 3000; i++) if (r() < density) ids.push(i);
      lists.push(ids);
    }
    lists.push([0, 2 ** 32 - 1]);
    let short = 0;
    for (const list of lists) {
      const ids = Uint32Array.from(list);
      const out = new Uint8Array(5 * ids.length + 8);
      const end = shortenPostings(ids, 0, ids.length, out, 3, encodePostingsInto(ids, out, 3));
      const len = end - 3;
      if (isShort(len, ids.length)) {
        short++;
        expect(Array.from(decodeShort(out.subarray(3, end), len, ids.length))).toEqual(list);
      } else expect(len).toBeGreaterThanOrEqual(ids.length);
    }
    expect(short).toBeGreaterThan(100);
    expect(() => decodeShort(Uint8Array.from([1, 0, 0xff]), 3, 7)).toThrow();
  });
});

const MAPPING =
  'mapping-list:\n  - {name: clientip, type: keyword}\n  - {name: request, type: text}\n  - {name: status, type: keyword}\n  - {name: size, type: keyword}\n  - {name: service, type: keyword}\n  - {name: ip, type: keyword}\n  - {name: msg, type: text}\n  - {name: level, type: keyword}\n';

/** [time, id counter, text] of each document, added in that order to a new active fraction. */
function activeOf(docs: [number, number, string][]): ActiveFraction {
  const frac = new ActiveFraction('frac-0000000001', parseMapping(MAPPING), '00');
  for (const [time, counter, text] of docs) {
    const bytes = Buffer.from(text);
    frac.add(JSON.parse(text) as Record<string, unknown>, bytes, 0, bytes.length, time, counter);
  }
  return frac;
}

/** Everything a reader of the fraction gives, by document id. */
function contents(f: SealedFraction) {
  const docs = new Map<string, { time: number; text: string }>();
  for (let i = 0; i < f.docCount; i++)
    docs.set(f.id(i), { time: f.time(i), text: Buffer.from(f.data([i])[0]!).toString('hex') });
  const fields = f.meta.fields.map((field) => {
    const { tokens, lists } = f.tokenLists(field);
    return { field, tokens, lists: lists.map((l) => Array.from(l, (x) => f.id(x))) };
  });
  const columns = f.meta.columns.map((c) => {
    const col = f.column(c)!;
    return Array.from({ length: f.docCount }, (_, i) => col.tokens[col.ords[i]!] ?? null);
  });
  const numeric = (f.meta.numeric ?? []).map((c) => Array.from(f.numeric(c)!.values));
  return { docs, fields, columns, numeric };
}

describe('format 5 fractions', () => {
  it('keep the ingested bytes of every document before and after the seal and when opened again', () => {
    const r = mulberry32(21);
    const docs: [number, number, string][] = [];
    const start = Date.parse('2026-11-20T00:00:00Z');
    for (let i = 0; i < 6000; i++) {
      const time = start + i * 431 - (r() < 0.2 ? Math.floor(r() * 20000) : 0);
      docs.push([time, i + 1, i % 3 ? httpLogsDoc(i, 6000, r) : oddDocument(r, time)]);
    }
    const active = activeOf(docs);
    for (let i = 0; i < docs.length; i++) expect(Buffer.from(active.doc(i)).toString()).toBe(docs[i]![2]);
    const dir = path.join(tmp(), 'frac');
    sealFraction(active, dir);
    for (let pass = 0; pass < 2; pass++) {
      // pass 1: a new reader, as after a restart.
      const sealed = new SealedFraction(dir);
      expect(sealed.meta.format).toBe(FRACTION_FORMAT);
      expect(sealed.meta.blocks.length).toBeGreaterThan(3);
      // pass 1: the keyword columns read first, as an aggregation does (kept narrow: 1 or 2 bytes a document).
      if (pass === 1) for (const c of sealed.meta.columns) expect(sealed.column(c)).toBeTruthy();
      // Every block refers to the keyword columns of the http_logs fields of many values (clientip, size), none to
      // those of fewer than REF_MIN_TOKENS (status, service: a reader would read their columns whole for little).
      const docsBin = readFileSync(path.join(dir, 'docs.bin'));
      for (const [off, len] of sealed.meta.blocks) {
        const cols = blockColumns(decompress(docsBin.subarray(off, off + len))).map((c) => sealed.meta.columns[c]);
        expect(cols).toEqual(expect.arrayContaining(['clientip', 'size']));
        expect(cols).not.toContain('status');
        expect(cols).not.toContain('service');
      }
      for (let i = 0; i < docs.length; i++) {
        const local = sealed.find(active.id(i));
        expect(local).toBeGreaterThanOrEqual(0);
        expect(sealed.time(local)).toBe(docs[i]![0]);
        const ref = sealed.docRef(local);
        expect(ref.buf.toString('utf8', ref.start, ref.end)).toBe(docs[i]![2]);
      }
      // A run of neighbours as export and context read them.
      const run = sealed.docRun!(sealed.docCount - 1);
      for (let l = run.first; l < run.end; l++) {
        const text = Buffer.from(
          run.raw.subarray(run.offsets[l - run.first]!, run.offsets[l - run.first + 1]!),
        ).toString();
        expect(text).toBe(Buffer.from(sealed.data([l])[0]!).toString());
      }
      sealed.close();
    }
  });

  it.each([3, 4])('read the same as a fraction of the same documents sealed by a format %i build', (format) => {
    const fixture = path.join(__dirname, `../../fixtures/sealed-format-${format}`);
    const old = path.join(tmp(), 'old');
    cpSync(path.join(fixture, 'frac'), old, { recursive: true });
    const { docs } = JSON.parse(readFileSync(path.join(fixture, 'docs.json'), 'utf8')) as {
      docs: [number, number, string][];
    };
    const dir = path.join(tmp(), 'new');
    sealFraction(activeOf(docs), dir);
    const a = new SealedFraction(old);
    const b = new SealedFraction(dir);
    expect([a.meta.format, b.meta.format]).toEqual([format, FRACTION_FORMAT]);
    const ca = contents(a);
    const cb = contents(b);
    expect(ca.docs.size).toBe(docs.length);
    expect([...cb.docs.values()].map((d) => Buffer.from(d.text, 'hex').toString()).sort()).toEqual(
      docs.map((d) => d[2]).sort(),
    );
    expect(cb).toEqual(ca);
  });
});
