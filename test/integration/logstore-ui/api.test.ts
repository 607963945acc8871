// The UI backend's /api/v1 over a real single-mode log store: every endpoint against answers computed here, every limit, tail, saved queries, gRPC.
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uiService } from '../../../src/logstore/ui-backend/grpc-service.js';
import { bulk, ndjson, startLogstore, type LogstoreProcess } from '../../helpers/logstore.js';
import { api, startUi, type UiProcess } from '../../helpers/logstore-ui.js';

const N = 480;
const SERVICES = ['api', 'db', 'web', 'auth'];
const LEVELS = ['info', 'warn', 'error'];
const STEP = 5_000;
// Minute-aligned, an hour ago: every document is inside the store's accepted time window.
const T0 = Math.floor((Date.now() - 3_600_000) / 600_000) * 600_000;
const FROM = new Date(T0 - 60_000).toISOString();
const TO = new Date(T0 + N * STEP + 60_000).toISOString();

interface Doc {
  timestamp: string;
  service: string;
  level: string;
  latency: string;
  n: string;
  message: string;
}
const docs: Doc[] = Array.from({ length: N }, (_, i) => ({
  timestamp: new Date(T0 + i * STEP).toISOString(),
  service: SERVICES[i % 4]!,
  level: LEVELS[i % 3]!,
  latency: String((i * 7) % 97),
  n: String(i),
  message: `request ${i} done`,
}));

let store: LogstoreProcess;
let ui: UiProcess;

beforeAll(async () => {
  store = await startLogstore();
  const r = await bulk(store.url, ndjson(docs));
  expect(r.body.errors).toBe(false);
  ui = await startUi({
    logstoreAddrs: [store.grpcAddr],
    limits: {
      max_search_limit: 200,
      max_search_offset_limit: 300,
      max_search_total_limit: 400,
      max_aggregations_per_request: 3,
      max_export_limit: 1000,
      cli_max_search_limit: 450,
    },
  });
}, 120_000);

afterAll(async () => {
  await ui?.cleanup();
  await store?.cleanup();
});

const byTimeDesc = (a: Doc, b: Doc) => (a.timestamp < b.timestamp ? 1 : -1);
const nOf = (e: { data: { n: string } }) => Number(e.data.n);

