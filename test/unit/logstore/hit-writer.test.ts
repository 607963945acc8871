// Hits written from stored bytes in runs (native/hit-writer.cc and its TypeScript twin): the same bytes as the
// per-hit JSON text, for tricky documents and times, through a real sealed fraction too.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { addon } from '../../../src/native/index.js';
import { HIT_BYTES, joinHitsTs, writeHitsTs, type JoinHits, type WriteHits } from '../../../src/native/hit-writer.js';
import { parseMapping } from '../../../src/logstore/mapping.js';
import { ActiveFraction } from '../../../src/logstore/storage/active-fraction.js';
import { sealFraction } from '../../../src/logstore/storage/seal.js';
import { SealedFraction } from '../../../src/logstore/storage/sealed-fraction.js';
import { executeQuery, type ShardQuery } from '../../../src/logstore/search/execute.js';
import { hitJson } from '../../../src/logstore/search/hit-json.js';
import { mergeHitList, unpackHits } from '../../../src/logstore/search/packed-hits.js';
import { mulberry32 } from '../../helpers/prng.js';

const impls: [string, WriteHits, JoinHits][] = [['TypeScript', writeHitsTs, joinHitsTs]];
if (addon && typeof addon.writeHits === 'function')
  impls.push(['native', addon.writeHits as WriteHits, addon.joinHits as JoinHits]);

/** Documents that are valid stored JSON and awkward to copy: escapes, unicode, nesting, big and odd numbers. */
const DOCS = [
  '{}',
  '{"a":1}',
  '{"m":"é ü \\" \\\\ \\n \\t \\u0000 \\ud83d\\ude00","k":"\\/"}',
  '{"emoji":"😀𝔸\ue000\uffee","cjk":"日本語テキスト"}',
  '{"nested":{"a":[1,2,{"b":[null,true,false]}],"c":{"d":{"e":"f"}}},"arr":[[],[[]],{}]}',
  '{"big":12345678901234567890123,"neg":-0.0,"exp":1.5e308,"tiny":5e-324,"f":0.1}',
  '{"timestamp":"2026-11-20T00:00:00.000Z","request":"GET /images/logo_1.gif HTTP/1.0","status":200}',
  `{"long":"${'x'.repeat(5000)}"}`,
];

/** Times from the epoch to the last millisecond of 9999: leap days, century rules, year ends, a fraction of a millisecond. */
const TIMES = [
  0,
  1,
  999,
  86_399_999,
  Date.UTC(2000, 2, 1),
  Date.UTC(2000, 1, 29, 23, 59, 59, 999),
  Date.UTC(2100, 1, 28, 12),
  Date.UTC(2024, 11, 31, 23, 59, 59, 999),
  Date.UTC(1970, 0, 1, 0, 0, 0, 7),
  Date.UTC(2400, 1, 29),
  Date.UTC(9999, 0, 1),
  Date.UTC(2026, 10, 26, 13, 14, 15, 16),
  253_402_300_799_999,
  1_700_000_000_123.75,
];

function block(docs: string[]): { raw: Buffer; offsets: Uint32Array } {
  const parts = docs.map((d) => Buffer.from(d));
  const offsets = new Uint32Array(docs.length + 1);
  let p = 3;
  parts.forEach((b, i) => {
    offsets[i] = p;
    p += b.length;
  });
  offsets[docs.length] = p;
  return { raw: Buffer.concat([Buffer.from('xyz'), ...parts, Buffer.from('tail')]), offsets };
}

