// The proxy's Session with each store (one long-lived gRPC call carrying searches, fetches and status by id),
// with real store processes: a call broken mid-request fails that request over to another replica (or reports
// the shard missing), a hung store fails at the proxy's own deadline, the session is opened again after a
// store comes back, and a store without the Session method (an older one) is still asked with unary calls.
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toShardResult } from '../../../src/logstore/cluster/cluster.js';
import { StoreClient, type StoreSearchRequest, isCallerError } from '../../../src/logstore/cluster/store-client.js';
import { services } from '../../../src/logstore/grpc/proto.js';
import { unpackHits } from '../../../src/logstore/search/packed-hits.js';
import { type LogstoreProcess, bulk, ndjson, postJson, startLogstore } from '../../helpers/logstore.js';

let stores: LogstoreProcess[] = [];
const proxies: LogstoreProcess[] = [];
/** Shard [s0, s1] (two replicas), deadline far beyond the test's own timeout. */
let replicated: LogstoreProcess;
/** Shards [s0] and [s2], one replica each, the same long deadline. */
let sharded: LogstoreProcess;
/** The same shards, a 2 s deadline. */
let short: LogstoreProcess;

type Answer = {
  total: number;
  docs: { id: string; data: Record<string, unknown> }[];
  error?: { code: string; message: string };
  partial_response?: boolean;
};

const search = (p: LogstoreProcess, query: string, size = 1000) =>
  postJson<Answer>(`${p.url}/search`, { query: { query }, size });

async function proxy(addrs: string[], replicas: number, timeout: string): Promise<LogstoreProcess> {
  const p = await startLogstore({
    mode: 'proxy',
    cluster: { hot_stores: addrs, hot_replicas: replicas, request_timeout: timeout },
  });
  proxies.push(p);
  return p;
}

