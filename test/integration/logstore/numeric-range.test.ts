// Numeric range filters and unique through a running store: its search threads read the sealed fractions (numeric
// columns or posting lists, under a column memory far smaller than the columns) and answer what a pass over the
// documents computes, before and after a restart.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LogstoreProcess, bulk, ndjson, postJson, startLogstore } from '../../helpers/logstore.js';
import { mulberry32 } from '../../helpers/prng.js';

const base = Date.parse('2026-05-01T00:00:00Z');
const N = 6000;

interface Doc {
  timestamp: string;
  i: number;
  n?: unknown;
  m?: unknown;
}

function makeDocs(): Doc[] {
  const r = mulberry32(7);
  return Array.from({ length: N }, (_, i) => {
    const d: Doc = { timestamp: new Date(base + i * 1000).toISOString(), i };
    const x = r();
    if (x < 0.9) d.n = x < 0.3 ? ((r() * 2000) | 0) - 1000 : x < 0.6 ? ((r() * 800) | 0) / 8 : ((i / 500) | 0) * 10;
    else if (x < 0.95) d.n = ['word', '', 'true'][(r() * 3) | 0];
    if (r() < 0.8) d.m = r() < 0.2 ? [(r() * 100) | 0, (r() * 100) | 0] : (r() * 100) | 0;
    return d;
  });
}

function tokens(v: unknown): string[] {
  if (Array.isArray(v)) return v.flatMap(tokens);
  if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'string') return [String(v).toLowerCase()];
  return [];
}

const NUMBER = /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/;

/** Documents with a token of `field` in [lo, hi] (each bound inclusive or not), counted from the documents. */
function count(docs: Doc[], field: 'n' | 'm', lo: number, hi: number, loIncl: boolean, hiIncl: boolean): number {
  return docs.filter((d) =>
    tokens(d[field]).some((t) => {
      if (!NUMBER.test(t)) return false;
      const v = Number(t);
      return (loIncl ? v >= lo : v > lo) && (hiIncl ? v <= hi : v < hi);
    }),
  ).length;
}

const RANGES: [field: 'n' | 'm', lo: number, hi: number, loIncl: boolean, hiIncl: boolean][] = [
  ['n', -1000, 1000, true, true],
  ['n', -10.5, 50.25, false, true],
  ['n', 100, 200, true, false],
  ['n', 0, 0, true, true],
  ['n', -Infinity, 0, false, false],
  ['n', 500, Infinity, true, false],
  ['m', 10, 20, true, true],
  ['m', 50, Infinity, false, false],
];

function text(q: (typeof RANGES)[number]): string {
  const [field, lo, hi, loIncl, hiIncl] = q;
  return `${field}:${loIncl ? '[' : '('}${lo === -Infinity ? '*' : lo}, ${hi === Infinity ? '*' : hi}${hiIncl ? ']' : ')'}`;
}

let ls: LogstoreProcess;
const docs = makeDocs();
beforeAll(async () => {
  ls = await startLogstore({
    storage: { frac_size: '96KB', shards: 2 },
    search: { column_memory: '32KB' },
  });
  for (let k = 0; k < N; k += 1000)
    expect((await bulk(ls.url, ndjson(docs.slice(k, k + 1000)))).body.errors).toBe(false);
});
afterAll(async () => {
  await ls?.cleanup();
});

async function answers(): Promise<{ totals: number[]; unique: number }> {
  const window = { from: new Date(base - 1000).toISOString(), to: new Date(base + N * 1000).toISOString() };
  const totals: number[] = [];
  for (const q of RANGES) {
    const r = await postJson<{ total: number }>(`${ls.url}/search`, { query: { query: text(q), ...window }, size: 0 });
    expect(r.status).toBe(200);
    totals.push(r.body.total);
  }
  const u = await postJson<{ aggs: { buckets: { value: number }[] }[] }>(`${ls.url}/aggregate`, {
    query: { query: '*', ...window },
    aggs: [{ field: 'n', func: 'unique' }],
  });
  expect(u.status).toBe(200);
  return { totals, unique: u.body.aggs[0]!.buckets[0]!.value };
}

describe('numeric ranges and unique through a running store', () => {
  it('answer what the documents hold, over sealed fractions and after a restart', async () => {
    const st = (await (await fetch(`${ls.url}/status`)).json()) as { fractions: { sealed: number } };
    expect(st.fractions.sealed).toBeGreaterThan(4);
    const want = {
      totals: RANGES.map(([f, lo, hi, li, hiI]) => count(docs, f, lo, hi, li, hiI)),
      unique: new Set(docs.map((d) => tokens(d.n)[0]).filter((t) => t !== undefined)).size,
    };
    expect(await answers()).toEqual(want);
    await ls.stop();
    await ls.restart();
    expect(await answers()).toEqual(want);
  });
});
