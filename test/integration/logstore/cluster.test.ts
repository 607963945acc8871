// The log store as a cluster of real processes on loopback: a proxy over 2 shards x 2 replicas answers every
// search-API request as a single-mode store holding the same documents does; failures give partial answers.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LogstoreProcess, bulk, ndjson, postJson, startLogstore } from '../../helpers/logstore.js';

const MAPPING = 'mapping-list:\n  - {name: level, type: keyword}\n  - {name: msg, type: text}\n  - {name: path, type: path}\n  - {name: size, type: keyword}\n  - {name: i, type: keyword}\n  - {name: svc, type: keyword}\n  - {name: extra, type: keyword}\n';
const base = Date.parse('2026-06-01T00:00:00Z');
const docs = Array.from({ length: 400 }, (_, i) => ({
  timestamp: new Date(base + i * 45_000).toISOString(), i, level: ['info', 'warn', 'error', 'debug'][i % 4], msg: `handled request ${i} in ${i % 7} ms`,
  path: `/api/v${i % 3 + 1}/items/${i % 5}`, size: (i * 37) % 1000, svc: `svc-${i % 6}`, ...(i % 9 === 0 ? {} : { extra: 'x' }),
}));

let single: LogstoreProcess;
let stores: LogstoreProcess[] = [];
let proxy: LogstoreProcess;

beforeAll(async () => {
  [single, ...stores] = await Promise.all([
    startLogstore({ mapping: MAPPING, storage: { frac_size: '8KB' } }),
    ...[0, 1, 2, 3].map(() => startLogstore({ mode: 'store', mapping: MAPPING, storage: { frac_size: '8KB', shards: 1 } })),
  ]);
  proxy = await startLogstore({ mode: 'proxy', mapping: MAPPING, cluster: { hot_stores: stores.map((s) => s.grpcAddr), hot_replicas: 2, request_timeout: '3s' } });
  // Several bulks, so that both shards get some.
  for (let k = 0; k < 8; k++) {
    const part = docs.slice(k * 50, k * 50 + 50);
    const [a, b] = await Promise.all([bulk(single.url, ndjson(part)), bulk(proxy.url, ndjson(part))]);
    expect(a.body.errors).toBe(false);
    expect(b.status).toBe(200);
    expect(b.body.errors, JSON.stringify(b.body.items.find((x) => Object.values(x)[0]!.error))).toBe(false);
  }
});

afterAll(async () => {
  await Promise.all([single, proxy, ...stores].filter(Boolean).map((p) => p.cleanup()));
});

type Doc = { id: string; time: string; data: Record<string, unknown> };
type Answer = { total: number; docs: Doc[]; aggs?: unknown; hist?: unknown; error?: { code: string; message: string }; partial_response?: boolean };

/** The answer without ids (each process makes its own), which must match between single mode and the proxy. */
function comparable(a: Answer): unknown {
  return { ...a, docs: a.docs?.map((d) => ({ time: d.time, data: d.data })) };
}

describe('proxy over 2 shards x 2 replicas', () => {
  it('spreads the bulks over both shards and both replicas of each hold them', async () => {
    const counts = await Promise.all(stores.map(async (s) => {
      const r = await fetch(`${proxy.url}/status`);
      expect(r.status).toBe(200);
      const st = (await r.json()) as { stores: { addr: string; docs: number; ok: boolean }[] };
      return st.stores.find((x) => x.addr === s.grpcAddr)!.docs;
    }));
    expect(counts[0]).toBe(counts[1]);
    expect(counts[2]).toBe(counts[3]);
    expect(counts[0]! + counts[2]!).toBe(docs.length);
    expect(counts[0]).toBeGreaterThan(0);
    expect(counts[2]).toBeGreaterThan(0);
  });

  const queries = [
    '', 'level:error', 'level:error or level:warn', 'level:error and not msg:request', 'msg:"request 42"', 'msg:handl*', 'path:/api/v2',
    'size:[100, 300]', 'size:(100, 300]', 'size:[* to 50]', 'i:in(1, 2, 3, 300)', '_exists_:extra', 'not _exists_:extra', 'svc:svc-* and not level:debug',
    '(level:info or level:debug) and path:/api/v1/items/3', '* | fields i, level', 'level:warn | fields except msg, path',
  ];
  for (const query of queries) {
    it(`search ${JSON.stringify(query)}: the same answer as single mode (desc, asc, offset)`, async () => {
      for (const body of [
        { query: { query }, size: 7, offset: 3 },
        { query: { query, from: new Date(base + 3_600_000).toISOString(), to: new Date(base + 10_800_000).toISOString() }, size: 5, order: 'asc' },
        { query: { query }, size: 1000, with_total: false },
      ]) {
        const [a, b] = await Promise.all([postJson<Answer>(`${single.url}/search`, body), postJson<Answer>(`${proxy.url}/search`, body)]);
        expect(a.status).toBe(200);
        expect(b.status).toBe(200);
        if (body.with_total === false) {
          expect(b.body.docs.map((d) => d.data)).toEqual(a.body.docs.map((d) => d.data));
        } else expect(comparable(b.body)).toEqual(comparable(a.body));
      }
    });
  }

  it('aggregations, histograms and complex search merge to the single-mode answer', async () => {
    const aggs = [
      { field: 'level', func: 'count' }, { field: 'size', func: 'sum', group_by: 'level' }, { field: 'size', func: 'min' }, { field: 'size', func: 'max', group_by: 'svc' },
      { field: 'size', func: 'avg', group_by: 'level' }, { field: 'size', func: 'quantile', quantiles: [0.5, 0.9, 0.99] }, { field: 'svc', func: 'unique', group_by: 'level' },
      { field: 'msg', func: 'count' }, { field: 'path', func: 'count' }, { field: 'level', func: 'count', interval: '1h' },
    ];
    for (const [route, body] of [
      ['/aggregate', { query: { query: 'not level:debug' }, aggs }],
      ['/histogram', { query: { query: 'level:error' }, interval: '30m' }],
      ['/complex-search', { query: { query: 'msg:request' }, size: 4, offset: 2, aggs, hist: { interval: '1h' } }],
    ] as const) {
      const [a, b] = await Promise.all([postJson<Answer>(`${single.url}${route}`, body), postJson<Answer>(`${proxy.url}${route}`, body)]);
      expect(a.status).toBe(200);
      expect(b.status).toBe(200);
      expect(comparable(b.body)).toEqual(comparable(a.body));
    }
  });

  it('bad requests get the same status and body as in single mode', async () => {
    for (const [route, body] of [
      ['/search', { query: { query: 'level:(' } }], ['/search', { query: { query: 'nosuch:x' } }], ['/search', { size: -1 }],
      ['/aggregate', { query: { query: '' } }], ['/histogram', { query: { query: '' }, interval: 'often' }], ['/fetch', { ids: 'x' }],
    ] as const) {
      const [a, b] = await Promise.all([postJson(`${single.url}${route}`, body), postJson(`${proxy.url}${route}`, body)]);
      expect(a.status).toBe(400);
      expect(b).toEqual(a);
    }
  });
});
