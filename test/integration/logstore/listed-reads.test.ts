// A store with real shard and search threads: a search that is not a plain time range (a term, an aggregation) over
// sealed data goes straight to each shard's search thread, which lists the sealed fractions itself (no task on the
// shard thread); a shard whose active fraction holds documents in the range answers through its shard thread, so a
// document acknowledged a moment ago is always found. Retention beside such a search: search-vs-ingest.test.ts.
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
const base = Date.UTC(2026, 5, 1);
const LEVELS = ['info', 'warn', 'error'];
let dir: string;
let store: Store;

async function ingest(from: number, count: number): Promise<void> {
  const { docs, offs } = jsonLines(
    Array.from({ length: count }, (_, k) => ({
      timestamp: new Date(base + (from + k) * 1000).toISOString(),
      level: LEVELS[(from + k) % 3],
      n: from + k,
    })),
  );
  expect((await store.ingest(docs, offs)).errors).toEqual([]);
}

/** Newest `limit` of a query, its total, and the count by level. */
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

beforeAll(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'tidepool-listed-reads-'));
  const { config, problems } = parseLogstoreConfig(`storage:\n  data_dir: ${dir}\n  shards: 2\nlog:\n  level: warn\n`);
  expect(problems).toEqual([]);
  store = new Store(config, mapping);
  await store.ready();
});

afterAll(async () => {
  await store?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('searches over sealed fractions that are not plain time ranges', () => {
  it('are answered by the search threads alone once everything is sealed, with the same answers', async () => {
    for (let b = 0; b < 4; b++) await ingest(b * 300, 300);
    const live = [await search('level:error'), await search('level:in(warn,error) and not n:5*')];
    expect(store.listedReads).toEqual({ answered: 0, fallbacks: 0 });
    await store.sealAll();
    const sealed = [await search('level:error'), await search('level:in(warn,error) and not n:5*')];
    // Two shards, two queries a search (the hits, the aggregation), two searches.
    expect(store.listedReads).toEqual({ answered: 8, fallbacks: 0 });
    expect(sealed).toEqual(live);
    expect(sealed[0]!.total).toBe(400);
    expect(sealed[0]!.ns).toEqual([1199, 1196, 1193, 1190, 1187]);
  });

  it('go through the shard thread of a shard whose active fraction holds the range, and find what it acknowledged', async () => {
    await ingest(1202, 1);
    const before = store.listedReads;
    const r = await search('level:error');
    expect(r.total).toBe(401);
    expect(r.ns[0]).toBe(1202);
    // One shard holds the new document in its active fraction; the other shard's search thread listed its part.
    expect(store.listedReads.answered - before.answered).toBe(2);
    expect(store.listedReads.fallbacks).toBe(before.fallbacks);
  });
});
