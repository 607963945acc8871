// The search API over real HTTP: search options, pipes, fetch, export, complex search, histogram,
// mappings, status, debug endpoints, and every kind of bad request (JSON error bodies).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LogstoreProcess, bulk, ndjson, postJson, startLogstore } from '../../helpers/logstore.js';

let ls: LogstoreProcess;
const base = Date.parse('2026-06-01T00:00:00Z');
const docs = Array.from({ length: 300 }, (_, i) => ({
  timestamp: new Date(base + i * 60_000).toISOString(),
  i,
  level: ['info', 'warn', 'error'][i % 3],
  msg: `handled request ${i} in ${i % 7} ms`,
  path: `/api/v${(i % 2) + 1}/items`,
  size: (i * 31) % 500,
  secret: 'not indexed',
}));
let ids: string[] = [];

beforeAll(async () => {
  ls = await startLogstore({
    storage: { frac_size: '16KB' },
    limits: { search_docs: 1000 },
    mapping:
      'mapping-list:\n  - {name: level, type: keyword}\n  - {name: msg, type: text}\n  - {name: path, type: path}\n  - {name: size, type: keyword}\n  - {name: i, type: keyword}\n',
  });
  const r = await bulk(ls.url, ndjson(docs));
  expect(r.body.errors).toBe(false);
  ids = r.body.items.map((it) => it.index!._id!);
});
afterAll(async () => {
  await ls?.cleanup();
});

type SearchBody = { total: number; docs: { id: string; time: string; data: Record<string, unknown> }[] };

