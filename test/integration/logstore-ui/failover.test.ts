// The UI backend over a proxy with two stores and over a single store: round-robin with failover, retries, and a
// log store stopped or killed mid-request giving a 504 / 502 JSON error within clients.logstore_timeout, never a hang.
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bulk, ndjson, startLogstore, type LogstoreProcess } from '../../helpers/logstore.js';
import { api, startUi, type UiProcess } from '../../helpers/logstore-ui.js';

const N = 300;
const T0 = Date.now() - 600_000;
const docs = Array.from({ length: N }, (_, i) => ({
  timestamp: new Date(T0 + i * 1000).toISOString(),
  service: ['a', 'b', 'c'][i % 3]!,
  n: String(i),
}));
const FROM = new Date(T0 - 1000).toISOString();
const TO = new Date(T0 + N * 1000).toISOString();

/** A port nothing listens on (bound, then closed). */
async function deadAddr(): Promise<string> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise((r) => s.close(r));
  return `127.0.0.1:${port}`;
}

async function retriesOf(ui: UiProcess): Promise<number> {
  const m = await fetch(`${ui.debugUrl}/metrics`).then((r) => r.text());
  return [...m.matchAll(/tidepool_logstore_ui_logstore_retries_total\{[^}]*\} (\d+)/g)].reduce(
    (a, x) => a + Number(x[1]),
    0,
  );
}

describe('a proxy with two stores', () => {
  const stores: LogstoreProcess[] = [];
  let proxy: LogstoreProcess;
  let single: LogstoreProcess;
  let overProxy: UiProcess;
  let overSingle: UiProcess;

  beforeAll(async () => {
    let a: LogstoreProcess, b: LogstoreProcess;
    [a, b, single] = await Promise.all([
      startLogstore({ mode: 'store' }),
      startLogstore({ mode: 'store' }),
      startLogstore(),
    ]);
    stores.push(a, b);
    proxy = await startLogstore({ mode: 'proxy', cluster: { hot_stores: stores.map((s) => s.grpcAddr) } });
    // Small batches so that both of the proxy's shards hold documents.
    for (let i = 0; i < N; i += 50)
      expect((await bulk(proxy.url, ndjson(docs.slice(i, i + 50)))).body.errors).toBe(false);
    expect((await bulk(single.url, ndjson(docs))).body.errors).toBe(false);
    overProxy = await startUi({ logstoreAddrs: [await deadAddr(), proxy.grpcAddr], clients: { request_retries: 2 } });
    overSingle = await startUi({ logstoreAddrs: [single.grpcAddr] });
  }, 120_000);

  afterAll(async () => {
    await Promise.all([overProxy?.cleanup(), overSingle?.cleanup()]);
    await Promise.all([proxy?.cleanup(), single?.cleanup(), ...stores.map((s) => s.cleanup())]);
  });

  it('answers through the proxy equal those of a single store holding the same documents', async () => {
    const status = await api(overProxy, 'GET', '/status');
    expect(status.body.logstore.mode).toBe('proxy');
    expect(status.body.logstore.stores.every((s: { docs: number }) => s.docs > 0)).toBe(true);
    const bodies = [
      [
        '/search',
        {
          query: 'service:b',
          from: FROM,
          to: TO,
          limit: 20,
          offset: 3,
          histogram: { interval: '1m' },
          aggregations: [{ field: 'service', func: 'count' }],
        },
      ],
      [
        '/aggregation',
        { query: '*', from: FROM, to: TO, aggregations: [{ field: 'n', func: 'avg', group_by: 'service' }] },
      ],
      ['/histogram', { query: 'service:a', from: FROM, to: TO, interval: '30s' }],
    ] as const;
    for (const [p, body] of bodies) {
      const a = await api(overProxy, 'POST', p, body);
      const b = await api(overSingle, 'POST', p, body);
      expect(a.status).toBe(200);
      if (p === '/search') {
        expect(a.body.events.map((e: { data: unknown }) => e.data)).toEqual(
          b.body.events.map((e: { data: unknown }) => e.data),
        );
        expect({ ...a.body, events: null }).toEqual({ ...b.body, events: null });
      } else expect(a.body).toEqual(b.body);
    }
    const id = (await api(overProxy, 'POST', '/search', { query: 'n:150', from: FROM, to: TO, limit: 1 })).body
      .events[0].id;
    const ctx = await api(overProxy, 'POST', '/context', { id, before: 2, after: 2, field: 'service' });
    expect(ctx.body.before.map((e: { data: { n: string } }) => e.data.n)).toEqual(['144', '147']);
    expect(ctx.body.after.map((e: { data: { n: string } }) => e.data.n)).toEqual(['153', '156']);
  });

  it('round-robin skips the dead address: every request succeeds, the misses are retried on the next address', async () => {
    const before = await retriesOf(overProxy);
    for (let i = 0; i < 6; i++) {
      const r = await api(overProxy, 'POST', '/search', { query: '*', from: FROM, to: TO, limit: 1 });
      expect(r.status).toBe(200);
      expect(r.body.total).toBe(N);
    }
    // Half of the requests start on the dead address.
    expect((await retriesOf(overProxy)) - before).toBeGreaterThanOrEqual(3);
  });

  it('an event on a dead shard is a 502, not a 404; one the dead shard may hold is a 502 naming the partial answer', async () => {
    const ids = (await api(overProxy, 'POST', '/search', { query: '*', from: FROM, to: TO, limit: N })).body.events.map(
      (e: { id: string }) => e.id,
    ) as string[];
    // An id's shard byte (hex digits 12-13) names the proxy shard that holds it; stores[1] is shard 1.
    const onLive = ids.find((id) => id.slice(12, 14) === '00')!;
    const onDead = ids.find((id) => id.slice(12, 14) === '01')!;
    expect(onLive && onDead).toBeTruthy();
    await stores[1]!.kill9();
    expect((await api(overProxy, 'GET', `/events/${onLive}`)).status).toBe(200);
    // The proxy's gRPC Fetch ends with UNAVAILABLE at once (it used to leave the stream open until the UI's deadline: a 504).
    const dead = await api(overProxy, 'GET', `/events/${onDead}`);
    expect(dead.status).toBe(502);
    expect(dead.body.error.code).toBe('logstore_unavailable');
    // An id naming no shard of the proxy is asked of both: shard 0 does not have it, shard 1 did not answer.
    const nowhere = `${'0'.repeat(12)}ff${'0'.repeat(10)}`;
    const partial = await api(overProxy, 'GET', `/events/${nowhere}`);
    expect(partial.status).toBe(502);
    expect(partial.body.error).toMatchObject({ code: 'logstore_unavailable' });
    expect(partial.body.error.message).toContain('partial');
  });
});

