// Free text in seq-ql (a bare word or a quoted phrase, no field) over real HTTP: single mode in auto mapping and
// with a mapping file, and a proxy over two stores, each answering what the test computes from the documents.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LogstoreProcess, bulk, ndjson, postJson, startLogstore } from '../../helpers/logstore.js';

const MAPPING =
  'mapping-list:\n  - {name: level, type: keyword}\n  - {name: target, type: keyword}\n  - {name: msg, type: text}\n  - {name: path, type: path}\n';
const base = Date.parse('2026-06-01T00:00:00Z');
const TARGETS = ['pooler', 'pooler::pool', 'pooler::web::access', 'pooler::admin'];
const MSGS = [
  'RELOAD applied',
  'server login failed',
  'client authentication failed',
  'pooler listening',
  'Config reloaded',
];
const docs = Array.from({ length: 240 }, (_, i) => ({
  timestamp: new Date(base + i * 30_000).toISOString(),
  i,
  level: ['info', 'warn', 'error'][i % 3]!,
  target: TARGETS[i % 4]!,
  msg: MSGS[i % 5]!,
  path: `/api/v${(i % 2) + 1}/pools`,
  ...(i % 7 === 0 ? { err: 'connection refused by peer' } : {}),
}));

type Doc = (typeof docs)[number];
/** Value contains (keyword and path fields, and every field in auto mode); words (text fields). */
const has = (v: unknown, s: string) => typeof v === 'string' && v.toLowerCase().includes(s.toLowerCase());
const words = (v: string) =>
  v
    .toLowerCase()
    .split(/[^\p{L}\p{N}_]+/u)
    .filter(Boolean);

/** [query, expected in auto mode, expected under MAPPING (msg words; err unmapped, i unmapped)]. */
const cases: [string, (d: Doc) => boolean, (d: Doc) => boolean][] = [
  ['RELOAD', (d) => has(d.msg, 'reload'), (d) => words(d.msg).includes('reload')],
  [
    '"login failed"',
    (d) => has(d.msg, 'login failed'),
    (d) => words(d.msg).includes('login') && words(d.msg).includes('failed'),
  ],
  [
    'failed and level:error',
    (d) => has(d.msg, 'failed') && d.level === 'error',
    (d) => words(d.msg).includes('failed') && d.level === 'error',
  ],
  ['refused', (d) => has(d.err, 'refused'), () => false],
  [
    'pooler and not admin',
    (d) => (has(d.target, 'pooler') || has(d.msg, 'pooler')) && !has(d.target, 'admin'),
    (d) => (has(d.target, 'pooler') || words(d.msg).includes('pooler')) && !has(d.target, 'admin'),
  ],
  ["'v2'", (d) => has(d.path, 'v2'), (d) => has(d.path, 'v2')],
  [
    'reload* or web',
    (d) => has(d.msg, 'reload') || has(d.target, 'web'),
    (d) => words(d.msg).some((w) => w.startsWith('reload')) || has(d.target, 'web'),
  ],
];

let auto: LogstoreProcess;
let mapped: LogstoreProcess;
let stores: LogstoreProcess[] = [];
let proxy: LogstoreProcess;

beforeAll(async () => {
  [auto, mapped, ...stores] = await Promise.all([
    startLogstore({ storage: { frac_size: '8KB' } }),
    startLogstore({ mapping: MAPPING, storage: { frac_size: '8KB' } }),
    ...[0, 1].map(() => startLogstore({ mode: 'store', storage: { frac_size: '8KB', shards: 1 } })),
  ]);
  proxy = await startLogstore({
    mode: 'proxy',
    cluster: { hot_stores: stores.map((s) => s.grpcAddr), hot_replicas: 1 },
  });
  for (let k = 0; k < 4; k++) {
    const part = ndjson(docs.slice(k * 60, k * 60 + 60));
    for (const p of [auto, mapped, proxy]) expect((await bulk(p.url, part)).body.errors).toBe(false);
  }
});

afterAll(async () => {
  await Promise.all([auto, mapped, proxy, ...stores].filter(Boolean).map((p) => p.cleanup()));
});

async function search(p: LogstoreProcess, query: string): Promise<{ status: number; total: number; is: number[] }> {
  const r = await postJson<{ total: number; docs: { data: Doc }[] }>(`${p.url}/search`, {
    query: { query, from: '2020-01-01T00:00:00Z', to: '2100-01-01T00:00:00Z' },
    size: 1000,
    order: 'asc',
  });
  return { status: r.status, total: r.body.total, is: (r.body.docs ?? []).map((d) => d.data.i) };
}

describe('free text', () => {
  it.each(cases)('%s: auto mapping, single and through a proxy', async (q, autoPred) => {
    const want = docs.filter(autoPred).map((d) => d.i);
    expect(want.length).toBeGreaterThan(0);
    for (const p of [auto, proxy]) {
      const r = await search(p, q);
      expect(r.status, p.mode).toBe(200);
      expect(r.total, p.mode).toBe(want.length);
      expect(
        r.is.sort((a, b) => a - b),
        p.mode,
      ).toEqual(want);
    }
  });

  it.each(cases)(
    '%s: under a mapping file (words of text fields, values of keyword and path fields)',
    async (q, _a, mappedPred) => {
      const r = await search(mapped, q);
      expect(r.status).toBe(200);
      expect(r.is.sort((a, b) => a - b)).toEqual(docs.filter(mappedPred).map((d) => d.i));
    },
  );

  it('an unclosed phrase is a 400 naming its position', async () => {
    const r = await postJson<{ error: { code: string; position: number } }>(`${auto.url}/search`, {
      query: { query: 'level:warn and "open' },
    });
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe('query_syntax');
    expect(r.body.error.position).toBe(15);
  });
});