describe('writeHits and joinHits', () => {
  const n = Math.max(DOCS.length, TIMES.length);
  const docs = Array.from({ length: n }, (_, i) => DOCS[i % DOCS.length]!);
  const base = 5;
  const r = mulberry32(3);
  const ids = Buffer.alloc(12 * (base + n + 2));
  for (let i = 0; i < ids.length; i++) ids[i] = (r() * 256) | 0;
  ids.fill(0xff, 12 * (base + 1), 12 * (base + 2));
  const times = new Float64Array(base + n + 2);
  for (let i = 0; i < n; i++) times[base + i] = TIMES[i % TIMES.length]!;
  const { raw, offsets } = block(docs);
  const want = (b: number) =>
    hitJson(ids.toString('hex', 12 * (base + b), 12 * (base + b + 1)), times[base + b]!, docs[b]!, []);

  for (const [name, writeHits, joinHits] of impls) {
    it(`${name}: every hit equals its JSON text, ascending and descending, from any start, with its id, time and offset`, () => {
      for (const [first, count, step] of [
        [0, n, 1],
        [n - 1, n, -1],
        [3, 4, 1],
        [6, 5, -1],
        [2, 1, 1],
      ] as const) {
        const out = Buffer.alloc(200_000, 0xee);
        const hex = Buffer.alloc(24 * (count + 2));
        const hitOffs = new Uint32Array(count + 3);
        const hitTimes = new Float64Array(count + 3);
        const end = writeHits(out, 10, raw, offsets, first, count, step, ids, times, base, hex, hitOffs, hitTimes, 1);
        const expected = Array.from({ length: count }, (_, j) => want(first + j * step));
        expect(out.toString('utf8', 10, end)).toBe(expected.join(''));
        expect(out[9]).toBe(0xee);
        expect(out[end]).toBe(0xee);
        for (let j = 0; j < count; j++) {
          const b = first + j * step;
          expect(hitTimes[1 + j]).toBe(times[base + b]);
          expect(hex.toString('latin1', 24 * (1 + j), 24 * (2 + j))).toBe(
            ids.toString('hex', 12 * (base + b), 12 * (base + b + 1)),
          );
          expect(out.toString('utf8', hitOffs[1 + j], j + 1 < count ? hitOffs[2 + j] : end)).toBe(expected[j]);
        }
        // The whole size is the documents plus HIT_BYTES each.
        expect(end - 10).toBe(expected.reduce((s, h) => s + Buffer.byteLength(h), 0));
        expect(end - 10).toBe(
          HIT_BYTES * count + expected.reduce((s, _, j) => s + Buffer.byteLength(docs[first + j * step]!), 0),
        );
        // Joined with commas: the JSON array of the hits.
        const all = Buffer.alloc(end + count);
        const joined = joinHits(all, 1, out, Uint32Array.from([...hitOffs.subarray(1, 1 + count), end]), 0, count);
        expect(JSON.parse(`[${all.toString('utf8', 1, joined)}]`)).toEqual(expected.map((h) => JSON.parse(h)));
      }
    });

    it(`${name}: -1 and nothing written when the buffer is short or a time is before 1970 or past 9999; throws on bad indexes`, () => {
      const hex = Buffer.alloc(24 * n);
      const offs = new Uint32Array(n);
      const ts = new Float64Array(n);
      const size = DOCS[0]!.length + DOCS[1]!.length + 2 * HIT_BYTES;
      const short = Buffer.alloc(size - 1, 1);
      expect(writeHits(short, 0, raw, offsets, 0, 2, 1, ids, times, base, hex, offs, ts, 0)).toBe(-1);
      expect(short.every((b) => b === 1)).toBe(true);
      expect(writeHits(Buffer.alloc(size), 0, raw, offsets, 0, 2, 1, ids, times, base, hex, offs, ts, 0)).toBe(size);
      for (const bad of [-1, Date.UTC(1900, 2, 1), 253_402_300_800_000, NaN, Infinity]) {
        const t = times.slice();
        t[base + 1] = bad;
        expect(writeHits(Buffer.alloc(100_000), 0, raw, offsets, 0, 3, 1, ids, t, base, hex, offs, ts, 0)).toBe(-1);
      }
      expect(() =>
        writeHits(Buffer.alloc(100_000), 0, raw, offsets, 0, n + 1, 1, ids, times, base, hex, offs, ts, 0),
      ).toThrow(RangeError);
      expect(() =>
        writeHits(Buffer.alloc(100_000), 0, raw, offsets, 1, 3, -1, ids, times, base, hex, offs, ts, 0),
      ).toThrow(RangeError);
      expect(() =>
        writeHits(Buffer.alloc(100_000), 0, raw, offsets, 0, 2, 2, ids, times, base, hex, offs, ts, 0),
      ).toThrow(RangeError);
      expect(() =>
        writeHits(Buffer.alloc(100_000), 0, raw, offsets, 0, n, 1, ids, times, base, hex, offs, ts, 1),
      ).toThrow(RangeError);
      expect(() =>
        writeHits(
          Buffer.alloc(100_000),
          0,
          raw,
          offsets,
          0,
          1,
          1,
          ids.subarray(0, 12 * base),
          times,
          base,
          hex,
          offs,
          ts,
          0,
        ),
      ).toThrow(RangeError);
      expect(() => joinHits(Buffer.alloc(10), 0, raw, offsets, 0, n + 1)).toThrow(RangeError);
      expect(joinHits(Buffer.alloc(10), 0, raw, offsets, 0, n)).toBe(-1);
      expect(joinHits(Buffer.alloc(10), 4, raw, offsets, 2, 2)).toBe(4);
    });
  }
});

