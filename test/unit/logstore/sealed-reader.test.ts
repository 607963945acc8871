// The HTTP thread's reads of sealed fractions (search/read-plan.ts over a SealedReader) answer plain time-range
// searches exactly as the shard does, and step aside (null) whenever the shard thread must answer: active fraction
// in range, fractions changing, files gone.
import { mkdtempSync, renameSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseMapping } from '../../../src/logstore/mapping.js';
import { parseQuery } from '../../../src/logstore/query/parser.js';
import { planQuery } from '../../../src/logstore/query/plan.js';
import type { ShardQuery, ShardQueryResult } from '../../../src/logstore/search/execute.js';
import { unpackHits } from '../../../src/logstore/search/packed-hits.js';
import { readSealed, readsOnlyTimeRange } from '../../../src/logstore/search/read-plan.js';
import { SealedReader } from '../../../src/logstore/storage/sealed-reader.js';
import { Shard } from '../../../src/logstore/storage/shard.js';
import { ShardStateReader, ShardStateWriter, newShardState } from '../../../src/logstore/storage/shard-state.js';

const mapping = parseMapping('- {name: level, type: keyword}\n');
const base = Date.UTC(2026, 3, 1);
/** Retention: a year (nothing is dropped until the test moves the clock). */
const YEAR = 365 * 86_400_000;
const all = planQuery(parseQuery('*'), mapping);
let dir: string;
let shard: Shard;
let writer: ShardStateWriter;
let reader: SealedReader;

/** Documents n = from .. from + count - 1, one a second; shuffled when `shuffle` (ids then not in time order). */
function batch(from: number, count: number, shuffle = false): void {
  const ns = Array.from({ length: count }, (_, k) => from + k);
  if (shuffle) ns.reverse();
  const lines = ns.map((n) =>
    Buffer.from(
      JSON.stringify({ timestamp: new Date(base + n * 1000).toISOString(), level: n % 3 === 0 ? 'error' : 'info', n }),
    ),
  );
  const offs = new Int32Array(lines.length * 2);
  let p = 0;
  lines.forEach((l, i) => {
    offs[2 * i] = p;
    offs[2 * i + 1] = l.length;
    p += l.length;
  });
  change(() => expect(shard.ingest(Buffer.concat(lines), offs).errors).toEqual([]));
}

/** What the shard thread does around every change (shard-worker.ts). */
function change(fn: () => void): void {
  writer.begin();
  try {
    fn();
  } finally {
    writer.end(shard.activeBounds());
  }
}

const plain = (r: ShardQueryResult) => ({
  total: r.total,
  fractionsRead: r.fractionsRead,
  hits: unpackHits(r.hits),
  aggs: r.aggs,
  hist: r.hist,
});

beforeAll(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'tidepool-sealed-reader-'));
  const state = newShardState();
  writer = new ShardStateWriter(state);
  writer.begin();
  shard = new Shard(
    { dir, shard: 0, mapping, fracSize: 1 << 30, totalSize: 0, retention: YEAR },
    pino({ level: 'silent' }),
  );
  writer.end(shard.activeBounds());
  reader = new SealedReader(dir, new ShardStateReader(state));
  // Ten sealed fractions of 100 documents (more than the reader keeps open; one written out of time order),
  // then an active fraction with the newest 100.
  for (let f = 0; f < 10; f++) {
    batch(f * 100, 100, f === 3);
    change(() => shard.seal());
  }
  batch(1000, 100);
});

afterAll(() => {
  reader?.close();
  shard?.close();
  rmSync(dir, { recursive: true, force: true });
});

const sealedTo = base + 999 * 1000;