describe('search API', () => {
  it('size, offset, order and the time range', async () => {
    const from = new Date(base + 10 * 60_000).toISOString();
    const to = new Date(base + 59 * 60_000).toISOString();
    const desc = await postJson<SearchBody>(`${ls.url}/search`, {
      query: { query: 'level:error', from, to },
      size: 5,
      offset: 2,
    });
    const want = docs.filter((d) => d.level === 'error' && d.i >= 10 && d.i <= 59).map((d) => d.i);
    expect(desc.body.total).toBe(want.length);
    expect(desc.body.docs.map((d) => d.data.i)).toEqual([...want].reverse().slice(2, 7));
    const asc = await postJson<SearchBody>(`${ls.url}/search`, {
      query: { query: 'level:error', from, to },
      size: 3,
      order: 'asc',
      with_total: true,
    });
    expect(asc.body.docs.map((d) => d.data.i)).toEqual(want.slice(0, 3));
    expect(asc.body.docs[0]!.id).toBe(ids[want[0]!]);
    expect(asc.body.docs[0]!.time).toBe(docs[want[0]!]!.timestamp);
  });

  it('text and path fields, and | fields pipes', async () => {
    const r = await postJson<SearchBody>(`${ls.url}/search`, {
      query: { query: 'msg:"request 42" and path:/api | fields i, level' },
      size: 10,
    });
    expect(r.body.docs.map((d) => d.data)).toEqual([{ i: 42, level: 'info' }]);
    const ex = await postJson<SearchBody>(`${ls.url}/search`, {
      query: { query: 'path:/api/v2 and i:[10, 13] | fields except msg, secret, path' },
      size: 10,
    });
    expect(ex.body.docs.map((d) => d.data)).toEqual(
      [11, 13].reverse().map((i) => ({ timestamp: docs[i]!.timestamp, i, level: docs[i]!.level, size: docs[i]!.size })),
    );
  });

  it('aggregations on text and path fields: a document counts under each of its words or path prefixes', async () => {
    type Agg = { buckets: { key: string; value: number }[]; not_exists: number };
    const r = await postJson<{ total: number; aggs: Agg[] }>(`${ls.url}/aggregate`, {
      query: { query: 'level:warn' },
      aggs: [
        { field: 'msg', func: 'count' },
        { field: 'path', func: 'count' },
        { field: 'size', func: 'sum', group_by: 'path' },
        { field: 'msg', func: 'unique', group_by: 'level' },
      ],
    });
    expect(r.status).toBe(200);
    const warn = docs.filter((d) => d.level === 'warn');
    const words = (d: (typeof docs)[number]) => [
      ...new Set(
        d.msg
          .toLowerCase()
          .split(/[^a-z0-9_]+/)
          .filter(Boolean),
      ),
    ];
    const prefixes = (d: (typeof docs)[number]) =>
      d.path
        .split('/')
        .slice(1)
        .map((_, k, parts) => `/${parts.slice(0, k + 1).join('/')}`);
    const tally = (keys: (d: (typeof docs)[number]) => string[], value: (d: (typeof docs)[number]) => number) => {
      const m: Record<string, number> = {};
      for (const d of warn) for (const k of keys(d)) m[k] = (m[k] ?? 0) + value(d);
      return m;
    };
    const asMap = (a: Agg) => Object.fromEntries(a.buckets.map((b) => [b.key, b.value]));
    expect(r.body.total).toBe(warn.length);
    expect(asMap(r.body.aggs[0]!)).toEqual(tally(words, () => 1));
    expect(r.body.aggs[0]!.buckets[0]!.value).toBe(warn.length);
    expect(asMap(r.body.aggs[1]!)).toEqual(tally(prefixes, () => 1));
    expect(asMap(r.body.aggs[2]!)).toEqual(tally(prefixes, (d) => d.size));
    expect(asMap(r.body.aggs[3]!)).toEqual({ warn: new Set(warn.flatMap(words)).size });
  });

  it('fetch by ids, with a field filter and not_found', async () => {
    const r = await postJson<{ docs: { id: string; data: Record<string, unknown> }[]; not_found: string[] }>(
      `${ls.url}/fetch`,
      { ids: [ids[5], ids[250], 'ffffffffffffffffffffffff', 'junk'], fields: ['i'] },
    );
    expect(r.body.docs).toEqual([
      { id: ids[5], data: { i: 5 }, time: docs[5]!.timestamp },
      { id: ids[250], data: { i: 250 }, time: docs[250]!.timestamp },
    ]);
    expect(r.body.not_found).toEqual(['ffffffffffffffffffffffff', 'junk']);
  });

  it('export streams every match as NDJSON, newest first', async () => {
    const res = await fetch(`${ls.url}/export`, {
      method: 'POST',
      body: JSON.stringify({ query: { query: 'level:warn or level:info' } }),
    });
    expect(res.headers.get('content-type')).toMatch(/ndjson/);
    const lines = (await res.text())
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { data: { i: number } });
    expect(lines.map((l) => l.data.i)).toEqual(
      docs
        .filter((d) => d.level !== 'error')
        .map((d) => d.i)
        .reverse(),
    );
  });

  it('complex search returns documents, aggregations and a histogram in one call', async () => {
    const r = await postJson<
      SearchBody & {
        aggs: { buckets: { key: string; value: number }[] }[];
        hist: { buckets: { ts: string; doc_count: number }[] };
      }
    >(`${ls.url}/complex-search`, {
      query: { query: 'level:error or level:warn' },
      size: 2,
      aggs: [
        { field: 'level', func: 'count' },
        { field: 'size', func: 'max', group_by: 'level' },
      ],
      hist: { interval: '1h' },
    });
    const sel = docs.filter((d) => d.level !== 'info');
    expect(r.body.total).toBe(sel.length);
    expect(r.body.docs.map((d) => d.data.i)).toEqual(
      sel
        .slice(-2)
        .reverse()
        .map((d) => d.i),
    );
    expect(new Map(r.body.aggs[0]!.buckets.map((b) => [b.key, b.value]))).toEqual(
      new Map([
        ['error', 100],
        ['warn', 100],
      ]),
    );
    for (const lvl of ['error', 'warn']) {
      expect(r.body.aggs[1]!.buckets.find((b) => b.key === lvl)!.value).toBe(
        Math.max(...sel.filter((d) => d.level === lvl).map((d) => d.size)),
      );
    }
    const hourly = new Map<string, number>();
    for (const d of sel) {
      const h = new Date(Math.floor(Date.parse(d.timestamp) / 3_600_000) * 3_600_000).toISOString();
      hourly.set(h, (hourly.get(h) ?? 0) + 1);
    }
    expect(new Map(r.body.hist.buckets.map((b) => [b.ts, b.doc_count]))).toEqual(hourly);
    const h = await postJson<{ hist: { buckets: { doc_count: number }[] } }>(`${ls.url}/histogram`, {
      query: { query: '*' },
      interval: '30m',
    });
    expect(h.body.hist.buckets.reduce((s, b) => s + b.doc_count, 0)).toBe(300);
  });

  it('mappings, status, metrics and health', async () => {
    const m = (await (await fetch(`${ls.url}/mappings`)).json()) as {
      auto: boolean;
      mapping: Record<string, string[]>;
    };
    expect(m).toEqual({
      auto: false,
      mapping: { i: ['keyword'], level: ['keyword'], msg: ['text'], path: ['path'], size: ['keyword'] },
    });
    const st = (await (await fetch(`${ls.url}/status`)).json()) as {
      docs: number;
      fractions: { sealed: number };
      shards: number;
    };
    expect(st.docs).toBe(300);
    expect(st.shards).toBe(2);
    expect(st.fractions.sealed).toBeGreaterThan(0);
    // Two searches and a bad one: counted by route and status, and timed.
    for (let i = 0; i < 2; i++)
      expect((await postJson(`${ls.url}/search`, { query: { query: '*' }, size: 1 })).status).toBe(200);
    expect((await fetch(`${ls.url}/search`, { method: 'POST', body: '{"query":' })).status).toBe(400);
    const metrics = await (await fetch(`${ls.debugUrl}/metrics`)).text();
    expect(metrics).toMatch(/^tidepool_logstore_ingested_docs_total 300$/m);
    const counted = (re: RegExp) => Number(re.exec(metrics)?.[1] ?? -1);
    expect(
      counted(/^tidepool_logstore_http_requests_total\{route="\/search",status="200"\} (\d+)$/m),
    ).toBeGreaterThanOrEqual(2);
    expect(
      counted(/^tidepool_logstore_http_requests_total\{route="error",status="400"\} (\d+)$/m),
    ).toBeGreaterThanOrEqual(1);
    expect(counted(/^tidepool_logstore_http_request_duration_seconds_count\{route="\/search"\} (\d+)$/m)).toBe(
      counted(/^tidepool_logstore_http_requests_total\{route="\/search",status="200"\} (\d+)$/m),
    );
    expect(await (await fetch(`${ls.debugUrl}/health`)).json()).toMatchObject({ status: 'ok' });
  });
});

