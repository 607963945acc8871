// One shard of two replicas (real processes) where one replica runs out of room (`ulimit -f`: its writes fail with
// EFBIG, as on a full disk) while the other stores everything: an item is acknowledged only if both replicas hold
// it, the items the full one refused are answered not stored and forgotten on the other (issue 35: no
// acknowledged-or-duplicated ambiguity), so each replica alone answers exactly the acknowledged documents.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LogstoreProcess, bulk, ndjson, postJson, startLogstore } from '../../helpers/logstore.js';

const running: LogstoreProcess[] = [];
let roomy: LogstoreProcess;
let full: LogstoreProcess;
let proxy: LogstoreProcess;

beforeAll(async () => {
  roomy = await startLogstore({ mode: 'store', storage: { shards: 1, frac_size: '64MB' } });
  running.push(roomy);
  // 2048 blocks of 512 bytes: the write-ahead file fills after about 1 MiB.
  full = await startLogstore({ mode: 'store', storage: { shards: 1, frac_size: '64MB' }, fileBlocks: 2048 });
  running.push(full);
  proxy = await startLogstore({
    mode: 'proxy',
    cluster: { hot_stores: [roomy.grpcAddr, full.grpcAddr], hot_replicas: 2, request_timeout: '5s' },
  });
  running.push(proxy);
});

afterAll(async () => {
  await Promise.all(running.map((p) => p.cleanup()));
});

/** Every `n` a proxy finds for run:full, and the total it reports. */
async function found(p: LogstoreProcess): Promise<{ ns: number[]; total: number }> {
  const ns: number[] = [];
  let total = 0;
  for (let offset = 0; ; offset += 1000) {
    const r = await postJson<{ total: number; docs: { data: { n: number } }[] }>(`${p.url}/search`, {
      query: { query: 'run:full' },
      size: 1000,
      offset,
    });
    expect(r.status).toBe(200);
    total = r.body.total;
    for (const d of r.body.docs) ns.push(Number(d.data.n));
    if (r.body.docs.length < 1000) return { ns: ns.sort((a, b) => a - b), total };
  }
}

describe('hot_replicas: 2 with one replica out of room', () => {
  it('acknowledges only what both replicas hold; the other forgets what the full one refused', async () => {
    const acked = new Set<number>();
    const refused: number[] = [];
    const statuses = new Set<number>();
    let n = 0;
    let failedBulks = 0;
    for (let b = 0; b < 300 && failedBulks < 3; b++) {
      const docs = Array.from({ length: 100 }, () => ({ run: 'full', n: n++, msg: `event ${'m'.repeat(150)}` }));
      const r = await bulk(proxy.url, ndjson(docs));
      expect(r.status).toBe(200);
      r.body.items.forEach((it, i) => {
        if (it.index!.status === 201) acked.add(docs[i]!.n);
        else {
          statuses.add(it.index!.status);
          refused.push(docs[i]!.n);
        }
      });
      if (r.body.errors) failedBulks++;
    }
    expect(failedBulks, "the replica's disk never filled").toBe(3);
    expect(acked.size).toBeGreaterThan(1000);
    // Refused as a full disk is (429, which shippers retry), never a 5xx they may drop.
    expect([...statuses]).toEqual([429]);
    // A shipper's resend of what was refused (new ids): what it stores now is there once, on both replicas.
    const resend = refused.slice(0, 50);
    const again = await bulk(proxy.url, ndjson(resend.map((x) => ({ run: 'full', n: x, msg: 'again' }))));
    expect(again.status).toBe(200);
    again.body.items.forEach((it, i) => {
      if (it.index!.status === 201) acked.add(resend[i]!);
    });

    // Each replica alone (a proxy of its own) answers exactly the acknowledged documents, once each.
    const want = [...acked].sort((a, b) => a - b);
    for (const store of [roomy, full]) {
      const alone = await startLogstore({ mode: 'proxy', cluster: { hot_stores: [store.grpcAddr], hot_replicas: 1 } });
      running.push(alone);
      const got = await found(alone);
      expect(got.total, store === roomy ? 'the roomy replica' : 'the full replica').toBe(want.length);
      expect(got.ns).toEqual(want);
    }
  });
});
