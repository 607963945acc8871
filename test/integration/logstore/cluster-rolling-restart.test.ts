// A rolling restart of a cluster's stores (2 shards x 2 replicas, real processes) while bulks stream through the
// proxy: each store in turn stopped with SIGTERM and started again once the one before is caught up. Every
// acknowledged document is found afterwards, once, and each replica alone holds every acknowledged document of its
// shard (the proxy's catch-up filled what it missed while it was down).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LogstoreProcess, bulk, ndjson, postJson, startLogstore } from '../../helpers/logstore.js';

let stores: LogstoreProcess[] = [];
let proxy: LogstoreProcess;

beforeAll(async () => {
  stores = await Promise.all([0, 1, 2, 3].map(() => startLogstore({ mode: 'store', storage: { shards: 1 } })));
  proxy = await startLogstore({
    mode: 'proxy',
    cluster: {
      hot_stores: stores.map((s) => s.grpcAddr),
      hot_replicas: 2,
      request_timeout: '3s',
      breaker_cooldown: '300ms',
      keepalive_time: '2s',
      keepalive_timeout: '1s',
    },
  });
});

afterAll(async () => {
  await Promise.all([proxy, ...stores].filter(Boolean).map((p) => p.cleanup()));
});

type Status = { status: string; stores: { addr: string; ok: boolean; behind?: number }[] };

async function status(): Promise<Status> {
  return (await (await fetch(`${proxy.url}/status`)).json()) as Status;
}

async function until(what: string, test: () => Promise<boolean>, ms = 60_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await test())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const caughtUp = async () => {
  const s = await status();
  return s.status === 'ok' && s.stores.every((x) => x.ok && (x.behind ?? 0) === 0);
};

/** Every value of `n` the proxy finds for `query` (pages of 1000), and the total it reports. */
async function found(query: string): Promise<{ ns: number[]; total: number }> {
  const ns: number[] = [];
  let total = 0;
  for (let offset = 0; ; offset += 1000) {
    const r = await postJson<{ total: number; docs: { data: { n: number } }[]; partial_response?: boolean }>(
      `${proxy.url}/search`,
      { query: { query }, size: 1000, offset },
    );
    expect(r.status).toBe(200);
    expect(r.body.partial_response).toBeUndefined();
    total = r.body.total;
    for (const d of r.body.docs) ns.push(Number(d.data.n));
    if (r.body.docs.length < 1000) return { ns, total };
  }
}

describe('rolling restart of the stores behind a proxy', () => {
  it('each store stopped with SIGTERM and started again under load: every acknowledged document once, on every replica', async () => {
    const acked = new Set<number>();
    const failed = new Set<number>();
    const statuses = new Map<number, number>();
    let n = 0;
    let stop = false;
    const writer = async () => {
      while (!stop) {
        const batch = Array.from({ length: 40 }, () => ({ run: 'rolling', n: n++ }));
        const r = await bulk(proxy.url, ndjson(batch));
        statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
        if (r.status !== 200) {
          for (const d of batch) failed.add(d.n);
          continue;
        }
        r.body.items.forEach((it, i) => {
          if (it.index!.status === 201) acked.add(batch[i]!.n);
          else failed.add(batch[i]!.n);
        });
      }
    };
    const writers = [writer(), writer()];
    const ackedAtLeast = async (k: number) => {
      while (acked.size < k) await new Promise((r) => setTimeout(r, 20));
    };
    try {
      await ackedAtLeast(200);
      for (const s of stores) {
        await s.stop();
        // Writes go on, acknowledged by the other replica of the shard (write_quorum 1) or by the other shard.
        await ackedAtLeast(acked.size + 200);
        await s.restart();
        await until(`${s.grpcAddr} caught up`, caughtUp);
        await ackedAtLeast(acked.size + 100);
      }
    } finally {
      stop = true;
      await Promise.all(writers);
    }
    await until('every replica caught up', caughtUp);

    // Under write_quorum 1 with a replica down a batch is acknowledged by the other: none fails.
    expect([...failed], JSON.stringify(Object.fromEntries(statuses))).toEqual([]);
    const all = await found('run:rolling');
    expect([...acked].filter((x) => !all.ns.includes(x))).toEqual([]);
    expect(all.ns.length).toBe(new Set(all.ns).size);
    expect(all.total).toBe(all.ns.length);

    // Each replica alone: stop one of each shard (stores 0, 1 hold shard 0; 2, 3 shard 1), read from the others.
    for (const [a, b] of [
      [0, 2],
      [1, 3],
    ] as const) {
      await stores[a]!.stop();
      await stores[b]!.stop();
      await until('the proxy to see them down', async () => {
        const st = await status();
        return [a, b].every((i) => st.stores.find((x) => x.addr === stores[i]!.grpcAddr)?.ok === false);
      });
      const alone = await found('run:rolling');
      expect([...acked].filter((x) => !alone.ns.includes(x))).toEqual([]);
      expect(alone.ns.length).toBe(new Set(alone.ns).size);
      expect(alone.total).toBe(alone.ns.length);
      await stores[a]!.restart();
      await stores[b]!.restart();
      await until('all back', caughtUp);
    }
  }, 300_000);
});