describe('search, fields, events', () => {
  it('GET /fields lists the mapping', async () => {
    const r = await api(ui, 'GET', '/fields');
    expect(r.status).toBe(200);
    const names = r.body.fields.map((f: { name: string }) => f.name);
    for (const f of ['service', 'level', 'latency', 'message', 'n']) expect(names).toContain(f);
    expect(r.body.fields.find((f: { name: string }) => f.name === 'service').type).toBe('keyword');
  });

  it('POST /search: total, newest first, limit, offset, asc', async () => {
    const expected = docs.filter((d) => d.service === 'db').sort(byTimeDesc);
    const r = await api(ui, 'POST', '/search', { query: 'service:db', from: FROM, to: TO, limit: 10 });
    expect(r.status).toBe(200);
    expect(r.body.total).toBe(expected.length);
    expect(r.body.partial_response).toBe(false);
    expect(r.body.events.map(nOf)).toEqual(expected.slice(0, 10).map((d) => Number(d.n)));
    expect(r.body.events[0].data).toEqual(expected[0]);
    expect(r.body.events[0].time).toBe(expected[0]!.timestamp);
    expect(r.body.events[0].id).toMatch(/^[0-9a-f]{24}$/);
    const page = await api(ui, 'POST', '/search', { query: 'service:db', from: FROM, to: TO, limit: 5, offset: 5 });
    expect(page.body.events.map(nOf)).toEqual(expected.slice(5, 10).map((d) => Number(d.n)));
    const asc = await api(ui, 'POST', '/search', {
      query: 'service:db and level:error',
      from: FROM,
      to: TO,
      limit: 3,
      order: 'asc',
    });
    expect(asc.body.events.map(nOf)).toEqual(
      docs
        .filter((d) => d.service === 'db' && d.level === 'error')
        .slice(0, 3)
        .map((d) => Number(d.n)),
    );
  });

  it('POST /search with a histogram and aggregations in one answer', async () => {
    const r = await api(ui, 'POST', '/search', {
      query: 'level:warn',
      from: FROM,
      to: TO,
      limit: 1,
      histogram: { interval: '10m' },
      aggregations: [{ field: 'service', func: 'count' }],
    });
    expect(r.status).toBe(200);
    const warn = docs.filter((d) => d.level === 'warn');
    const hist = new Map<string, number>();
    for (const d of warn) {
      const b = new Date(Math.floor(Date.parse(d.timestamp) / 600_000) * 600_000).toISOString();
      hist.set(b, (hist.get(b) ?? 0) + 1);
    }
    const got = new Map<string, number>(
      r.body.histogram.buckets
        .filter((b: { doc_count: number }) => b.doc_count > 0)
        .map((b: { ts: string; doc_count: number }) => [b.ts, b.doc_count]),
    );
    expect(got).toEqual(hist);
    const counts = Object.fromEntries(SERVICES.map((s) => [s, warn.filter((d) => d.service === s).length]));
    expect(
      Object.fromEntries(r.body.aggregations[0].buckets.map((b: { key: string; value: number }) => [b.key, b.value])),
    ).toEqual(counts);
  });

  it('GET /events/{id}: the document, 404 for an unknown id, 400 for a malformed one', async () => {
    const s = await api(ui, 'POST', '/search', { query: 'n:123', from: FROM, to: TO, limit: 1 });
    const id = s.body.events[0].id as string;
    const r = await api(ui, 'GET', `/events/${id}`);
    expect(r.status).toBe(200);
    expect(r.body.event).toEqual({ id, data: docs[123], time: docs[123]!.timestamp });
    const missing = await api(ui, 'GET', `/events/${'0'.repeat(24)}`);
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe('not_found');
    const bad = await api(ui, 'GET', '/events/xyz');
    expect(bad.status).toBe(400);
  });

  it('a seq-ql syntax error is a 400 with its position; a bad time a 400 naming the field', async () => {
    const r = await api(ui, 'POST', '/search', { query: 'service:db and (level:', from: FROM, to: TO });
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe('query_syntax');
    expect(r.body.error.position).toBe(22);
    const t = await api(ui, 'POST', '/search', { query: '*', from: 'yesterday' });
    expect(t.status).toBe(400);
    expect(t.body.error.field).toBe('from');
  });
});

