// in(...) over a field of one token a document: a sealed fraction adds the lengths of the tokens' (disjoint) lists
// for the total and merges the newest hits from their ends (execute.ts), instead of uniting the lists. Totals and
// hits match a brute-force pass over the documents, and the hits those of the general path (the same query under
// an "and", which evaluates the union): before the seal, after it (several fractions, one still active), after a
// restart; on fields of numbers and of words with one token a document, on arrays (several tokens: the general path
// is kept), with duplicate and absent values, time ranges cut at documents' exact times (ties on time), both orders.
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { autoMapping } from '../../../src/logstore/mapping.js';
import { parseQuery } from '../../../src/logstore/query/parser.js';
import { planQuery } from '../../../src/logstore/query/plan.js';
import { bestOfDisjoint, disjointIn } from '../../../src/logstore/search/execute.js';
import { unpackHits } from '../../../src/logstore/search/packed-hits.js';
import { SealedFraction } from '../../../src/logstore/storage/sealed-fraction.js';
import type { Shard } from '../../../src/logstore/storage/shard.js';
import { ingestDocs, openTestShard } from '../../helpers/shard.js';
import { mulberry32 } from '../../helpers/prng.js';

const mapping = autoMapping();
const base = Date.parse('2026-05-01T00:00:00Z');
const N = 3000;

type Doc = Record<string, unknown> & { i: number; timestamp: string };

/** Three documents a second (ties on time); `s` statuses, `w` words, `m` arrays of statuses, `o` sometimes absent. */
function makeDocs(seed: number, from: number, n: number): Doc[] {
  const r = mulberry32(seed);
  const statuses = [200, 200, 200, 201, 304, 400, 403, 404, 500, 503];
  const pick = () => statuses[(r() * statuses.length) | 0]!;
  const docs: Doc[] = [];
  for (let i = from; i < from + n; i++) {
    const d: Doc = { i, timestamp: new Date(base + Math.floor(i / 3) * 1000).toISOString() };
    d.s = pick();
    d.w = ['get', 'post', 'put', 'delete'][(r() * 4) | 0];
    d.m = r() < 0.3 ? [pick(), pick()] : pick();
    if (r() < 0.5) d.o = pick();
    docs.push(d);
  }
  return docs;
}

function tokens(v: unknown): string[] {
  if (Array.isArray(v)) return v.flatMap(tokens);
  if (v === undefined || v === null) return [];
  return [String(v).toLowerCase()];
}

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function openShard(dir: string): Shard {
  return openTestShard(dir, mapping);
}

function ingest(shard: Shard, docs: Doc[]): void {
  ingestDocs(shard, docs);
}

interface Case {
  field: string;
  values: string[];
  from: number;
  to: number;
  limit: number;
  order: 'asc' | 'desc';
}

function makeCases(): Case[] {
  const out: Case[] = [];
  const t = (i: number) => base + Math.floor(i / 3) * 1000;
  const ranges: [number, number][] = [
    [-Infinity, Infinity],
    [t(100), t(2900)],
    [t(1500), t(1500)],
    [t(2999), t(3001)],
    [t(4000), Infinity],
    [t(10000), Infinity],
  ];
  const sets = [['500', '400', '403'], ['500', '500', '999'], ['999'], ['200', '304'], ['get', 'put']];
  for (const field of ['s', 'w', 'm', 'o', 'absent'])
    for (const values of sets)
      for (const [from, to] of ranges)
        for (const limit of [0, 7, 100, 5000])
          for (const order of ['desc', 'asc'] as const) out.push({ field, values, from, to, limit, order });
  return out;
}

/** The query as the bench sends it, and the same under an "and" (the general path: evaluate's union). */
function queries(c: Case): [string, string] {
  const q = `${c.field}:in(${c.values.join(',')})`;
  return [q, `${q} and not w:nothing_here`];
}

