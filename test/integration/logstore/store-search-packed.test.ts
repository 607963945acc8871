// The store API's Search over real gRPC: hits packed in one byte string (what proxies ask for) and one message
// per document (what an older proxy asks for, and all an older store sends) give the proxy the same hits.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toShardResult } from '../../../src/logstore/cluster/cluster.js';
import {
  StoreClient,
  type StoreBulkRequest,
  type StoreSearchRequest,
  offsBytes,
} from '../../../src/logstore/cluster/store-client.js';
import { unpackHits } from '../../../src/logstore/search/packed-hits.js';
import { type LogstoreProcess, startLogstore } from '../../helpers/logstore.js';
import { lineOffsets } from '../../helpers/shard.js';

let store: LogstoreProcess;
let client: StoreClient;

beforeAll(async () => {
  store = await startLogstore({ mode: 'store', storage: { shards: 2 } });
  client = new StoreClient(store.grpcAddr, 10_000, { time: 10_000, timeout: 5_000 });
  const base = Date.parse('2026-06-01T00:00:00Z');
  const lines = Array.from({ length: 300 }, (_, n) =>
    Buffer.from(
      JSON.stringify({ timestamp: new Date(base + (n % 97) * 1000).toISOString(), tag: 'p', n, msg: `é "q" ${n}` }),
    ),
  );
  // A document that is not valid UTF-8 (the store repairs it on the way in).
  lines.push(
    Buffer.concat([Buffer.from('{"tag":"p","n":300,"msg":"bad '), Buffer.from([0xff, 0xfe]), Buffer.from('"}')]),
  );
  const { docs, offs } = lineOffsets(lines);
  const req: StoreBulkRequest = {
    docs,
    offs: [],
    offs_le: offsBytes(offs),
    now: base,
    assign_ids: true,
    id_shard: 0,
    id_counter: 1,
    client_ids: [],
    has_client_id: new Uint8Array(0),
    create: new Uint8Array(0),
  };
  expect((await client.bulk(StoreClient.encodeBulk(req))).errors).toEqual([]);
});

afterAll(async () => {
  client?.close();
  await store?.cleanup();
});

const search = (query: string, order: 'ASC' | 'DESC', limit: number): StoreSearchRequest => ({
  query,
  from: -8.64e15,
  to: 8.64e15,
  limit,
  order,
  aggs: [],
  hist_interval: 0,
  with_total: true,
});

describe('store Search hits, packed or one message each', () => {
  it('the same hits, totals and order for every query, limit and order', async () => {
    for (const [query, order, limit] of [
      ['tag:p', 'DESC', 100],
      ['tag:p', 'ASC', 1000],
      ['n:250 or n:251 or n:252', 'DESC', 2],
      ['tag:p | fields n', 'DESC', 50],
      ['tag:none', 'DESC', 10],
    ] as const) {
      const [packed, old] = await Promise.all([
        client.search({ ...search(query, order, limit), packed_hits: true }),
        client.search(search(query, order, limit)),
      ]);
      expect(packed.docs).toEqual([]);
      expect(packed.hits.length).toBeGreaterThanOrEqual(12);
      expect(old.hits.length).toBe(0);
      expect(old.docs.length).toBe(Math.min(limit, query === 'tag:none' ? 0 : query.startsWith('n:') ? 3 : 301));
      const a = toShardResult(packed);
      const b = toShardResult(old);
      expect(a.total).toBe(b.total);
      expect(unpackHits(a.hits)).toEqual(unpackHits(b.hits));
      for (const h of unpackHits(a.hits))
        expect(JSON.parse(h.json)).toMatchObject({ id: h.id, time: new Date(h.time).toISOString() });
    }
  });

  it('the repaired document reads back the same both ways', async () => {
    const [packed, old] = await Promise.all([
      client.search({ ...search('n:300', 'DESC', 10), packed_hits: true }),
      client.search(search('n:300', 'DESC', 10)),
    ]);
    const [a] = unpackHits(toShardResult(packed).hits);
    const [b] = unpackHits(toShardResult(old).hits);
    expect(a).toEqual(b);
    expect((JSON.parse(a!.json) as { data: { msg: string } }).data.msg).toBe('bad \ufffd\ufffd');
  });
});