describe('a log store that stops or dies', () => {
  let store: LogstoreProcess;
  let ui: UiProcess;
  const TIMEOUT = 1500;

  beforeAll(async () => {
    store = await startLogstore();
    expect((await bulk(store.url, ndjson(docs))).body.errors).toBe(false);
    ui = await startUi({
      logstoreAddrs: [store.grpcAddr],
      clients: { logstore_timeout: `${TIMEOUT}ms`, request_retries: 3 },
    });
  }, 120_000);

  afterAll(async () => {
    if (store?.child.exitCode === null) store.child.kill('SIGCONT');
    await ui?.cleanup();
    await store?.cleanup();
  });

  it('stopped (SIGSTOP) mid-request: 504 with a JSON error within the timeout; answers again once it resumes', async () => {
    const pending = api(ui, 'POST', '/search', { query: '*', from: FROM, to: TO, limit: 5 });
    store.child.kill('SIGSTOP');
    const started = Date.now();
    const slow = await api(ui, 'POST', '/aggregation', { query: '*', aggregations: [{ field: 'service' }] });
    const took = Date.now() - started;
    expect(slow.status).toBe(504);
    expect(slow.body.error.code).toBe('logstore_timeout');
    expect(slow.body.error.message).toContain('clients.logstore_timeout');
    // Generous: the budget plus scheduling noise, far from a hang.
    expect(took).toBeLessThan(TIMEOUT + 5000);
    const first = await pending;
    expect([200, 504]).toContain(first.status);
    // Other requests that need no log store keep being served meanwhile.
    expect((await api(ui, 'GET', '/limits')).status).toBe(200);
    store.child.kill('SIGCONT');
    const back = await api(ui, 'POST', '/search', { query: '*', from: FROM, to: TO, limit: 5 });
    expect(back.status).toBe(200);
    expect(back.body.total).toBe(N);
  });

  it('killed: 502 with a JSON error; answers again after a restart', async () => {
    await store.kill9();
    const started = Date.now();
    const r = await api(ui, 'POST', '/search', { query: '*', from: FROM, to: TO });
    expect([502, 504]).toContain(r.status);
    expect(
      r.status === 502 ? r.body.error.code === 'logstore_unavailable' : r.body.error.code === 'logstore_timeout',
    ).toBe(true);
    expect(Date.now() - started).toBeLessThan(TIMEOUT + 5000);
    const events = await api(ui, 'GET', `/events/${'1'.repeat(24)}`);
    expect([502, 504]).toContain(events.status);
    await store.restart();
    const deadline = Date.now() + 20_000;
    let back;
    do {
      back = await api(ui, 'POST', '/search', { query: '*', from: FROM, to: TO, limit: 1 });
    } while (back.status !== 200 && Date.now() < deadline && (await new Promise((res) => setTimeout(res, 200)), true));
    expect(back.status).toBe(200);
    expect(back.body.total).toBe(N);
  });
});