function check(shard: Shard, docs: Doc[], all: Case[], what: string): void {
  for (const c of all) {
    const [fast, general] = queries(c);
    const where = `${what}: ${fast} [${c.from}, ${c.to}] ${c.order} ${c.limit}`;
    const want = docs.filter((d) => {
      const time = Date.parse(d.timestamp);
      return time >= c.from && time <= c.to && tokens(d[c.field]).some((t) => c.values.includes(t));
    });
    const ask = (query: string) =>
      shard.query({
        plan: planQuery(parseQuery(query), mapping),
        from: c.from,
        to: c.to,
        limit: c.limit,
        order: c.order,
      });
    const got = ask(fast);
    expect(got.total, where).toBe(want.length);
    const hits = unpackHits(got.hits);
    expect(hits.length, where).toBe(Math.min(c.limit, want.length));
    // Brute force: the hits are matching documents of the range, distinct, best first by time.
    const times = want.map((d) => Date.parse(d.timestamp)).sort((a, b) => (c.order === 'desc' ? b - a : a - b));
    expect(
      hits.map((h) => h.time),
      where,
    ).toEqual(times.slice(0, hits.length));
    const is = hits.map((h) => (JSON.parse(h.json) as { data: Doc }).data.i);
    const wanted = new Set(want.map((d) => d.i));
    expect(new Set(is).size, where).toBe(is.length);
    for (const i of is) expect(wanted.has(i), where).toBe(true);
    // The general path picks the same documents (ties on time broken alike).
    const ref = ask(general);
    expect(ref.total, where).toBe(got.total);
    expect(unpackHits(ref.hits), where).toEqual(hits);
  }
}

describe('in(...) over a field of one token a document', () => {
  it('merges the best of disjoint lists from their ends', () => {
    const lists = [Uint32Array.of(1, 5, 9), Uint32Array.of(2, 3, 10), Uint32Array.of(7)];
    expect([...bestOfDisjoint(lists, 4, true)]).toEqual([10, 9, 7, 5]);
    expect([...bestOfDisjoint(lists, 4, false)]).toEqual([1, 2, 3, 5]);
    expect([...bestOfDisjoint(lists, 7, true)]).toEqual([10, 9, 7, 5, 3, 2, 1]);
    expect([...bestOfDisjoint([], 3, true)]).toEqual([]);
  });

  it('matches a brute-force pass and the general path before the seal, after it and after a restart', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'tidepool-in-disjoint-'));
    dirs.push(dir);
    const docs = [...makeDocs(1, 0, N), ...makeDocs(2, N, N), ...makeDocs(3, 2 * N, N)];
    const all = makeCases();
    let shard: Shard | null = openShard(dir);
    try {
      ingest(shard, docs.slice(0, N));
      check(shard, docs.slice(0, N), all, 'active');
      shard.seal();
      ingest(shard, docs.slice(N, 2 * N));
      shard.seal();
      ingest(shard, docs.slice(2 * N));
      check(shard, docs, all, 'two sealed, one active');
      shard.close();
      shard = null;
      // A sealed fraction knows which fields hold one token a document; the in(...) of those takes the disjoint way.
      const fracs = readdirSync(dir).filter((e) => e.startsWith('frac-') && !e.endsWith('.wal'));
      expect(fracs.length).toBeGreaterThanOrEqual(2);
      const sf = new SealedFraction(path.join(dir, fracs[0]!));
      try {
        expect(sf.singleValued('s')).toBe(true);
        expect(sf.singleValued('o')).toBe(true);
        expect(sf.singleValued('m')).toBe(false);
        expect(sf.singleValued('absent')).toBe(true);
        const plan = (q: string) => planQuery(parseQuery(q), mapping);
        expect(disjointIn(plan('s:in(500,400,403)'), sf)).toEqual({ field: 's', tokens: ['500', '400', '403'] });
        expect(disjointIn(plan('m:in(500,400)'), sf)).toBeNull();
        expect(disjointIn(plan('s:500 or o:400'), sf)).toBeNull();
      } finally {
        sf.close();
      }
      shard = openShard(dir);
      check(shard, docs, all, 'restarted');
    } finally {
      shard?.close();
    }
  });
});