describe('SealedReader', () => {
  it('answers plain time-range searches over sealed fractions exactly as the shard thread does', () => {
    const before = reader.answered;
    const ranges: [number, number][] = [
      [-Infinity, sealedTo],
      [base + 250_500, base + 730_000],
      [base + 350_000, base + 350_000],
      [base + 999_000, sealedTo],
    ];
    for (const [from, to] of ranges) {
      for (const order of ['desc', 'asc'] as const) {
        for (const limit of [0, 1, 7, 100, 250, 2000]) {
          for (const withTotal of [true, false]) {
            for (const pipes of [undefined, [{ kind: 'fields' as const, except: false, names: ['n'] }]]) {
              const q: ShardQuery = { plan: all, from, to, limit, order, withTotal, pipes };
              const got = readSealed([reader], q);
              expect(got, `${from} ${to} ${order} ${limit}`).not.toBeNull();
              expect(plain(got!)).toEqual(plain(shard.query(q)));
            }
          }
        }
      }
    }
    expect(reader.answered - before).toBe(4 * 2 * 6 * 2 * 2);
  });

  it('leaves searches with filters, aggregations or histograms to the shard thread', () => {
    const range = { from: -Infinity, to: sealedTo, limit: 10, order: 'desc' as const };
    const filtered: ShardQuery = { plan: planQuery(parseQuery('level:error'), mapping), ...range };
    const agg: ShardQuery = { plan: all, ...range, aggs: [{ field: 'level', func: 'count' } as never] };
    const hist: ShardQuery = { plan: all, ...range, histInterval: 60_000 };
    for (const q of [filtered, agg, hist]) {
      expect(readsOnlyTimeRange(q)).toBe(false);
      expect(readSealed([reader], q)).toBeNull();
    }
  });

  it('leaves a range the active fraction overlaps to the shard thread', () => {
    expect(readSealed([reader], { plan: all, from: -Infinity, to: Infinity, limit: 10, order: 'desc' })).toBeNull();
    expect(
      readSealed([reader], { plan: all, from: base + 1_050_000, to: base + 1_060_000, limit: 10, order: 'asc' }),
    ).toBeNull();
  });

  it('reads nothing while the shard changes its fractions, and sees a new seal afterwards', () => {
    const q: ShardQuery = { plan: all, from: -Infinity, to: base + 1_099_000, limit: 5, order: 'desc' };
    writer.begin();
    try {
      shard.seal();
      expect(readSealed([reader], q)).toBeNull();
    } finally {
      writer.end(shard.activeBounds());
    }
    // The former active fraction is sealed now: the reader lists it and answers with its newest documents.
    const got = readSealed([reader], q);
    expect(got).not.toBeNull();
    expect(plain(got!)).toEqual(plain(shard.query(q)));
    expect(unpackHits(got!.hits)[0]!.time).toBe(base + 1_099_000);
  });

  it('follows fractions dropped by retention', () => {
    const q: ShardQuery = { plan: all, from: -Infinity, to: Infinity, limit: 50, order: 'asc' };
    expect(unpackHits(readSealed([reader], q)!.hits)[0]!.time).toBe(base);
    // Fractions whose newest document is older than a year before `now` go: the two oldest here.
    change(() => expect(shard.applyRetention(base + YEAR + 199_500)).toHaveLength(2));
    const got = readSealed([reader], q);
    expect(got).not.toBeNull();
    expect(plain(got!)).toEqual(plain(shard.query(q)));
    expect(unpackHits(got!.hits)[0]!.time).toBe(base + 200_000);
  });

  it("steps aside when a fraction's files disappear under it, then reads afresh", () => {
    const q: ShardQuery = { plan: all, from: -Infinity, to: Infinity, limit: 5, order: 'asc' };
    const fresh = new SealedReader(dir, new ShardStateReader(newShardStateLike()));
    try {
      // Listed but not yet read: remove the oldest fraction's files behind the catalog's back.
      const victim = shard.status().fractions.find((f) => f.state === 'sealed')!.name;
      const moved = path.join(dir, `${victim}.gone`);
      rmSync(moved, { recursive: true, force: true });
      renameSync(path.join(dir, victim), moved);
      const warned: { shard?: number; err?: { message?: string } }[] = [];
      const log = pino({ level: 'warn' }, { write: (line: string) => warned.push(JSON.parse(line)) });
      try {
        expect(readSealed([fresh], q, log, [3])).toBeNull();
        expect(fresh.fallbacks).toBe(1);
        // Logged, not swallowed: the shard and the error.
        expect(warned).toHaveLength(1);
        expect(warned[0]!.shard).toBe(3);
        expect(warned[0]!.err?.message).toBeTruthy();
      } finally {
        renameSync(moved, path.join(dir, victim));
      }
      expect(plain(readSealed([fresh], q)!)).toEqual(plain(shard.query(q)));
    } finally {
      fresh.close();
    }
  });
});

/** A state whose generation is even and whose active fraction is empty (a shard at rest with everything sealed). */
function newShardStateLike(): SharedArrayBuffer {
  const s = newShardState();
  const w = new ShardStateWriter(s);
  w.end({ docCount: 0, minTime: 0, maxTime: 0 });
  return s;
}
