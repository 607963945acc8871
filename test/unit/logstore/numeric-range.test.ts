// Numeric range filters (`field:[a, b]`) answer what a brute-force pass over the documents computes, whichever way a
// sealed fraction reads them (the numeric column with its per-block bounds, the posting lists found in numeric order,
// or its own choice) and before the seal (the active fraction scans its dictionary), after it and after a restart:
// over documents without the field, with non-numeric values (words, booleans, blanks, hex), arrays, negative and
// fractional numbers, -0, and bounds inclusive, exclusive and open.
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_MAX_TOKEN_SIZE, autoMapping } from '../../../src/logstore/mapping.js';
import { parseQuery } from '../../../src/logstore/query/parser.js';
import { planQuery } from '../../../src/logstore/query/plan.js';
import { evaluate } from '../../../src/logstore/search/evaluate.js';
import { BLOCK_DOCS } from '../../../src/logstore/storage/numeric-column.js';
import { NUMERIC_RANGE, SealedFraction } from '../../../src/logstore/storage/sealed-fraction.js';
import type { Shard } from '../../../src/logstore/storage/shard.js';
import { ingestDocs, openTestShard } from '../../helpers/shard.js';
import { mulberry32 } from '../../helpers/prng.js';

const mapping = autoMapping();
const base = Date.parse('2026-05-01T00:00:00Z');
const N = 4 * BLOCK_DOCS + 321;

type Doc = Record<string, unknown> & { i: number; timestamp: string };

/**
 * Random documents in time order. `a`: numbers only, in runs that make blocks lie wholly inside, outside and across
 * a range; `b`: numbers, words, booleans and missing values (one token at most per document: the column holds
 * them); `c`: numbers written with blanks or in hex as well (a range does not read those as numbers, the column
 * does); `d`: arrays too (several tokens per document). All with negative numbers, fractions and -0.
 */
function makeDocs(seed: number): Doc[] {
  const r = mulberry32(seed);
  const docs: Doc[] = [];
  for (let i = 0; i < N; i++) {
    const d: Doc = { i, timestamp: new Date(base + i * 1000).toISOString() };
    const run = (i / 2000) | 0;
    const x = r();
    const num = () =>
      [
        () => ((x * 2000) | 0) - 1000,
        () => ((x * 800) | 0) / 8 - 50,
        () => run * 100 + ((x * 100) | 0),
        () => -0,
        () => 1e6 + x,
      ][(r() * 5) | 0]!();
    if (r() < 0.97) d.a = run % 3 === 0 ? run * 100 + ((x * 50) | 0) : num();
    const kind = r();
    if (kind < 0.6) d.b = num();
    else if (kind < 0.7) d.b = String(num());
    else if (kind < 0.8) d.b = ['GET', 'word', '', 'true', '1e3', '-7.5'][(x * 6) | 0];
    else if (kind < 0.85) d.b = x < 0.5;
    else if (kind < 0.9) d.b = null;
    if (r() < 0.9) d.c = r() < 0.1 ? [` ${(x * 100) | 0} `, '0x10', '1_0', '.5', '+3', '5.'][(x * 6) | 0] : num();
    if (r() < 0.9) d.d = r() < 0.2 ? [num(), num()] : r() < 0.1 ? [] : num();
    d.g = ['x', 'y'][(r() * 2) | 0];
    docs.push(d);
  }
  return docs;
}

/** The tokens a document holds in a field (auto mapping: every scalar a keyword, lowercased, cut). */
function tokens(v: unknown): string[] {
  if (Array.isArray(v)) return v.flatMap(tokens);
  if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'string')
    return [String(v).slice(0, DEFAULT_MAX_TOKEN_SIZE).toLowerCase()];
  return [];
}

const NUMBER = /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/;

interface Range {
  field: string;
  lo: string | null;
  hi: string | null;
  loIncl: boolean;
  hiIncl: boolean;
}

function inRange(docs: Doc[], q: Range): Set<number> {
  const lo = q.lo === null ? -Infinity : Number(q.lo);
  const hi = q.hi === null ? Infinity : Number(q.hi);
  const out = new Set<number>();
  for (const d of docs) {
    const hit = tokens(d[q.field]).some((t) => {
      if (!NUMBER.test(t)) return false;
      const v = Number(t);
      return (q.loIncl ? v >= lo : v > lo) && (q.hiIncl ? v <= hi : v < hi);
    });
    if (hit) out.add(d.i);
  }
  return out;
}

function rangeText(q: Range): string {
  return `${q.field}:${q.loIncl ? '[' : '('}${q.lo ?? '*'}, ${q.hi ?? '*'}${q.hiIncl ? ']' : ')'}`;
}