describe('aggregations, histogram, context, status', () => {
  it('POST /aggregation: count, sum, avg, quantile per group', async () => {
    const r = await api(ui, 'POST', '/aggregation', {
      query: '*',
      from: FROM,
      to: TO,
      aggregations: [
        { field: 'latency', func: 'sum', group_by: 'service' },
        { field: 'latency', func: 'avg', group_by: 'level' },
        { field: 'latency', func: 'quantile', quantiles: [0.5, 0.9] },
      ],
    });
    expect(r.status).toBe(200);
    expect(r.body.total).toBe(N);
    const lat = (d: Doc) => Number(d.latency);
    const sums = Object.fromEntries(
      SERVICES.map((s) => [s, docs.filter((d) => d.service === s).reduce((a, d) => a + lat(d), 0)]),
    );
    expect(
      Object.fromEntries(r.body.aggregations[0].buckets.map((b: { key: string; value: number }) => [b.key, b.value])),
    ).toEqual(sums);
    for (const b of r.body.aggregations[1].buckets as { key: string; value: number }[]) {
      const group = docs.filter((d) => d.level === b.key);
      expect(b.value).toBeCloseTo(group.reduce((a, d) => a + lat(d), 0) / group.length, 6);
    }
    const sorted = docs.map(lat).sort((a, b) => a - b);
    const rank = (q: number) => sorted[Math.max(0, Math.ceil(q * sorted.length) - 1)];
    expect(r.body.aggregations[2].buckets[0].quantiles).toEqual([rank(0.5), rank(0.9)]);
  });

  it('POST /aggregation with size: the largest buckets only, and how many there were (value completion, top values)', async () => {
    const r = await api(ui, 'POST', '/aggregation', {
      query: '*',
      from: FROM,
      to: TO,
      size: 5,
      aggregations: [{ field: 'latency', func: 'count' }],
    });
    expect(r.status).toBe(200);
    const counts = new Map<string, number>();
    for (const d of docs) counts.set(d.latency, (counts.get(d.latency) ?? 0) + 1);
    const expected = [...counts].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).slice(0, 5);
    expect(r.body.aggregations[0].buckets.map((b: { key: string; value: number }) => [b.key, b.value])).toEqual(
      expected,
    );
    expect(r.body.aggregations[0].buckets_total).toBe(counts.size);
    const bad = await api(ui, 'POST', '/aggregation', {
      query: '*',
      size: 0,
      aggregations: [{ field: 'latency', func: 'count' }],
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error.field).toBe('size');
  });

  it('POST /aggregation_ts: one series per group, points summing to the counts', async () => {
    const r = await api(ui, 'POST', '/aggregation_ts', {
      query: '*',
      from: FROM,
      to: TO,
      interval: '10m',
      aggregations: [{ field: 'level', func: 'count' }],
    });
    expect(r.status).toBe(200);
    const series = r.body.aggregations[0].series as { key: string; points: { ts: string; value: number }[] }[];
    expect(series.map((s) => s.key).sort()).toEqual([...LEVELS].sort());
    for (const s of series) {
      expect(s.points.reduce((a, p) => a + p.value, 0)).toBe(docs.filter((d) => d.level === s.key).length);
      const ts = s.points.map((p) => p.ts);
      expect(ts).toEqual([...ts].sort());
    }
    const missing = await api(ui, 'POST', '/aggregation_ts', {
      query: '*',
      aggregations: [{ field: 'level', func: 'count' }],
    });
    expect(missing.status).toBe(400);
  });

  it('POST /histogram counts every match per bucket', async () => {
    const r = await api(ui, 'POST', '/histogram', { query: 'service:web', from: FROM, to: TO, interval: '5m' });
    expect(r.status).toBe(200);
    expect(r.body.total).toBe(N / 4);
    expect(r.body.histogram.buckets.reduce((a: number, b: { doc_count: number }) => a + b.doc_count, 0)).toBe(N / 4);
    const bad = await api(ui, 'POST', '/histogram', { query: '*', interval: 'often' });
    expect(bad.status).toBe(400);
    expect(bad.body.error.field).toBe('interval');
  });

  it('POST /context: the documents around one, and within the same service', async () => {
    const s = await api(ui, 'POST', '/search', { query: 'n:200', from: FROM, to: TO, limit: 1 });
    const id = s.body.events[0].id;
    const r = await api(ui, 'POST', '/context', { id, before: 3, after: 2 });
    expect(r.status).toBe(200);
    expect(r.body.event.data.n).toBe('200');
    expect(r.body.before.map(nOf)).toEqual([197, 198, 199]);
    expect(r.body.after.map(nOf)).toEqual([201, 202]);
    const same = await api(ui, 'POST', '/context', { id, before: 2, after: 2, field: 'service' });
    expect(same.body.before.map(nOf)).toEqual([192, 196]);
    expect(same.body.after.map(nOf)).toEqual([204, 208]);
    const first = await api(ui, 'POST', '/search', { query: 'n:0', from: FROM, to: TO, limit: 1 });
    const edge = await api(ui, 'POST', '/context', { id: first.body.events[0].id, before: 5, after: 1 });
    expect(edge.body.before).toEqual([]);
    expect(edge.body.after.map(nOf)).toEqual([1]);
  });

  it('GET /status and GET /limits', async () => {
    const s = await api(ui, 'GET', '/status');
    expect(s.status).toBe(200);
    expect(s.body.status).toBe('ok');
    expect(s.body.logstore.mode).toBe('single');
    expect(s.body.logstore.docs).toBe(N);
    expect(s.body.logstore_addrs).toEqual([store.grpcAddr]);
    const l = await api(ui, 'GET', '/limits');
    expect(l.body).toEqual({
      cli_max_search_limit: 450,
      max_search_limit: 200,
      max_search_total_limit: 400,
      max_search_offset_limit: 300,
      max_export_limit: 1000,
      max_parallel_export_requests: 2,
      max_aggregations_per_request: 3,
    });
  });
});

