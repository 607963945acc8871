// Load by application_name (/api/apps, SHOW APPS) with three real applications, and /api/top/clients ordered by each key.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type pg from 'pg';
import { startTestPostgres, type TestPostgres } from '../../helpers/postgres.js';
import { operatorToml, poolToml, startOperator, until, type OperatorHarness } from '../../helpers/operator.js';

let db: TestPostgres;
let h: OperatorHarness;
let alpha: pg.Client;
let beta1: pg.Client;
let beta2: pg.Client;
let gamma: pg.Client;

type Row = Record<string, unknown>;

beforeAll(async () => {
  db = await startTestPostgres();
  h = await startOperator(
    operatorToml({
      pools: poolToml(db, 'apps', '', [{ username: 'md5user', password: 'md5pass', extra: 'pool_size = 4' }]),
    }),
  );
  alpha = h.client('apps', 'md5user', 'md5pass', 'app-alpha');
  beta1 = h.client('apps', 'md5user', 'md5pass', 'app-beta');
  beta2 = h.client('apps', 'md5user', 'md5pass', 'app-beta');
  gamma = h.client('apps', 'md5user', 'md5pass', 'app-gamma');
  for (const c of [alpha, beta1, beta2, gamma]) await c.connect();
  for (let i = 0; i < 6; i++) await alpha.query('SELECT 1');
  for (let i = 0; i < 2; i++) await beta1.query('SELECT 1');
  await beta2.query('SELECT 1');
  await expect(beta2.query('SELECT 1/0')).rejects.toMatchObject({ code: '22012' });
  await gamma.query(`SELECT pg_sleep(0.2), repeat('x', 100000)`);
});
afterAll(async () => {
  for (const c of [alpha, beta1, beta2, gamma]) await c?.end().catch(() => undefined);
  await h?.stop();
  await db?.cleanup();
});

async function rows(path: string): Promise<Row[]> {
  const r = await h.api(path);
  expect(r.status, path).toBe(200);
  return r.body as Row[];
}

describe('/api/apps', () => {
  it('groups clients, transactions, queries, errors, bytes and time by application_name', async () => {
    const apps = await rows('/api/apps');
    const by = (name: string) => apps.find((a) => a['application_name'] === name)!;
    expect(apps.map((a) => a['application_name'])).toEqual(['app-alpha', 'app-beta', 'app-gamma']);
    expect(by('app-alpha')).toMatchObject({
      clients: 1,
      cl_active: 0,
      cl_waiting: 0,
      xact_count: 6,
      query_count: 6,
      error_count: 0,
      errors_per_1000: 0,
    });
    expect(by('app-beta')).toMatchObject({
      clients: 2,
      xact_count: 4,
      query_count: 4,
      error_count: 1,
      errors_per_1000: 250,
    });
    expect(by('app-gamma')).toMatchObject({ clients: 1, xact_count: 1, query_count: 1, error_count: 0 });
    expect(by('app-gamma')['bytes_sent']).toBeGreaterThan(100_000);
    expect(by('app-alpha')['bytes_sent']).toBeLessThan(2000);
    expect(by('app-gamma')['xact_time_us']).toBeGreaterThanOrEqual(190_000);
    expect(by('app-gamma')['query_time_us']).toBeGreaterThanOrEqual(190_000);
    for (const a of apps) {
      for (const f of ['bytes_received', 'tps', 'qps']) expect(typeof a[f], f).toBe('number');
    }
    // The same rows in SHOW APPS.
    const shown = await h.show('APPS');
    expect(shown.map((r) => [r['application_name'], Number(r['query_count'])])).toEqual(
      apps.map((a) => [a['application_name'], a['query_count']]),
    );
  });

  it('keeps the load of clients that left', async () => {
    const delta = h.client('apps', 'md5user', 'md5pass', 'app-delta');
    await delta.connect();
    await delta.query('SELECT 1');
    await delta.query('SELECT 2');
    await delta.end();
    await new Promise((r) => setTimeout(r, 50));
    expect((await rows('/api/apps')).find((a) => a['application_name'] === 'app-delta')).toMatchObject({
      clients: 0,
      xact_count: 2,
      query_count: 2,
    });
  });
});

describe('/api/apps rates over stats_period', () => {
  it('avg_recv, avg_sent and avg_errors per second over the last period, back to 0 after a quiet period', async () => {
    const x = await startOperator(
      operatorToml({
        general: 'stats_period = "1s"',
        pools: poolToml(db, 'rates', '', [{ username: 'md5user', password: 'md5pass', extra: 'pool_size = 1' }]),
      }),
    );
    const c = x.client('rates', 'md5user', 'md5pass', 'app-rate');
    const app = async () =>
      ((await x.api('/api/apps')).body as Row[]).find((a) => a['application_name'] === 'app-rate')!;
    try {
      await c.connect();
      // 50 kB answers and one error each round until a complete period holds both.
      let seen: Row | undefined;
      await until(
        "a stats period with app-rate's bytes and errors",
        async () => {
          await c.query(`SELECT repeat('x', 50000)`);
          await c.query('SELECT 1/0').catch(() => undefined);
          seen = await app();
          return Number(seen['avg_sent']) > 0 && Number(seen['avg_errors']) > 0;
        },
        30_000,
      );
      // Per second over a 1 s period: at least one round's bytes, never more than all of them.
      expect(Number(seen!['avg_sent'])).toBeGreaterThanOrEqual(50_000);
      expect(Number(seen!['avg_sent'])).toBeLessThanOrEqual(Number(seen!['bytes_sent']));
      expect(Number(seen!['avg_recv'])).toBeGreaterThan(0);
      expect(Number(seen!['avg_recv'])).toBeLessThanOrEqual(Number(seen!['bytes_received']));
      expect(Number(seen!['avg_errors'])).toBeLessThanOrEqual(Number(seen!['error_count']));
      // SHOW APPS has the same columns.
      const shown = (await x.show('APPS')).find((r) => r['application_name'] === 'app-rate')!;
      for (const f of ['avg_recv', 'avg_sent', 'avg_errors']) expect(shown, f).toHaveProperty(f);
      // A period with no traffic: the rates fall to 0 while the totals stay.
      await until('a quiet stats period', async () => Number((await app())['avg_sent']) === 0, 10_000);
      const quiet = await app();
      expect(quiet).toMatchObject({ avg_recv: 0, avg_sent: 0, avg_errors: 0 });
      expect(Number(quiet['bytes_sent'])).toBeGreaterThanOrEqual(Number(seen!['bytes_sent']));
    } finally {
      await c.end().catch(() => undefined);
      await x.stop();
    }
  });
});

