// A search split between the shard thread (the active fraction, Shard.queryActive) and a search thread (the sealed
// fractions, with the active part in its place: executeQuery's RunPart) answers exactly what the shard answers
// in one pass: totals, hits in order, aggregation partials, histogram, fractions read, with and without a total.
// The sealed fractions it reads are pinned: retention drops them from the catalog but leaves their files until
// the search ends.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AggSpec } from '../../../src/logstore/aggregate/aggregate.js';
import { parseMapping } from '../../../src/logstore/mapping.js';
import { parseQuery } from '../../../src/logstore/query/parser.js';
import { planQuery } from '../../../src/logstore/query/plan.js';
import { type ShardQuery, type ShardQueryResult, executeQuery } from '../../../src/logstore/search/execute.js';
import { unpackHits } from '../../../src/logstore/search/packed-hits.js';
import { SealedFraction } from '../../../src/logstore/storage/sealed-fraction.js';
import { Shard } from '../../../src/logstore/storage/shard.js';

const mapping = parseMapping(
  '- {name: level, type: keyword}\n- {name: g, type: keyword}\n- {name: v, type: keyword}\n',
);
const base = Date.UTC(2026, 3, 1);
const dirs: string[] = [];

function newShard(opts: { retention?: number } = {}): { shard: Shard; dir: string } {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tidepool-split-'));
  dirs.push(dir);
  const shard = new Shard(
    { dir, shard: 0, mapping, fracSize: 1 << 30, totalSize: 0, retention: opts.retention ?? 0 },
    pino({ level: 'silent' }),
  );
  return { shard, dir };
}

/** Documents at the given seconds after `base`, with fractional values (sums depend on their order). */
function batch(shard: Shard, seconds: number[]): void {
  const lines = seconds.map((s) =>
    Buffer.from(
      JSON.stringify({
        timestamp: new Date(base + s * 1000).toISOString(),
        level: s % 3 === 0 ? 'error' : 'info',
        g: `g${s % 4}`,
        v: String((s * 0.37) % 11.3),
      }),
    ),
  );
  const offs = new Int32Array(lines.length * 2);
  let p = 0;
  lines.forEach((l, i) => {
    offs[2 * i] = p;
    offs[2 * i + 1] = l.length;
    p += l.length;
  });
  expect(shard.ingest(Buffer.concat(lines), offs).errors).toEqual([]);
}

const range = (from: number, n: number) => Array.from({ length: n }, (_, i) => from + i);

/** The search as Store.queryShards runs it: the shard thread's step, then the sealed fractions with its part. */
function split(shard: Shard, dir: string, q: ShardQuery): ShardQueryResult {
  const step = shard.queryActive(q);
  if (!step.sealed) return step.result;
  const views = step.sealed.names.map((n) => new SealedFraction(path.join(dir, n)));
  try {
    const part = step.part ? { ...step.part, result: step.result } : undefined;
    const r = executeQuery(views, q, part);
    return step.damaged ? { ...r, damaged: step.damaged } : r;
  } finally {
    for (const v of views) v.close();
    shard.unpin(step.sealed.pin);
  }
}

function same(a: ShardQueryResult, b: ShardQueryResult): void {
  expect(b.total).toBe(a.total);
  expect(b.fractionsRead).toBe(a.fractionsRead);
  expect(unpackHits(b.hits)).toEqual(unpackHits(a.hits));
  expect(b.aggs).toEqual(a.aggs);
  expect(b.hist).toEqual(a.hist);
  expect(b.timedOut).toBe(a.timedOut);
  expect(b.damaged).toEqual(a.damaged);
}

