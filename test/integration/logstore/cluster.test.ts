// The log store as a cluster of real processes on loopback: a proxy over 2 shards x 2 replicas answers every
// search-API request as a single-mode store holding the same documents does; failures give partial answers.
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LogstoreProcess, ROOT, bulk, ndjson, postJson, startLogstore } from '../../helpers/logstore.js';

const MAPPING =
  'mapping-list:\n  - {name: level, type: keyword}\n  - {name: msg, type: text}\n  - {name: path, type: path}\n  - {name: size, type: keyword}\n  - {name: i, type: keyword}\n  - {name: svc, type: keyword}\n  - {name: extra, type: keyword}\n  - {name: ctx, type: object, mapping-list: [{name: user, type: keyword}, {name: tags, type: text}]}\n';
const base = Date.parse('2026-06-01T00:00:00Z');
const docs = Array.from({ length: 400 }, (_, i) => ({
  timestamp: new Date(base + i * 45_000).toISOString(),
  i,
  level: ['info', 'warn', 'error', 'debug'][i % 4],
  msg: `handled request ${i} in ${i % 7} ms`,
  path: `/api/v${(i % 3) + 1}/items/${i % 5}`,
  size: (i * 37) % 1000,
  svc: `svc-${i % 6}`,
  ...(i % 9 === 0 ? {} : { extra: 'x' }),
  // An object field (every 4th document has none), a keyword holding a literal '*', a text with one.
  ...(i % 4 === 1
    ? {}
    : { ctx: { user: i % 10 === 0 ? 'a*b' : `u-${i % 5}`, tags: i % 3 === 0 ? 'alpha beta*gamma' : 'alpha delta' } }),
}));

let single: LogstoreProcess;
let stores: LogstoreProcess[] = [];
let proxy: LogstoreProcess;

