// Aggregations read from columns (unique too) answer what a brute-force pass over the documents computes: over random documents
// (numbers, missing values, numbers as strings, words, booleans, arrays, negative numbers, floats), while the
// documents are in the active fraction, once sealed (numeric columns), after a restart, and from a fraction of the
// format before numeric columns (its keyword columns and dictionary).
import { readFileSync, readdirSync, rmSync, statSync, writeFileSync, mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { type AggSpec, type AggResult, finalizeAgg, quantile } from '../../../src/logstore/aggregate/aggregate.js';
import { EXACT_VALUES, sketchOf, sketchQuantile } from '../../../src/logstore/aggregate/quantile-sketch.js';
import { DEFAULT_MAX_TOKEN_SIZE, autoMapping } from '../../../src/logstore/mapping.js';
import { parseQuery } from '../../../src/logstore/query/parser.js';
import { planQuery } from '../../../src/logstore/query/plan.js';
import { crc32c } from '../../../src/logstore/storage/crc32c.js';
import { BLOCK_DOCS } from '../../../src/logstore/storage/numeric-column.js';
import { SealedFraction } from '../../../src/logstore/storage/sealed-fraction.js';
import type { Shard } from '../../../src/logstore/storage/shard.js';
import { ingestDocs, openTestShard } from '../../helpers/shard.js';
import { mulberry32 } from '../../helpers/prng.js';

const mapping = autoMapping();
const HOUR = 3_600_000;
const base = Date.parse('2026-05-01T00:00:00Z');
const N = 3 * BLOCK_DOCS + 700;

interface Doc {
  i: number;
  timestamp: string;
  n?: unknown;
  /** Integers only (sums exact in any order): what a per-block summary may add whole. */
  m?: number;
  g?: unknown;
  /** Groups of 255 and 256 values (a sealed column of one byte a document, and of two), some documents without. */
  k?: string;
  h?: string;
}

/** Random documents in time order: `n` of every kind a field may hold, `g` a group (sometimes missing). */
function makeDocs(seed: number): Doc[] {
  const r = mulberry32(seed);
  const docs: Doc[] = [];
  for (let i = 0; i < N; i++) {
    const d: Doc = { i, timestamp: new Date(base + Math.floor((i / N) * 10 * HOUR)).toISOString() };
    const x = r();
    // Runs of one shape, so whole blocks of numbers, of missing values and of mixed ones all occur.
    const shape = ((i / 1500) | 0) % 5 === 4 ? 9 : (r() * 12) | 0;
    const v = [
      () => (x * 50_000) | 0,
      () => (x * 50_000) | 0,
      () => -((x * 1000) | 0),
      () => ((x * 800) | 0) / 8 - 50, // floats whose sums are exact in any order
      () => String((x * 100) | 0),
      () => ` ${(x * 100) | 0} `,
      () => ['GET', 'word', '', 'Infinity', '1e3', '0x10'][(x * 6) | 0],
      () => x < 0.5,
      () => [(x * 10) | 0, 99],
      () => undefined,
      () => 2 ** 36 + ((x * 1e6) | 0),
      () => -0,
    ][shape === 9 ? 9 : shape]!();
    // Shape 9: no value (the field absent, or null).
    if (shape !== 9) d.n = v;
    else if (x < 0.5) d.n = null;
    if (r() < 0.9) d.g = ['a', 'b', 'c', 200, 404][(r() * 5) | 0];
    if (r() < 0.95) d.m = ((r() * 1000) | 0) - 300;
    // From i alone (the random stream above stays as it was).
    if (i % 7 !== 3) d.k = `k${(i * 7919) % 255}`;
    if (i % 5 !== 1) d.h = `h${(i * 7919) % 256}`;
    docs.push(d);
  }
  return docs;
}

/** The first keyword value of a field as the store keeps it (lowercased, cut at the longest token), or undefined. */
function keyword(v: unknown): string | undefined {
  if (Array.isArray(v)) {
    for (const x of v) {
      const k = keyword(x);
      if (k !== undefined) return k;
    }
    return undefined;
  }
  if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'string')
    return String(v).slice(0, DEFAULT_MAX_TOKEN_SIZE).toLowerCase();
  return undefined;
}

