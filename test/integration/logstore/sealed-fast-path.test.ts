// A store with real shard and search threads: plain time-range searches over sealed data are answered on the calling
// thread (no hop); other searches over sealed data (a term, an aggregation) go straight to each shard's search
// thread, which lists the sealed fractions itself (no task on the shard thread); and a document acknowledged since
// is always found (its shard's active fraction sends the search to its shard thread). Retention beside a search
// that listed its fractions: search-vs-ingest.test.ts.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseLogstoreConfig } from '../../../src/config/logstore.js';
import { parseMapping } from '../../../src/logstore/mapping.js';
import { parseQuery } from '../../../src/logstore/query/parser.js';
import { planQuery } from '../../../src/logstore/query/plan.js';
import { parseAggs } from '../../../src/logstore/api/search-request.js';
import { Store } from '../../../src/logstore/store.js';
import { jsonLines } from '../../helpers/shard.js';

const mapping = parseMapping('- {name: level, type: keyword}\n- {name: n, type: keyword}\n');
const all = planQuery(parseQuery('*'), mapping);
const base = Date.UTC(2026, 5, 1);
let dir: string;
let store: Store;

async function ingest(from: number, count: number, level = (_n: number) => 'info'): Promise<void> {
  const { docs, offs } = jsonLines(
    Array.from({ length: count }, (_, k) => ({
      timestamp: new Date(base + (from + k) * 1000).toISOString(),
      level: level(from + k),
      n: from + k,
    })),
  );
  expect((await store.ingest(docs, offs)).errors).toEqual([]);
}

const answeredHere = () => store.sealedReaders.reduce((s, r) => s + r.answered, 0);

async function ns(
  limit: number,
  order: 'desc' | 'asc',
  from = -8.64e15,
  to = 8.64e15,
): Promise<{ total: number; ns: number[] }> {
  const r = await store.query({ plan: all, from, to, limit, order });
  return {
    total: r.total,
    ns: r.hits.slice(0, r.hits.length).map((h) => (JSON.parse(h.json) as { data: { n: number } }).data.n),
  };
}

beforeAll(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'tidepool-fast-path-'));
  const { config, problems } = parseLogstoreConfig(`storage:\n  data_dir: ${dir}\n  shards: 2\nlog:\n  level: warn\n`);
  expect(problems).toEqual([]);
  store = new Store(config, mapping);
  await store.ready();
});