beforeAll(async () => {
  [single, ...stores] = await Promise.all([
    startLogstore({ mapping: MAPPING, storage: { frac_size: '8KB' } }),
    ...[0, 1, 2, 3].map(() =>
      startLogstore({ mode: 'store', mapping: MAPPING, storage: { frac_size: '8KB', shards: 1 } }),
    ),
  ]);
  proxy = await startLogstore({
    mode: 'proxy',
    mapping: MAPPING,
    cluster: { hot_stores: stores.map((s) => s.grpcAddr), hot_replicas: 2, request_timeout: '3s' },
  });
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
type Answer = {
  total: number;
  docs: Doc[];
  aggs?: unknown;
  hist?: unknown;
  error?: { code: string; message: string };
  partial_response?: boolean;
};

/** The answer without ids (each process makes its own), which must match between single mode and the proxy. */
function comparable(a: Answer): unknown {
  return { ...a, docs: a.docs?.map((d) => ({ time: d.time, data: d.data })) };
}

describe('proxy over 2 shards x 2 replicas', () => {
  it('spreads the bulks over both shards and both replicas of each hold them', async () => {
    const counts = await Promise.all(
      stores.map(async (s) => {
        const r = await fetch(`${proxy.url}/status`);
        expect(r.status).toBe(200);
        const st = (await r.json()) as { stores: { addr: string; docs: number; ok: boolean }[] };
        return st.stores.find((x) => x.addr === s.grpcAddr)!.docs;
      }),
    );
    expect(counts[0]).toBe(counts[1]);
    expect(counts[2]).toBe(counts[3]);
    expect(counts[0]! + counts[2]!).toBe(docs.length);
    expect(counts[0]).toBeGreaterThan(0);
    expect(counts[2]).toBeGreaterThan(0);
  });

  const queries = [
    '',
    'level:error',
    'level:error or level:warn',
    'level:error and not msg:request',
    'msg:"request 42"',
    'msg:handl*',
    'path:/api/v2',
    'size:[100, 300]',
    'size:(100, 300]',
    'size:[* to 50]',
    'i:in(1, 2, 3, 300)',
    '_exists_:extra',
    'not _exists_:extra',
    'svc:svc-* and not level:debug',
    '(level:info or level:debug) and path:/api/v1/items/3',
    '* | fields i, level',
    'level:warn | fields except msg, path',
    'msg:`request`',
    "level:'error' # a comment",
    'svc:in(svc-1, "svc-2", svc-5*)',
    'level:e*r',
    'svc:[svc-1, svc-3]',
    'size:[100 to *]',
    'level:INFO AND NOT svc:svc-0',
    'ctx.user:u-3',
    '_exists_:ctx.user',
    'not _exists_:ctx.user',
    'ctx.user:"a\\*b"',
    'ctx.user:a*',
    'ctx.tags:delta and level:warn',
    'ctx.user:u-* | fields ctx, i',
  ];
  it('the object-field and escaped-wildcard queries match what the documents hold, on both', async () => {
    const has = (i: number) => i % 4 !== 1;
    const expected: [string, (i: number) => boolean][] = [
      ['ctx.user:u-3', (i) => has(i) && i % 10 !== 0 && i % 5 === 3],
      ['ctx.user:"a\\*b"', (i) => has(i) && i % 10 === 0],
      ['_exists_:ctx.user', has],
      ['ctx.tags:delta', (i) => has(i) && i % 3 !== 0],
    ];
    for (const [query, match] of expected) {
      const want = docs.filter((d) => match(d.i)).length;
      expect(want, query).toBeGreaterThan(0);
      for (const url of [single.url, proxy.url]) {
        const r = await postJson<Answer>(`${url}/search`, { query: { query }, size: 0 });
        expect(r.body.total, `${query} on ${url}`).toBe(want);
      }
    }
  });

  for (const query of queries) {
    it(`search ${JSON.stringify(query)}: the same answer as single mode (desc, asc, offset)`, async () => {
      for (const body of [
        { query: { query }, size: 7, offset: 3 },
        {
          query: {
            query,
            from: new Date(base + 3_600_000).toISOString(),
            to: new Date(base + 10_800_000).toISOString(),
          },
          size: 5,
          order: 'asc',
        },
        { query: { query }, size: 1000, with_total: false },
      ]) {
        const [a, b] = await Promise.all([
          postJson<Answer>(`${single.url}/search`, body),
          postJson<Answer>(`${proxy.url}/search`, body),
        ]);
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
      { field: 'level', func: 'count' },
      { field: 'size', func: 'sum', group_by: 'level' },
      { field: 'size', func: 'min' },
      { field: 'size', func: 'max', group_by: 'svc' },
      { field: 'size', func: 'avg', group_by: 'level' },
      { field: 'size', func: 'quantile', quantiles: [0.5, 0.9, 0.99] },
      { field: 'svc', func: 'unique', group_by: 'level' },
      { field: 'msg', func: 'count' },
      { field: 'path', func: 'count' },
      { field: 'level', func: 'count', interval: '1h' },
    ];
    for (const [route, body] of [
      ['/aggregate', { query: { query: 'not level:debug' }, aggs }],
      ['/histogram', { query: { query: 'level:error' }, interval: '30m' }],
      ['/complex-search', { query: { query: 'msg:request' }, size: 4, offset: 2, aggs, hist: { interval: '1h' } }],
    ] as const) {
      const [a, b] = await Promise.all([
        postJson<Answer>(`${single.url}${route}`, body),
        postJson<Answer>(`${proxy.url}${route}`, body),
      ]);
      expect(a.status).toBe(200);
      expect(b.status).toBe(200);
      expect(comparable(b.body)).toEqual(comparable(a.body));
    }
  });

  it('bad requests get the same status and body as in single mode', async () => {
    for (const [route, body] of [
      ['/search', { query: { query: 'level:(' } }],
      ['/search', { query: { query: 'nosuch:x' } }],
      ['/search', { size: -1 }],
      ['/aggregate', { query: { query: '' } }],
      ['/histogram', { query: { query: '' }, interval: 'often' }],
      ['/fetch', { ids: 'x' }],
    ] as const) {
      const [a, b] = await Promise.all([
        postJson(`${single.url}${route}`, body),
        postJson(`${proxy.url}${route}`, body),
      ]);
      expect(a.status).toBe(400);
      expect(b).toEqual(a);
    }
  });
});

describe('async search, in single mode and through the proxy', () => {
  it('runs in the background with progress and ends with the complex-search answer; cancel, list and delete', async () => {
    const body = {
      query: { query: 'level:error or level:warn' },
      size: 6,
      offset: 1,
      aggs: [
        { field: 'level', func: 'count' },
        { field: 'size', func: 'avg', group_by: 'svc' },
      ],
      hist: { interval: '1h' },
    };
    for (const ls of [single, proxy]) {
      const started = await postJson<{ search_id: string }>(`${ls.url}/async-search`, body);
      expect(started.status).toBe(200);
      const id = started.body.search_id;
      let got: { status: string; progress: number; response: Answer } | undefined;
      for (let i = 0; i < 300; i++) {
        got = (await (await fetch(`${ls.url}/async-search/${id}`)).json()) as typeof got;
        if (got!.status !== 'in_progress') break;
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(got!.status).toBe('done');
      expect(got!.progress).toBe(1);
      const direct = await postJson<Answer>(`${ls.url}/complex-search`, body);
      expect(comparable(got!.response)).toEqual(comparable(direct.body));
      const list = (await (await fetch(`${ls.url}/async-search`)).json()) as { searches: { search_id: string }[] };
      expect(list.searches.map((s) => s.search_id)).toContain(id);
      const cancel = await fetch(`${ls.url}/async-search/${id}/cancel`, { method: 'POST' });
      expect(cancel.status).toBe(200);
      expect((await fetch(`${ls.url}/async-search/${id}`, { method: 'DELETE' })).status).toBe(200);
      const gone = await fetch(`${ls.url}/async-search/${id}`);
      expect(gone.status).toBe(404);
      expect(((await gone.json()) as { error: { code: string } }).error.code).toBe('not_found');
      const bad = await postJson<{ error: { code: string } }>(`${ls.url}/async-search`, {
        query: { query: 'level:(' },
      });
      expect(bad.status).toBe(400);
      expect(bad.body.error.code).toBe('query_syntax');
    }
  });
});

describe('the public gRPC API (api.proto), on the proxy and on a single-mode store', () => {
  type Call = (req: unknown, opts: grpc.CallOptions, cb: (err: grpc.ServiceError | null, res: any) => void) => void;
  const clients: grpc.Client[] = [];
  const api = (addr: string) => {
    const def = protoLoader.loadSync(path.join(ROOT, 'proto', 'logstore', 'api.proto'), {
      keepCase: true,
      longs: Number,
      enums: String,
      defaults: true,
    });
    const Ctor = (grpc.loadPackageDefinition(def) as any).tidepool.logstore.api.v1
      .LogstoreApi as grpc.ServiceClientConstructor;
    const c = new Ctor(addr, grpc.credentials.createInsecure());
    clients.push(c);
    const unary = (m: string, req: unknown) =>
      new Promise<any>((resolve, reject) =>
        (c[m] as Call).call(c, req, { deadline: Date.now() + 20_000 }, (e, r) => (e ? reject(e) : resolve(r))),
      );
    const stream = (m: string, req: unknown) =>
      new Promise<any[]>((resolve, reject) => {
        const out: any[] = [];
        const s = (c[m] as (r: unknown, o: grpc.CallOptions) => grpc.ClientReadableStream<unknown>).call(c, req, {
          deadline: Date.now() + 20_000,
        });
        s.on('data', (d) => out.push(d));
        s.on('error', reject);
        s.on('end', () => resolve(out));
      });
    return { unary, stream };
  };
  afterAll(() => {
    for (const c of clients) c.close();
  });

  it('Search, ComplexSearch, GetAggregation, GetHistogram answer as the HTTP API does, documents as bytes', async () => {
    for (const ls of [single, proxy]) {
      const g = api(ls.grpcAddr);
      const http = await postJson<Answer>(`${ls.url}/search`, {
        query: { query: 'level:warn' },
        size: 5,
        offset: 2,
        order: 'asc',
      });
      const r = await g.unary('Search', { query: { query: 'level:warn' }, size: 5, offset: 2, order: 'ORDER_ASC' });
      expect(r.total).toBe(http.body.total);
      expect(r.partial_response).toBe(false);
      expect(r.error.code).toBe('ERROR_CODE_NO');
      expect(
        r.docs.map((d: { id: string; data: Buffer; time: string }) => ({
          id: d.id,
          time: d.time,
          data: JSON.parse(d.data.toString('utf8')),
        })),
      ).toEqual(http.body.docs);
      const aggs = [
        { field: 'size', func: 'quantile', quantiles: [0.5, 0.95] },
        { field: 'level', func: 'count', interval: '2h' },
      ];
      const cx = await g.unary('ComplexSearch', {
        query: { query: 'msg:request' },
        size: 3,
        aggs,
        hist_interval: '1h',
      });
      const hcx = await postJson<
        Answer & {
          aggs: { buckets: { key: string; value: number; quantiles?: number[]; ts?: string }[] }[];
          hist: { buckets: unknown[] };
        }
      >(`${ls.url}/complex-search`, { query: { query: 'msg:request' }, size: 3, aggs, hist: { interval: '1h' } });
      expect(cx.total).toBe(hcx.body.total);
      expect(cx.hist.buckets).toEqual(hcx.body.hist.buckets);
      expect(
        cx.aggs.map((a: { buckets: { key: string; value: number }[] }) => a.buckets.map((b) => [b.key, b.value])),
      ).toEqual(hcx.body.aggs.map((a) => a.buckets.map((b) => [b.key, b.value])));
      const agg = await g.unary('GetAggregation', { query: { query: '' }, aggs: [{ field: 'svc', func: 'count' }] });
      expect(agg.aggs[0].buckets).toHaveLength(6);
      const hist = await g.unary('GetHistogram', { query: { query: 'level:info' }, interval: '1h' });
      expect(hist.hist.buckets.reduce((s: number, b: { doc_count: number }) => s + b.doc_count, 0)).toBe(100);
      await expect(g.unary('Search', { query: { query: 'level:(' } })).rejects.toMatchObject({
        code: grpc.status.INVALID_ARGUMENT,
        details: expect.stringMatching(/position/),
      });
    }
  });

  it('Fetch and Export stream documents; Mapping and Status describe the store; async search over gRPC', async () => {
    for (const ls of [single, proxy]) {
      const g = api(ls.grpcAddr);
      const some = await postJson<Answer>(`${ls.url}/search`, { query: { query: 'level:debug' }, size: 4 });
      const fetched = await g.stream('Fetch', { ids: some.body.docs.map((d) => d.id), fields: ['i'] });
      expect(fetched.map((d) => [d.id, JSON.parse(d.data.toString())])).toEqual(
        some.body.docs.map((d) => [d.id, { i: d.data.i }]),
      );
      const exported = await g.stream('Export', { query: { query: 'level:debug' } });
      expect(exported).toHaveLength(100);
      expect(await g.stream('Export', { query: { query: 'level:debug' }, size: 7 })).toHaveLength(7);
      const m = await g.unary('Mapping', {});
      expect(m.fields.find((f: { name: string }) => f.name === 'msg').types).toEqual(['text']);
      const st = await g.unary('Status', {});
      expect(st.mode).toBe(ls === proxy ? 'proxy' : 'single');
      expect(st.docs).toBe(docs.length);
      if (ls === proxy)
        expect(st.stores.map((s: { addr: string }) => s.addr).sort()).toEqual(stores.map((s) => s.grpcAddr).sort());
      const { search_id } = await g.unary('StartAsyncSearch', {
        query: { query: 'level:info' },
        size: 3,
        aggs: [{ field: 'level', func: 'count' }],
      });
      let res: any;
      for (let i = 0; i < 300; i++) {
        res = await g.unary('FetchAsyncSearchResult', { search_id });
        if (res.info.status !== 'in_progress') break;
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(res.info.status).toBe('done');
      expect(res.response.total).toBe(100);
      expect(res.response.docs).toHaveLength(3);
      expect(
        (await g.unary('GetAsyncSearchesList', {})).searches.map((s: { search_id: string }) => s.search_id),
      ).toContain(search_id);
      await g.unary('DeleteAsyncSearch', { search_id });
      await expect(g.unary('FetchAsyncSearchResult', { search_id })).rejects.toMatchObject({
        code: grpc.status.NOT_FOUND,
      });
    }
  });
});

describe('bulk answers through the proxy', () => {
  it('per-item errors, gzip and the Elasticsearch shape are those of single mode', async () => {
    const body =
      [
        '{"index":{"_index":"web"}}',
        JSON.stringify({ timestamp: new Date(base - 86_400_000).toISOString(), level: 'info', msg: 'late one' }),
        '{"create":{}}',
        '{"level": broken json',
        '{"index":{}}',
        '[1, 2]',
        '{"index":{}}',
        JSON.stringify({ level: 'warn', msg: 'fine' }),
        '{"delete":{"_id":"x"}}',
        '',
        '{"index":{}}',
        JSON.stringify({ level: 'error', msg: 'also fine' }),
      ].join('\n') + '\n';
    const norm = (r: Awaited<ReturnType<typeof bulk>>) => ({
      status: r.status,
      errors: r.body.errors,
      items: r.body.items.map((it) =>
        Object.fromEntries(Object.entries(it).map(([k, v]) => [k, { ...v, _id: v._id === null ? null : 'id' }])),
      ),
    });
    for (const [b, h] of [
      [body, {}],
      [gzipSync(body), { 'content-encoding': 'gzip' }],
    ] as const) {
      const [a, p] = await Promise.all([bulk(single.url, b, h), bulk(proxy.url, b, h)]);
      expect(a.body.errors).toBe(true);
      expect(norm(p)).toEqual(norm(a));
    }
    const bad = await Promise.all([
      bulk(single.url, Buffer.from('not gzip'), { 'content-encoding': 'gzip' }),
      bulk(proxy.url, Buffer.from('not gzip'), { 'content-encoding': 'gzip' }),
    ]);
    expect(bad[0].status).toBe(400);
    expect(bad[1]).toEqual(bad[0]);
  });
});

describe('Elasticsearch behaviour through the proxy, as in single mode', () => {
  type Item = Record<string, { status: number; _id: string | null; result?: string; error?: { type: string } }>;
  const items = (r: Awaited<ReturnType<typeof bulk>>) =>
    (r.body.items as unknown as Item[]).map((it) =>
      Object.fromEntries(
        Object.entries(it).map(([k, v]) => [
          k,
          { status: v.status, result: v.result, error: v.error?.type, _id: v._id },
        ]),
      ),
    );
  const both = async (body: string) => {
    const [a, b] = await Promise.all([bulk(single.url, body), bulk(proxy.url, body)]);
    expect(a.status).toBe(200);
    expect(b.status).toBe(200);
    return [items(a), items(b)] as const;
  };
  const idsBody = (op: 'index' | 'create', ids: string[]) =>
    ids
      .map(
        (id, k) =>
          `{"${op}":{"_id":${JSON.stringify(id)}}}\n${JSON.stringify({ level: 'info', msg: `client id doc ${k}`, svc: 'ids', timestamp: new Date(base - 7 * 86_400_000 + k).toISOString() })}\n`,
      )
      .join('');

  it('client _id: create twice answers 201 then 409, index twice keeps one document (noop), over both shards', async () => {
    const ids = Array.from({ length: 40 }, (_, k) => `client-${k}-${'é'.repeat(k % 3)}`);
    const [a1, b1] = await both(idsBody('create', ids));
    expect(a1.every((it) => it.create!.status === 201)).toBe(true);
    expect(b1).toEqual(a1);
    const [a2, b2] = await both(idsBody('create', ids));
    expect(
      a2.every((it) => it.create!.status === 409 && it.create!.error === 'version_conflict_engine_exception'),
    ).toBe(true);
    expect(b2).toEqual(a2);
    const [a3, b3] = await both(idsBody('index', ids));
    expect(a3.every((it) => it.index!.status === 200 && it.index!.result === 'noop')).toBe(true);
    expect(b3).toEqual(a3);
    // The ids were spread over both shards of the cluster, and each is stored once.
    const r = await postJson<Answer>(`${proxy.url}/search`, { query: { query: 'svc:ids' }, size: 100 });
    expect(r.body.total).toBe(ids.length);
    expect(new Set(r.body.docs.map((d) => d.id.slice(12, 14)))).toEqual(new Set(['00', '01']));
    expect(new Set(r.body.docs.map((d) => d.data._id))).toEqual(new Set(ids));
  });

  it('_count and _search (query DSL, translated to seq-ql for the stores) answer as single mode', async () => {
    const strip = (x: Record<string, unknown>) => {
      const { took: _t, ...rest } = x;
      const hits = rest.hits as { hits: { _id: string; _source: Record<string, unknown> }[] } | undefined;
      // Ids made by each process differ, and so do the times of documents stored without one (ingest time).
      return hits
        ? {
            ...rest,
            hits: {
              ...hits,
              hits: hits.hits.map((h) => ({ ...h, _id: h._id.length === 24 ? 'generated' : h._id, sort: undefined })),
            },
          }
        : rest;
    };
    for (const [p, body] of [
      [
        '/_count',
        { query: { bool: { filter: [{ term: { level: 'error' } }, { range: { size: { gte: 100, lt: 700 } } }] } } },
      ],
      ['/_count', { query: { match: { msg: 'request 42' } } }],
      ['/logs/_search', { query: { bool: { must_not: [{ exists: { field: 'extra' } }] } }, size: 5 }],
      [
        '/logs/_search',
        { query: { query_string: { query: 'level:warn AND svc:svc-3' } }, size: 3, sort: [{ timestamp: 'asc' }] },
      ],
      ['/logs/_search', { query: { terms: { svc: ['ids', 'svc-1'] } }, size: 4, _source: ['level', 'svc'] }],
    ] as const) {
      const [a, b] = await Promise.all([
        postJson<Record<string, unknown>>(`${single.url}${p}`, body),
        postJson<Record<string, unknown>>(`${proxy.url}${p}`, body),
      ]);
      expect(a.status).toBe(200);
      expect(b.status).toBe(200);
      const sa = strip(a.body) as Record<string, unknown>;
      const sb = strip(b.body) as Record<string, unknown>;
      // _shards counts the cluster's shards through the proxy and the local shard threads in single mode.
      expect({ ...sb, _shards: undefined }).toEqual({ ...sa, _shards: undefined });
      expect(sb._shards).toEqual({ total: 2, successful: 2, skipped: 0, failed: 0 });
    }
  });
});
