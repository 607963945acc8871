// Damaged disks: a write-ahead file cut in half and 64 changed bytes in docs.bin, postings.bin and dict.bin of three
// sealed fractions. The real log store restarts over them, says so (error log, /status, /metrics), answers searches
// 200 marked partial from every healthy fraction and the write-ahead records before the cut, and /export returns
// what is healthy and names what it left out.
import { readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { afterEach, describe, expect, it } from 'vitest';
import { type LogstoreProcess, bulk, ndjson, postJson, startLogstore } from '../../helpers/logstore.js';

let running: LogstoreProcess[] = [];
afterEach(async () => {
  for (const ls of running) await ls.cleanup();
  running = [];
});

const BASE = Date.parse('2026-03-01T00:00:00Z');
const timeOf = (i: number) => BASE + i * 1000;
const docOf = (i: number) => ({
  timestamp: new Date(timeOf(i)).toISOString(),
  i,
  kind: i % 2 ? 'x' : 'y',
  msg: `event ${i} ${'p'.repeat(i % 40)}`,
});
const RANGE = { from: new Date(BASE - 3_600_000).toISOString(), to: new Date(BASE + 86_400_000).toISOString() };

interface SearchBody {
  total: number;
  docs: { id: string; data: { i: number } }[];
  partial_response?: boolean;
  error?: { code: string; message: string };
}

/** /export through node:http, whose response keeps the trailers (fetch drops them). */
function exportAll(url: string): Promise<{
  status: number;
  headers: http.IncomingHttpHeaders;
  trailers: NodeJS.Dict<string>;
  docs: { data: { i: number } }[];
}> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      `${url}/export`,
      { method: 'POST', headers: { 'content-type': 'application/json' } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => {
          text += d;
        });
        res.on('end', () =>
          resolve({
            status: res.statusCode!,
            headers: res.headers,
            trailers: res.trailers,
            docs: text
              .split('\n')
              .filter(Boolean)
              .map((l) => JSON.parse(l) as { data: { i: number } }),
          }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify({ query: { query: '*', ...RANGE } }));
  });
}

/** Bulks documents `from`..`from + n - 1` and returns their ids, in order. */
async function bulkIds(url: string, from: number, n: number): Promise<string[]> {
  const r = await bulk(url, ndjson(Array.from({ length: n }, (_, j) => docOf(from + j))));
  expect(r.body.errors).toBe(false);
  return r.body.items.map((it) => Object.values(it)[0]!._id!);
}

interface FetchBody {
  docs: { data: { i: number } }[];
  not_found: string[];
  partial_response?: boolean;
  error?: { code: string; message: string };
}

/** The public gRPC API's Export (api.proto): the documents' `i` and the trailing metadata. */
function grpcExport(addr: string): Promise<{ is: number[]; trailer: Record<string, string> }> {
  const def = protoLoader.loadSync(path.join(import.meta.dirname, '..', '..', '..', 'proto', 'logstore', 'api.proto'), {
    keepCase: true,
    longs: Number,
    enums: String,
    defaults: true,
  });
  const Ctor = (
    grpc.loadPackageDefinition(def) as unknown as {
      tidepool: { logstore: { api: { v1: { LogstoreApi: grpc.ServiceClientConstructor } } } };
    }
  ).tidepool.logstore.api.v1.LogstoreApi;
  const c = new Ctor(addr, grpc.credentials.createInsecure());
  return new Promise((resolve, reject) => {
    const is: number[] = [];
    const s = (c.Export as (r: unknown, o: grpc.CallOptions) => grpc.ClientReadableStream<{ data: Buffer }>).call(
      c,
      { query: { query: '*', ...RANGE } },
      { deadline: Date.now() + 60_000 },
    );
    s.on('data', (d: { data: Buffer }) => is.push((JSON.parse(d.data.toString('utf8')) as { i: number }).i));
    s.on('error', (e) => {
      c.close();
      reject(e);
    });
    s.on('status', (st: grpc.StatusObject) => {
      c.close();
      if (st.code !== grpc.status.OK) return;
      resolve({
        is,
        trailer: Object.fromEntries(Object.entries(st.metadata.getMap()).map(([k, v]) => [k, String(v)])),
      });
    });
  });
}

