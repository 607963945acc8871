// A long search does not hold back writes to its shard: while one search reads many sealed fractions (several
// seconds of wildcard scans), bulks to the same shard are acknowledged one after another, and the search's answer
// (total, hits in order, aggregations, histogram) is the one it gives with nothing written beside it. In single
// mode and in a store behind a proxy; with retention dropping the fractions the search reads while it reads them;
// and past search.timeout (504, or timed_out), as over the active fraction (search-guard.test.ts).
import { randomBytes } from 'node:crypto';
import { readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
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
 * `k:tok1*` (11 111 documents) or 3 000 wildcard clauses that match nothing but each scan every token of k in
 * every fraction: seconds of work, all of it over sealed fractions (frac_size is small).
 */
const query = ['k:tok1*', ...Array.from({ length: 3000 }, (_, i) => `k:*${i}*${i + 1}*q*`)].join(' or ');

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

/**
 * Runs the long search while bulks of 10 documents that match none of its clauses go to the same shard one after
 * another (`pad`: bytes of random hex each, so that a bulk fills a fraction).
 */
async function searchBesideBulks(
  url: string,
  pad = 0,
): Promise<{ answer: Answer; acked: number[]; all: number[]; searchMs: number }> {
  const started = performance.now();
  let done = false;
  const search = postJson<Answer['body']>(`${url}/complex-search`, request).then((r) => {
    done = true;
    return r;
  });
  // Bulks that fill fractions (retention drops old ones) go once the search holds its fractions: sent at once, one
  // could reach the shard first on a loaded machine, and the search would rightly not see what retention dropped.
  if (pad) await untilSearchOpen(url, () => done);
  const acked: number[] = [];
  const all: number[] = [];
  while (!done) {
    const t = performance.now();
    const late = Array.from({ length: 10 }, (_, i) => ({
      k: `late${i}`,
      g: 'late',
      ...(pad ? { pad: randomBytes(pad / 2).toString('hex') } : {}),
    }));
    const r = await bulk(url, ndjson(late));
    expect(r.body.errors).toBe(false);
    all.push(performance.now() - t);
    // Counted only when acknowledged before the search answered.
    if (!done) acked.push(performance.now() - t);
  }
  const answer = await search;
  return { answer, acked, all, searchMs: performance.now() - started };
}

function checkSame(before: Answer, during: Answer): void {
  expect(during.status).toBe(200);
  expect(during.body.total).toBe(before.body.total);
  expect(during.body.docs.map((d) => d.id)).toEqual(before.body.docs.map((d) => d.id));
  expect(during.body.aggs).toEqual(before.body.aggs);
  expect(during.body.hist).toEqual(before.body.hist);
}

describe.each(['single', 'store'] as const)('a long search beside bulks to its shard (%s mode)', (mode) => {
  let store: LogstoreProcess;
  let proxy: LogstoreProcess | undefined;
  let url: string;
  beforeAll(async () => {
    // One shard: the search and every bulk go to the same shard. 64 KB fractions: the data is ~40 sealed ones.
    const storage = { shards: 1, frac_size: '64KB' };
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
    for (let i = 0; i < DOCS; i += 2000)
      expect((await bulk(url, ndjson(docs.slice(i, i + 2000)))).body.errors).toBe(false);
  });
  afterAll(async () => {
    await proxy?.cleanup();
    await store?.cleanup();
  });

  it('acknowledges bulks while the search runs, and the search answers as it does alone', async () => {
    const t = performance.now();
    const alone = await postJson<Answer['body']>(`${url}/complex-search`, request);
    const aloneMs = performance.now() - t;
    expect(alone.status).toBe(200);
    expect(alone.body.total).toBe(11_111);
    expect(alone.body.docs).toHaveLength(50);
    const { answer, acked, all, searchMs } = await searchBesideBulks(url);
    console.log(
      `[${mode}] search alone ${aloneMs.toFixed(0)} ms, beside bulks ${searchMs.toFixed(0)} ms; ` +
        `${all.length} bulks sent during it (${acked.length} acknowledged before it answered): ` +
        `median ${median(all).toFixed(1)} ms, max ${Math.max(...all).toFixed(1)} ms, ` +
        `${all.filter((x) => x > 100).length} over 100 ms`,
    );
    checkSame(alone, answer);
    // Before searches left the shard thread a bulk waited for the whole search: at most one got in before it.
    expect(acked.length).toBeGreaterThanOrEqual(3);
  });
});

/** Waits until /status says a search reads shard 0's sealed fractions (fails if the search ended first). */
async function untilSearchOpen(url: string, ended: () => boolean): Promise<void> {
  const until = Date.now() + 60_000;
  for (;;) {
    const st = (await (await fetch(`${url}/status`)).json()) as { per_shard: { open_searches: number }[] };
    if ((st.per_shard[0]?.open_searches ?? 0) > 0) return;
    if (ended()) throw new Error('the search ended before /status showed it open');
    if (Date.now() > until) throw new Error('no open search in /status within 60 s');
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** Bytes of a shard's sealed fractions on disk (what total_size counts). */
function sealedBytes(dataDir: string): number {
  const shard = path.join(dataDir, 'shard-0');
  let n = 0;
  for (const e of readdirSync(shard))
    if (e.startsWith('frac-') && statSync(path.join(shard, e)).isDirectory())
      for (const f of readdirSync(path.join(shard, e))) n += statSync(path.join(shard, e, f)).size;
  return n;
}

describe('retention dropping the fractions a long search reads', () => {
  let ls: LogstoreProcess;
  /** storage.total_size of the restarted store. */
  let total = 0;
  beforeAll(async () => {
    ls = await startLogstore({ storage: { shards: 1, frac_size: '64KB' }, search: { timeout: '60s' } });
    for (let i = 0; i < DOCS; i += 2000)
      expect((await bulk(ls.url, ndjson(docs.slice(i, i + 2000)))).body.errors).toBe(false);
    // Stopped (which seals the active fraction) and started again with total_size just over what is stored: every
    // fraction a bulk seals from now on makes retention drop the oldest ones, which the search reads.
    await ls.stop();
    total = sealedBytes(ls.dataDir) + 1024;
    writeFileSync(
      ls.configFile,
      readFileSync(ls.configFile, 'utf8').replace('storage:\n', `storage:\n  total_size: ${total}\n`),
    );
    await ls.restart();
  });
  afterAll(async () => {
    await ls?.cleanup();
  });

  it('the search answers from the fractions it started with; their files go once it ends', async () => {
    const alone = await postJson<Answer['body']>(`${ls.url}/complex-search`, request);
    expect(alone.body.total).toBe(11_111);
    // Bulks of 10 x 8 KB: each fills a fraction, whose seal makes retention drop old ones.
    const { answer, acked } = await searchBesideBulks(ls.url, 8192);
    expect(acked.length).toBeGreaterThanOrEqual(3);
    checkSame(alone, answer);
    // Retention did drop documents the search read (so the case above was met), and found nothing damaged.
    const after = await postJson<Answer['body']>(`${ls.url}/complex-search`, request);
    expect(after.body.total).toBeLessThan(11_111);
    const health = (await (await fetch(`${ls.debugUrl}/health`)).json()) as { status: string };
    expect(health.status).toBe('ok');
    // The dropped fractions' directories, kept while the search read them, are gone once it ended.
    const until = Date.now() + 60_000;
    while (sealedBytes(ls.dataDir) > total) {
      if (Date.now() > until) throw new Error(`sealed fractions on disk: ${sealedBytes(ls.dataDir)} > ${total} bytes`);
      await new Promise((r) => setTimeout(r, 20));
    }
  });
});

describe('search.timeout over sealed fractions read by the search thread', () => {
  let ls: LogstoreProcess;
  beforeAll(async () => {
    // 300 ms: the long search (seconds of wildcard scans over the sealed fractions) cannot finish in it.
    ls = await startLogstore({ storage: { shards: 1, frac_size: '64KB' }, search: { timeout: '300ms' } });
    for (let i = 0; i < DOCS; i += 2000)
      expect((await bulk(ls.url, ndjson(docs.slice(i, i + 2000)))).body.errors).toBe(false);
  });
  afterAll(async () => {
    await ls?.cleanup();
  });

  it('the search API answers 504 search_timeout, _search what it found marked timed_out, and bulks go on', async () => {
    const written = bulk(ls.url, ndjson([{ k: 'during' }]));
    const s = await postJson<{ error?: { code: string; timed_out?: boolean } }>(`${ls.url}/complex-search`, request);
    expect(s.status).toBe(504);
    expect(s.body.error).toMatchObject({ code: 'search_timeout', timed_out: true });
    const es = await postJson<{ timed_out: boolean; hits: { total: { value: number } } }>(`${ls.url}/logs/_search`, {
      query: { query_string: { query: query.replace(/ or /g, ' OR ') } },
      size: 5,
    });
    expect(es.status).toBe(200);
    expect(es.body.timed_out).toBe(true);
    // What it found before the deadline, never more than the whole answer.
    expect(es.body.hits.total.value).toBeLessThanOrEqual(11_111);
    expect((await written).body.errors).toBe(false);
  });
});