/** The number an aggregation reads from a document: its first keyword value as a number, NaN for none. */
function numberOf(d: Doc, field: 'n' | 'm' | 'g' | 'k' | 'h' = 'n'): number {
  const k = keyword(d[field]);
  return k === undefined || k.trim() === '' ? NaN : Number(k);
}

const SPECS: AggSpec[] = [];
for (const func of ['count', 'sum', 'min', 'max', 'avg', 'quantile', 'unique'] as const) {
  for (const group_by of [undefined, 'g']) {
    for (const interval of [0, HOUR]) {
      const spec: AggSpec = { field: 'n', func };
      if (group_by) spec.group_by = group_by;
      if (interval) spec.interval = interval;
      if (func === 'quantile') spec.quantiles = [0.5, 0.9];
      SPECS.push(spec);
    }
  }
}
for (const func of ['sum', 'avg', 'min', 'max'] as const) {
  SPECS.push({ field: 'm', func }, { field: 'm', func, group_by: 'g' });
}
for (const field of ['k', 'h']) {
  SPECS.push(
    { field, func: 'count' },
    { field: 'm', func: 'min', group_by: field },
    { field: 'm', func: 'sum', group_by: field },
    { field: 'g', func: 'unique', group_by: field },
    { field, func: 'unique', group_by: 'g' },
    { field, func: 'count', group_by: 'g' },
  );
}

/** The answer computed from the documents alone. */
function oracle(docs: Doc[], spec: AggSpec, match: (d: Doc) => boolean): AggResult {
  const field = spec.field as 'n' | 'm' | 'g' | 'k' | 'h';
  const groupField = spec.func === 'count' && !spec.group_by ? field : spec.group_by;
  const buckets = new Map<string, { values: number[]; present: number; notExists: number; distinct: Set<string> }>();
  let noGroup = 0;
  for (const d of docs.filter(match)) {
    let key = '';
    if (groupField) {
      const g = keyword(d[groupField as 'g' | 'k' | 'h' | 'n']);
      if (g === undefined) {
        noGroup++;
        continue;
      }
      key = g;
    }
    if (spec.interval) key += `\0${Math.floor(Date.parse(d.timestamp) / spec.interval) * spec.interval}`;
    let b = buckets.get(key);
    if (!b) buckets.set(key, (b = { values: [], present: 0, notExists: 0, distinct: new Set() }));
    if (spec.func === 'count' || spec.func === 'unique') {
      const k = keyword(d[field]);
      if (k === undefined) b.notExists++;
      else {
        b.present++;
        b.distinct.add(k);
      }
      continue;
    }
    const v = numberOf(d, field);
    if (Number.isNaN(v)) b.notExists++;
    else b.values.push(v);
  }
  const out: AggResult['buckets'] = [];
  for (const [k, b] of buckets) {
    const sep = k.indexOf('\0');
    const vs = b.values;
    const sorted = Float64Array.from(vs).sort();
    let value: number;
    let quantiles: number[] | undefined;
    switch (spec.func) {
      case 'count':
        value = b.present;
        break;
      case 'unique':
        value = b.distinct.size;
        break;
      case 'sum':
        value = vs.reduce((a, x) => a + x, 0);
        break;
      case 'min':
        value = vs.length ? Math.min(...vs) : 0;
        break;
      case 'max':
        value = vs.length ? Math.max(...vs) : 0;
        break;
      case 'avg':
        value = vs.length ? vs.reduce((a, x) => a + x, 0) / vs.length : 0;
        break;
      default:
        // Past EXACT_VALUES a bucket's quantiles come from its sketch, which depends only on the values.
        quantiles = spec.quantiles!.map((q) =>
          vs.length > EXACT_VALUES ? sketchQuantile(sketchOf(vs), q) : quantile(sorted, q),
        );
        value = quantiles[0]!;
    }
    if (Number.isNaN(value)) value = 0;
    const bucket: AggResult['buckets'][number] = {
      key: sep >= 0 ? k.slice(0, sep) : k,
      value,
      not_exists: b.notExists,
    };
    if (quantiles) bucket.quantiles = quantiles.map((q) => (Number.isNaN(q) ? NaN : q));
    if (sep >= 0) bucket.ts = new Date(Number(k.slice(sep + 1))).toISOString();
    out.push(bucket);
  }
  out.sort(
    (a, b) =>
      (a.ts ?? '').localeCompare(b.ts ?? '') ||
      (spec.func === 'count' ? b.value - a.value : 0) ||
      (a.key < b.key ? -1 : a.key > b.key ? 1 : 0),
  );
  return { buckets: out, not_exists: noGroup };
}

