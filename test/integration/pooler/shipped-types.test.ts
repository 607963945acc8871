// The pooler's shipped records keep numbers as JSON numbers (status, latency_ms, port, backend_pid), so the log
// store's numeric ranges and aggregations work on them: checked against what the test computes from the records.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWebListener, type WebListener } from '../../../src/pooler/web/server.js';
import { postJson, startLogstore, type LogstoreProcess } from '../../helpers/logstore.js';
import { appPoolToml, startTestPooler, type TestPooler } from '../../helpers/pooler.js';
import { startTestPostgres, type TestPostgres } from '../../helpers/postgres.js';

type Rec = Record<string, unknown>;
let db: TestPostgres;
let store: LogstoreProcess;
let tp: TestPooler;
let web: WebListener;
let access: Rec[];

beforeAll(async () => {
  db = await startTestPostgres();
  store = await startLogstore();
  tp = await startTestPooler(`
[general]
host = "127.0.0.1"
port = 0
admin_password = "types-admin-pw"
log_level = "debug"
[logs]
ship_to = "${store.url}"
ship_flush_interval = "100ms"
${appPoolToml(db)}`);
  web = await startWebListener(tp.pooler, { host: '127.0.0.1', port: 0 });
  const base = `http://127.0.0.1:${web.port}`;
  // 2xx (debug) and 404 access lines.
  for (let i = 0; i < 12; i++)
    await fetch(
      `${base}${i % 3 === 0 ? '/metrics' : i % 3 === 1 ? `/api/missing-${i}` : '/api/admin/reload'}`,
      i % 3 === 2 ? { method: 'POST' } : {},
    );
  const marker = `/api/types-marker-${process.pid}`;
  await fetch(`${base}${marker}`);
  const deadline = Date.now() + 30_000;
  while (
    (await postJson<{ total: number }>(`${store.url}/search`, { query: { query: `path:"${marker}"` }, size: 0 })).body
      .total === 0
  ) {
    if (Date.now() > deadline) throw new Error('the marker record never reached the log store');
    await new Promise((res) => setTimeout(res, 100));
  }
  const all = await postJson<{ docs: { data: Rec }[] }>(`${store.url}/search`, {
    query: { query: 'target:pooler::web::access' },
    size: 10_000,
  });
  access = all.body.docs.map((d) => d.data);
}, 120_000);

afterAll(async () => {
  await web?.close();
  await tp?.stop();
  await store?.cleanup();
  await db?.cleanup();
});

describe('shipped pooler records', () => {
  it('carry status, latency_ms and bytes as numbers', () => {
    expect(access.length).toBeGreaterThanOrEqual(13);
    for (const d of access) {
      expect(typeof d.status, JSON.stringify(d)).toBe('number');
      expect(typeof d.latency_ms, JSON.stringify(d)).toBe('number');
      expect(typeof d.bytes, JSON.stringify(d)).toBe('number');
    }
    expect(new Set(access.map((d) => d.status)).size).toBeGreaterThanOrEqual(2);
  });

  it('answer numeric ranges', async () => {
    const n = async (q: string) =>
      (await postJson<{ total: number }>(`${store.url}/search`, { query: { query: q }, size: 0 })).body.total;
    const st = (d: Rec) => d.status as number;
    expect(await n('target:pooler::web::access and status:[400, 499]')).toBe(
      access.filter((d) => st(d) >= 400 && st(d) <= 499).length,
    );
    expect(await n('target:pooler::web::access and status:(200, 404)')).toBe(
      access.filter((d) => st(d) > 200 && st(d) < 404).length,
    );
    const lat = access.map((d) => d.latency_ms as number).sort((a, b) => a - b);
    const mid = lat[Math.floor(lat.length / 2)]!;
    expect(await n(`target:pooler::web::access and latency_ms:[* to ${mid}]`)).toBe(lat.filter((v) => v <= mid).length);
  });

  it('aggregate: count by status, avg and max of latency_ms by status', async () => {
    const r = await postJson<{ aggs: { buckets: { key: string; value: number }[] }[] }>(`${store.url}/aggregate`, {
      query: { query: 'target:pooler::web::access' },
      aggs: [
        { field: 'status', func: 'count' },
        { field: 'latency_ms', func: 'max', group_by: 'status' },
        { field: 'latency_ms', func: 'avg', group_by: 'status' },
      ],
    });
    expect(r.status).toBe(200);
    const byStatus = new Map<string, number[]>();
    for (const d of access)
      byStatus.set(String(d.status), [...(byStatus.get(String(d.status)) ?? []), d.latency_ms as number]);
    const sorted = (b: { key: string; value: number }[]) => Object.fromEntries(b.map((x) => [x.key, x.value]));
    expect(sorted(r.body.aggs[0]!.buckets)).toEqual(Object.fromEntries([...byStatus].map(([k, v]) => [k, v.length])));
    const max = sorted(r.body.aggs[1]!.buckets);
    const avg = sorted(r.body.aggs[2]!.buckets);
    for (const [k, v] of byStatus) {
      expect(max[k]).toBeCloseTo(Math.max(...v), 6);
      expect(avg[k]).toBeCloseTo(v.reduce((a, b) => a + b, 0) / v.length, 6);
    }
  });
});
