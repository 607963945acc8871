// The Elasticsearch calls shippers and scripts make, with the real @elastic/elasticsearch client and raw HTTP:
// _cat/health, PUT/HEAD /<index>, single-document writes, _refresh, _count, _search (query DSL and ?q=),
// filter_path on every JSON answer, epoch timestamps, and invalid UTF-8 through /search, /fetch, /export and _search.
import { Client } from '@elastic/elasticsearch';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LogstoreProcess, bulk, postJson, startLogstore } from '../../helpers/logstore.js';

let ls: LogstoreProcess;
let es: Client;

beforeAll(async () => {
  ls = await startLogstore({
    mapping:
      'mapping-list:\n  - {name: service, type: keyword}\n  - {name: level, type: keyword}\n  - {name: status, type: keyword}\n  - {name: message, type: text}\n  - {name: _id, type: keyword}\n  - {name: tag, type: keyword}\n  - {name: n, type: keyword}\n',
  });
  es = new Client({ node: ls.url });
});
afterAll(async () => {
  await es?.close();
  await ls?.cleanup();
});

const T0 = Date.UTC(2026, 10, 20, 12, 0, 0);
const docs = [
  {
    '@timestamp': new Date(T0).toISOString(),
    service: 'api',
    level: 'error',
    status: 500,
    message: 'connection timeout to db',
    tag: 'q',
  },
  {
    '@timestamp': new Date(T0 + 60_000).toISOString(),
    service: 'api',
    level: 'info',
    status: 200,
    message: 'request done',
    tag: 'q',
  },
  {
    '@timestamp': new Date(T0 + 120_000).toISOString(),
    service: 'web',
    level: 'warn',
    status: 404,
    message: 'not found',
    tag: 'q',
  },
  {
    '@timestamp': new Date(T0 + 180_000).toISOString(),
    service: 'web',
    level: 'error',
    status: 503,
    message: 'upstream timeout',
    tag: 'q',
  },
];

