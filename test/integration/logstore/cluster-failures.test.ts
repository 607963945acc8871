// A proxy over 2 shards x 2 replicas (real processes) through failures: the Elasticsearch bulk helper, a
// replica killed with -9 while bulks stream (every acknowledged document found), a whole shard stopped (partial
// answers, then whole again after a restart), stores that hang (deadlines), all stores down (502).
import { Client } from '@elastic/elasticsearch';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LogstoreProcess, bulk, ndjson, postJson, startLogstore } from '../../helpers/logstore.js';

let stores: LogstoreProcess[] = [];
let proxy: LogstoreProcess;

beforeAll(async () => {
  stores = await Promise.all([0, 1, 2, 3].map(() => startLogstore({ mode: 'store', storage: { shards: 1 } })));
  proxy = await startLogstore({
    mode: 'ingestor',
    cluster: {
      hot_stores: stores.map((s) => s.grpcAddr),
      hot_replicas: 2,
      request_timeout: '5s',
      breaker_cooldown: '1s',
      keepalive_time: '2s',
      keepalive_timeout: '1s',
    },
  });
});

afterAll(async () => {
  for (const s of stores) if (s.child.signalCode === null && s.child.exitCode === null) s.child.kill('SIGCONT');
  await Promise.all([proxy, ...stores].filter(Boolean).map((p) => p.cleanup()));
});

type Answer = {
  total: number;
  docs: { id: string; data: Record<string, unknown> }[];
  error?: { code: string; message: string };
  partial_response?: boolean;
};

/** Every value of field `n` the proxy finds for `query` (in pages of 1000). */
async function foundNs(query: string): Promise<Set<number>> {
  const out = new Set<number>();
  for (let offset = 0; ; offset += 1000) {
    const r = await postJson<Answer>(`${proxy.url}/search`, { query: { query }, size: 1000, offset });
    expect(r.status).toBe(200);
    expect(r.body.partial_response).toBeUndefined();
    for (const d of r.body.docs) out.add(Number(d.data.n));
    if (r.body.docs.length < 1000) return out;
  }
}

