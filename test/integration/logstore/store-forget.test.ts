// The store API's Forget over real gRPC (a single-mode process serves it too): forgotten documents leave every
// answer (hits, totals, aggregations, histograms, plain time ranges), stay forgotten across a restart (when they
// are sealed), and bad ids are refused while the store keeps serving.
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StoreClient, offsBytes } from '../../../src/logstore/cluster/store-client.js';
import type { BatchKey } from '../../../src/logstore/grpc/store/messages.js';
import { type LogstoreProcess, bulk, ndjson, postJson, startLogstore } from '../../helpers/logstore.js';
import { jsonLines } from '../../helpers/shard.js';

let ls: LogstoreProcess;
let client: StoreClient;

beforeAll(async () => {
  ls = await startLogstore({ mode: 'single', storage: { shards: 2 } });
  client = new StoreClient(ls.grpcAddr, 10_000, { time: 10_000, timeout: 5_000 });
});

afterAll(async () => {
  client?.close();
  await ls?.cleanup();
});

type Search = { total: number; docs: { id: string; data: { n: number } }[] };

/** What every view of the store counts: hits (their n), totals, a count aggregation, histogram buckets. */
async function counts(query: string): Promise<{ ns: number[]; total: number; all: number; agg: number; hist: number }> {
  const s = await postJson<Search>(`${ls.url}/search`, { query: { query }, size: 1000 });
  const all = await postJson<Search>(`${ls.url}/search`, { query: { query: '*' }, size: 10 });
  const a = await postJson<{ aggs: { buckets: { key: string; value: number }[] }[] }>(`${ls.url}/aggregate`, {
    query: { query },
    aggs: [{ field: 'run', func: 'count' }],
  });
  const h = await postJson<{ hist: { buckets: { doc_count: number }[] } }>(`${ls.url}/histogram`, {
    query: { query },
    interval: '30m',
  });
  return {
    ns: s.body.docs.map((d) => d.data.n).sort((x, y) => x - y),
    total: s.body.total,
    all: all.body.total,
    agg: a.body.aggs[0]!.buckets.reduce((n, b) => n + b.value, 0),
    hist: h.body.hist.buckets.reduce((n, b) => n + b.doc_count, 0),
  };
}

describe('store Forget', () => {
  it('leaves forgotten documents out of hits, totals, aggregations and histograms, also after a restart', async () => {
    const r = await bulk(ls.url, ndjson(Array.from({ length: 300 }, (_, n) => ({ run: 'fg', n }))));
    expect(r.status).toBe(200);
    const ids = r.body.items.map((it) => it.index!._id as string);
    expect(await counts('run:fg')).toEqual({
      ns: Array.from({ length: 300 }, (_, n) => n),
      total: 300,
      all: 300,
      agg: 300,
      hist: 300,
    });
    // The first 100, as a BulkResponse would list them, with a failed document's 24 spaces among them.
    const bytes = Buffer.from(ids.slice(0, 50).join('') + ' '.repeat(24) + ids.slice(50, 100).join(''), 'latin1');
    expect(await client.forget(bytes)).toBe(100);
    expect(await client.forget(bytes)).toBe(0);
    const want = { ns: Array.from({ length: 200 }, (_, n) => n + 100), total: 200, all: 200, agg: 200, hist: 200 };
    expect(await counts('run:fg')).toEqual(want);
    // Restarted, the active fractions are sealed; the forgotten ids are read back from data_dir.
    client.close();
    await ls.stop();
    await ls.restart();
    client = new StoreClient(ls.grpcAddr, 10_000, { time: 10_000, timeout: 5_000 });
    expect(await counts('run:fg')).toEqual(want);
    // A forget for a sealed document, now through the HTTP thread's sealed reads too.
    expect(await client.forget(Buffer.from(ids[299]!, 'latin1'))).toBe(1);
    expect(await counts('run:fg')).toEqual({
      ...want,
      ns: want.ns.slice(0, -1),
      total: 199,
      all: 199,
      agg: 199,
      hist: 199,
    });
  });

  it('forgets a proxy batch by its key: once stored when it was taken, refused when it comes after the forget', async () => {
    // Batches as a proxy sends them: ids assigned from (id_shard, id_counter), the key naming them in a forget.
    const batch = (run: string, counter: number) => {
      const { docs, offs } = jsonLines(Array.from({ length: 10 }, (_, n) => ({ run, n })));
      const now = Date.now();
      const encoded = StoreClient.encodeBulk({
        docs,
        offs: [],
        offs_le: offsBytes(offs),
        now,
        assign_ids: true,
        id_shard: 7,
        id_counter: counter,
        client_ids: [],
        has_client_id: new Uint8Array(0),
        create: new Uint8Array(0),
      });
      const key: BatchKey = { id_shard: 7, id_counter: counter, offs_count: 20, now, docs_bytes: docs.length };
      return { encoded, key };
    };
    const empty = new Uint8Array(0);
    // Taken, then forgotten by its key (the proxy never learned its ids): its 10 documents leave every answer.
    const a = batch('kb-a', 1_000_000);
    expect((await client.bulk(a.encoded)).ids.toString('latin1')).toMatch(/^([0-9a-f]{24}){10}$/);
    expect((await counts('run:kb-a')).total).toBe(10);
    expect(await client.forget(empty, [a.key])).toBe(10);
    expect(await counts('run:kb-a')).toMatchObject({ ns: [], total: 0, agg: 0, hist: 0 });
    // The proxy's resend of it (same key) is answered from memory and stays forgotten.
    await client.bulk(a.encoded);
    expect((await counts('run:kb-a')).total).toBe(0);
    // Forgotten before it arrives (a hung store): refused when it comes, nothing stored.
    const b = batch('kb-b', 2_000_000);
    expect(await client.forget(empty, [b.key])).toBe(0);
    await expect(client.bulk(b.encoded)).rejects.toMatchObject({
      code: grpc.status.ABORTED,
      details: expect.stringContaining('forgotten before it arrived'),
    });
    expect((await counts('run:kb-b')).total).toBe(0);
    // Another batch is stored as ever.
    const c = batch('kb-c', 3_000_000);
    await client.bulk(c.encoded);
    expect((await counts('run:kb-c')).ns).toEqual(Array.from({ length: 10 }, (_, n) => n));
  });

  it('refuses ids that are not 24 bytes each or not hex, and keeps serving', async () => {
    await expect(client.forget(Buffer.from('abc'))).rejects.toMatchObject({
      code: grpc.status.INVALID_ARGUMENT,
      details: expect.stringContaining('24 bytes each'),
    });
    await expect(client.forget(Buffer.from('Z'.repeat(24)))).rejects.toMatchObject({
      code: grpc.status.INVALID_ARGUMENT,
      details: expect.stringContaining('not a document id'),
    });
    expect((await postJson<Search>(`${ls.url}/search`, { query: { query: 'run:fg' }, size: 1 })).body.total).toBe(199);
  });
});