describe('/api/top/clients', () => {
  const order = async (by: string) =>
    (await rows(`/api/top/clients?by=${by}`)).filter((r) => r['application_name'] !== 'app-delta');
  it("by transactions, bytes, errors and time, with the sort key's value", async () => {
    const tx = await order('transactions');
    expect(tx.map((r) => r['application_name'])).toEqual(['app-alpha', 'app-beta', 'app-beta', 'app-gamma']);
    expect(tx.map((r) => r['value'])).toEqual([6, 2, 2, 1]);
    expect(tx[0]).toMatchObject({
      by: 'transactions',
      transaction_count: 6,
      database: 'apps',
      user: 'md5user',
      state: 'idle',
    });
    expect((await order('bytes'))[0]).toMatchObject({ application_name: 'app-gamma' });
    const errors = await order('errors');
    expect(errors[0]).toMatchObject({ application_name: 'app-beta', error_count: 1, value: 1 });
    expect((await order('time'))[0]).toMatchObject({ application_name: 'app-gamma' });
    expect(Number((await order('time'))[0]!['value'])).toBeGreaterThanOrEqual(190_000);
    expect(await rows('/api/top/clients?by=transactions&limit=2')).toHaveLength(2);
  });
  it('a bad key or limit is a 400 with a JSON error', async () => {
    for (const q of ['by=cpu', 'limit=-1', 'limit=abc', 'limit=100000']) {
      const r = await h.api(`/api/top/clients?${q}`);
      expect(r.status, q).toBe(400);
      expect(r.body).toMatchObject({ error: 'bad_request' });
    }
  });
});

describe('/api/top/queries', () => {
  it('prepared statements by executions and by total time, with 120-character previews', async () => {
    const c = h.client('apps', 'md5user', 'md5pass', 'app-queries');
    await c.connect();
    const long = `SELECT $1::int AS v /* ${'x'.repeat(200)} */`;
    try {
      for (let i = 0; i < 5; i++) await c.query({ name: 'quick', text: long, values: [i] });
      for (let i = 0; i < 3; i++) await c.query({ name: 'slow', text: 'SELECT pg_sleep($1)', values: [0.05] });
    } finally {
      await c.end();
    }
    // The prepared statements' rows (the simple-protocol ones of the other clients are top-queries-simple.test.ts's).
    const prepared = async (by: string) =>
      (await rows(`/api/top/queries?by=${by}`)).filter((r) => r['kind'] !== 'simple');
    const byCount = (await prepared('count')) as {
      preview: string;
      count: number;
      total_time_us: number;
      avg_time_us: number;
      hash: string;
    }[];
    expect(byCount[0]).toMatchObject({ count: 5, preview: `${long.slice(0, 120)}…` });
    expect(byCount[0]!.preview.length).toBe(121);
    const byTime = (await prepared('time')) as typeof byCount;
    expect(byTime[0]).toMatchObject({ count: 3, preview: 'SELECT pg_sleep($1)' });
    expect(byTime[0]!.total_time_us).toBeGreaterThanOrEqual(3 * 50_000);
    expect(byTime[0]!.avg_time_us).toBe(Math.round(byTime[0]!.total_time_us / 3));
    expect(byTime[0]!.avg_time_us).toBeGreaterThanOrEqual(50_000);
    expect(byTime[0]!.avg_time_us).toBeLessThan(5_000_000);
    // The full text stays server-side, behind the personal-data route.
    const full = await h.api(`/api/prepared/text/${byCount[0]!.hash}`);
    expect(full.body).toMatchObject({ query: long });
    // The simple-protocol queries of the same pool (which rewrites prepared statements) are listed beside them, sorted together.
    const all = (await rows('/api/top/queries?by=time&limit=1000')) as {
      preview: string;
      count: number;
      total_time_us: number;
      kind: string;
      pool: string;
    }[];
    expect(all[0]).toMatchObject({
      kind: 'simple',
      preview: 'SELECT pg_sleep(?), repeat(?, ?)',
      count: 1,
      pool: 'md5user@apps',
    });
    expect(all[0]!.total_time_us).toBeGreaterThanOrEqual(190_000);
    expect(all[1]).toMatchObject({ kind: 'protocol', preview: 'SELECT pg_sleep($1)' });
    // This pool's rows only: the other tests' poolers in this process share the relay's table.
    const simple = all.filter((r) => r.kind === 'simple' && r.pool === 'md5user@apps');
    expect(simple.find((r) => r.preview === 'SELECT ?')).toMatchObject({ count: 11 });
    expect(simple.find((r) => r.preview === 'SELECT ?/?')).toMatchObject({ count: 1 });
  });
});
