// PostgreSQL stopped under a pool with clients trying, then started again: the outage and its end through /api, /metrics
// and the events.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestPostgres, type TestPostgres } from '../../helpers/postgres.js';
import { operatorToml, poolToml, startOperator, until, type OperatorHarness } from '../../helpers/operator.js';

let db: TestPostgres;
let h: OperatorHarness;

type ApiRow = Record<string, unknown>;

beforeAll(async () => {
  db = await startTestPostgres();
  h = await startOperator(
    operatorToml({
      general: 'connect_timeout = "1s"\nstats_period = "1s"',
      pools: poolToml(db, 'hp', '', [{ username: 'md5user', password: 'md5pass', extra: 'pool_size = 2' }]),
    }),
  );
});
afterAll(async () => {
  await h?.stop();
  await db?.cleanup();
});

async function pool(): Promise<ApiRow> {
  return ((await h.api('/api/pools')).body as ApiRow[]).find((r) => r['database'] === 'hp')!;
}

async function events(kind: string): Promise<ApiRow[]> {
  return ((await h.api('/api/events')).body as ApiRow[]).filter((e) => e['kind'] === kind);
}

/** Clients that keep connecting and querying through the pooler until stopped; their errors are expected. */
function tryingClients(n: number): { stop(): Promise<void> } {
  let running = true;
  const loops = Array.from({ length: n }, async () => {
    while (running) {
      const c = h.client('hp', 'md5user', 'md5pass');
      try {
        await c.connect();
        while (running) await c.query('SELECT 1');
      } catch {
        await new Promise((r) => setTimeout(r, 50));
      } finally {
        await c.end().catch(() => undefined);
      }
    }
  });
  return {
    async stop() {
      running = false;
      await Promise.all(loops);
    },
  };
}

describe('PostgreSQL unreachable', () => {
  it('shows the outage with the last error while PostgreSQL is down, and its end once a server logs in again', async () => {
    const clients = tryingClients(3);
    try {
      await until('a query through the pool', async () =>
        (await h.show('STATS')).some((r) => r['database'] === 'hp' && Number(r['total_query_count']) > 0),
      );
      expect(await pool()).toMatchObject({ backend_unreachable: false, unreachable_since: null });
      const stoppedAt = Date.now();
      await db.stop();
      await until('the pool to be unreachable', async () => (await pool())['backend_unreachable'] === true, 10_000);
      const row = await pool();
      expect(Date.parse(String(row['unreachable_since']))).toBeGreaterThanOrEqual(stoppedAt - 1000);
      expect(row['last_connect_error']).toMatch(
        /could not connect to server 127\.0\.0\.1:\d+|closed the connection|connect_timeout/,
      );
      expect(row['last_connect_error_code']).toMatch(/^(ECONNREFUSED|08006|57P01|57P03)$/);
      expect(Date.parse(String(row['last_connect_error_at']))).toBeGreaterThanOrEqual(stoppedAt);
      await until('a connect failure rate', async () => Number((await pool())['connect_failures_per_sec']) > 0);

      const ov = (await h.api('/api/overview')).body as ApiRow;
      expect(ov['pools_unreachable']).toBe(1);
      expect(ov['databases_unreachable']).toEqual([
        expect.objectContaining({ database: 'hp', pools: ['hp/md5user'], since: row['unreachable_since'] }),
      ]);
      expect(await h.metrics()).toMatch(/^pooler_pool_backend_unreachable\{database="hp",user="md5user"\} 1$/m);
      expect(
        Number(
          /^pooler_server_connect_failures_total\{database="hp",user="md5user"\} (\d+)$/m.exec(await h.metrics())?.[1],
        ),
      ).toBeGreaterThan(0);
      const [start] = await events('backend_unreachable');
      expect(start).toMatchObject({
        pool: 'hp/md5user',
        message: expect.stringContaining(
          `PostgreSQL 127.0.0.1:${db.port} unreachable since ${String(row['unreachable_since'])}`,
        ),
      });
      expect(await events('backend_reachable')).toEqual([]);

      await db.restart();
      await until(
        'the pool to be reachable again',
        async () => (await pool())['backend_unreachable'] === false,
        15_000,
      );
      expect((await pool())['unreachable_since']).toBeNull();
      expect(await h.metrics()).toMatch(/^pooler_pool_backend_unreachable\{database="hp",user="md5user"\} 0$/m);
      expect(((await h.api('/api/overview')).body as ApiRow)['databases_unreachable']).toEqual([]);
      const [end] = await events('backend_reachable');
      expect(end).toMatchObject({
        pool: 'hp/md5user',
        message: expect.stringMatching(
          /reachable again: a server logged in after [\d.]+ s unreachable \(\d+ failed connects\)/,
        ),
      });
      // The start event is still on the list: the failures during the outage did not flush it.
      expect(await events('backend_unreachable')).toHaveLength(1);
    } finally {
      await clients.stop();
    }
  });

  it('ends an outage without clients: the pool probes PostgreSQL every connect_timeout', async () => {
    const c = h.client('hp', 'md5user', 'md5pass');
    await c.connect();
    await db.stop();
    try {
      // One client's queries fail (each refused at once), then it leaves: no one asks for a server any more.
      await until(
        'the pool to be unreachable',
        async () => {
          await c.query('SELECT 1').catch(() => undefined);
          return (await pool())['backend_unreachable'] === true;
        },
        // connect_timeout of failed logins while the client asks: seconds when idle, more on a loaded machine.
        30_000,
      );
    } finally {
      await c.end().catch(() => undefined);
      await db.restart();
    }
    await until('the pool to be reachable again', async () => (await pool())['backend_unreachable'] === false, 15_000);
    expect(await events('backend_reachable')).toHaveLength(2);
  });
});