/** Waits (30 s at most) until `p` reaches every one of its stores. */
async function waitWhole(p: LogstoreProcess): Promise<void> {
  for (let i = 0; i < 150; i++) {
    const st = (await (await fetch(`${p.url}/status`)).json()) as { stores: { ok: boolean }[] };
    if (st.stores.every((s) => s.ok)) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error('the proxy did not reach every store again within 30 s');
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

beforeAll(async () => {
  stores = await Promise.all([0, 1, 2].map(() => startLogstore({ mode: 'store', storage: { shards: 1 } })));
  replicated = await proxy([stores[0]!.grpcAddr, stores[1]!.grpcAddr], 2, '600s');
  sharded = await proxy([stores[0]!.grpcAddr, stores[2]!.grpcAddr], 1, '600s');
  short = await proxy([stores[0]!.grpcAddr, stores[2]!.grpcAddr], 1, '2s');
  const r = await bulk(replicated.url, ndjson(Array.from({ length: 200 }, (_, n) => ({ run: 'rep', n }))));
  expect(r.body.errors).toBe(false);
  // Bulks one after another go to the two shards in turn.
  for (let k = 0; k < 4; k++)
    expect(
      (await bulk(sharded.url, ndjson(Array.from({ length: 50 }, (_, n) => ({ run: 'shd', n: 50 * k + n }))))).body
        .errors,
    ).toBe(false);
});

afterAll(async () => {
  for (const s of stores) if (s.child.exitCode === null && s.child.signalCode === null) s.child.kill('SIGCONT');
  await Promise.all([...proxies, ...stores].map((p) => p.cleanup()));
});

describe('proxy sessions with stores', () => {
  it("a store that hangs fails at the proxy's deadline (partial answer); it answers again once it resumes", async () => {
    const whole = await search(short, 'run:shd');
    expect(whole.body.total).toBe(200);
    expect(new Set(whole.body.docs.map((d) => d.id.slice(12, 14)))).toEqual(new Set(['00', '01']));
    stores[2]!.child.kill('SIGSTOP');
    try {
      for (let k = 0; k < 2; k++) {
        const part = await search(short, 'run:shd');
        expect(part.status).toBe(200);
        expect(part.body.partial_response).toBe(true);
        expect(part.body.error!.code).toBe('PARTIAL_RESPONSE');
        expect(part.body.error!.message).toMatch(/1 of 2 shards did not answer: shard 1: .*deadline/i);
        expect(part.body.docs.length).toBeGreaterThan(0);
        expect(part.body.docs.every((d) => d.id.slice(12, 14) === '00')).toBe(true);
      }
    } finally {
      stores[2]!.child.kill('SIGCONT');
    }
    // The hung store now answers the requests that timed out too: those answers are dropped, the new ones match.
    await waitWhole(short);
    for (let k = 0; k < 3; k++) {
      const again = await search(short, 'run:shd');
      expect(again.body.partial_response).toBeUndefined();
      expect(again.body.docs.map((d) => d.id)).toEqual(whole.body.docs.map((d) => d.id));
    }
  });

  it('a session broken mid-request (store killed) fails that request over to the other replica at once; the session reopens after a restart', async () => {
    stores[1]!.child.kill('SIGSTOP');
    // Two searches at once: replicas are asked in turn, so one of them waits on the stopped store.
    const pending = [search(replicated, 'run:rep'), search(replicated, 'run:rep')];
    await sleep(500);
    await stores[1]!.kill9();
    // The deadline is 600 s: answers within the test's timeout came from the broken session, not the deadline.
    for (const r of await Promise.all(pending)) {
      expect(r.status).toBe(200);
      expect(r.body.partial_response).toBeUndefined();
      expect(r.body.total).toBe(200);
    }
    await stores[1]!.restart();
    await waitWhole(replicated);
    // Reads rotate over the replicas: both are asked, both answer whole.
    for (let k = 0; k < 4; k++) {
      const r = await search(replicated, 'run:rep');
      expect(r.body.partial_response).toBeUndefined();
      expect(r.body.total).toBe(200);
    }
  });

  it("a session broken mid-request on a shard's only replica gives a partial answer at once; restarted, whole again", async () => {
    const whole = await search(sharded, 'run:shd');
    expect(whole.body.total).toBe(200);
    stores[2]!.child.kill('SIGSTOP');
    const pending = search(sharded, 'run:shd');
    await sleep(500);
    await stores[2]!.kill9();
    const part = await pending;
    expect(part.status).toBe(200);
    expect(part.body.partial_response).toBe(true);
    expect(part.body.error!.message).toMatch(/1 of 2 shards did not answer: shard 1: /);
    expect(part.body.docs.every((d) => d.id.slice(12, 14) === '00')).toBe(true);
    await stores[2]!.restart();
    await waitWhole(sharded);
    const again = await search(sharded, 'run:shd');
    expect(again.body.partial_response).toBeUndefined();
    expect(again.body.docs.map((d) => d.id)).toEqual(whole.body.docs.map((d) => d.id));
    // Fetch and status go over the reopened session too.
    const ids = whole.body.docs.slice(0, 20).map((d) => d.id);
    const f = await postJson<{ docs: { id: string }[]; not_found: string[] }>(`${sharded.url}/fetch`, { ids });
    expect(f.body.docs.map((d) => d.id)).toEqual(ids);
    expect(f.body.not_found).toEqual([]);
  });

  it('a store without the Session method (an older store) is asked with unary calls: the same answers', async () => {
    // A relay in front of store s0 that serves only the unary and server-streaming methods, as a store built
    // before sessions did; what it forwards is the real store's bytes.
    const def = services().store.service;
    const ident = (b: Buffer) => b;
    const up = new grpc.Client(stores[0]!.grpcAddr, grpc.credentials.createInsecure());
    const relayed: Record<string, number> = {};
    const relayDef: Record<string, grpc.MethodDefinition<Buffer, Buffer>> = {};
    const impl: grpc.UntypedServiceImplementation = {};
    for (const name of ['Bulk', 'Search', 'Status', 'Fetch']) {
      const m = def[name]!;
      relayDef[name] = {
        ...m,
        requestSerialize: ident,
        requestDeserialize: ident,
        responseSerialize: ident,
        responseDeserialize: ident,
      };
      relayed[name] = 0;
    }
    for (const name of ['Bulk', 'Search', 'Status']) {
      impl[name] = (call: grpc.ServerUnaryCall<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) => {
        relayed[name]!++;
        up.makeUnaryRequest(def[name]!.path, ident, ident, call.request, (err, res) => cb(err, res));
      };
    }
    impl.Fetch = (call: grpc.ServerWritableStream<Buffer, Buffer>) => {
      relayed.Fetch!++;
      const s = up.makeServerStreamRequest(def.Fetch!.path, ident, ident, call.request);
      s.on('data', (d: Buffer) => call.write(d));
      s.on('end', () => call.end());
      s.on('error', (err: grpc.ServiceError) => call.destroy(err));
    };
    const server = new grpc.Server();
    server.addService(relayDef, impl);
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, p) => (e ? reject(e) : resolve(p))),
    );
    try {
      const old = await proxy([`127.0.0.1:${port}`], 1, '30s');
      const direct = await proxy([stores[0]!.grpcAddr], 1, '30s');
      for (const q of ['run:rep', 'run:shd', 'run:rep and n:<10 | fields n']) {
        const [a, b] = await Promise.all([search(old, q), search(direct, q)]);
        expect(a.status).toBe(200);
        expect(a.body).toEqual(b.body);
      }
      const ids = (await search(direct, 'run:rep', 5)).body.docs.map((d) => d.id);
      const f = await postJson<{ docs: { id: string }[] }>(`${old.url}/fetch`, { ids });
      expect(f.body.docs.map((d) => d.id)).toEqual(ids);
      const st = (await (await fetch(`${old.url}/status`)).json()) as { stores: { ok: boolean }[] };
      expect(st.stores.map((s) => s.ok)).toEqual([true]);
      expect(relayed.Search).toBeGreaterThanOrEqual(3);
      expect(relayed.Fetch).toBeGreaterThanOrEqual(1);
      expect(relayed.Status).toBeGreaterThanOrEqual(1);
    } finally {
      up.close();
      server.forceShutdown();
    }
  });

  it("many requests at once on one session each get their own answer; a store's refusal is the caller's error", async () => {
    const client = new StoreClient(stores[0]!.grpcAddr, 30_000, { time: 10_000, timeout: 5_000 });
    try {
      const req = (query: string): StoreSearchRequest => ({
        query,
        from: -8.64e15,
        to: 8.64e15,
        limit: 10,
        order: 'DESC',
        aggs: [],
        hist_interval: 0,
        with_total: true,
        packed_hits: true,
      });
      const answers = await Promise.all(Array.from({ length: 60 }, (_, n) => client.search(req(`run:rep and n:${n}`))));
      answers.forEach((a, n) => {
        const hits = unpackHits(toShardResult(a).hits);
        expect(hits.map((h) => (JSON.parse(h.json) as { data: { n: number } }).data.n)).toEqual([n]);
      });
      const [st, docs] = await Promise.all([
        client.status(),
        client.fetch({
          ids: [unpackHits(toShardResult(answers[0]!).hits)[0]!.id],
          fields: [],
          fields_except: false,
          has_fields: false,
        }),
      ]);
      expect(st.shards.length).toBe(1);
      expect(docs.docs.length).toBe(1);
      expect(docs.damaged_fractions).toEqual([]);
      expect(client.session.unsupported).toBe(false);
      expect(client.session.pending).toBe(0);
      // The store plans the query itself: one it cannot parse is INVALID_ARGUMENT, which the proxy answers 400.
      const err = await client.search(req('run:(')).then(
        () => null,
        (e: unknown) => e,
      );
      expect(isCallerError(err)).toBe(true);
      expect((await client.search(req('run:rep and n:7'))).total).toBe(1);
    } finally {
      client.close();
    }
  });
});
