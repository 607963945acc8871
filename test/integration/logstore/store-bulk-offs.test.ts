// The store API's Bulk over real gRPC: document places as little-endian int32 bytes (offs_le, what proxies
// send) or as the older repeated offs, and bad places refused with INVALID_ARGUMENT while the store keeps serving.
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StoreClient, type StoreBulkRequest, offsBytes } from '../../../src/logstore/cluster/store-client.js';
import { services } from '../../../src/logstore/grpc/proto.js';
import { ScratchPool } from '../../../src/logstore/search/scratch.js';
import { type LogstoreProcess, startLogstore } from '../../helpers/logstore.js';
import { jsonLines } from '../../helpers/shard.js';

let store: LogstoreProcess;
let client: StoreClient;

beforeAll(async () => {
  store = await startLogstore({ mode: 'store', storage: { shards: 2 } });
  client = new StoreClient(store.grpcAddr, 10_000, { time: 10_000, timeout: 5_000 });
});

afterAll(async () => {
  client?.close();
  await store?.cleanup();
});

function batch(tag: string, count: number): { docs: Buffer; offs: Int32Array } {
  return jsonLines(Array.from({ length: count }, (_, n) => ({ tag, n })));
}

function request(
  docs: Buffer,
  offs: Partial<Pick<StoreBulkRequest, 'offs' | 'offs_le'>>,
  counter: number,
): StoreBulkRequest {
  return {
    docs,
    offs: [],
    offs_le: new Uint8Array(0),
    ...offs,
    now: Date.now(),
    assign_ids: true,
    id_shard: 0,
    id_counter: counter,
    client_ids: [],
    has_client_id: new Uint8Array(0),
    create: new Uint8Array(0),
  };
}

async function found(tag: string): Promise<number[]> {
  const r = await client.search({
    query: `tag:${tag}`,
    from: -8.64e15,
    to: 8.64e15,
    limit: 1000,
    order: 'ASC',
    aggs: [],
    hist_interval: 0,
    with_total: true,
  });
  return r.docs.map((d) => (JSON.parse(Buffer.from(d.data).toString()) as { n: number }).n).sort((a, b) => a - b);
}

describe('store Bulk document places', () => {
  it('stores every document of a batch sent with offs_le and of one sent with the repeated offs', async () => {
    const a = batch('le', 300);
    const ra = await client.bulk(StoreClient.encodeBulk(request(a.docs, { offs_le: offsBytes(a.offs) }, 1000)));
    expect(ra.errors).toEqual([]);
    expect(ra.ids.length).toBe(24 * 300);
    const b = batch('old', 200);
    const rb = await client.bulk(StoreClient.encodeBulk(request(b.docs, { offs: Array.from(b.offs) }, 5000)));
    expect(rb.errors).toEqual([]);
    expect(await found('le')).toEqual(Array.from({ length: 300 }, (_, n) => n));
    expect(await found('old')).toEqual(Array.from({ length: 200 }, (_, n) => n));
  });

  it('reads a batch encoded into a pooled buffer (the documents appended as field 1) as the library encodes it', async () => {
    const pool = new ScratchPool(4, 2 << 20);
    const decode = services().store.service.Bulk!.requestDeserialize as (b: Buffer) => StoreBulkRequest;
    // Document bytes whose length takes one, two and three bytes of varint.
    for (const [tag, count] of [
      ['pool1', 1],
      ['pool300', 300],
      ['pool9000', 9000],
    ] as const) {
      const a = batch(tag, count);
      const req = request(a.docs, { offs_le: offsBytes(a.offs) }, 20_000 + count);
      const pooled = StoreClient.encodeBulk(req, pool);
      const plain = decode(StoreClient.encodeBulk(req));
      const mine = decode(pooled);
      expect(Buffer.from(mine.docs).equals(a.docs)).toBe(true);
      expect({ ...mine, docs: null }).toEqual({ ...plain, docs: null });
      const r = await client.bulk(pooled);
      pool.give(pooled);
      expect(r.errors).toEqual([]);
      const all = await client.search({
        query: `tag:${tag}`,
        from: -8.64e15,
        to: 8.64e15,
        limit: 0,
        order: 'ASC',
        aggs: [],
        hist_interval: 0,
        with_total: true,
      });
      expect(all.total).toBe(count);
    }
    // Given back and taken again: the same buffer.
    const again = StoreClient.encodeBulk(request(batch('x', 1).docs, {}, 1), pool);
    expect(pool.keptBytes).toBeGreaterThan(0);
    pool.give(again);
  });

  it('refuses offs_le that is not whole pairs, and a document outside the docs bytes, and keeps serving', async () => {
    const a = batch('bad', 3);
    const odd = request(a.docs, { offs_le: offsBytes(a.offs).subarray(0, 12) }, 9000);
    await expect(client.bulk(StoreClient.encodeBulk(odd))).rejects.toMatchObject({
      code: grpc.status.INVALID_ARGUMENT,
      details: expect.stringContaining('pairs'),
    });
    const outside = Int32Array.from(a.offs);
    outside[5] = a.docs.length;
    await expect(
      client.bulk(StoreClient.encodeBulk(request(a.docs, { offs_le: offsBytes(outside) }, 9100))),
    ).rejects.toMatchObject({
      code: grpc.status.INVALID_ARGUMENT,
      details: expect.stringContaining('outside the docs bytes'),
    });
    expect(await found('bad')).toEqual([]);
    const ok = await client.bulk(StoreClient.encodeBulk(request(a.docs, { offs_le: offsBytes(a.offs) }, 9200)));
    expect(ok.errors).toEqual([]);
    expect(await found('bad')).toEqual([0, 1, 2]);
  });
});

describe('store gRPC flow control', () => {
  it('grants a connection and its streams an 8 MiB receive window, so a proxy batch is not sent 64 KiB at a time', async () => {
    const http2 = await import('node:http2');
    const { FLOW_WINDOW } = await import('../../../src/logstore/grpc/proto.js');
    const session = http2.connect(`http://${store.grpcAddr}`);
    try {
      const settings = await new Promise<import('node:http2').Settings>((resolve, reject) => {
        session.once('remoteSettings', resolve);
        session.once('error', reject);
      });
      expect(settings.initialWindowSize).toBe(FLOW_WINDOW);
      // The connection window comes as a WINDOW_UPDATE right after the settings.
      const deadline = Date.now() + 10_000;
      while (session.state.remoteWindowSize !== FLOW_WINDOW && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 20));
      expect(session.state.remoteWindowSize).toBe(FLOW_WINDOW);
    } finally {
      session.destroy();
    }
  });
});
