// Store mode's /status on its debug listener (store mode has no HTTP API): single mode's shape over the store's own
// shards, degraded for a full disk (a file size limit on the real store process) and for entries in quarantine/.
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type LogstoreProcess, bulk, ndjson, startLogstore } from '../../helpers/logstore.js';

let running: LogstoreProcess[] = [];
afterEach(async () => {
  await Promise.all(running.map((p) => p.cleanup()));
  running = [];
});

interface Status {
  status: string;
  mode: string;
  shards: number;
  degraded?: string[];
  storage_problems?: { shard: number; kind: string; name: string; detail: string }[];
  docs: number;
  fractions: { active: number; sealed: number };
  per_shard: { shard: number; fractions: { name: string; state: string; docs: number }[] }[];
}

async function get<T>(url: string): Promise<{ status: number; body: T }> {
  const res = await fetch(url);
  return { status: res.status, body: (await res.json()) as T };
}

describe('store mode /status', () => {
  it('answers single mode’s shape for the store’s shards, degraded on a full disk and on quarantined entries', async () => {
    // 2048 blocks of 512 bytes: the store's write-ahead file fills after about 1 MiB.
    const store = await startLogstore({ mode: 'store', storage: { shards: 1, frac_size: '64MB' }, fileBlocks: 2048 });
    running.push(store);
    const proxy = await startLogstore({
      mode: 'proxy',
      cluster: { hot_stores: [store.grpcAddr], request_timeout: '5s', write_retries: 1 },
    });
    running.push(proxy);
    const single = await startLogstore({ storage: { shards: 1 } });
    running.push(single);

    const st0 = await get<Status>(`${store.debugUrl}/status`);
    expect(st0.status).toBe(200);
    expect(st0.body).toMatchObject({
      status: 'ok',
      mode: 'store',
      shards: 1,
      docs: 0,
      fractions: { active: 1, sealed: 0 },
    });
    // The same fields as single mode's /status (a proxy adds `stores`).
    const singleSt = await get<Status>(`${single.url}/status`);
    expect(Object.keys(st0.body).sort()).toEqual(Object.keys(singleSt.body).sort());
    expect((await get<{ status: string }>(`${store.debugUrl}/health`)).body.status).toBe('ok');

    let seq = 0;
    let acked = 0;
    let failedBulks = 0;
    for (let b = 0; b < 300 && failedBulks < 2; b++) {
      const docs = Array.from({ length: 100 }, () => ({ seq: seq++, msg: `event ${'m'.repeat(150)}` }));
      const r = await bulk(proxy.url, ndjson(docs));
      expect(r.status).toBe(200);
      acked += r.body.items.filter((it) => it.index!.status === 201).length;
      if (r.body.errors) failedBulks++;
    }
    expect(failedBulks, "the store's disk never filled").toBe(2);
    expect(acked).toBeGreaterThan(1000);

    const full = await get<Status>(`${store.debugUrl}/status`);
    expect(full.body.status).toBe('degraded');
    expect(full.body.mode).toBe('store');
    expect(full.body.docs).toBe(acked);
    expect(full.body.storage_problems!.map((p) => `${p.shard} ${p.kind} ${p.detail}`)).toEqual([
      '0 disk_full write-ahead append failed: EFBIG',
    ]);
    expect(full.body.degraded).toEqual([
      expect.stringMatching(/^shard 0: disk_full frac-\d+: write-ahead append failed/),
    ]);
    const health = await get<{ status: string; degraded: string[] }>(`${store.debugUrl}/health`);
    expect(health.body.status).toBe('degraded');
    expect(health.body.degraded).toEqual([expect.stringMatching(/^shard 0: disk_full /)]);

    // Restarted with room, and an entry an operator has not cleared from quarantine/.
    await store.stop();
    const q = path.join(store.dataDir, 'shard-0', 'quarantine');
    mkdirSync(q, { recursive: true });
    writeFileSync(path.join(q, 'frac-0000000099.wal.8.1.tail'), 'x');
    store.fileBlocks = undefined;
    await store.restart();
    const after = await get<Status>(`${store.debugUrl}/status`);
    expect(after.body.status).toBe('degraded');
    expect(after.body.docs).toBe(acked);
    expect(after.body.storage_problems!.map((p) => `${p.kind} ${p.name}`)).toEqual([
      'quarantine_not_empty frac-0000000099.wal.8.1.tail',
    ]);
    expect((await fetch(`${store.debugUrl}/nothing`)).status).toBe(404);
  });
});