describe('hits of a sealed fraction', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tidepool-hit-writer-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('are the bytes the active fraction writes hit by hit, across blocks, in both orders, whole or in part', () => {
    const mapping = parseMapping('mapping-list:\n  - {name: msg, type: text}\n');
    const active = new ActiveFraction('frac-0000000001', mapping, '03');
    const r = mulberry32(9);
    const count = 2500;
    for (let i = 0; i < count; i++) {
      // About 300 KB in all: the sealed documents span several 128 KB blocks.
      const text = `${DOCS[i % DOCS.length]!.slice(0, 200)} ${'é😀"\\'.repeat((r() * 20) | 0)}`;
      const doc = { msg: text, n: i, big: 2 ** 60 + i, nested: { a: [i, { b: text.slice(0, 10) }] } };
      const bytes = Buffer.from(JSON.stringify(doc));
      // Ties on time (two documents a millisecond) across a year's end; one document has a time past 9999 (written
      // as text, hit by hit).
      const time = i === count - 1 ? 253_402_300_800_000 + 5 : Date.UTC(2025, 11, 31, 23, 59, 59) + (i >> 1);
      active.add(doc, bytes, 0, bytes.length, time, i + 1);
    }
    sealFraction(active, path.join(dir, 'frac'));
    const sealed = new SealedFraction(path.join(dir, 'frac'));
    expect(sealed.meta.blocks.length).toBeGreaterThan(2);
    const q = (over: Partial<ShardQuery>): ShardQuery =>
      ({ plan: { op: 'all' }, from: -8.64e15, to: 8.64e15, limit: 100, order: 'desc', ...over }) as ShardQuery;
    const queries = [
      q({}),
      q({ order: 'asc' }),
      q({ limit: 5000 }),
      q({ limit: 5000, order: 'asc' }),
      q({ from: Date.UTC(2026, 0, 1, 0, 0, 5), to: Date.UTC(2026, 0, 1, 0, 9), limit: 700 }),
      q({ from: Date.UTC(2026, 0, 1, 0, 0, 5), limit: 1, order: 'asc' }),
      q({ limit: 0 }),
    ];
    for (const query of queries) {
      const a = executeQuery([active], { ...query });
      const s = executeQuery([sealed], { ...query });
      expect(s.total).toBe(a.total);
      const hits = unpackHits(s.hits);
      expect(hits).toEqual(unpackHits(a.hits));
      for (const h of hits) {
        const local = sealed.find(h.id);
        expect(h.json).toBe(hitJson(h.id, h.time, Buffer.from(sealed.data([local])[0]!).toString('utf8'), []));
      }
      const list = mergeHitList([s.hits], query.limit, query.order !== 'asc');
      const body = list.jsonBytes(0, list.length, '{"docs":[', ']}').toString('utf8');
      expect(body).toBe(`{"docs":[${hits.map((h) => h.json).join(',')}]}`);
    }
    sealed.close();
  });
});
