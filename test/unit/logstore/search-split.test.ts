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
import { autoMapping, parseMapping } from '../../../src/logstore/mapping.js';
import { parseQuery } from '../../../src/logstore/query/parser.js';
import { planQuery } from '../../../src/logstore/query/plan.js';
import { type ShardQuery, type ShardQueryResult, executeQuery } from '../../../src/logstore/search/execute.js';
import { unpackHits } from '../../../src/logstore/search/packed-hits.js';
import { DICT_RANGE } from '../../../src/logstore/storage/active-search.js';
import { SealedFraction } from '../../../src/logstore/storage/sealed-fraction.js';
import { type ActiveStep, Shard } from '../../../src/logstore/storage/shard.js';

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

/**
 * The shard thread's step of a search, its active part run in slices of `sliceMs` (0: one chunk of work each), with
 * `between` run between two slices (as the writes queued meanwhile run on the shard thread).
 */
function stepOf(shard: Shard, q: ShardQuery, sliceMs?: number, between?: (slice: number) => void): ActiveStep {
  let next = shard.queryActive(q, sliceMs);
  for (let slice = 1; 'more' in next; slice++) {
    between?.(slice);
    next = shard.queryActiveMore(next.more, sliceMs);
  }
  return next;
}

/** The search as Store.queryShards runs it: the shard thread's step, then the sealed fractions with its part. */
function split(
  shard: Shard,
  dir: string,
  q: ShardQuery,
  sliceMs?: number,
  between?: (slice: number) => void,
): ShardQueryResult {
  const step = stepOf(shard, q, sliceMs, between);
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
          // One chunk of work per slice.
          same(shard.query(full), split(shard, dir, full, 0));
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

/** Documents at the given seconds after `base` with a token of their own (k), free text (msg) and a number (n). */
function wordy(shard: Shard, seconds: number[], tag = 'w'): void {
  const lines = seconds.map((s) =>
    Buffer.from(
      JSON.stringify({
        timestamp: new Date(base + s * 1000).toISOString(),
        level: s % 3 === 0 ? 'error' : 'info',
        g: `g${s % 4}`,
        v: String((s * 0.37) % 11.3),
        k: `tok${s}-${(s * 7919) % 10007}`,
        msg: `${tag} line ${s % 97} of ${s % 13}`,
        n: s % 1000,
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

describe('writes between the slices of a search over the active fraction', () => {
  // Dictionaries copied out in ranges of a 16th of them, each read over several slices.
  const range0 = DICT_RANGE.bytes;
  beforeAll(() => {
    DICT_RANGE.bytes = 64;
  });
  afterAll(() => {
    DICT_RANGE.bytes = range0;
  });
  const wordyMapping = parseMapping(
    '- {name: level, type: keyword}\n- {name: g, type: keyword}\n- {name: v, type: keyword}\n' +
      '- {name: k, type: keyword}\n- {name: msg, type: text}\n- {name: n, type: keyword}\n',
  );
  const aggs: AggSpec[] = [
    { field: 'v', func: 'sum', group_by: 'g' },
    { field: 'msg', func: 'count' },
    { field: 'v', func: 'quantile', quantiles: [0.5, 0.9] },
  ];

  function wordyShard(m = wordyMapping): { shard: Shard; dir: string } {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'tidepool-split-'));
    dirs.push(dir);
    const shard = new Shard(
      { dir, shard: 0, mapping: m, fracSize: 1 << 30, totalSize: 0, retention: 0 },
      pino({ level: 'silent' }),
    );
    // A sealed fraction, then an active one of 3 000 documents, the last 1 000 out of time order: each dictionary
    // scan of k takes several chunks of work.
    wordy(shard, range(0, 500));
    shard.seal();
    wordy(shard, range(500, 2000));
    wordy(shard, [...range(3500, 500).reverse(), ...range(2500, 500)]);
    return { shard, dir };
  }

  // Each write matches the queries: a search that read any of it would answer more.
  const writes = (shard: Shard) => (slice: number) => {
    if (slice === 3) shard.seal();
    else wordy(shard, [600 + slice, 1150 + slice, 4100 + slice, 2600 + slice], 'late');
  };

  it.each([
    ['k:tok1*', 'desc'],
    ['k:*1*2* or k:*3*3*', 'asc'],
    ['k:*7* and not level:error', 'desc'],
    ['n:[100 to 300] and msg:line*', 'desc'],
    ['msg:li*e and not k:tok2*', 'asc'],
  ] as const)('%s %s: the answer as of its start, never a write made during it', (query, order) => {
    const plan = planQuery(parseQuery(query), wordyMapping);
    for (const [from, to] of [
      [-Infinity, Infinity],
      [base + 400_000, base + 3_800_000],
    ] as const) {
      const { shard, dir } = wordyShard();
      try {
        const q: ShardQuery = { plan, from, to, limit: 40, order, aggs, histInterval: 600_000 };
        const before = shard.query(q);
        let slices = 0;
        const during = split(shard, dir, q, 0, (slice) => {
          slices = slice;
          writes(shard)(slice);
        });
        same(before, during);
        // Sliced, with writes (and a seal) between the slices, which the shard answers now.
        expect(slices).toBeGreaterThan(5);
        expect(shard.query(q).total).toBeGreaterThan(before.total);
        expect(shard.activeSearches).toBe(0);
      } finally {
        shard.close();
      }
    }
  });

  it('free text over every field (auto mapping), two searches interleaved', () => {
    const auto = autoMapping();
    const { shard, dir } = wordyShard(auto);
    try {
      const q1: ShardQuery = {
        plan: planQuery(parseQuery('line'), auto),
        from: -Infinity,
        to: Infinity,
        limit: 30,
        order: 'desc',
        aggs,
      };
      const q2: ShardQuery = {
        plan: planQuery(parseQuery('tok4*'), auto),
        from: -Infinity,
        to: Infinity,
        limit: 30,
        order: 'asc',
      };
      expect(q1.plan.op).toBe('anyField');
      const [b1, b2] = [shard.query(q1), shard.query(q2)];
      // The second starts between two slices of the first: each answers as of its own start.
      let second: ShardQueryResult | undefined;
      let b2now: ShardQueryResult | undefined;
      const r1 = split(shard, dir, q1, 0, (slice) => {
        writes(shard)(slice);
        if (slice === 4) {
          b2now = shard.query(q2);
          second = split(shard, dir, q2, 0, writes(shard));
        }
      });
      same(b1, r1);
      same(b2now!, second!);
      expect(b2now!.total).toBeGreaterThan(b2.total);
      expect(shard.activeSearches).toBe(0);
    } finally {
      shard.close();
    }
  });

  it('a deadline passing between two slices: timed out, nothing left pinned or running', () => {
    const { shard, dir } = wordyShard();
    try {
      const plan = planQuery(parseQuery('k:*1*2* or k:*3*3*'), wordyMapping);
      const q: ShardQuery = {
        plan,
        from: -Infinity,
        to: Infinity,
        limit: 10,
        order: 'desc',
        deadline: Date.now() + 60_000,
      };
      const r = split(shard, dir, q, 0, (slice) => {
        // The deadline passes once two slices have run.
        if (slice === 2) (q as { deadline: number }).deadline = Date.now() - 1;
      });
      expect(r.timedOut).toBe(true);
      expect(shard.activeSearches).toBe(0);
    } finally {
      shard.close();
    }
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
      const step = stepOf(shard, q);
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
      const a = stepOf(shard, { plan, from: base, to: base + 10_000, limit: 5, order: 'desc' });
      const b = stepOf(shard, { plan, from: base, to: base + 10_000, limit: 5, order: 'desc' });
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
