// The overview's errors, queries and transactions per second are fractions over the stats period: 3 errors in 10 s
// read 0.3 (SHOW STATS' integer avg_errors reads 0), and so do a handful of queries.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildWebApp } from '../../../src/pooler/web/app.js';
import { startTestPostgres, type TestPostgres } from '../../helpers/postgres.js';
import { appPoolToml, startTestPooler, type TestPooler } from '../../helpers/pooler.js';
import { basicHeader, WEB_ADMIN } from '../../helpers/web.js';

let db: TestPostgres;
let tp: TestPooler;
let app: FastifyInstance;

beforeAll(async () => {
  db = await startTestPostgres();
  tp = await startTestPooler(`
[general]
host = "127.0.0.1"
port = 0
admin_username = "${WEB_ADMIN.user}"
admin_password = "${WEB_ADMIN.password}"
log_level = "warn"
stats_period = "10s"

[web]
enabled = true
host = "127.0.0.1"
port = 0
ui = true
${appPoolToml(db)}`);
  app = await buildWebApp(tp.pooler, {});
});

afterAll(async () => {
  await app?.close();
  await tp?.stop();
  await db?.cleanup();
});

async function overview(): Promise<{ errors: number; errors_per_sec: number; qps: number; tps: number }> {
  const r = await app.inject({ method: 'GET', url: '/api/overview', headers: { authorization: basicHeader() } });
  return r.json() as { errors: number; errors_per_sec: number; qps: number; tps: number };
}

describe('errors per second', () => {
  it('three errors in a 10 s period read as a fraction, not 0', { timeout: 60_000 }, async () => {
    const c = new pg.Client({
      host: '127.0.0.1',
      port: tp.port,
      user: 'md5user',
      password: 'md5pass',
      database: 'app',
    });
    await c.connect();
    try {
      for (let i = 0; i < 3; i++) await expect(c.query('select 1/0')).rejects.toMatchObject({ code: '22012' });
      for (let i = 0; i < 2; i++) await c.query('select 1');
    } finally {
      await c.end();
    }
    const first = await app.inject({ method: 'GET', url: '/api/overview', headers: { authorization: basicHeader() } });
    expect(first.statusCode, first.body).toBe(200);
    expect((await overview()).errors).toBe(3);
    // The next period boundaries (10 s apart) freeze the rate; SHOW STATS rounds it to an integer as PgBouncer does.
    const deadline = Date.now() + 30_000;
    let o = await overview();
    while (o.errors_per_sec === 0 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 200));
      o = await overview();
    }
    // 0.3 (0.1 or 0.2 should a period boundary fall between the three errors).
    expect(o.errors_per_sec).toBeGreaterThan(0);
    expect(o.errors_per_sec).toBeLessThan(1);
    // Five queries (and transactions) in 10 s: at most 0.5 a second, a fraction too.
    for (const v of [o.qps, o.tps]) {
      expect(v).toBeGreaterThan(0);
      expect(v).toBeLessThan(1);
    }
    const stats = tp.pooler.show('STATS');
    expect(stats.rows.find((r) => r[1] === 'md5user')?.[stats.columns.indexOf('avg_errors')]).toBe(0);
  });
});
