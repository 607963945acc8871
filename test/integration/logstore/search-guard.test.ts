// One request cannot stop the log store: a wildcard that made a RegExp backtrack for minutes answers at once
// while a bulk and /status go on beside it; a search past search.timeout stops and says so (seq-ql 504,
// Elasticsearch timed_out: true), in single mode and across a proxy's gRPC call to its store.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LogstoreProcess, bulk, ndjson, postJson, startLogstore } from '../../helpers/logstore.js';

type SearchBody = { total: number; error?: { code: string; message: string; timed_out?: boolean } };
type EsBody = { timed_out: boolean; hits: { total: { value: number } } };

/** `m:*x*x*...*x*y` with `stars` stars (the query of the issue: 20 x's and a y). */
function stars(n: number, tail: string): string {
  return `*${Array<string>(n).fill('x').join('*')}*${tail}`;
}

async function status(url: string): Promise<{ status: number; body: { docs: number } }> {
  const res = await fetch(`${url}/status`);
  return { status: res.status, body: (await res.json()) as { docs: number } };
}

describe('a pathological wildcard', () => {
  let ls: LogstoreProcess;
  beforeAll(async () => {
    // One shard: the search, the bulk and /status all need the same shard thread.
    ls = await startLogstore({ storage: { shards: 1 } });
    const r = await bulk(ls.url, ndjson([{ m: 'x'.repeat(100) }, { m: 'x'.repeat(71) + 'y' }, { m: 'other' }]));
    expect(r.body.errors).toBe(false);
  });
  afterAll(async () => {
    await ls?.cleanup();
  });

  it('answers while a concurrent bulk completes and /status answers, in seq-ql and the query DSL', async () => {
    const pattern = stars(20, 'y');
    const seq = postJson<SearchBody>(`${ls.url}/search`, { query: { query: `m:${pattern}` }, size: 10 });
    const wildcard = postJson<EsBody>(`${ls.url}/logs/_search`, { query: { wildcard: { m: { value: pattern } } } });
    const qs = postJson<EsBody>(`${ls.url}/logs/_search`, { query: { query_string: { query: `m:${pattern}` } } });
    const written = bulk(ls.url, ndjson(Array.from({ length: 1000 }, (_, i) => ({ m: `doc ${i}` }))));
    const st = status(ls.url);
    const [s, w, q, b, t] = await Promise.all([seq, wildcard, qs, written, st]);
    // Tokens are cut at 72 characters: only the 72-character token ending in y matches.
    expect(s.status).toBe(200);
    expect(s.body.total).toBe(1);
    expect([w.status, w.body.timed_out, w.body.hits.total.value]).toEqual([200, false, 1]);
    expect([q.status, q.body.timed_out, q.body.hits.total.value]).toEqual([200, false, 1]);
    expect(b.body.errors).toBe(false);
    expect(t.status).toBe(200);
    // The same stars without the y (ending in a star) match both long tokens.
    expect(
      (await postJson<SearchBody>(`${ls.url}/search`, { query: { query: `m:${stars(20, '')}` } })).body.total,
    ).toBe(2);
    expect((await status(ls.url)).body.docs).toBe(1003);
  });
});

/** `n` documents with distinct tokens, and a query whose wildcard clauses each scan all of them. */
function heavy(n: number): { docs: unknown[]; query: string } {
  const docs = Array.from({ length: n }, (_, i) => ({ k: `tok${i}-${(i * 7919) % 10007}` }));
  const query = Array.from({ length: 400 }, (_, i) => `k:*${i}*${i + 1}*q*`).join(' or ');
  return { docs, query };
}

describe('search.timeout', () => {
  let ls: LogstoreProcess;
  const { docs, query } = heavy(20_000);
  beforeAll(async () => {
    // 10 ms: the heavy query (400 scans of 20 000 tokens) cannot finish in it on any machine.
    ls = await startLogstore({ storage: { shards: 1 }, search: { timeout: '10ms' } });
    const r = await bulk(ls.url, ndjson(docs));
    expect(r.body.errors).toBe(false);
  });
  afterAll(async () => {
    await ls?.cleanup();
  });

  it('the search API answers 504 search_timeout; _search and _count answer what was found, timed_out', async () => {
    const written = bulk(ls.url, ndjson([{ k: 'late' }]));
    const s = await postJson<SearchBody>(`${ls.url}/search`, { query: { query }, size: 10 });
    expect(s.status).toBe(504);
    expect(s.body.error).toMatchObject({ code: 'search_timeout', timed_out: true });
    expect(s.body.error!.message).toMatch(/search\.timeout/);
    const es = await postJson<EsBody>(`${ls.url}/logs/_search`, {
      query: { query_string: { query: query.replace(/ or /g, ' OR ') } },
    });
    expect(es.status).toBe(200);
    expect(es.body.timed_out).toBe(true);
    const count = await postJson<{ count: number; timed_out?: boolean }>(`${ls.url}/logs/_count`, {
      query: {
        bool: { should: [{ wildcard: { k: '*1*2*q*' } }, { query_string: { query: query.replace(/ or /g, ' OR ') } }] },
      },
    });
    expect(count.status).toBe(200);
    expect(count.body.timed_out).toBe(true);
    expect((await written).body.errors).toBe(false);
    expect((await status(ls.url)).status).toBe(200);
  });
});