describe('bad requests are 400s with JSON bodies that point at the problem', () => {
  it.each([
    [
      '/search',
      '{"query": {"query": "level:error and (", "from": "2026-01-01T00:00:00Z"}}',
      'query_syntax',
      /position 17/,
    ],
    ['/search', '{"query": {"query": "secret:x"}}', 'field_not_indexed', /"secret" is not indexed/],
    ['/search', '{"query": {"query": "level:error"}, "size": -1}', 'bad_request', /size must be an integer/],
    ['/search', '{"query": {"query": "*"}, "size": 900, "offset": 200}', 'bad_request', /limits.search_docs/],
    ['/search', '{"query": {"query": "*", "from": "yesterday"}}', 'bad_request', /query.from must be an ISO 8601/],
    ['/search', '{"query": ', 'bad_json', /not valid JSON/],
    ['/aggregate', '{"aggs": [{"field": "msg", "func": "sum"}]}', 'bad_request', /text field, whose values are tokens/],
    ['/aggregate', '{"aggs": [{"field": "level", "func": "median"}]}', 'bad_request', /func must be one of/],
    ['/histogram', '{"interval": "soon"}', 'bad_request', /interval must be a duration/],
    ['/fetch', '{"ids": "abc"}', 'bad_request', /ids must be a list/],
  ])('%s %s', async (p, body, code, msg) => {
    const res = await fetch(`${ls.url}${p}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toMatch(/application\/json/);
    const j = (await res.json()) as { error: { code: string; message: string; position?: number } };
    expect(j.error.code).toBe(code);
    expect(j.error.message).toMatch(msg);
  });

  it('a syntax error carries the position and what was expected', async () => {
    const r = await postJson<{ error: { position: number; expected: string } }>(`${ls.url}/search`, {
      query: { query: 'level:error or' },
    });
    expect(r.status).toBe(400);
    expect(r.body.error.position).toBe(14);
    expect(r.body.error.expected).toMatch(/a term/);
  });

  it('a search body past 16 MiB is a 413 with a JSON body, and the store serves on', async () => {
    const big = JSON.stringify({ query: { query: '*' }, pad: 'x'.repeat(17 * 1024 * 1024) });
    const res = await fetch(`${ls.url}/search`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: big,
    });
    expect(res.status).toBe(413);
    expect(((await res.json()) as { error: { code: string; message: string } }).error).toMatchObject({
      code: 'body_too_large',
      message: expect.stringMatching(/larger than 16777216 bytes/) as unknown,
    });
    const after = await postJson<SearchBody>(`${ls.url}/search`, { query: { query: 'level:error' }, size: 1 });
    expect(after.status).toBe(200);
    expect(after.body.total).toBe(100);
  });

  it('wrong method is a 405 with a JSON body', async () => {
    const res = await fetch(`${ls.url}/search`);
    expect(res.status).toBe(405);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('method_not_allowed');
  });
});
