// A store with real shard threads: plain time-range searches over sealed data are answered on the calling thread
// (no hop), and a document acknowledged since is always found (its shard's active fraction sends the search there).
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseLogstoreConfig } from '../../../src/config/logstore.js';
import { parseMapping } from '../../../src/logstore/mapping.js';
import { parseQuery } from '../../../src/logstore/query/parser.js';
import { planQuery } from '../../../src/logstore/query/plan.js';
import { Store } from '../../../src/logstore/store.js';
import { jsonLines } from '../../helpers/shard.js';

const mapping = parseMapping('- {name: level, type: keyword}\n');
const all = planQuery(parseQuery('*'), mapping);
const base = Date.UTC(2026, 5, 1);
let dir: string;
let store: Store;

async function ingest(from: number, count: number): Promise<void> {
  const { docs, offs } = jsonLines(
    Array.from({ length: count }, (_, k) => ({
      timestamp: new Date(base + (from + k) * 1000).toISOString(),
      level: 'info',
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