describe('writes and /status while searches hold the shard thread', () => {
  let ls: LogstoreProcess;
  const docs = heavy(20_000).docs;
  // 4 000 wildcard clauses over 20 000 tokens: far more than 2 s of work, so each search runs to its deadline.
  const query = Array.from({ length: 4000 }, (_, i) => `k:*${i}*${i + 1}*q*`).join(' or ');
  beforeAll(async () => {
    ls = await startLogstore({ storage: { shards: 1 }, search: { timeout: '2s' } });
    expect((await bulk(ls.url, ndjson(docs))).body.errors).toBe(false);
  });
  afterAll(async () => {
    await ls?.cleanup();
  });

  it('a bulk waits for the running search at most, not for the searches queued before it; /status does not wait', async () => {
    const settled: string[] = [];
    const searches = [1, 2, 3].map((i) =>
      postJson<SearchBody>(`${ls.url}/search`, { query: { query } }).then((r) => {
        settled.push(`search${i}`);
        return r;
      }),
    );
    const written = bulk(ls.url, ndjson([{ k: 'during' }])).then((r) => {
      settled.push('bulk');
      return r;
    });
    const st = status(ls.url).then((r) => {
      settled.push('status');
      return r;
    });
    const [b, t, ...s] = await Promise.all([written, st, ...searches]);
    expect(s.map((r) => r.status)).toEqual([504, 504, 504]);
    expect(b.body.errors).toBe(false);
    expect(t.status).toBe(200);
    // One search at most ran before the bulk (the one holding the thread when it came); the others waited.
    // (A queued search's deadline runs from its request: those behind the first end soon after it.)
    const before = (what: string) =>
      settled.slice(0, settled.indexOf(what)).filter((x) => x.startsWith('search')).length;
    expect(before('bulk')).toBeLessThanOrEqual(1);
    expect(before('status')).toBe(0);
  });

  it("Elasticsearch's own timeout (body or ?timeout=) stops a _search sooner than search.timeout", async () => {
    const qs = { query_string: { query: query.replace(/ or /g, ' OR ') } };
    const inBody = await postJson<EsBody & { took: number }>(`${ls.url}/logs/_search`, { query: qs, timeout: '20ms' });
    const inUrl = await postJson<EsBody & { took: number }>(`${ls.url}/logs/_search?timeout=20ms`, { query: qs });
    for (const r of [inBody, inUrl]) {
      expect([r.status, r.body.timed_out]).toEqual([200, true]);
      // Far under search.timeout (2 s): the request's 20 ms applied (a bound 100 times the deadline).
      expect(r.body.took).toBeLessThan(2000);
    }
    expect((await postJson(`${ls.url}/logs/_search`, { query: qs, timeout: 'soon' })).status).toBe(400);
  });
});

describe('search.timeout across a proxy', () => {
  let store: LogstoreProcess;
  let proxy: LogstoreProcess;
  const { docs, query } = heavy(20_000);
  beforeAll(async () => {
    // The store keeps the default search.timeout (30 s): only the proxy's timeout_ms can stop it early.
    store = await startLogstore({ mode: 'store', storage: { shards: 1 } });
    proxy = await startLogstore({
      mode: 'proxy',
      cluster: { hot_stores: [store.grpcAddr], request_timeout: '20s' },
      search: { timeout: '10ms' },
    });
    const r = await bulk(proxy.url, ndjson(docs));
    expect(r.body.errors).toBe(false);
  });
  afterAll(async () => {
    await proxy?.cleanup();
    await store?.cleanup();
  });

  it("the store stops at the proxy's search.timeout and its answer comes back timed out, not as a failed shard", async () => {
    const es = await postJson<EsBody & { _shards: { failed: number } }>(`${proxy.url}/logs/_search`, {
      query: { query_string: { query: query.replace(/ or /g, ' OR ') } },
    });
    expect(es.status).toBe(200);
    expect(es.body.timed_out).toBe(true);
    expect(es.body._shards.failed).toBe(0);
    const s = await postJson<SearchBody>(`${proxy.url}/search`, { query: { query } });
    expect([s.status, s.body.error?.code]).toEqual([504, 'search_timeout']);
  });
});