async function raw(
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; text: string; json: () => unknown; headers: Headers }> {
  const res = await fetch(`${ls.url}${path}`, {
    method,
    headers: { 'content-type': 'application/json' },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, text, json: () => JSON.parse(text), headers: res.headers };
}

describe('Elasticsearch endpoints', () => {
  it('GET /_cat/health: text, ?v, ?h=, ?format=json', async () => {
    const plain = await raw('GET', '/_cat/health');
    expect(plain.status).toBe(200);
    expect(plain.text).toMatch(/^\d+ \d\d:\d\d:\d\d tidepool green 1 1 2 2 0 0 0 0 0 - 100\.0%\n$/);
    const v = await raw('GET', '/_cat/health?v');
    expect(v.text.split('\n')[0]).toMatch(/^epoch\s+timestamp\s+cluster\s+status/);
    expect((await raw('GET', '/_cat/health?h=status')).text).toBe('green\n');
    expect(await es.cat.health({ format: 'json' })).toMatchObject([{ cluster: 'tidepool', status: 'green' }]);
    const bad = await raw('GET', '/_cat/health?h=nope');
    expect(bad.status).toBe(400);
  });

  it('PUT /<index> and HEAD /<index> are acknowledged; a name Elasticsearch refuses is refused', async () => {
    expect(await es.indices.create({ index: 'app-logs', settings: { number_of_shards: 1 } })).toMatchObject({
      acknowledged: true,
      index: 'app-logs',
    });
    expect(await es.indices.exists({ index: 'app-logs' })).toBe(true);
    const bad = await raw('PUT', '/Bad_Name');
    expect(bad.status).toBe(400);
    expect((bad.json() as { error: { type: string } }).error.type).toBe('invalid_index_name_exception');
  });

  it('single documents: POST /<index>/_doc (generated id), PUT /<index>/_doc/<id>, _create 201 then 409', async () => {
    const a = await es.index({ index: 'app-logs', document: { tag: 'single', n: 1 } });
    expect(a.result).toBe('created');
    expect(a._id).toMatch(/^[0-9a-f]{24}$/);
    const b = await es.index({ index: 'app-logs', id: 'doc-1', document: { tag: 'single', n: 2 } });
    expect(b).toMatchObject({ _id: 'doc-1', result: 'created' });
    const again = await raw('PUT', '/app-logs/_doc/doc-1', { tag: 'single', n: 3 });
    expect(again.status).toBe(200);
    expect(again.json()).toMatchObject({ _id: 'doc-1', result: 'noop' });
    const c = await es.create({ index: 'app-logs', id: 'doc-2', document: { tag: 'single', n: 4 } });
    expect(c.result).toBe('created');
    const conflict = await raw('PUT', '/app-logs/_create/doc-2', { tag: 'single', n: 5 });
    expect(conflict.status).toBe(409);
    expect((conflict.json() as { error: { type: string } }).error.type).toBe('version_conflict_engine_exception');
    await expect(es.create({ index: 'app-logs', id: 'doc-2', document: { tag: 'single' } })).rejects.toMatchObject({
      meta: { statusCode: 409 },
    });
    const opType = await raw('PUT', '/app-logs/_doc/doc-1?op_type=create', { tag: 'single' });
    expect(opType.status).toBe(409);
    // A pretty-printed body (newlines) is one document.
    const pretty = await raw('POST', '/app-logs/_doc', '{\n  "tag": "single",\n  "n": 6\n}\n');
    expect(pretty.status).toBe(201);
    expect((await raw('POST', '/app-logs/_doc', '{"tag": ')).status).toBe(400);
    expect((await raw('POST', '/app-logs/_doc', '[1]')).status).toBe(400);
    expect((await raw('GET', '/app-logs/_doc')).status).toBe(405);
    expect((await es.count({ index: 'app-logs', q: 'tag:single' })).count).toBe(4);
  });

  it('GET /<index>/_doc/<id>: by client _id and by generated id, 404 found:false otherwise', async () => {
    const put = await es.index({ index: 'app-logs', id: 'get-me', document: { tag: 'get', n: 7 } });
    const got = await es.get({ index: 'app-logs', id: 'get-me' });
    expect(got).toMatchObject({ _index: 'app-logs', _id: 'get-me', found: true, _source: { tag: 'get', n: 7 } });
    expect(put._id).toBe('get-me');
    const gen = await es.index({ index: 'app-logs', document: { tag: 'get', n: 8 } });
    expect(await es.get({ index: 'app-logs', id: gen._id })).toMatchObject({
      _id: gen._id,
      found: true,
      _source: { tag: 'get', n: 8 },
    });
    const missing = await raw('GET', '/app-logs/_doc/no-such-doc');
    expect(missing.status).toBe(404);
    expect(missing.json()).toEqual({ _index: 'app-logs', _id: 'no-such-doc', found: false });
    expect(await es.exists({ index: 'app-logs', id: 'get-me' })).toBe(true);
    expect(await es.exists({ index: 'app-logs', id: 'no-such-doc' })).toBe(false);
  });

  it('GET /_cluster/health: the health object Elasticsearch clients read (not an empty probe answer)', async () => {
    const h = await es.cluster.health();
    expect(h).toMatchObject({
      cluster_name: 'tidepool',
      status: 'green',
      timed_out: false,
      number_of_nodes: 1,
      active_primary_shards: 2,
      unassigned_shards: 0,
    });
    expect((await raw('GET', '/_cluster/health/app-logs?wait_for_status=yellow&timeout=1s')).json()).toMatchObject({
      status: 'green',
    });
    expect((await raw('GET', '/_cluster/settings')).status).toBe(200);
  });

  it('_refresh (GET, POST, /_all, /<index>) is acknowledged', async () => {
    for (const [m, p] of [
      ['POST', '/_refresh'],
      ['GET', '/_all/_refresh'],
      ['POST', '/app-logs/_refresh'],
    ] as const) {
      const r = await raw(m, p);
      expect(r.status, p).toBe(200);
      expect((r.json() as { _shards: { failed: number } })._shards.failed).toBe(0);
    }
    expect((await es.indices.refresh({ index: 'app-logs' }))._shards!.failed).toBe(0);
  });

  it('_count and _search translate match, term, terms, range, bool, exists, prefix, wildcard and query_string', async () => {
    const r = await bulk(ls.url, docs.map((d) => `{"index":{}}\n${JSON.stringify(d)}`).join('\n') + '\n');
    expect(r.body.errors).toBe(false);
    const count = async (query: unknown) => (await es.count({ index: 'logs', query: query as never })).count;
    expect(await count({ match_all: {} })).toBeGreaterThanOrEqual(4);
    expect(await count({ term: { service: 'api' } })).toBe(2);
    expect(await count({ term: { service: { value: 'API' } } })).toBe(2);
    expect(await count({ terms: { status: [500, 503] } })).toBe(2);
    expect(await count({ match: { message: 'timeout' } })).toBe(2);
    expect(await count({ match: { message: 'upstream timeout' } })).toBe(2);
    expect(await count({ match: { message: { query: 'upstream timeout', operator: 'and' } } })).toBe(1);
    expect(await count({ match_phrase: { message: 'connection timeout' } })).toBe(1);
    expect(await count({ range: { status: { gte: 400, lt: 504 } } })).toBe(3);
    expect(await count({ prefix: { service: 'we' } })).toBe(2);
    expect(await count({ wildcard: { service: { value: '*p*' } } })).toBe(2);
    expect(await count({ exists: { field: 'level' } })).toBeGreaterThanOrEqual(4);
    expect(
      await count({
        bool: {
          must: [{ term: { tag: 'q' } }],
          filter: [{ term: { level: 'error' } }],
          must_not: [{ term: { service: 'web' } }],
        },
      }),
    ).toBe(1);
    expect(await count({ bool: { should: [{ term: { status: 404 } }, { term: { status: 503 } }] } })).toBe(2);
    expect(await count({ bool: { filter: { term: { tag: 'q' } }, should: [{ term: { status: 404 } }] } })).toBe(4);
    const t = (ms: number) => new Date(T0 + ms).toISOString();
    expect(
      await count({
        bool: { filter: [{ term: { tag: 'q' } }, { range: { '@timestamp': { gte: t(60_000), lt: t(180_000) } } }] },
      }),
    ).toBe(2);
    expect(
      await count({
        bool: {
          filter: [
            { term: { tag: 'q' } },
            { range: { '@timestamp': { gt: T0, lte: T0 + 180_000, format: 'epoch_millis' } } },
          ],
        },
      }),
    ).toBe(3);
    expect(await count({ query_string: { query: 'service:api AND level:error' } })).toBe(1);
    expect(await count({ query_string: { query: 'tag:q -service:web' } })).toBe(2);
    expect(await count({ query_string: { query: 'tag:q AND (status:[500 TO 599] OR level:warn)' } })).toBe(3);
    expect(await count({ query_string: { query: 'tag:q AND status:{404 TO 503}' } })).toBe(1);
    expect(
      await count({ query_string: { query: 'tag:q AND status:>=500 AND _exists_:level AND NOT level:warn' } }),
    ).toBe(2);
    expect(await count({ query_string: { query: 'timeout', default_field: 'message' } })).toBe(2);
    expect((await raw('GET', '/logs/_count?q=service:web%20AND%20level:error')).json()).toMatchObject({ count: 1 });
    // No field and no default_field: every indexed field (the words of message, the values of the keywords).
    expect((await raw('GET', '/logs/_count?q=timeout')).json()).toMatchObject({ count: 2 });
    expect(
      (await raw('POST', '/logs/_count', { query: { query_string: { query: '"upstream timeout" OR web' } } })).json(),
    ).toMatchObject({ count: 2 });
  });

  it('_search answers hits in Elasticsearch shape: newest first, size/from, sort asc, _source filter, client _id', async () => {
    const s = await es.search<{ status: number; service: string }>({
      index: 'logs',
      query: { term: { tag: 'q' } },
      size: 3,
    });
    expect(s.hits.total).toEqual({ value: 4, relation: 'eq' });
    expect(s.hits.hits.map((h) => h._source!.status)).toEqual([503, 404, 200]);
    expect(s.hits.hits[0]!._id).toMatch(/^[0-9a-f]{24}$/);
    const page2 = await es.search<{ status: number }>({
      index: 'logs',
      query: { term: { tag: 'q' } },
      size: 2,
      from: 2,
      sort: [{ '@timestamp': 'asc' }],
    });
    expect(page2.hits.hits.map((h) => h._source!.status)).toEqual([404, 503]);
    const only = await es.search({ index: 'logs', query: { term: { tag: 'q' } }, _source: ['service'], size: 1 });
    expect(only.hits.hits[0]!._source).toEqual({ service: 'web' });
    const byId = await es.search<{ n: number }>({ index: 'app-logs', query: { ids: { values: ['doc-1'] } } });
    expect(byId.hits.hits.map((h) => [h._id, h._source])).toEqual([['doc-1', { tag: 'single', n: 2 }]]);
    const uri = await raw('GET', '/_search?q=service:api&size=1');
    expect((uri.json() as { hits: { total: { value: number }; hits: unknown[] } }).hits.total.value).toBe(2);
  });

  it('filter_path shapes _search, _count, _cat/health, _doc, PUT /<index>, _refresh and / as Elasticsearch does; errors stay whole', async () => {
    // The reference's own example: GET /_search?filter_path=took,hits.hits._id,hits.hits._score.
    const s = (
      await raw('GET', '/logs/_search?q=tag:q&size=2&filter_path=took,hits.hits._id,hits.hits._score')
    ).json() as Record<string, unknown>;
    expect(Object.keys(s)).toEqual(['took', 'hits']);
    expect(typeof s.took).toBe('number');
    const hits = (s.hits as { hits: Record<string, unknown>[] }).hits;
    expect(hits).toHaveLength(2);
    for (const h of hits) {
      expect(Object.keys(h).sort()).toEqual(['_id', '_score']);
      expect(h._score).toBeNull();
    }
    expect((await raw('GET', '/logs/_search?q=tag:q&filter_path=hits.total.value')).json()).toEqual({
      hits: { total: { value: 4 } },
    });
    expect((await raw('GET', '/logs/_search?q=tag:q&size=1&filter_path=hits.hits._source.s*')).json()).toEqual({
      hits: { hits: [{ _source: { service: 'web', status: 503 } }] },
    });
    expect((await raw('GET', '/logs/_count?q=tag:q&filter_path=count')).json()).toEqual({ count: 4 });
    expect((await raw('GET', '/logs/_count?q=tag:q&filter_path=-_shards')).json()).toEqual({ count: 4 });
    expect((await raw('GET', '/logs/_count?q=tag:q&filter_path=nothing.here')).json()).toEqual({});
    expect((await raw('GET', '/_cat/health?format=json&filter_path=status,cluster')).json()).toEqual([
      { cluster: 'tidepool', status: 'green' },
    ]);
    // The text form of _cat is not JSON: filter_path leaves it alone, as in Elasticsearch.
    expect((await raw('GET', '/_cat/health?h=status&filter_path=cluster')).text).toBe('green\n');
    const put = await raw('PUT', '/fp-index?filter_path=acknowledged');
    expect([put.status, put.json()]).toEqual([200, { acknowledged: true }]);
    const doc = await raw('POST', '/fp-index/_doc?filter_path=result,_shards.successful', { tag: 'fp' });
    expect([doc.status, doc.json()]).toEqual([201, { result: 'created', _shards: { successful: 1 } }]);
    const idOnly = await raw('PUT', '/fp-index/_doc/fp-1?filter_path=_id,_version', { tag: 'fp' });
    expect([idOnly.status, idOnly.json()]).toEqual([201, { _id: 'fp-1', _version: 1 }]);
    expect((await raw('POST', '/_refresh?filter_path=_shards.failed')).json()).toEqual({ _shards: { failed: 0 } });
    expect((await raw('GET', '/?filter_path=version.number,tagline')).json()).toEqual({
      version: { number: '8.11.0' },
      tagline: 'You Know, for Search',
    });
    // An error answer is built unfiltered in Elasticsearch: the shipper sees the whole error.
    const bad = await raw('POST', '/logs/_count?filter_path=count', { query: { nope: {} } });
    expect(bad.status).toBe(400);
    expect(bad.json() as { error: { type: string }; status: number }).toMatchObject({
      error: { type: 'parsing_exception' },
      status: 400,
    });
    const badPut = await raw('PUT', '/Bad_Name?filter_path=acknowledged');
    expect((badPut.json() as { error: { type: string } }).error.type).toBe('invalid_index_name_exception');
  });

  it('an unsupported query or request key is a clear 400 (parsing_exception), not an empty answer', async () => {
    const cases: [string, unknown][] = [
      ['unknown query [fuzzy]', { query: { fuzzy: { service: 'ap' } } }],
      ['unsupported search keys [aggs]', { aggs: { x: { terms: { field: 'service' } } } }],
      ['not supported', { query: { query_string: { query: 'service:ap~1' } } }],
      ['not indexed', { query: { term: { unmapped_field: 'x' } } }],
      ['only the document time', { sort: [{ status: 'asc' }] }],
      ['minimum_should_match', { query: { bool: { should: [{ term: { a: 1 } }], minimum_should_match: 2 } } }],
    ];
    for (const [msg, body] of cases) {
      const r = await raw('POST', '/logs/_search', body);
      expect(r.status, msg).toBe(400);
      const e = (r.json() as { error: { type: string; reason: string } }).error;
      expect(e.type, msg).toBe('parsing_exception');
      expect(e.reason, msg).toContain(msg);
    }
    await expect(es.search({ index: 'logs', query: { fuzzy: { service: 'x' } } as never })).rejects.toMatchObject({
      meta: { statusCode: 400 },
    });
  });

  it('epoch seconds and milliseconds (numbers and digit strings) are the document time', async () => {
    const sec = Math.floor(T0 / 1000) - 86_400;
    const r = await bulk(
      ls.url,
      [
        { '@timestamp': sec * 1000, tag: 'epoch', k: 'ms' },
        { timestamp: sec + 1, tag: 'epoch', k: 's' },
        { ts: String(sec + 2), tag: 'epoch', k: 's-string' },
        { time: `${(sec + 3) * 1000}`, tag: 'epoch', k: 'ms-string' },
        { time: sec + 4.5, tag: 'epoch', k: 's-fraction' },
      ]
        .map((d) => `{"index":{}}\n${JSON.stringify(d)}`)
        .join('\n') + '\n',
    );
    expect(r.body.errors).toBe(false);
    const s = await postJson<{ docs: { data: { k: string }; time: string }[] }>(`${ls.url}/search`, {
      query: { query: 'tag:epoch' },
      order: 'asc',
    });
    expect(s.body.docs.map((d) => [d.data.k, d.time])).toEqual([
      ['ms', new Date(sec * 1000).toISOString()],
      ['s', new Date((sec + 1) * 1000).toISOString()],
      ['s-string', new Date((sec + 2) * 1000).toISOString()],
      ['ms-string', new Date((sec + 3) * 1000).toISOString()],
      ['s-fraction', new Date((sec + 4) * 1000 + 500).toISOString()],
    ]);
  });

  it('invalid UTF-8 in a document is repaired on ingest: /search, /fetch, /export and _search answer valid UTF-8 JSON', async () => {
    const body = Buffer.concat([
      Buffer.from('{"index":{}}\n{"tag":"utf","message":"bad '),
      Buffer.from([0xff, 0xfe, 0xc3]),
      Buffer.from(' bytes","ok":"caf\u00e9"}\n'),
      Buffer.from('{"create":{"_id":"utf-id"}}\n{"tag":"utf","message":"'),
      Buffer.from([0xe2, 0x82]),
      Buffer.from('"}\n'),
    ]);
    const r = await bulk(ls.url, body);
    expect(r.body.errors).toBe(false);
    const decoder = new TextDecoder('utf-8', { fatal: true });
    const strict = async (res: Response) => decoder.decode(new Uint8Array(await res.arrayBuffer()));
    const post = (p: string, b: unknown) =>
      fetch(`${ls.url}${p}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(b),
      });
    const search = JSON.parse(await strict(await post('/search', { query: { query: 'tag:utf' }, order: 'asc' }))) as {
      docs: { id: string; data: { message: string; ok?: string } }[];
    };
    // Both documents take the ingest time of their own shard (the one with an _id is routed by it): either may be first.
    expect(search.docs.map((d) => d.data.message).sort()).toEqual(['bad \ufffd\ufffd\ufffd bytes', '\ufffd']);
    expect(search.docs.find((d) => d.data.message.startsWith('bad'))!.data.ok).toBe('caf\u00e9');
    const fetched = JSON.parse(await strict(await post('/fetch', { ids: search.docs.map((d) => d.id) }))) as {
      docs: { data: { message: string } }[];
    };
    expect(fetched.docs.map((d) => d.data.message)).toEqual(search.docs.map((d) => d.data.message));
    const exported = (await strict(await post('/export', { query: { query: 'tag:utf' } })))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { data: { message: string } });
    expect(exported.map((d) => d.data.message).sort()).toEqual(['bad \ufffd\ufffd\ufffd bytes', '\ufffd']);
    const esSearch = JSON.parse(await strict(await post('/_search', { query: { term: { tag: 'utf' } } }))) as {
      hits: { hits: { _id: string; _source: { message: string } }[] };
    };
    expect(esSearch.hits.hits.map((h) => h._source.message).sort()).toEqual(['bad \ufffd\ufffd\ufffd bytes', '\ufffd']);
    expect(esSearch.hits.hits.map((h) => h._id)).toContain('utf-id');
  });
});
