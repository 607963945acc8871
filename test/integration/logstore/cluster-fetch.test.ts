// Fetch by id through a proxy over 2 shards x 2 replicas (real processes): the same answers as single mode for
// generated ids and for documents written with client _ids; each id is asked of the shard that holds it, so a
// fetch of the live shard's ids stays whole while the other shard is down, and ids of a down shard are partial.
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { services } from '../../../src/logstore/grpc/proto.js';
import { type LogstoreProcess, bulk, ndjson, postJson, startLogstore } from '../../helpers/logstore.js';

let single: LogstoreProcess;
let stores: LogstoreProcess[] = [];
let proxy: LogstoreProcess;

const base = Date.parse('2026-06-01T00:00:00Z');
const doc = (run: string, n: number) => ({
  timestamp: new Date(base + n * 1000).toISOString(),
  run,
  n,
  level: ['info', 'warn', 'error'][n % 3],
});

/** A bulk body whose documents carry client _ids (`c-<n>`). */
function withIds(docs: { n: number }[]): string {
  return docs.map((d) => `{"index":{"_id":"c-${d.n}"}}\n${JSON.stringify(d)}\n`).join('');
}

beforeAll(async () => {
  // Two local shard threads in every process, so a store routes ids among its own threads too.
  [single, ...stores] = await Promise.all([
    startLogstore({ storage: { shards: 2 } }),
    ...[0, 1, 2, 3].map(() => startLogstore({ mode: 'store', storage: { shards: 2 } })),
  ]);
  proxy = await startLogstore({
    mode: 'proxy',
    cluster: {
      hot_stores: stores.map((s) => s.grpcAddr),
      hot_replicas: 2,
      request_timeout: '3s',
      breaker_cooldown: '1s',
      keepalive_time: '2s',
      keepalive_timeout: '1s',
    },
  });
  for (let k = 0; k < 6; k++) {
    const gen = Array.from({ length: 30 }, (_, i) => doc('gen', k * 30 + i));
    const cid = Array.from({ length: 30 }, (_, i) => doc('cid', k * 30 + i));
    for (const url of [single.url, proxy.url]) {
      const a = await bulk(url, ndjson(gen));
      const b = await bulk(url, withIds(cid));
      expect(a.body.errors).toBe(false);
      expect(b.body.errors).toBe(false);
    }
  }
});

afterAll(async () => {
  await Promise.all([single, proxy, ...stores].filter(Boolean).map((p) => p.cleanup()));
});

type Doc = { id: string; time: string; data: Record<string, unknown> };
type Fetched = {
  docs: Doc[];
  not_found: string[];
  error?: { code: string; message: string };
  partial_response?: boolean;
};

/** Each document's id by `run/n`, from a search of the whole set. */
async function idsOf(url: string): Promise<Map<string, string>> {
  const r = await postJson<{ docs: Doc[] }>(`${url}/search`, { query: { query: 'run:gen or run:cid' }, size: 1000 });
  expect(r.status).toBe(200);
  expect(r.body.docs.length).toBe(360);
  return new Map(r.body.docs.map((d) => [`${d.data.run}/${d.data.n}`, d.id]));
}

const MISSING = ['0190000000000000ffffffff', '019000000000ff0000000001', 'not-an-id'];

