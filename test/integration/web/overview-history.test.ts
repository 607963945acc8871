// GET /api/overview/history against a real pooler: the same role as /api/overview, samples that grow every 2 s and
// follow the traffic.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { startTestPostgres, type TestPostgres } from '../../helpers/postgres.js';
import { basicHeader, startWeb, type WebHarness } from '../../helpers/web.js';

interface History {
  interval_ms: number;
  samples: { t: number; overview: { clients: { total: number }; tps: number } }[];
}

let db: TestPostgres;
let h: WebHarness;
const admin = { authorization: basicHeader(), accept: 'application/json' };

beforeAll(async () => {
  db = await startTestPostgres();
  h = await startWeb(db);
});
afterAll(async () => {
  await h?.stop();
  await db?.cleanup();
});

const history = async () => {
  const r = await h.app.inject({ url: '/api/overview/history', headers: admin });
  expect(r.statusCode).toBe(200);
  return r.json() as History;
};

describe('/api/overview/history', () => {
  it('needs the role /api/overview needs', async () => {
    expect(
      (await h.app.inject({ url: '/api/overview/history', headers: { accept: 'application/json' } })).statusCode,
    ).toBe(401);
    expect((await h.app.inject({ url: '/api/overview', headers: { accept: 'application/json' } })).statusCode).toBe(
      401,
    );
  });

  it('grows by a sample every interval, oldest first, and its samples follow the clients', async () => {
    const first = await history();
    expect(first.interval_ms).toBe(2000);
    expect(first.samples.length).toBeGreaterThanOrEqual(1);
    const c = new pg.Client({
      host: '127.0.0.1',
      port: h.tp.port,
      database: 'app',
      user: 'md5user',
      password: 'md5pass',
    });
    await c.connect();
    try {
      await c.query('select 1');
      await expect
        .poll(async () => (await history()).samples.length, { timeout: 20_000, interval: 500 })
        .toBeGreaterThan(first.samples.length + 1);
      await expect
        .poll(async () => (await history()).samples.at(-1)!.overview.clients.total, { timeout: 20_000, interval: 500 })
        .toBe(1);
      const later = await history();
      const ts = later.samples.map((s) => s.t);
      expect([...ts].sort((a, b) => a - b)).toEqual(ts);
      expect(later.samples[0]!.overview.clients.total).toBe(0);
    } finally {
      await c.end();
    }
  });
});