afterAll(async () => {
  await store?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('plain searches over sealed fractions', () => {
  it('are answered without the shard threads once everything is sealed, with the same documents', async () => {
    for (let b = 0; b < 4; b++) await ingest(b * 250, 250);
    const live = [await ns(10, 'desc'), await ns(7, 'asc', base + 100_000, base + 500_000)];
    expect(answeredHere()).toBe(0);
    await store.sealAll();
    const sealed = [await ns(10, 'desc'), await ns(7, 'asc', base + 100_000, base + 500_000)];
    expect(answeredHere()).toBe(4);
    expect(sealed).toEqual(live);
    expect(sealed[0]).toEqual({ total: 1000, ns: [999, 998, 997, 996, 995, 994, 993, 992, 991, 990] });
    expect(sealed[1]).toEqual({ total: 401, ns: [100, 101, 102, 103, 104, 105, 106] });
  });

  it('find a document acknowledged a moment ago (its shard answers), and leave other ranges on this thread', async () => {
    await ingest(1000, 1);
    const before = answeredHere();
    expect(await ns(3, 'desc')).toEqual({ total: 1001, ns: [1000, 999, 998] });
    // One shard holds the new document in its active fraction; the other shard's part was read here.
    expect(answeredHere() - before).toBe(1);
    // A range the new document is not in: both shards' parts are read here.
    expect(await ns(2, 'asc', base, base + 1000)).toEqual({ total: 2, ns: [0, 1] });
    expect(answeredHere() - before).toBe(3);
  });

  it("read both shards in one pass: equal times across shards come in the shard threads' order, each shard counted", async () => {
    // 2 x 30 documents all at one second, one batch per shard (batches go to the least busy shard in turn).
    const at = base + 5_000_000;
    const tie = async (n0: number) => {
      const { docs, offs } = jsonLines(
        Array.from({ length: 30 }, (_, k) => ({ timestamp: new Date(at).toISOString(), level: 'info', n: n0 + k })),
      );
      expect((await store.ingest(docs, offs)).errors).toEqual([]);
    };
    await tie(2000);
    await tie(3000);
    const page = async (order: 'desc' | 'asc', limit: number) => {
      const r = await store.query({ plan: all, from: at - 1000, to: at + 1000, limit, order });
      return { total: r.total, ids: r.hits.slice(0, r.hits.length).map((h) => h.id) };
    };
    const live = [await page('desc', 40), await page('asc', 25), await page('desc', 100)];
    await store.sealAll();
    const before = answeredHere();
    const sealed = [await page('desc', 40), await page('asc', 25), await page('desc', 100)];
    expect(answeredHere() - before).toBe(6);
    expect(sealed).toEqual(live);
    expect(sealed[2]!.ids.length).toBe(60);
    expect(new Set(sealed[2]!.ids).size).toBe(60);
    // Both shards hold some (an id's bytes 6-7 name the shard that made it).
    expect(new Set(sealed[2]!.ids.map((id) => id.slice(12, 14))).size).toBe(2);
    expect(sealed[0]!.total).toBe(60);
  });
});

/** Newest `limit` of a query over all time, its total, and the count by level. */
async function search(text: string, limit = 5) {
  const plan = planQuery(parseQuery(text), mapping);
  const r = await store.query({ plan, from: -8.64e15, to: 8.64e15, limit, order: 'desc' });
  const a = await store.query({
    plan,
    from: -8.64e15,
    to: 8.64e15,
    limit: 0,
    order: 'desc',
    aggs: parseAggs([{ field: 'level', func: 'count' }], mapping),
  });
  return {
    total: r.total,
    ns: r.hits.slice(0, r.hits.length).map((h) => (JSON.parse(h.json) as { data: { n: number } }).data.n),
    aggs: a.aggs,
  };
}

describe('searches over sealed fractions that are not plain time ranges', () => {
  const LEVELS = ['info', 'warn', 'error'];
  const cycled = (n: number) => LEVELS[n % 3]!;
  // (The tests above wrote only level "info".)
  it('are answered by the search threads alone once everything is sealed, with the same answers', async () => {
    for (let b = 0; b < 4; b++) await ingest(10_000 + b * 300, 300, cycled);
    const queries = ['level:error', 'level:in(warn,error) and not n:105*'];
    const live = [];
    for (const q of queries) live.push(await search(q));
    expect(store.listedReads).toEqual({ answered: 0, fallbacks: 0 });
    await store.sealAll();
    const sealed = [];
    for (const q of queries) sealed.push(await search(q));
    // Two shards, two queries a search (the hits, the aggregation), two searches.
    expect(store.listedReads).toEqual({ answered: 8, fallbacks: 0 });
    expect(sealed).toEqual(live);
    expect(sealed[0]!.total).toBe(400);
    expect(sealed[0]!.ns).toEqual([11_198, 11_195, 11_192, 11_189, 11_186]);
    expect(sealed[1]!.total).toBe(800 - 66);
  });

  it('go through the shard thread of a shard whose active fraction holds the range, and find what it acknowledged', async () => {
    await ingest(11_200, 1, () => 'error');
    const before = store.listedReads;
    const r = await search('level:error');
    expect(r.total).toBe(401);
    expect(r.ns[0]).toBe(11_200);
    // One shard holds the new document in its active fraction; the other shard's search thread listed its part.
    expect(store.listedReads.answered - before.answered).toBe(2);
    expect(store.listedReads.fallbacks).toBe(before.fallbacks);
  });
});