describe('fetch through a proxy over 2 shards x 2 replicas', () => {
  let proxyIds: Map<string, string>;
  let singleIds: Map<string, string>;
  const keys = [
    ...Array.from({ length: 40 }, (_, i) => `gen/${(i * 37) % 180}`),
    ...Array.from({ length: 40 }, (_, i) => `cid/${(i * 53) % 180}`),
  ].sort(
    (a, b) => ((a.length * 7 + a.charCodeAt(a.length - 1)) % 11) - ((b.length * 7 + b.charCodeAt(b.length - 1)) % 11),
  );

  beforeAll(async () => {
    [proxyIds, singleIds] = await Promise.all([idsOf(proxy.url), idsOf(single.url)]);
  });

  it('gives what single mode gives: documents in the order asked, client _id documents, missing ids, fields', async () => {
    // Both shards hold both kinds (batches in turn; client ids by hash).
    for (const run of ['gen', 'cid']) {
      const shards = new Set([...proxyIds].filter(([k]) => k.startsWith(run)).map(([, id]) => id.slice(12, 14)));
      expect(shards).toEqual(new Set(['00', '01']));
    }
    for (const fields of [undefined, ['n', '_id']]) {
      const [p, s] = await Promise.all([
        postJson<Fetched>(`${proxy.url}/fetch`, { ids: [...keys.map((k) => proxyIds.get(k)!), ...MISSING], fields }),
        postJson<Fetched>(`${single.url}/fetch`, { ids: [...keys.map((k) => singleIds.get(k)!), ...MISSING], fields }),
      ]);
      expect(p.status).toBe(200);
      expect(s.status).toBe(200);
      expect(p.body.partial_response).toBeUndefined();
      expect(p.body.docs.map((d) => d.id)).toEqual(keys.map((k) => proxyIds.get(k)!));
      expect(p.body.docs.map((d) => [d.time, d.data])).toEqual(s.body.docs.map((d) => [d.time, d.data]));
      expect(p.body.not_found).toEqual(MISSING);
      expect(s.body.not_found).toEqual(MISSING);
    }
    // Restarted (its fractions sealed, their id shard bytes read back), single mode finds the same.
    await single.stop();
    await single.restart();
    const again = await postJson<Fetched>(`${single.url}/fetch`, {
      ids: [...keys.map((k) => singleIds.get(k)!), ...MISSING],
    });
    expect(again.body.docs.map((d) => d.id)).toEqual(keys.map((k) => singleIds.get(k)!));
    expect(again.body.not_found).toEqual(MISSING);
    const cid = p0(await postJson<Fetched>(`${proxy.url}/fetch`, { ids: [proxyIds.get('cid/7')!] }));
    expect(cid.data).toEqual({ _id: 'c-7', ...doc('cid', 7) });
  });

  it('the other shard stopped: ids of the live shard answer whole (failing over between its replicas); ids of the down shard are partial, or a 502 when nothing answered', async () => {
    const onShard = (s: string) => keys.filter((k) => proxyIds.get(k)!.slice(12, 14) === s);
    const live = onShard('00');
    const down = onShard('01');
    expect(live.length).toBeGreaterThan(5);
    expect(down.length).toBeGreaterThan(5);
    await Promise.all([stores[2]!.stop(), stores[3]!.stop()]);
    for (let k = 0; k < 3; k++) {
      if (k === 2) await stores[0]!.stop(); // one replica of the live shard gone too: its other replica answers.
      const r = await postJson<Fetched>(`${proxy.url}/fetch`, { ids: live.map((x) => proxyIds.get(x)!) });
      expect(r.status).toBe(200);
      expect(r.body.partial_response).toBeUndefined();
      expect(r.body.error).toBeUndefined();
      expect(r.body.docs.map((d) => d.id)).toEqual(live.map((x) => proxyIds.get(x)!));
      expect(r.body.not_found).toEqual([]);
    }
    // An id its shard does not hold may sit on the other shard (a write that moved keeps its ids): partial.
    const gone = await postJson<Fetched>(`${proxy.url}/fetch`, {
      ids: [...live.map((x) => proxyIds.get(x)!), MISSING[0]],
    });
    expect(gone.status).toBe(200);
    expect(gone.body.partial_response).toBe(true);
    expect(gone.body.docs.map((d) => d.id)).toEqual(live.map((x) => proxyIds.get(x)!));
    expect(gone.body.not_found).toEqual([MISSING[0]]);
    const mixed = keys.map((x) => proxyIds.get(x)!);
    const part = await postJson<Fetched>(`${proxy.url}/fetch`, { ids: mixed });
    expect(part.status).toBe(200);
    expect(part.body.partial_response).toBe(true);
    expect(part.body.error!.code).toBe('PARTIAL_RESPONSE');
    expect(part.body.error!.message).toMatch(/shard 1/);
    expect(part.body.docs.map((d) => d.id)).toEqual(live.map((x) => proxyIds.get(x)!));
    expect(part.body.not_found).toEqual(down.map((x) => proxyIds.get(x)!));
    // The public gRPC Fetch says the same in its trailing metadata; a whole answer carries none.
    const g = await grpcFetch(mixed);
    expect(g.ids).toEqual(live.map((x) => proxyIds.get(x)!));
    expect(g.trailer['x-partial-response']).toEqual(['true']);
    expect(g.trailer['x-partial-message']![0]).toMatch(/^1 of 2 shards did not answer: shard 1: /);
    const whole = await grpcFetch(live.map((x) => proxyIds.get(x)!));
    expect(whole.ids).toEqual(live.map((x) => proxyIds.get(x)!));
    expect(whole.trailer['x-partial-response']).toBeUndefined();
    const none = await postJson<{ error: { code: string; message: string } }>(`${proxy.url}/fetch`, {
      ids: down.map((x) => proxyIds.get(x)!),
    });
    expect(none.status).toBe(502);
    expect(none.body.error.code).toBe('upstream_failed');
    expect(none.body.error.message).toMatch(/shard 1/);
  });
});

/** The public gRPC Fetch of the proxy: the ids streamed back and the trailing metadata of the OK status. */
async function grpcFetch(ids: string[]): Promise<{ ids: string[]; trailer: Record<string, unknown[]> }> {
  const Ctor = services().api;
  const c = new Ctor(proxy.grpcAddr, grpc.credentials.createInsecure()) as grpc.Client & Record<string, unknown>;
  try {
    return await new Promise((resolve, reject) => {
      const got: string[] = [];
      let trailer: Record<string, unknown[]> | null = null;
      let ended = false;
      const done = () => {
        if (ended && trailer) resolve({ ids: got, trailer });
      };
      const s = (c.Fetch as (r: unknown, o: grpc.CallOptions) => grpc.ClientReadableStream<{ id: string }>).call(
        c,
        { ids, fields: [] },
        { deadline: Date.now() + 20_000 },
      );
      s.on('data', (d: { id: string }) => got.push(d.id));
      s.on('status', (st: grpc.StatusObject) => {
        trailer = st.metadata.toJSON() as Record<string, unknown[]>;
        done();
      });
      s.on('error', reject);
      s.on('end', () => {
        ended = true;
        done();
      });
    });
  } finally {
    c.close();
  }
}

function p0(r: { status: number; body: Fetched }): Doc {
  expect(r.status).toBe(200);
  expect(r.body.docs.length).toBe(1);
  return r.body.docs[0]!;
}
