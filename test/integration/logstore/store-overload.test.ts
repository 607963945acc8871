// A store's limits.bulk_memory holds for the store API too: batches past it are refused with RESOURCE_EXHAUSTED
// before anything of them is stored, a proxy answers their items 429 es_rejected_execution_exception (what
// shippers retry), and every item answered 201 is found. Real store and proxy processes, real gRPC and HTTP.
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StoreClient, type StoreBulkRequest, offsBytes } from '../../../src/logstore/cluster/store-client.js';
import { type LogstoreProcess, startLogstore } from '../../helpers/logstore.js';
import { jsonLines } from '../../helpers/shard.js';

const LIMIT = 64 * 1024;
let store: LogstoreProcess;
let proxy: LogstoreProcess;
let client: StoreClient;

beforeAll(async () => {
  store = await startLogstore({ mode: 'store', storage: { shards: 1 }, limits: { bulk_memory: LIMIT } });
  proxy = await startLogstore({ mode: 'proxy', cluster: { hot_stores: [store.grpcAddr], write_retries: 1 } });
  client = new StoreClient(store.grpcAddr, 20_000, { time: 10_000, timeout: 5_000 });
});

afterAll(async () => {
  client?.close();
  await proxy?.cleanup();
  await store?.cleanup();
});

/** A batch of `count` documents of about 200 bytes (tag, n, padding): past LIMIT from 400 documents on. */
function batch(tag: string, count: number, counter: number): StoreBulkRequest {
  const { docs, offs } = jsonLines(Array.from({ length: count }, (_, n) => ({ tag, n, pad: 'x'.repeat(160) })));
  return {
    docs,
    offs: [],
    offs_le: offsBytes(offs),
    now: Date.now(),
    assign_ids: true,
    id_shard: 0,
    id_counter: counter,
    client_ids: [],
    has_client_id: new Uint8Array(0),
    create: new Uint8Array(0),
  };
}

async function count(query: string): Promise<number> {
  const r = await client.search({
    query,
    from: -8.64e15,
    to: 8.64e15,
    limit: 0,
    order: 'DESC',
    aggs: [],
    hist_interval: 0,
    with_total: true,
  });
  return r.total;
}

describe('store API over limits.bulk_memory', () => {
  it('refuses batches that do not fit with RESOURCE_EXHAUSTED, stores none of them, and stores every batch it accepted', async () => {
    let refused = 0;
    // Eight batches of ~80 KiB at once against a 64 KiB budget: the first is always taken, the next ones find it held.
    for (let round = 0; round < 10 && refused === 0; round++) {
      const tags = Array.from({ length: 8 }, (_, i) => `r${round}b${i}`);
      const settled = await Promise.allSettled(
        tags.map((tag, i) => client.bulk(StoreClient.encodeBulk(batch(tag, 400, 1_000_000 * (round + 1) + 1000 * i)))),
      );
      for (const [i, r] of settled.entries()) {
        if (r.status === 'fulfilled') {
          expect(r.value.errors).toEqual([]);
          expect(await count(`tag:${tags[i]}`)).toBe(400);
        } else {
          expect(r.reason).toMatchObject({
            code: grpc.status.RESOURCE_EXHAUSTED,
            details: expect.stringContaining('limits.bulk_memory'),
          });
          expect(await count(`tag:${tags[i]}`)).toBe(0);
          refused++;
        }
      }
      expect(settled.some((r) => r.status === 'fulfilled')).toBe(true);
    }
    expect(refused).toBeGreaterThan(0);
    // The budget is given back: one batch alone is taken.
    const after = await client.bulk(StoreClient.encodeBulk(batch('after', 400, 99_000_000)));
    expect(after.errors).toEqual([]);
  });

  it('through a proxy: items a busy store refused are answered 429 es_rejected_execution_exception, every 201 is stored', async () => {
    let rejected = 0;
    let created = 0;
    for (let round = 0; round < 10 && rejected === 0; round++) {
      const bodies = Array.from({ length: 6 }, (_, s) => {
        const lines: string[] = [];
        for (let n = 0; n < 2000; n++)
          lines.push('{"index":{}}', JSON.stringify({ via: `p${round}`, s, n, pad: 'y'.repeat(160) }));
        return lines.join('\n') + '\n';
      });
      const answers = await Promise.all(
        bodies.map(async (body) => {
          const res = await fetch(`${proxy.url}/_bulk`, {
            method: 'POST',
            headers: { 'content-type': 'application/x-ndjson' },
            body,
          });
          expect(res.status).toBe(200);
          return (await res.json()) as { items: { index: { status: number; error?: { type: string } } }[] };
        }),
      );
      let ok = 0;
      for (const a of answers) {
        for (const { index } of a.items) {
          if (index.status === 201) ok++;
          else {
            expect(index).toMatchObject({ status: 429, error: { type: 'es_rejected_execution_exception' } });
            rejected++;
          }
        }
      }
      expect(await count(`via:p${round}`)).toBe(ok);
      created += ok;
    }
    expect(rejected).toBeGreaterThan(0);
    expect(created).toBeGreaterThan(0);
  });
});
