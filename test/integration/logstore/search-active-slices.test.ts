// An expensive search over a large active fraction does not hold back writes to its shard: the shard thread runs
// its dictionary scans in slices (storage/active-search.ts) and the bulks queued meanwhile run between them. Bulks
// sent one after another while the search runs are acknowledged before it answers, and its answer (total, hits in
// order, aggregations, histogram) is the one it gives with nothing written beside it. In single mode and in a store
// behind a proxy. (search-vs-ingest.test.ts does the same over sealed fractions, read by the search thread.)
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LogstoreProcess, bulk, ndjson, postJson, startLogstore } from '../../helpers/logstore.js';

const BASE = Date.parse('2026-01-01T00:00:00Z');
const DOCS = 20_000;

/** Documents one second apart, each with a token of its own (k), a number (n) and a group (g). */
const docs = Array.from({ length: DOCS }, (_, i) => ({
  ts: new Date(BASE + i * 1000).toISOString(),
  k: `tok${i}-${(i * 7919) % 10007}`,
  n: i % 100,
  g: `g${i % 5}`,
}));

/**
 * `k:tok1*` (11 111 documents) or 600 wildcard clauses that match nothing but each scan every token of k: seconds
 * of dictionary scans, all of them over the active fraction (the default frac_size keeps every document in it).
 */
const query = ['k:tok1*', ...Array.from({ length: 600 }, (_, i) => `k:*${i}*${i + 1}*q*`)].join(' or ');

const request = {
  query: { query, from: new Date(BASE).toISOString(), to: new Date(BASE + DOCS * 1000).toISOString() },
  size: 50,
  aggs: [
    { field: 'n', func: 'sum', group_by: 'g' },
    { field: 'n', func: 'quantile', quantiles: [0.5, 0.99] },
  ],
  hist: { interval: '1h' },
};

type Answer = { status: number; body: { total: number; docs: { id: string }[]; aggs: unknown; hist: unknown } };

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

describe.each(['single', 'store'] as const)('a long search over the active fraction beside bulks (%s mode)', (mode) => {
  let store: LogstoreProcess;
  let proxy: LogstoreProcess | undefined;
  let url: string;
  let statusUrl: string;
  beforeAll(async () => {
    // One shard: the search and every bulk go to the same shard thread.
    const storage = { shards: 1 };
    const search = { timeout: '60s' };
    if (mode === 'single') {
      store = await startLogstore({ storage, search });
      url = store.url;
    } else {
      store = await startLogstore({ mode: 'store', storage, search });
      proxy = await startLogstore({
        mode: 'proxy',
        cluster: { hot_stores: [store.grpcAddr], request_timeout: '60s' },
        search,
      });
      url = proxy.url;
    }
    statusUrl = `${store.debugUrl}/status`;
    for (let i = 0; i < DOCS; i += 5000)
      expect((await bulk(url, ndjson(docs.slice(i, i + 5000)))).body.errors).toBe(false);
  });
  afterAll(async () => {
    await proxy?.cleanup();
    await store?.cleanup();
  });

  it('acknowledges bulks while the search runs, and the search answers as it does alone', async () => {
    // Every document is in the active fraction: no sealed fraction to hand to the search thread.
    const st = (await (await fetch(statusUrl)).json()) as { per_shard: { fractions: { state: string }[] }[] };
    expect(st.per_shard[0]!.fractions.map((f) => f.state)).toEqual(['active']);
    const t = performance.now();
    const alone = await postJson<Answer['body']>(`${url}/complex-search`, request);
    const aloneMs = performance.now() - t;
    expect(alone.status).toBe(200);
    expect(alone.body.total).toBe(11_111);
    expect(alone.body.docs).toHaveLength(50);

    const started = performance.now();
    let done = false;
    const search = postJson<Answer['body']>(`${url}/complex-search`, request).then((r) => {
      done = true;
      return r;
    });
    // Bulks of 10 documents that match none of its clauses, one after another until it answers.
    const acked: number[] = [];
    const all: number[] = [];
    while (!done) {
      const b = performance.now();
      const late = Array.from({ length: 10 }, (_, i) => ({ k: `late${i}`, g: 'late', n: i }));
      const r = await bulk(url, ndjson(late));
      expect(r.body.errors).toBe(false);
      all.push(performance.now() - b);
      // Counted only when acknowledged before the search answered.
      if (!done) acked.push(performance.now() - b);
    }
    const during = await search;
    const searchMs = performance.now() - started;
    console.log(
      `[${mode}] search alone ${aloneMs.toFixed(0)} ms, beside bulks ${searchMs.toFixed(0)} ms; ` +
        `${all.length} bulks sent during it (${acked.length} acknowledged before it answered): ` +
        `first ${all[0]!.toFixed(1)} ms, median ${median(all).toFixed(1)} ms, max ${Math.max(...all).toFixed(1)} ms, ` +
        `${all.filter((x) => x > 100).length} over 100 ms`,
    );
    expect(during.status).toBe(200);
    expect(during.body.total).toBe(alone.body.total);
    expect(during.body.docs.map((d) => d.id)).toEqual(alone.body.docs.map((d) => d.id));
    expect(during.body.aggs).toEqual(alone.body.aggs);
    expect(during.body.hist).toEqual(alone.body.hist);
    // With the active part run in one task, a bulk waited for the whole search: at most one got in before it.
    expect(acked.length).toBeGreaterThanOrEqual(10);
    // Seconds of work, twice, on a loaded 2-CPU machine: the search may take many times its usual time.
  }, 300_000);
});