describe('a search split between the shard thread and a search thread', () => {
  let shard: Shard;
  let dir: string;
  beforeAll(() => {
    ({ shard, dir } = newShard());
    // Three sealed fractions in time order, one of later documents than the active fraction (so that the active
    // one is neither first nor last in time), and an active fraction whose documents arrived out of order.
    batch(shard, range(0, 100));
    shard.seal();
    batch(shard, range(100, 100));
    shard.seal();
    batch(shard, range(400, 100));
    shard.seal();
    batch(shard, [...range(250, 50).reverse(), ...range(200, 50)]);
  });
  afterAll(() => shard?.close());

  const aggs: AggSpec[] = [
    { field: 'v', func: 'sum', group_by: 'g' },
    { field: 'v', func: 'avg', interval: 60_000 },
    { field: 'v', func: 'quantile', quantiles: [0.5, 0.9] },
    { field: 'g', func: 'unique' },
    { field: 'level', func: 'count' },
  ];

  it.each([
    ['level:error', 'desc'],
    ['level:error', 'asc'],
    ['*', 'desc'],
    ['*', 'asc'],
    ['not level:error', 'desc'],
    ['g:g1 or g:g2', 'asc'],
  ] as const)('%s %s: the same answer as one pass', (query, order) => {
    const plan = planQuery(parseQuery(query), mapping);
    for (const withTotal of [true, false])
      for (const limit of [0, 5, 60, 150, 1000])
        for (const [from, to] of [
          [-Infinity, Infinity],
          [base + 50_000, base + 260_000],
          [base + 210_000, base + 240_000],
        ] as const) {
          const q: ShardQuery = { plan, from, to, limit, order, withTotal };
          same(shard.query(q), split(shard, dir, q));
          const full: ShardQuery = { ...q, aggs, histInterval: 30_000 };
          same(shard.query(full), split(shard, dir, full));
        }
  });

  it('with pipes, forgotten ids and a deadline already passed', () => {
    const plan = planQuery(parseQuery('*'), mapping);
    const all = shard.query({ plan, from: -Infinity, to: Infinity, limit: 1000, order: 'desc' });
    const ids = unpackHits(all.hits).map((h) => h.id);
    const forgotten = [ids[3]!, ids[120]!, ids[260]!];
    const q: ShardQuery = {
      plan,
      from: -Infinity,
      to: Infinity,
      limit: 300,
      order: 'desc',
      forgotten,
      pipes: [{ kind: 'fields', except: false, names: ['level'] }],
    };
    same(shard.query(q), split(shard, dir, q));
    const late = { ...q, aggs, deadline: Date.now() - 1 };
    const r = split(shard, dir, late);
    same(shard.query(late), r);
    expect(r.timedOut).toBe(true);
  });
});

describe('pinned fractions', () => {
  it('retention drops a fraction a search reads from the catalog, and its files once the search ends', () => {
    const { shard, dir } = newShard({ retention: 1000 });
    try {
      // Documents of 2026-04-01: far past a retention of one second, so every seal drops the sealed ones.
      batch(shard, range(0, 50));
      const plan = planQuery(parseQuery('level:error'), mapping);
      const q: ShardQuery = { plan, from: -Infinity, to: Infinity, limit: 10, order: 'desc' };
      const expected = shard.query(q);
      // Sealed by hand with retention off for a moment, so that the fraction stays to be pinned.
      (shard.opts as { retention: number }).retention = 0;
      shard.seal();
      (shard.opts as { retention: number }).retention = 1000;
      const step = shard.queryActive(q);
      expect(step.sealed?.names).toHaveLength(1);
      const name = step.sealed!.names[0]!;
      expect(shard.applyRetention()).toEqual([name]);
      expect(shard.status().fractions.map((f) => f.name)).not.toContain(name);
      // Still on disk, so the search thread reads it whole.
      expect(existsSync(path.join(dir, name))).toBe(true);
      const view = new SealedFraction(path.join(dir, name));
      const r = executeQuery([view], q, step.part ? { ...step.part, result: step.result } : undefined);
      view.close();
      expect(unpackHits(r.hits)).toEqual(unpackHits(expected.hits));
      expect(r.total).toBe(expected.total);
      shard.unpin(step.sealed!.pin);
      expect(existsSync(path.join(dir, name))).toBe(false);
      // Unpinned twice: nothing more happens.
      shard.unpin(step.sealed!.pin);
    } finally {
      shard.close();
    }
  });

  it('a fraction two searches read goes when the second ends; one nobody reads goes at once', () => {
    const { shard, dir } = newShard();
    try {
      batch(shard, range(0, 20));
      shard.seal();
      batch(shard, range(20, 20));
      shard.seal();
      const plan = planQuery(parseQuery('*'), mapping);
      const a = shard.queryActive({ plan, from: base, to: base + 10_000, limit: 5, order: 'desc' });
      const b = shard.queryActive({ plan, from: base, to: base + 10_000, limit: 5, order: 'desc' });
      const [first, second] = shard.status().fractions.map((f) => f.name);
      expect(a.sealed!.names).toEqual([first]);
      (shard.opts as { retention: number }).retention = 1000;
      expect(shard.applyRetention().sort()).toEqual([first, second]);
      expect(existsSync(path.join(dir, second!))).toBe(false);
      shard.unpin(a.sealed!.pin);
      expect(existsSync(path.join(dir, first!))).toBe(true);
      shard.unpin(b.sealed!.pin);
      expect(existsSync(path.join(dir, first!))).toBe(false);
    } finally {
      shard.close();
    }
  });
});

afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
