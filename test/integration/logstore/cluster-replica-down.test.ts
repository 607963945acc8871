// One shard of two replicas (real processes) with one replica killed: writes stay acknowledged (cluster.write_quorum), the replica is caught up when it returns, and then holds every acknowledged document once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LogstoreProcess, bulk, ndjson, postJson, startLogstore } from '../../helpers/logstore.js';

let stores: LogstoreProcess[] = [];
let proxy: LogstoreProcess;

beforeAll(async () => {
  stores = await Promise.all([0, 1].map(() => startLogstore({ mode: 'store', storage: { shards: 1 } })));
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

async function until(what: string, test: () => Promise<boolean>, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await test())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Every value of `n` the proxy finds for `query`, and the total it reports. */
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

describe('a replica down under hot_replicas: 2 with one shard', () => {
  it('writes are acknowledged without it, it is caught up when it returns, and it then holds every acknowledged document once', async () => {
    const acked = new Set<number>();
    const failed: number[] = [];
    let n = 0;
    const send = async (count: number) => {
      const batch = Array.from({ length: count }, () => ({ run: 'down', n: n++ }));
      const r = await bulk(proxy.url, ndjson(batch));
      expect(r.status).toBe(200);
      r.body.items.forEach((it, i) => (it.index!.status === 201 ? acked.add(batch[i]!.n) : failed.push(batch[i]!.n)));
    };
    for (let i = 0; i < 10; i++) await send(50);
    expect(failed).toEqual([]);
    await stores[1]!.kill9();
    // The batch in flight when it died may fail (not acknowledged); after that every write is acknowledged.
    for (let i = 0; i < 5; i++) await send(50);
    const failedAtKill = failed.length;
    for (let i = 0; i < 20; i++) await send(50);
    expect(failed.length).toBe(failedAtKill);
    const st = await status();
    expect(st.status).toBe('degraded');
    expect(st.stores.find((s) => s.addr === stores[1]!.grpcAddr)).toMatchObject({ ok: false });
    expect(st.stores.find((s) => s.addr === stores[1]!.grpcAddr)!.behind).toBeGreaterThan(0);
    const health = (await (await fetch(`${proxy.debugUrl}/health`)).json()) as { status: string; degraded: string[] };
    expect(health.status).toBe('degraded');
    expect(health.degraded.join('\n')).toContain(`store ${stores[1]!.grpcAddr} is down`);
    // Reads go to the up-to-date replica: every acknowledged document is there.
    const before = await found('run:down');
    expect([...acked].filter((x) => !before.ns.includes(x))).toEqual([]);
    // Back: the proxy sends it what it missed, in order, then status is ok.
    await stores[1]!.restart();
    await until('the replica caught up', async () => {
      const s = await status();
      return s.status === 'ok' && s.stores.every((x) => x.ok && (x.behind ?? 0) === 0);
    });
    expect(((await (await fetch(`${proxy.debugUrl}/health`)).json()) as { status: string }).status).toBe('ok');
    // With the other replica gone, the caught-up one alone answers: every acknowledged document, each once.
    await stores[0]!.kill9();
    await until('reads from the caught-up replica', async () =>
      (await status()).stores.some((x) => x.addr === stores[1]!.grpcAddr && x.ok),
    );
    const after = await found('run:down');
    expect([...acked].filter((x) => !after.ns.includes(x))).toEqual([]);
    expect(after.ns.length).toBe(new Set(after.ns).size);
    expect(after.total).toBe(after.ns.length);
    await stores[0]!.restart();
  });
});
