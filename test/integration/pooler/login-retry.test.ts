// server_login_retry (PgBouncer's name): with PostgreSQL down, clients that keep trying get the last connect error at
// once ("server login has been failing, cached error: ...") while the pool makes one connect attempt per period, not
// one per client; once PostgreSQL is back the first client after the period is served; RECONNECT ends the wait.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { poolToml, poolerToml, startTestPooler, type TestPooler } from '../../helpers/pooler.js';
import { startTestPostgres, type TestPostgres } from '../../helpers/postgres.js';

const RETRY_MS = 3000;

let db: TestPostgres;
let tp: TestPooler;

beforeAll(async () => {
  db = await startTestPostgres();
  const pools = poolToml(db, 'lr', 'pool_mode = "transaction"', [
    { username: 'md5user', password: 'md5pass', extra: 'pool_size = 4' },
  ]);
  tp = await startTestPooler(
    poolerToml(db, {
      general: `auth_type = "md5"\nconnect_timeout = "1s"\nmax_concurrent_connects = 1\nserver_login_retry = "${RETRY_MS}ms"`,
      pools,
    }),
  );
});

afterAll(async () => {
  await tp?.stop();
  await db?.cleanup();
});

const failures = () => tp.pooler.snapshot().pools.find((p) => p.database === 'lr')!.health.connectFailures;

/** One login and `SELECT 1`: null when it worked, else the error's code and message. */
async function attempt(): Promise<{ code: string; message: string } | null> {
  const c = new pg.Client({ host: '127.0.0.1', port: tp.port, user: 'md5user', password: 'md5pass', database: 'lr' });
  c.on('error', () => undefined);
  try {
    await c.connect();
    await c.query('SELECT 1');
    return null;
  } catch (err) {
    return { code: String((err as { code?: string }).code), message: (err as Error).message };
  } finally {
    await c.end().catch(() => undefined);
  }
}

describe('server_login_retry', () => {
  it('answers clients from the cached error while PostgreSQL is down: one connect per period, not one per client', async () => {
    expect(await attempt()).toBeNull();
    // A pool with no server left: its logins need a new connect (the pooler knows the server's parameters already).
    tp.pooler.reconnect('lr');
    await db.stop();
    const before = failures();
    const started = Date.now();
    const errors: { code: string; message: string }[] = [];
    // 20 clients, each trying again as soon as it failed, for about a second.
    await Promise.all(
      Array.from({ length: 20 }, async () => {
        while (Date.now() - started < 1000) {
          const e = await attempt();
          if (e) errors.push(e);
        }
      }),
    );
    const elapsed = Date.now() - started;
    const made = failures() - before;
    expect(errors.length).toBeGreaterThanOrEqual(20);
    for (const e of errors) expect(e.code).toBe('08006');
    expect(
      errors.filter((e) => /server login has been failing, cached error: .*\(server_login_retry\)/.test(e.message))
        .length,
    ).toBeGreaterThan(errors.length / 2);
    // Without the retry period every client's attempt was a connect of its own (hundreds a second).
    expect(made).toBeGreaterThanOrEqual(1);
    expect(made).toBeLessThanOrEqual(Math.ceil(elapsed / RETRY_MS) + 1);
    expect(made).toBeLessThan(errors.length);
  });

  it('serves again once PostgreSQL is back, at the latest one period later; RECONNECT ends the wait at once', async () => {
    await db.restart();
    // Still within (or just past) the period of the last failure: retry until served, bounded by a generous limit.
    const deadline = Date.now() + 30_000;
    let last = await attempt();
    while (last && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100));
      last = await attempt();
    }
    expect(last).toBeNull();

    // A fresh failure starts a period; RECONNECT (the operator's "try now") ends it, and the next client is served.
    tp.pooler.reconnect('lr');
    await db.stop();
    const e = await attempt();
    expect(e?.code).toBe('08006');
    await db.restart();
    const cached = await attempt();
    expect(cached?.message ?? '').toMatch(/server_login_retry/);
    tp.pooler.reconnect('lr');
    expect(await attempt()).toBeNull();
  });
});
