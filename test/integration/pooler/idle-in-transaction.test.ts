// Idle in transaction on /api/clients and /api/servers (on the relay of the run: native, or JS with TIDEPOOL_NATIVE_RELAY=0):
// a client whose server said 'T' or 'E' and has nothing in flight, with the transaction's age; sort=activity puts it first.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { startTestPostgres, type TestPostgres } from '../../helpers/postgres.js';
import { basicHeader, startWeb, type WebHarness } from '../../helpers/web.js';
import type { Row } from '../../../src/pooler/web/show-rows.js';

let db: TestPostgres;
let h: WebHarness;
const clients: pg.Client[] = [];
const admin = { authorization: basicHeader(), accept: 'application/json' };

beforeAll(async () => {
  db = await startTestPostgres();
  h = await startWeb(db);
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.end().catch(() => undefined)));
  await h?.stop();
  await db?.cleanup();
});

async function connect(
  user: 'md5user' | 'scramuser',
  applicationName: string,
  port = h.tp.port,
  database = 'app',
): Promise<pg.Client> {
  const c = new pg.Client({
    host: '127.0.0.1',
    port,
    database,
    user,
    password: user === 'md5user' ? 'md5pass' : 'scrampass',
    application_name: applicationName,
  });
  c.on('error', () => undefined);
  await c.connect();
  clients.push(c);
  return c;
}

async function rows(url: string): Promise<Row[]> {
  const r = await h.app.inject({ method: 'GET', url, headers: admin });
  expect(r.statusCode, url).toBe(200);
  return r.json() as Row[];
}
const byApp = async (app: string) => (await rows('/api/clients')).find((r) => r['application_name'] === app)!;
const backendPid = async (c: pg.Client) =>
  (await c.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]!.pid;

describe('idle in transaction', () => {
  it('a client inside BEGIN with nothing running is idle in transaction, its age grows; COMMIT makes it idle', async () => {
    const c = await connect('md5user', 'iit-open');
    await c.query('begin');
    const pid = await backendPid(c);
    await expect
      .poll(async () => (await byApp('iit-open'))['activity'], { timeout: 20_000 })
      .toBe('idle in transaction');
    const first = await byApp('iit-open');
    expect(first).toMatchObject({ state: 'active', activity: 'idle in transaction', query_age_ms: 0 });
    // The age counts from BEGIN and keeps growing while the client sits there.
    await expect
      .poll(async () => Number((await byApp('iit-open'))['xact_age_ms']), { timeout: 20_000 })
      .toBeGreaterThan(Number(first['xact_age_ms']) + 100);
    const server = (await rows('/api/servers')).find((r) => r['server_process_id'] === pid)!;
    expect(server).toMatchObject({ state: 'active', activity: 'idle in transaction' });
    expect(Number(server['xact_age_ms'])).toBeGreaterThan(0);
    // SHOW CLIENTS keeps its columns: the API adds activity and xact_age_ms after them.
    const show = h.tp.pooler.show('CLIENTS');
    expect(show.columns).not.toContain('activity');

    await c.query('commit');
    // The relay reports the server's release after the client read its ReadyForQuery: wait for it.
    await expect.poll(async () => (await byApp('iit-open'))['activity'], { timeout: 20_000 }).toBe('idle');
    expect(await byApp('iit-open')).toMatchObject({ state: 'idle', xact_age_ms: 0 });
    await expect
      .poll(async () => (await rows('/api/servers')).find((r) => r['server_process_id'] === pid)?.['activity'], {
        timeout: 20_000,
      })
      .toBe('idle');
    expect((await rows('/api/servers')).find((r) => r['server_process_id'] === pid)).toMatchObject({ xact_age_ms: 0 });
    await c.end();
  });

  it('a failed transaction (ReadyForQuery E) is idle in transaction too; ROLLBACK ends it', async () => {
    const c = await connect('md5user', 'iit-failed');
    try {
      await c.query('begin');
      await expect(c.query('select 1/0')).rejects.toThrow(/division by zero/);
      // node-postgres rejects at the ErrorResponse; the ReadyForQuery 'E' behind it may still be on its way.
      await expect
        .poll(async () => (await byApp('iit-failed'))['activity'], { timeout: 20_000 })
        .toBe('idle in transaction');
      expect(Number((await byApp('iit-failed'))['xact_age_ms'])).toBeGreaterThan(0);
      await c.query('rollback');
      await expect.poll(async () => (await byApp('iit-failed'))['activity'], { timeout: 20_000 }).toBe('idle');
    } finally {
      await c.end();
    }
  });

  it('a query running inside a transaction is active, not idle in transaction', async () => {
    const direct = new pg.Client({ host: '127.0.0.1', port: db.port, database: 'app', user: 'trustuser' });
    await direct.connect();
    clients.push(direct);
    await direct.query('select pg_advisory_lock(4242)');
    const c = await connect('scramuser', 'iit-running');
    await c.query('begin');
    const blocked = c.query('select pg_advisory_lock(4242)');
    await expect.poll(async () => (await byApp('iit-running'))['activity'], { timeout: 20_000 }).toBe('active');
    expect(Number((await byApp('iit-running'))['xact_age_ms'])).toBeGreaterThanOrEqual(0);
    await direct.query('select pg_advisory_unlock(4242)');
    await blocked;
    await expect
      .poll(async () => (await byApp('iit-running'))['activity'], { timeout: 20_000 })
      .toBe('idle in transaction');
    await c.query('rollback');
    await c.end();
  });

  it('sort=activity lists the idle-in-transaction client before idle ones, so a small limit keeps it', async () => {
    for (let i = 0; i < 4; i++) await connect('md5user', `iit-idle-${i}`);
    const open = await connect('md5user', 'iit-first');
    await open.query('begin');
    await open.query('select 1');
    const page = await rows('/api/clients?pool=app/md5user&sort=activity&limit=1');
    expect(page.map((r) => r['application_name'])).toEqual(['iit-first']);
    // Sorted by state, as the pool page did, the client falls behind the idle ones.
    const byState = await rows('/api/clients?pool=app/md5user&sort=state&order=desc&limit=1');
    expect(byState[0]!['activity']).toBe('idle');
    await open.query('rollback');
  });
});