describe('limits: a 400 naming the limit and its value', () => {
  const cases: [string, Record<string, unknown>, string, number, Record<string, string>?][] = [
    ['limit', { limit: 201 }, 'max_search_limit', 200],
    ['limit of the command-line client', { limit: 451 }, 'cli_max_search_limit', 450, { 'x-tidepool-client': 'cli' }],
    ['offset', { offset: 301, limit: 1 }, 'max_search_offset_limit', 300],
    ['offset + limit', { offset: 250, limit: 151 }, 'max_search_total_limit', 400],
    [
      'aggregations',
      { aggregations: [{ field: 'service' }, { field: 'level' }, { field: 'n' }, { field: 'latency' }] },
      'max_aggregations_per_request',
      3,
    ],
  ];
  for (const [what, body, limit, value, headers] of cases) {
    it(what, async () => {
      const r = await api(ui, 'POST', '/search', { query: '*', from: FROM, to: TO, ...body }, headers);
      expect(r.status).toBe(400);
      expect(r.body.error).toMatchObject({ code: 'limit_exceeded', limit, value });
      expect(r.body.error.message).toContain(limit);
      expect(r.body.error.message).toContain(String(value));
    });
  }

  it('the limits just at their value pass', async () => {
    expect((await api(ui, 'POST', '/search', { query: '*', from: FROM, to: TO, limit: 200, offset: 200 })).status).toBe(
      200,
    );
    expect((await api(ui, 'POST', '/search', { query: '*', limit: 450 }, { 'x-tidepool-client': 'cli' })).status).toBe(
      400,
    );
    expect((await api(ui, 'POST', '/search', { query: '*', limit: 400 }, { 'x-tidepool-client': 'cli' })).status).toBe(
      200,
    );
  });

  it('export size, aggregation count and context size', async () => {
    const e = await api(ui, 'POST', '/export', { query: '*', limit: 1001 });
    expect(e.body.error).toMatchObject({ code: 'limit_exceeded', limit: 'max_export_limit', value: 1000 });
    const a = await api(ui, 'POST', '/aggregation', {
      query: '*',
      aggregations: [{ field: 'a' }, { field: 'b' }, { field: 'c' }, { field: 'd' }],
    });
    expect(a.body.error).toMatchObject({ code: 'limit_exceeded', limit: 'max_aggregations_per_request', value: 3 });
    const c = await api(ui, 'POST', '/context', { id: '0'.repeat(24), before: 201 });
    expect(c.body.error).toMatchObject({ code: 'limit_exceeded', limit: 'max_search_limit', value: 200 });
    const m = await fetch(`${ui.debugUrl}/metrics`).then((res) => res.text());
    expect(m).toMatch(/tidepool_logstore_ui_limit_rejections_total\{limit="max_export_limit"\} [1-9]/);
  });
});