/** Waits (30 s at most) until the proxy reaches every store again after a restart or SIGCONT. */
async function waitWhole(): Promise<void> {
  for (let i = 0; i < 150; i++) {
    const st = (await (await fetch(`${proxy.url}/status`)).json()) as { stores: { ok: boolean }[] };
    if (st.stores.every((s) => s.ok)) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error('the proxy did not reach every store again within 30 s');
}

describe('cluster through failures', () => {
  it('the Elasticsearch client bulk helper ingests through the proxy (ingestor mode) and every document is found', async () => {
    const client = new Client({ node: proxy.url });
    const docs = Array.from({ length: 3000 }, (_, n) => ({ run: 'helper', n, msg: `line ${n}` }));
    const stats = await client.helpers.bulk({
      datasource: docs,
      onDocument: () => ({ index: { _index: 'app' } }),
      flushBytes: 32 * 1024,
      concurrency: 3,
    });
    expect(stats.failed).toBe(0);
    expect(stats.successful).toBe(docs.length);
    const found = await foundNs('run:helper');
    expect(found.size).toBe(docs.length);
    // Ids are unique in answers: a batch a slow store stored after its deadline (then sent elsewhere with the
    // same ids) is not shown twice.
    const r = await postJson<Answer>(`${proxy.url}/search`, { query: { query: 'run:helper' }, size: 5000 });
    expect(new Set(r.body.docs.map((d) => d.id)).size).toBe(r.body.docs.length);
    expect(r.body.docs.length).toBe(docs.length);
    // Past 2048 values a quantile comes from the mergeable sketch: within 1% of the exact value.
    const q = await postJson<{ aggs: { buckets: { quantiles: number[] }[] }[] }>(`${proxy.url}/aggregate`, {
      query: { query: 'run:helper' },
      aggs: [{ field: 'n', func: 'quantile', quantiles: [0.5, 0.99] }],
    });
    const [p50, p99] = q.body.aggs[0]!.buckets[0]!.quantiles;
    expect(Math.abs(p50! - 1499)).toBeLessThanOrEqual(15);
    expect(Math.abs(p99! - 2969)).toBeLessThanOrEqual(30);
    await client.close();
  });

  it('over its write limit the proxy answers items 429 inside a 200, as single mode, and the bulk helper retries them', async () => {
    const tight = await startLogstore({
      mode: 'proxy',
      limits: { inflight_bulks: 1, bulk_queue: 0 },
      cluster: { hot_stores: stores.map((s) => s.grpcAddr), hot_replicas: 2, request_timeout: '5s' },
    });
    try {
      const body = ndjson(Array.from({ length: 2000 }, (_, n) => ({ run: 'tight', n, pad: 'x'.repeat(200) })));
      const answers = await Promise.all(Array.from({ length: 6 }, () => bulk(tight.url, body)));
      expect(answers.every((a) => a.status === 200)).toBe(true);
      const rejected = answers.filter((a) =>
        a.body.items.every(
          (it) => it.index!.status === 429 && it.index!.error!.type === 'es_rejected_execution_exception',
        ),
      );
      expect(rejected.length).toBeGreaterThan(0);
      const client = new Client({ node: tight.url });
      const docs = Array.from({ length: 4000 }, (_, n) => ({ run: 'tight-helper', n }));
      const stats = await client.helpers.bulk({
        datasource: docs,
        onDocument: () => ({ index: { _index: 'app' } }),
        flushBytes: 16 * 1024,
        concurrency: 4,
        retries: 50,
        wait: 100,
      });
      await client.close();
      expect(stats.failed).toBe(0);
      expect(stats.successful).toBe(docs.length);
      expect((await foundNs('run:tight-helper')).size).toBe(docs.length);
    } finally {
      await tight.cleanup();
    }
  });

  it('fetch goes to the shard each id names and returns the documents a search returned', async () => {
    const all = await postJson<Answer>(`${proxy.url}/search`, { query: { query: 'run:helper' }, size: 3000 });
    const pick = (shard: string) => all.body.docs.filter((d) => d.id.slice(12, 14) === shard).slice(0, 25);
    const docs = [...pick('00'), ...pick('01')].sort(() => Math.random() - 0.5);
    expect(new Set(docs.map((d) => d.id.slice(12, 14)))).toEqual(new Set(['00', '01']));
    const r = { body: { docs } };
    const ids = docs.map((d) => d.id);
    const f = await postJson<{ docs: { id: string; data: unknown }[]; not_found: string[] }>(`${proxy.url}/fetch`, {
      ids: [...ids, 'ffffffffffff00ffffffffff'],
      fields: ['n'],
    });
    expect(f.status).toBe(200);
    expect(f.body.docs.map((d) => d.id)).toEqual(ids);
    expect(f.body.docs.map((d) => d.data)).toEqual(r.body.docs.map((d) => ({ n: d.data.n })));
    expect(f.body.not_found).toEqual(['ffffffffffff00ffffffffff']);
  });

  it('kill -9 of a replica while bulks stream: every acknowledged document is found afterwards', async () => {
    const acked = new Set<number>();
    let n = 0;
    let stop = false;
    const writer = async () => {
      while (!stop) {
        const batch = Array.from({ length: 40 }, () => ({ run: 'kill', n: n++ }));
        const r = await bulk(proxy.url, ndjson(batch));
        if (r.status !== 200) continue;
        r.body.items.forEach((it, i) => {
          if (it.index!.status === 201) acked.add(batch[i]!.n);
        });
      }
    };
    const writers = [writer(), writer()];
    while (acked.size < 400) await new Promise((r) => setTimeout(r, 20));
    await stores[1]!.kill9();
    const at = acked.size;
    while (acked.size < at + 800) await new Promise((r) => setTimeout(r, 20));
    stop = true;
    await Promise.all(writers);
    const found = await foundNs('run:kill');
    const lost = [...acked].filter((x) => !found.has(x));
    expect(lost).toEqual([]);
    // Back on its port, the replica replays its write-ahead file and serves reads again.
    await stores[1]!.restart();
    await waitWhole();
    expect(await foundNs('run:kill')).toEqual(found);
  });

  it("a whole shard stopped: a partial answer with the other shard's documents; restarted, whole answers again", async () => {
    const whole = await postJson<Answer>(`${proxy.url}/search`, { query: { query: 'run:helper' }, size: 100 });
    expect(whole.body.partial_response).toBeUndefined();
    await Promise.all([stores[2]!.stop(), stores[3]!.stop()]);
    const part = await postJson<Answer>(`${proxy.url}/search`, { query: { query: 'run:helper' }, size: 100 });
    expect(part.status).toBe(200);
    expect(part.body.partial_response).toBe(true);
    expect(part.body.error!.code).toBe('PARTIAL_RESPONSE');
    expect(part.body.error!.message).toMatch(/1 of 2 shards did not answer: shard 1: /);
    expect(part.body.docs.length).toBeGreaterThan(0);
    expect(part.body.docs.every((d) => d.id.slice(12, 14) === '00')).toBe(true);
    expect(part.body.total).toBeLessThan(whole.body.total);
    const agg = await postJson<{ partial_response?: boolean; error?: { code: string } }>(`${proxy.url}/aggregate`, {
      query: { query: 'run:helper' },
      aggs: [{ field: 'run', func: 'count' }],
    });
    expect(agg.body.partial_response).toBe(true);
    // Writes go to the shard that works.
    const w = await bulk(proxy.url, ndjson([{ run: 'during', n: 1 }]));
    expect(w.body.errors).toBe(false);
    await Promise.all([stores[2]!.restart(), stores[3]!.restart()]);
    await waitWhole();
    const again = await postJson<Answer>(`${proxy.url}/search`, { query: { query: 'run:helper' }, size: 100 });
    expect(again.body.partial_response).toBeUndefined();
    expect(again.body.total).toBe(whole.body.total);
    expect(again.body.docs.map((d) => d.id)).toEqual(whole.body.docs.map((d) => d.id));
  });

  it('stores that hang: a read fails over past the deadline; a shard whose replicas all hang is left out; all down is a 502', async () => {
    const whole = await postJson<Answer>(`${proxy.url}/search`, { query: { query: 'run:helper' }, size: 10 });
    stores[2]!.child.kill('SIGSTOP');
    try {
      for (let k = 0; k < 2; k++) {
        const r = await postJson<Answer>(`${proxy.url}/search`, { query: { query: 'run:helper' }, size: 10 });
        expect(r.body.partial_response).toBeUndefined();
        expect(r.body.total).toBe(whole.body.total);
      }
      stores[3]!.child.kill('SIGSTOP');
      const part = await postJson<Answer>(`${proxy.url}/search`, { query: { query: 'run:helper' }, size: 10 });
      expect(part.body.partial_response).toBe(true);
      expect(part.body.error!.message).toMatch(/deadline/i);
      stores[0]!.child.kill('SIGSTOP');
      stores[1]!.child.kill('SIGSTOP');
      const none = await postJson<{ error: { code: string; message: string } }>(`${proxy.url}/search`, {
        query: { query: 'run:helper' },
        size: 10,
      });
      expect(none.status).toBe(502);
      expect(none.body.error.code).toBe('upstream_failed');
      expect(none.body.error.message).toMatch(/every shard failed/);
    } finally {
      for (const s of stores) s.child.kill('SIGCONT');
    }
    await waitWhole();
    const back = await postJson<Answer>(`${proxy.url}/search`, { query: { query: 'run:helper' }, size: 10 });
    expect(back.body.partial_response).toBeUndefined();
    expect(back.body.total).toBe(whole.body.total);
  });

  it('async search through the proxy shows progress between 0 and 1 while a hung shard holds each slice to the deadline, then cancels', async () => {
    stores[2]!.child.kill('SIGSTOP');
    stores[3]!.child.kill('SIGSTOP');
    try {
      const started = await postJson<{ search_id: string }>(`${proxy.url}/async-search`, {
        query: { query: 'run:helper' },
        size: 5,
      });
      expect(started.status).toBe(200);
      const id = started.body.search_id;
      type Info = { status: string; progress: number; response: { total: number } };
      let got: Info | undefined;
      // Each slice waits for shard 1 until request_timeout (5 s): the first slice ends, the search goes on.
      for (let i = 0; i < 150; i++) {
        got = (await (await fetch(`${proxy.url}/async-search/${id}`)).json()) as Info;
        if (got.progress > 0) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(got!.status).toBe('in_progress');
      expect(got!.progress).toBeGreaterThan(0);
      expect(got!.progress).toBeLessThan(1);
      const cancel = await fetch(`${proxy.url}/async-search/${id}/cancel`, { method: 'POST' });
      expect(cancel.status).toBe(200);
      expect((await fetch(`${proxy.url}/async-search/${id}`, { method: 'DELETE' })).status).toBe(200);
    } finally {
      for (const s of stores) s.child.kill('SIGCONT');
    }
    await waitWhole();
  });

  it('writes past a hung replica: retried, moved to the other shard, the shard skipped (breaker open) then probed again; every store hung: items 500 after write_retries', async () => {
    // A second proxy over the same stores, with a short deadline and a breaker that trips at the first failure.
    const p2 = await startLogstore({
      mode: 'proxy',
      cluster: {
        hot_stores: stores.map((s) => s.grpcAddr),
        hot_replicas: 2,
        request_timeout: '1s',
        write_retries: 3,
        breaker_failures: 1,
        breaker_cooldown: '2s',
      },
    });
    type Status = { stores: { shard: number; ok: boolean; breaker: string }[] };
    const breakers = async () => {
      const st = (await (await fetch(`${p2.url}/status`)).json()) as Status;
      return [0, 1].map((shard) => st.stores.filter((x) => x.shard === shard && x.ok).map((x) => x.breaker));
    };
    const acked = new Set<number>();
    let next = 0;
    const send = async (count: number, run = 'hung-write') => {
      const docs = Array.from({ length: count }, () => ({ run, n: next++ }));
      const r = await bulk(p2.url, ndjson(docs));
      expect(r.status).toBe(200);
      r.body.items.forEach((it, i) => {
        if (it['index']!.status === 201) acked.add(docs[i]!.n);
      });
      return r.body.items.map((it) => it['index']!);
    };
    try {
      expect(await breakers()).toEqual([
        ['closed', 'closed'],
        ['closed', 'closed'],
      ]);
      stores[2]!.child.kill('SIGSTOP');
      // Batches that land on shard 1 wait for the hung replica twice, then move to shard 0 (the third try): every
      // item is stored.
      for (let k = 0; k < 4; k++) for (const item of await send(50)) expect(item.status).toBe(201);
      const st = (await (await fetch(`${p2.url}/status`)).json()) as Status;
      expect(st.stores.filter((x) => x.shard === 1 && x.ok).map((x) => x.breaker)).toEqual(['open']);
      expect(st.stores.filter((x) => x.shard === 0).map((x) => x.breaker)).toEqual(['closed', 'closed']);
      // Every store hung: each try fails at the deadline; after write_retries the items fail with 500.
      for (const s of stores) s.child.kill('SIGSTOP');
      const failedNext = next;
      for (const item of await send(20, 'hung-all'))
        expect(item).toMatchObject({ status: 500, error: { type: 'storage_exception' } });
      for (const s of stores) s.child.kill('SIGCONT');
      await waitWhole();
      // The client sends the failed items again, as shippers do. The hung stores took the first send after its
      // deadline (no replica answered in time, so the proxy never learned its ids); the proxy forgets that batch
      // by its key on every store it was sent to, so the documents are counted once.
      const again = Array.from({ length: 20 }, (_, k) => ({ run: 'hung-all', n: failedNext + k }));
      const resent = await bulk(p2.url, ndjson(again));
      expect(resent.body.items.map((it) => it['index']!.status)).toEqual(again.map(() => 201));
      const readAll = async () => {
        const r = await postJson<Answer>(`${p2.url}/search`, { query: { query: 'run:hung-all' }, size: 100 });
        return {
          total: r.body.total,
          listed: r.body.docs.length,
          distinct: new Set(r.body.docs.map((d) => d.data.n)).size,
        };
      };
      let all = await readAll();
      for (let i = 0; i < 60 && !(all.total === 20 && all.listed === 20 && all.distinct === 20); i++) {
        await new Promise((r) => setTimeout(r, 250));
        all = await readAll();
      }
      expect(all).toEqual({ total: 20, listed: 20, distinct: 20 });
      // Past the cooldown a write probes shard 1 again; once one succeeds there its breaker closes.
      await new Promise((r) => setTimeout(r, 2100));
      for (let k = 0; k < 10 && (await breakers()).flat().includes('open'); k++)
        for (const item of await send(50)) expect(item.status).toBe(201);
      expect(await breakers()).toEqual([
        ['closed', 'closed'],
        ['closed', 'closed'],
      ]);
      // Nothing acknowledged is missing (what the hung stores took after their deadline may be there too).
      const found = await foundNs('run:hung-write');
      expect([...acked].filter((n) => !found.has(n))).toEqual([]);
      // Counted once: the batches that moved to shard 0 left a copy on shard 1's replica that took them, and on
      // the hung one once it went on; the proxy forgets both (the hung one's through its outbox, every
      // breaker_cooldown), so a read's total equals the documents it lists, whichever replicas it asks.
      const read = async () => {
        const r = await postJson<Answer>(`${p2.url}/search`, { query: { query: 'run:hung-write' }, size: 5000 });
        const agg = await postJson<{ aggs: { buckets: { value: number }[] }[] }>(`${p2.url}/aggregate`, {
          query: { query: 'run:hung-write' },
          aggs: [{ field: 'run', func: 'count' }],
        });
        return {
          total: r.body.total,
          counted: agg.body.aggs[0]!.buckets[0]!.value,
          listed: r.body.docs.length,
          distinct: new Set(r.body.docs.map((d) => d.data.n)).size,
        };
      };
      let last = await read();
      for (let i = 0; i < 60; i++) {
        const reads = [last, await read(), await read(), await read()];
        if (reads.every((x) => x.total === x.listed && x.counted === x.listed && x.listed === x.distinct)) break;
        await new Promise((r) => setTimeout(r, 250));
        last = await read();
      }
      for (let k = 0; k < 4; k++) {
        const x = await read();
        expect(x).toEqual({ total: x.distinct, counted: x.distinct, listed: x.distinct, distinct: found.size });
      }
    } finally {
      for (const s of stores) s.child.kill('SIGCONT');
      await p2.cleanup();
    }
  });
});