describe('idle in transaction counted per pool, in the overview and in /metrics', () => {
  const pool = async () => (await rows('/api/pools')).find((r) => r['database'] === 'app' && r['user'] === 'md5user')!;
  const overview = async () => {
    const r = await h.app.inject({ method: 'GET', url: '/api/overview', headers: admin });
    expect(r.statusCode).toBe(200);
    return r.json() as {
      clients: Record<string, number>;
      servers: Record<string, number>;
      max_idle_xact_age_ms: number;
    };
  };
  /** The pool's sample of a /metrics family, or undefined when it is missing. */
  const metric = async (name: string) => {
    const text = (await h.app.inject({ method: 'GET', url: '/metrics' })).body;
    const line = text.split('\n').find((l) => l.startsWith(`${name}{database="app",user="md5user"} `));
    return line === undefined ? undefined : Number(line.split(' ').at(-1));
  };
  const counts = async () => {
    const [p, o] = [await pool(), await overview()];
    return {
      cl: p['cl_idle_in_transaction'],
      sv: p['sv_idle_in_transaction'],
      ovCl: o.clients['idle_in_transaction'],
      ovSv: o.servers['idle_in_transaction'],
      mCl: await metric('pooler_clients_idle_in_transaction'),
      mSv: await metric('pooler_servers_idle_in_transaction'),
    };
  };

  it('two clients left idle inside BEGIN count in /api/pools, /api/overview and /metrics with the oldest age; COMMIT brings them to 0', async () => {
    const zero = { cl: 0, sv: 0, ovCl: 0, ovSv: 0, mCl: 0, mSv: 0 };
    // What the tests above left open has ended.
    await expect.poll(counts, { timeout: 20_000 }).toEqual(zero);
    await connect('md5user', 'iit-count-idle');
    const a = await connect('md5user', 'iit-count-a');
    const b = await connect('md5user', 'iit-count-b');
    await a.query('begin');
    await a.query('select 1');
    await b.query('begin');
    await expect.poll(counts, { timeout: 20_000 }).toEqual({ cl: 2, sv: 2, ovCl: 2, ovSv: 2, mCl: 2, mSv: 2 });
    // SHOW POOLS' own columns keep their meaning: the two are active clients holding active servers.
    expect(await pool()).toMatchObject({ cl_active: 2, sv_active: 2 });
    const first = await pool();
    expect(Number(first['max_idle_xact_age_ms'])).toBeGreaterThan(0);
    // The oldest is a's transaction: no younger than b's, and it keeps growing while both sit there.
    const ages = (await rows('/api/clients?pool=app/md5user'))
      .filter((r) => r['activity'] === 'idle in transaction')
      .map((r) => Number(r['xact_age_ms']));
    expect(ages).toHaveLength(2);
    await expect
      .poll(async () => Number((await pool())['max_idle_xact_age_ms']), { timeout: 20_000 })
      .toBeGreaterThan(Math.max(...ages) + 200);
    expect((await overview()).max_idle_xact_age_ms).toBeGreaterThan(Math.max(...ages) + 200);
    expect(await metric('pooler_pool_max_idle_xact_age_seconds')).toBeGreaterThan((Math.max(...ages) + 200) / 1000);

    await a.query('commit');
    await expect.poll(counts, { timeout: 20_000 }).toEqual({ cl: 1, sv: 1, ovCl: 1, ovSv: 1, mCl: 1, mSv: 1 });
    await b.query('commit');
    await expect.poll(counts, { timeout: 20_000 }).toEqual(zero);
    expect(await pool()).toMatchObject({ max_idle_xact_age_ms: 0, cl_active: 0 });
    expect((await overview()).max_idle_xact_age_ms).toBe(0);
    expect(await metric('pooler_pool_max_idle_xact_age_seconds')).toBe(0);
  });
});