describe('export', () => {
  it('JSON lines: every match as {id, time, data}', async () => {
    const res = await fetch(`${ui.url}/api/v1/export`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: 'service:auth', from: FROM, to: TO, format: 'jsonl' }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-disposition')).toMatch(/attachment; filename="export-.*\.jsonl"/);
    const lines = (await res.text())
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    const expected = docs.filter((d) => d.service === 'auth').sort(byTimeDesc);
    expect(lines.map((l) => l.data)).toEqual(expected);
  });

  it('CSV with the chosen columns; without fields a 400', async () => {
    const res = await fetch(`${ui.url}/api/v1/export`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        query: 'level:error and service:api',
        from: FROM,
        to: TO,
        format: 'csv',
        fields: ['_time', 'n', 'message'],
        limit: 5,
      }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/csv');
    const rows = (await res.text()).trimEnd().split('\r\n');
    const expected = docs
      .filter((d) => d.level === 'error' && d.service === 'api')
      .sort(byTimeDesc)
      .slice(0, 5);
    expect(rows).toEqual(['_time,n,message', ...expected.map((d) => `${d.timestamp},${d.n},${d.message}`)]);
    const bad = await api(ui, 'POST', '/export', { query: '*', format: 'csv' });
    expect(bad.status).toBe(400);
    expect(bad.body.error.field).toBe('fields');
  });
});