/** Flips 64 bytes in the middle of a file. */
function flip64(file: string): void {
  const b = readFileSync(file);
  const at = Math.max(0, (b.length >> 1) - 32);
  for (let k = at; k < Math.min(b.length, at + 64); k++) b[k]! ^= 0xa5;
  writeFileSync(file, b);
}

/** The documents (their `i`) of write-ahead records that end at or before byte `cut` (format 3 records). */
function walDocsBefore(file: string, cut: number): number[] {
  const b = readFileSync(file);
  const out: number[] = [];
  for (let pos = 8; pos + 4 <= b.length;) {
    const end = pos + 4 + b.readUInt32LE(pos);
    if (end > cut) break;
    out.push((JSON.parse(b.toString('utf8', pos + 24, end)) as { i: number }).i);
    pos = end;
  }
  return out;
}

describe('damaged storage', () => {
  it('restarts over a cut write-ahead file and three damaged fractions: reports each, answers partial, loses nothing else', async () => {
    const ls = await startLogstore({ storage: { frac_size: '32KB', shards: 1 } });
    running.push(ls);
    const SEALED = 2000;
    const ALL = 2500;
    const idOf: string[] = [];
    for (let k = 0; k < SEALED; k += 200) idOf.push(...(await bulkIds(ls.url, k, 200)));
    // A clean stop seals the active fraction; the next run keeps the rest in its write-ahead file (a large frac_size).
    await ls.stop();
    writeFileSync(ls.configFile, readFileSync(ls.configFile, 'utf8').replace('frac_size: "32KB"', 'frac_size: "64MB"'));
    await ls.restart();
    for (let k = SEALED; k < ALL; k += 100)
      expect((await bulk(ls.url, ndjson(Array.from({ length: 100 }, (_, j) => docOf(k + j))))).body.errors).toBe(false);
    await ls.kill9();

    const shardDir = path.join(ls.dataDir, 'shard-0');
    const fracs = readdirSync(shardDir)
      .filter((e) => e.startsWith('frac-') && statSync(path.join(shardDir, e)).isDirectory())
      .sort();
    expect(fracs.length).toBeGreaterThanOrEqual(5);
    const docsIn = (name: string) => {
      const meta = JSON.parse(readFileSync(path.join(shardDir, name, 'meta.json'), 'utf8')) as {
        minTime: number;
        maxTime: number;
        format: number;
      };
      expect(meta.format).toBe(5);
      return Array.from({ length: SEALED }, (_, i) => i).filter(
        (i) => timeOf(i) >= meta.minTime && timeOf(i) <= meta.maxTime,
      );
    };
    const [fa, fb, fc] = [fracs[0]!, fracs[2]!, fracs[3]!];
    const healthySealed = fracs.filter((f) => ![fa, fb, fc].includes(f)).flatMap(docsIn);
    const inA = docsIn(fa);
    expect(healthySealed.length).toBeGreaterThan(0);
    const wal = readdirSync(shardDir)
      .filter((e) => e.endsWith('.wal'))
      .map((e) => path.join(shardDir, e));
    expect(wal).toHaveLength(1);
    const half = statSync(wal[0]!).size >> 1;
    const walKept = walDocsBefore(wal[0]!, half);
    expect(walKept.length).toBeGreaterThan(0);
    expect(walKept.length).toBeLessThan(ALL - SEALED);
    writeFileSync(wal[0]!, readFileSync(wal[0]!).subarray(0, half));
    flip64(path.join(shardDir, fa, 'docs.bin'));
    flip64(path.join(shardDir, fb, 'postings.bin'));
    flip64(path.join(shardDir, fc, 'dict.bin'));

    await ls.restart();
    // The loss is an error with its size, not an info line.
    expect(ls.output()).toMatch(/level=error[^\n]*write-ahead file damaged[^\n]*dropped_bytes=\d+/);
    const healthy = new Set([...healthySealed, ...walKept]);

    // The export reads every document block: fraction A's changed block is found, A is left out and named; and since
    // format 5 a block refers to its keyword columns' tokens, so C's changed dictionary is found and C named too.
    const skipped = `shard-0/${fa},shard-0/${fc}`;
    const ex = await exportAll(ls.url);
    expect(ex.status).toBe(200);
    expect(ex.trailers['x-tidepool-skipped-fractions']?.split(',').sort().join(',')).toBe(skipped);
    const exported = new Set(ex.docs.map((d) => d.data.i));
    for (const i of healthy) expect(exported.has(i)).toBe(true);
    for (const i of inA) expect(exported.has(i)).toBe(false);
    // The gRPC Export says the same in its trailing metadata, and marks the answer partial.
    const gx = await grpcExport(ls.grpcAddr);
    expect(gx.trailer['x-tidepool-skipped-fractions']?.split(',').sort().join(',')).toBe(skipped);
    expect(gx.trailer['x-partial-response']).toBe('true');
    expect(new Set(gx.is)).toEqual(exported);

    // A fetch by id of a document in the quarantined fraction is partial (the document may exist), not a plain miss.
    const [lostId, keptId] = [idOf[inA[0]!]!, idOf[healthySealed[0]!]!];
    const fx = await postJson<FetchBody>(`${ls.url}/fetch`, { ids: [lostId, keptId] });
    expect(fx.status).toBe(200);
    expect(fx.body.docs.map((d) => d.data.i)).toEqual([healthySealed[0]]);
    expect(fx.body.not_found).toEqual([lostId]);
    expect(fx.body.partial_response).toBe(true);
    expect(fx.body.error?.message).toContain(`shard-0/${fa}`);
    // An id found is a whole answer, even with a quarantined fraction in the shard.
    const whole = await postJson<FetchBody>(`${ls.url}/fetch`, { ids: [keptId] });
    expect(whole.body.docs).toHaveLength(1);
    expect(whole.body.partial_response).toBeUndefined();

    // A filtered search reads dictionaries and posting lists: B's and C's damage is found, the answer is partial, not a 500.
    const xs = await postJson<SearchBody>(`${ls.url}/search`, { query: { query: 'kind:x', ...RANGE }, size: 10_000 });
    expect(xs.status).toBe(200);
    expect(xs.body.partial_response).toBe(true);
    expect(xs.body.error?.code).toBe('PARTIAL_RESPONSE');
    const wantX = [...healthy].filter((i) => i % 2 === 1).sort((a, b) => a - b);
    expect(xs.body.docs.map((d) => d.data.i).sort((a, b) => a - b)).toEqual(wantX);
    expect(xs.body.total).toBe(wantX.length);

    const st = (await (await fetch(`${ls.url}/status`)).json()) as {
      status: string;
      degraded: string[];
      storage_problems: {
        kind: string;
        name: string;
        detail: string;
        docs?: number;
        bytes?: number;
        saved_to?: string;
      }[];
    };
    expect(st.status).toBe('degraded');
    const walLoss = st.storage_problems.filter((p) => p.kind === 'wal_tail_dropped');
    expect(walLoss).toHaveLength(1);
    expect(walLoss[0]!.bytes).toBeGreaterThan(0);
    const quarantined = st.storage_problems.filter((p) => p.kind === 'fraction_quarantined');
    expect(quarantined.map((p) => [p.name, p.detail.split(':')[0]]).sort()).toEqual([
      [fa, 'docs.bin'],
      [fb, 'postings.bin'],
      [fc, 'dict.bin'],
    ]);
    for (const p of quarantined) expect(readdirSync(p.saved_to!)).toContain('meta.json');
    expect(st.degraded.length).toBe(4);

    // Every healthy document is still found by a plain search, which stays partial over the quarantined range.
    const all = await postJson<SearchBody>(`${ls.url}/search`, { query: { query: '*', ...RANGE }, size: 10_000 });
    expect(all.status).toBe(200);
    expect(all.body.partial_response).toBe(true);
    expect(all.body.error?.message).toContain(fb);
    expect(new Set(all.body.docs.map((d) => d.data.i))).toEqual(healthy);
    // The Elasticsearch surface counts the shard that lost fractions as failed.
    const es = await postJson<{ _shards: { failed: number }; hits: { total: { value: number } } }>(
      `${ls.url}/_search`,
      { query: { match_all: {} }, size: 0 },
    );
    expect(es.status).toBe(200);
    expect(es.body._shards.failed).toBe(1);

    const metrics = await (await fetch(`${ls.debugUrl}/metrics`)).text();
    expect(metrics).toMatch(/tidepool_logstore_storage_problems\{kind="fraction_quarantined"\} 3/);
    expect(metrics).toMatch(/tidepool_logstore_storage_problems\{kind="wal_tail_dropped"\} 1/);
    // The debug /health says so too (it answered "ok" whatever happened).
    const health = (await (await fetch(`${ls.debugUrl}/health`)).json()) as { status: string; degraded: string[] };
    expect(health.status).toBe('degraded');
    expect(health.degraded.filter((d) => /fraction_quarantined/.test(d))).toHaveLength(3);
    expect(health.degraded.filter((d) => /wal_tail_dropped/.test(d))).toHaveLength(1);

    // After a restart the quarantine is still reported (until the operator empties it), and searches still partial.
    await ls.stop();
    await ls.restart();
    const st2 = (await (await fetch(`${ls.url}/status`)).json()) as {
      status: string;
      storage_problems: { kind: string; name: string }[];
    };
    expect(st2.status).toBe('degraded');
    expect(st2.storage_problems.filter((p) => p.kind === 'quarantine_not_empty').length).toBe(4);
    const again = await postJson<SearchBody>(`${ls.url}/search`, { query: { query: '*', ...RANGE }, size: 10_000 });
    expect(again.body.partial_response).toBe(true);
    expect(new Set(again.body.docs.map((d) => d.data.i))).toEqual(healthy);
  });

  it('through a proxy: a store that quarantined a fraction answers partial, and the proxy says so', async () => {
    const store = await startLogstore({ mode: 'store', storage: { frac_size: '32KB', shards: 1 } });
    running.push(store);
    const proxy = await startLogstore({
      mode: 'proxy',
      cluster: { hot_stores: [store.grpcAddr], request_timeout: '5s' },
    });
    running.push(proxy);
    const N = 1500;
    const idOf: string[] = [];
    for (let k = 0; k < N; k += 250) idOf.push(...(await bulkIds(proxy.url, k, 250)));
    await store.stop();
    const shardDir = path.join(store.dataDir, 'shard-0');
    const fracs = readdirSync(shardDir)
      .filter((e) => e.startsWith('frac-') && statSync(path.join(shardDir, e)).isDirectory())
      .sort();
    expect(fracs.length).toBeGreaterThanOrEqual(2);
    const meta = JSON.parse(readFileSync(path.join(shardDir, fracs[0]!, 'meta.json'), 'utf8')) as {
      minTime: number;
      maxTime: number;
    };
    const inA = new Set(
      Array.from({ length: N }, (_, i) => i).filter((i) => timeOf(i) >= meta.minTime && timeOf(i) <= meta.maxTime),
    );
    flip64(path.join(shardDir, fracs[0]!, 'docs.bin'));
    await store.restart();

    // Until the proxy reaches the restarted store, its answers are partial for another reason (no answer at all).
    let r: { status: number; body: SearchBody } | null = null;
    for (let i = 0; i < 150; i++) {
      r = await postJson<SearchBody>(`${proxy.url}/search`, { query: { query: '*', ...RANGE }, size: 10_000 });
      if (r.status === 200 && r.body.error?.message.includes('damaged')) break;
      await new Promise((res) => setTimeout(res, 200));
    }
    expect(r!.status).toBe(200);
    expect(r!.body.partial_response).toBe(true);
    expect(r!.body.error?.message).toContain(`shard-0/${fracs[0]}`);
    const want = Array.from({ length: N }, (_, i) => i).filter((i) => !inA.has(i));
    expect(r!.body.docs.map((d) => d.data.i).sort((a, b) => a - b)).toEqual(want);
    // A fetch through the proxy of an id in the quarantined fraction: the store says so, the proxy answers partial.
    const lost = [...inA][0]!;
    const fx = await postJson<FetchBody>(`${proxy.url}/fetch`, { ids: [idOf[lost]!, idOf[want[0]!]!] });
    expect(fx.status).toBe(200);
    expect(fx.body.docs.map((d) => d.data.i)).toEqual([want[0]]);
    expect(fx.body.partial_response).toBe(true);
    expect(fx.body.error?.message).toContain(`shard-0/${fracs[0]}`);
    const metrics = await (await fetch(`${store.debugUrl}/metrics`)).text();
    expect(metrics).toMatch(/tidepool_logstore_storage_problems\{kind="fraction_quarantined"\} 1/);
  });
});