/** Ranges of every kind: narrow and wide, around a run's values, on a value exactly, open, negative, fractional. */
function makeRanges(seed: number): Range[] {
  const r = mulberry32(seed + 100);
  const pick = () =>
    String(
      [
        () => ((r() * 2000) | 0) - 1000,
        () => ((r() * 800) | 0) / 8 - 50,
        () => ((r() * 8) | 0) * 100 + ((r() * 2) | 0) * 50,
        () => 0,
        () => -0.5,
        () => 1e6,
      ][(r() * 6) | 0]!(),
    );
  const out: Range[] = [];
  for (const field of ['a', 'b', 'c', 'd', 'none']) {
    for (let k = 0; k < 8; k++) {
      let lo: string | null = k === 0 ? null : pick();
      let hi: string | null = k === 1 ? null : pick();
      if (lo !== null && hi !== null && Number(lo) > Number(hi)) [lo, hi] = [hi, lo];
      out.push({ field, lo, hi, loIncl: r() < 0.5, hiIncl: r() < 0.5 });
    }
    out.push({ field, lo: '0', hi: '0', loIncl: true, hiIncl: true });
    out.push({ field, lo: '-1e999', hi: '1e999', loIncl: true, hiIncl: true });
  }
  // Whole blocks of `a` inside the range: run 3 holds 300..349 only.
  out.push({ field: 'a', lo: '300', hi: '349', loIncl: true, hiIncl: true });
  out.push({ field: 'a', lo: '299', hi: '350', loIncl: false, hiIncl: false });
  return out;
}

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
afterEach(() => {
  NUMERIC_RANGE.mode = 'auto';
});

function openShard(dir: string): Shard {
  return openTestShard(dir, mapping);
}

function ingest(shard: Shard, docs: Doc[]): void {
  ingestDocs(shard, docs);
}

/** How many documents the query matches in [from, to], as the shard answers it. */
function total(shard: Shard, query: string, from = -Infinity, to = Infinity): number {
  return shard.query({ plan: planQuery(parseQuery(query), mapping), from, to, limit: 0, order: 'asc' }).total;
}

/** The local ids the query matches in a sealed fraction within [from, to] (documents arrived in order: id = i). */
function matched(sf: SealedFraction, query: string, from = -Infinity, to = Infinity): Uint32Array {
  const [lo, hi] = sf.timeRange(from, to);
  return evaluate(planQuery(parseQuery(query), mapping), sf, { lo, hi });
}

interface Case {
  query: string;
  from?: number;
  to?: number;
  want: number[];
}

/** Each range alone, within a time range (blocks cut at both ends), after a term (a list of ids as universe), negated. */
function cases(docs: Doc[], ranges: Range[]): Case[] {
  const out: Case[] = [];
  const sorted = (s: Set<number>) => [...s].sort((x, y) => x - y);
  const t0 = base + 1500 * 1000;
  const t1 = base + 9999 * 1000;
  for (const q of ranges) {
    const hit = inRange(docs, q);
    out.push({ query: rangeText(q), want: sorted(hit) });
    out.push({
      query: rangeText(q),
      from: t0,
      to: t1,
      want: sorted(new Set([...hit].filter((i) => i >= 1500 && i <= 9999))),
    });
    out.push({
      query: `g:x and ${rangeText(q)}`,
      want: sorted(new Set([...hit].filter((i) => docs[i]!.g === 'x'))),
    });
    out.push({ query: `not ${rangeText(q)}`, want: docs.map((d) => d.i).filter((i) => !hit.has(i)) });
  }
  return out;
}

function where(what: string, c: Case): string {
  return `${what}: ${c.query} [${c.from ?? ''}, ${c.to ?? ''}]`;
}

function checkSealed(sf: SealedFraction, all: Case[], what: string): void {
  for (const c of all) {
    const got = matched(sf, c.query, c.from, c.to);
    if (got.length !== c.want.length || got.some((x, k) => x !== c.want[k]))
      throw new Error(`${where(what, c)}: ${got.length} matches, ${c.want.length} expected`);
  }
}

function checkTotals(shard: Shard, all: Case[], what: string): void {
  for (const c of all) expect(total(shard, c.query, c.from, c.to), where(what, c)).toBe(c.want.length);
}

describe('numeric range filters', () => {
  for (const seed of [1, 2]) {
    it(`match a brute-force pass before the seal, after it (column, dictionary, auto) and after a restart (seed ${seed})`, () => {
      const docs = makeDocs(seed);
      const all = cases(docs, makeRanges(seed));
      const dir = mkdtempSync(path.join(os.tmpdir(), 'tidepool-numrange-'));
      dirs.push(dir);
      let shard: Shard | null = openShard(dir);
      try {
        ingest(shard, docs);
        checkTotals(shard, all, 'active');
        shard.seal();
        checkTotals(shard, all, 'sealed');
        shard.close();
        shard = null;
        const [frac] = readdirSync(dir).filter((e) => e.startsWith('frac-') && !e.endsWith('.wal'));
        for (const mode of ['column', 'dictionary', 'auto'] as const) {
          NUMERIC_RANGE.mode = mode;
          const sf = new SealedFraction(path.join(dir, frac!));
          checkSealed(sf, all, `sealed, ${mode}`);
          if (mode === 'column') {
            // The column answers fields of one value per document read alike (a, b), never the others (c, d).
            const r = { lo: 0, hi: 100, loIncl: true, hiIncl: true };
            for (const [f, column] of [
              ['a', true],
              ['b', true],
              ['c', false],
              ['d', false],
            ] as const)
              expect(sf.numericRange(f, r, 0, N, () => {}) instanceof Uint32Array, f).toBe(column);
            // Decoded by an aggregation: ranges then read the decoded column.
            expect(sf.numeric('a')).not.toBeNull();
            expect(sf.numeric('b')).not.toBeNull();
            checkSealed(sf, all, 'sealed, column decoded');
          }
          sf.close();
        }
        NUMERIC_RANGE.mode = 'auto';
        shard = openShard(dir);
        checkTotals(shard, all, 'restarted');
      } finally {
        shard?.close();
      }
    });
  }
});