describe('live tail', () => {
  it('GET /tail streams documents ingested while it is open, once each, and only matching ones', async () => {
    const ctrl = new AbortController();
    const res = await fetch(`${ui.url}/api/v1/tail?query=${encodeURIComponent('service:tailed')}`, {
      signal: ctrl.signal,
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    const reader = res.body!.getReader();
    let text = '';
    const events: { data: { k: string } }[] = [];
    const readUntil = async (pred: () => boolean) => {
      const deadline = Date.now() + 20_000;
      while (!pred()) {
        if (Date.now() > deadline) throw new Error(`tail: not there in 20 s; got:\n${text}`);
        const { value, done } = await reader.read();
        if (done) throw new Error('tail stream ended');
        text += new TextDecoder().decode(value);
        let i;
        while ((i = text.indexOf('\n\n')) >= 0) {
          const block = text.slice(0, i);
          text = text.slice(i + 2);
          if (block.startsWith('id: ')) events.push(JSON.parse(/\ndata: (.*)/.exec(block)![1]!));
          else if (block.startsWith('event: open')) events.length = events.length;
        }
      }
    };
    await new Promise((r) => setTimeout(r, 300));
    const now = Date.now();
    const fresh = [0, 1, 2].map((k) => ({ timestamp: new Date(now + k).toISOString(), service: 'tailed', k: `a${k}` }));
    await bulk(store.url, ndjson([...fresh, { timestamp: new Date(now).toISOString(), service: 'other', k: 'x' }]));
    await readUntil(() => events.length >= 3);
    const more = [3, 4].map((k) => ({
      timestamp: new Date(Date.now() + k).toISOString(),
      service: 'tailed',
      k: `b${k}`,
    }));
    await bulk(store.url, ndjson(more));
    await readUntil(() => events.length >= 5);
    // A few more polls: nothing is sent twice.
    await new Promise((r) => setTimeout(r, 800));
    ctrl.abort();
    expect(events.map((e) => e.data.k)).toEqual(['a0', 'a1', 'a2', 'b3', 'b4']);
  });
});

describe('saved queries, per user name', () => {
  it('save, list per user, replace by name, delete; no user is a 400', async () => {
    const alice = { 'x-tidepool-user': 'alice' };
    const saved = await api(
      ui,
      'POST',
      '/saved_queries',
      { name: 'errors', query: 'level:error', view: { range: '1h', columns: ['service'] } },
      alice,
    );
    expect(saved.status).toBe(200);
    await api(ui, 'POST', '/saved_queries', { name: 'db', query: 'service:db' }, alice);
    await api(ui, 'POST', '/saved_queries', { name: 'errors', query: 'level:error and service:api', view: {} }, alice);
    const list = await api(ui, 'GET', '/saved_queries', undefined, alice);
    expect(list.body.saved_queries.map((q: { name: string; query: string }) => [q.name, q.query])).toEqual([
      ['db', 'service:db'],
      ['errors', 'level:error and service:api'],
    ]);
    expect(
      (await api(ui, 'GET', '/saved_queries', undefined, { 'x-tidepool-user': 'bob' })).body.saved_queries,
    ).toEqual([]);
    expect((await api(ui, 'GET', '/saved_queries')).status).toBe(400);
    expect((await api(ui, 'POST', '/saved_queries', { name: 'x', query: 'a:(' }, alice)).body.error.code).toBe(
      'query_syntax',
    );
    expect(
      (await api(ui, 'DELETE', `/saved_queries/${saved.body.saved_query.id}`, undefined, { 'x-tidepool-user': 'bob' }))
        .status,
    ).toBe(404);
    expect((await api(ui, 'DELETE', `/saved_queries/${saved.body.saved_query.id}`, undefined, alice)).status).toBe(200);
    expect(
      (await api(ui, 'GET', '/saved_queries', undefined, alice)).body.saved_queries.map(
        (q: { name: string }) => q.name,
      ),
    ).toEqual(['db']);
  });
});

describe('the same API over gRPC, and the debug listener', () => {
  let client: grpc.Client & Record<string, any>;
  beforeAll(() => {
    const Ctor = uiService();
    client = new Ctor(ui.grpcAddr, grpc.credentials.createInsecure()) as grpc.Client & Record<string, any>;
  });
  afterAll(() => client?.close());
  const call = <T>(method: string, req: unknown) =>
    new Promise<T>((resolve, reject) =>
      client[method](req, (err: Error | null, res: T) => (err ? reject(err) : resolve(res))),
    );

  it('Search answers as POST /search does', async () => {
    const body = { query: 'service:web and level:info', from: FROM, to: TO, limit: 7 };
    const http = await api(ui, 'POST', '/search', body);
    const g = await call<{ total: number; events: { id: string; data: string; time: string }[] }>('Search', body);
    expect(g.total).toBe(http.body.total);
    expect(g.events.map((e) => ({ ...e, data: JSON.parse(e.data) }))).toEqual(http.body.events);
  });

  it('a limit is INVALID_ARGUMENT naming it; GetLimits; Export streams CSV', async () => {
    await expect(call('Search', { query: '*', limit: 201 })).rejects.toMatchObject({
      code: grpc.status.INVALID_ARGUMENT,
      details: expect.stringContaining('max_search_limit (200)'),
    });
    expect(await call('GetLimits', {})).toMatchObject({ max_search_limit: 200, max_export_limit: 1000 });
    const chunks: Buffer[] = [];
    await new Promise<void>((resolve, reject) => {
      const s = client.Export({ query: 'service:db', from: FROM, to: TO, format: 'csv', fields: ['n'] });
      s.on('data', (c: { data: Buffer }) => chunks.push(c.data));
      s.on('error', reject);
      s.on('end', resolve);
    });
    const rows = Buffer.concat(chunks).toString().trimEnd().split('\r\n');
    expect(rows.length).toBe(1 + N / 4);
    expect(rows[0]).toBe('n');
  });

  it('/metrics and /health on the debug address; the explorer shell for other paths', async () => {
    expect(await fetch(`${ui.debugUrl}/health`).then((r) => r.json())).toEqual({ status: 'ok' });
    const m = await fetch(`${ui.debugUrl}/metrics`).then((r) => r.text());
    expect(m).toMatch(/tidepool_logstore_ui_requests_total\{route="\/api\/v1\/search",status="200"\} [1-9]/);
    expect(m).toMatch(/tidepool_logstore_ui_logstore_calls_total\{method="ComplexSearch",result="ok"\} [1-9]/);
    const page = await fetch(`${ui.url}/some/view?q=1`);
    expect(page.headers.get('content-type')).toContain('text/html');
    const none = await api(ui, 'GET', '/nothing');
    expect(none.status).toBe(404);
    expect(none.body.error.code).toBe('not_found');
  });
});