/** A query, the documents it matches, and its time range ([from, to], both included). */
const QUERIES: [string, (d: Doc) => boolean, number, number][] = [
  ['*', () => true, -Infinity, Infinity],
  ['g:a', (d) => keyword(d.g) === 'a', -Infinity, Infinity],
  // Every other run of 1500 documents: whole blocks matched and blocks cut by the query.
  ['i:[0, 3000) OR i:[6000, *]', (d) => d.i < 3000 || d.i >= 6000, -Infinity, Infinity],
  // Everything in a time range (an id range, read without a list of ids): blocks cut at both ends; and one to the
  // last document, whose last block is short.
  ['*', () => true, base + 2.5 * HOUR, base + 7.3 * HOUR],
  ['*', () => true, base + 4 * HOUR, Infinity],
];

function inTime(d: Doc, from: number, to: number): boolean {
  const t = Date.parse(d.timestamp);
  return t >= from && t <= to;
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

/**
 * Every spec under every query, as the shard answers it (JSON so -0 and 0 compare as the HTTP answer shows them),
 * then each query's total, histogram (half hours) and newest and oldest 5 documents.
 */
function answers(shard: Shard): string[] {
  const out: string[] = [];
  for (const [q, , from, to] of QUERIES) {
    const plan = planQuery(parseQuery(q), mapping);
    for (const spec of SPECS) {
      const r = shard.query({ plan, from, to, limit: 0, order: 'desc', aggs: [spec] });
      out.push(JSON.stringify(finalizeAgg(spec, r.aggs[0]!)));
    }
  }
  for (const [q, , from, to] of QUERIES) {
    const plan = planQuery(parseQuery(q), mapping);
    const r = shard.query({ plan, from, to, limit: 0, order: 'desc', histInterval: HOUR / 2 });
    out.push(JSON.stringify({ total: r.total, hist: [...r.hist].sort((a, b) => a[0] - b[0]) }));
    for (const order of ['desc', 'asc'] as const) {
      const hits = shard.query({ plan, from, to, limit: 5, order, histInterval: HOUR / 2 }).hits;
      out.push(JSON.stringify([...hits.times]));
    }
  }
  return out;
}

function expected(docs: Doc[]): string[] {
  const out = QUERIES.flatMap(([, match, from, to]) =>
    SPECS.map((spec) => JSON.stringify(oracle(docs, spec, (d) => match(d) && inTime(d, from, to)))),
  );
  for (const [, match, from, to] of QUERIES) {
    const hit = docs.filter((d) => match(d) && inTime(d, from, to));
    const hist = new Map<number, number>();
    for (const d of hit) {
      const ts = Math.floor(Date.parse(d.timestamp) / (HOUR / 2)) * (HOUR / 2);
      hist.set(ts, (hist.get(ts) ?? 0) + 1);
    }
    out.push(JSON.stringify({ total: hit.length, hist: [...hist].sort((a, b) => a[0] - b[0]) }));
    const times = hit.map((d) => Date.parse(d.timestamp)).sort((a, b) => a - b);
    out.push(JSON.stringify(times.slice(-5).reverse()), JSON.stringify(times.slice(0, 5)));
  }
  return out;
}

/**
 * Rewrites a sealed fraction as a format 2 fraction reads (before numeric columns): no num-<i>.bin, checksum redone.
 * Its format number stays (format 4 files do not read as format 2 ones); the reader sees no `numeric` either way.
 */
function asFormat2(frac: string): void {
  const file = path.join(frac, 'meta.json');
  const meta = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
  const files = meta['files'] as Record<string, unknown>;
  (meta['numeric'] as string[]).forEach((_, i) => {
    rmSync(path.join(frac, `num-${i}.bin`));
    delete files[`num-${i}.bin`];
  });
  delete meta['numeric'];
  delete meta['check'];
  meta['check'] = crc32c(Buffer.from(JSON.stringify(meta)));
  writeFileSync(file, JSON.stringify(meta));
}

function sealedDirs(dir: string): string[] {
  return readdirSync(dir)
    .filter((e) => e.startsWith('frac-') && statSync(path.join(dir, e)).isDirectory())
    .map((e) => path.join(dir, e));
}

describe('aggregations over columns', () => {
  for (const seed of [1]) {
    it(`match a brute-force pass before the seal, after it, after a restart and in the older format (seed ${seed})`, () => {
      const docs = makeDocs(seed);
      const want = expected(docs);
      const dir = mkdtempSync(path.join(os.tmpdir(), 'tidepool-aggcol-'));
      dirs.push(dir);
      let shard = openShard(dir);
      try {
        ingest(shard, docs);
        const active = answers(shard);
        shard.seal();
        const sealed = answers(shard);
        shard.close();
        shard = openShard(dir);
        const restarted = answers(shard);
        shard.close();
        // The sealed fraction carries a numeric column of n, which holds each document's number.
        const [frac] = sealedDirs(dir);
        const sf = new SealedFraction(frac!);
        expect(sf.meta.format).toBe(5);
        const col = sf.numeric('n');
        expect(col).not.toBeNull();
        for (let local = 0; local < sf.docCount; local++) {
          const doc = JSON.parse(Buffer.from(sf.data([local])[0]!).toString()) as Doc;
          const want1 = numberOf(doc);
          if (!Object.is(col!.values[local], want1))
            throw new Error(`doc ${doc.i}: ${col!.values[local]} for ${want1}`);
        }
        sf.close();
        asFormat2(frac!);
        const old = new SealedFraction(frac!);
        expect(old.numeric('n')).toBeNull();
        old.close();
        shard = openShard(dir);
        const olderFormat = answers(shard);
        // A new active fraction next to the sealed one: both read together.
        const more = makeDocs(seed + 10).map((d, k) => ({
          ...d,
          i: N + k,
          timestamp: new Date(base + 11 * HOUR + k).toISOString(),
        }));
        ingest(shard, more);
        const mixed = answers(shard);
        const wantMixed = expected([...docs, ...more]);
        for (let k = 0; k < want.length; k++) {
          const q = QUERIES[Math.floor(k / SPECS.length)];
          const what = q ? `${q[0]} [${q[2]}, ${q[3]}] ${JSON.stringify(SPECS[k % SPECS.length])}` : `hits ${k}`;
          expect(active[k], `active: ${what}`).toBe(want[k]);
          expect(sealed[k], `sealed: ${what}`).toBe(want[k]);
          expect(restarted[k], `restarted: ${what}`).toBe(want[k]);
          expect(olderFormat[k], `format 2: ${what}`).toBe(want[k]);
          expect(mixed[k], `sealed + active: ${what}`).toBe(wantMixed[k]);
        }
      } finally {
        shard.close();
      }
    });
  }
});
