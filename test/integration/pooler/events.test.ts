// The events ring: each kind produced by real clients and admin commands, read back through SHOW EVENTS and /api/events.
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { startTestPostgres, type TestPostgres } from '../../helpers/postgres.js';
import { startForwarder } from '../../helpers/forwarder.js';
import { operatorToml, poolToml, startOperator, until, type OperatorHarness } from '../../helpers/operator.js';

let db: TestPostgres;
let h: OperatorHarness;
let deadPort: number;

interface ApiEvent {
  time: string;
  kind: string;
  pool: string | null;
  message: string;
}

/** A port nothing listens on: bound, then closed. */
async function closedPort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

function toml(queryWait: string): string {
  return operatorToml({
    general: `query_wait_timeout = "${queryWait}"`,
    pools:
      poolToml(db, 'ev', '', [{ username: 'md5user', password: 'md5pass', extra: 'pool_size = 1' }]) +
      `
[pools.dead]
server_host = "127.0.0.1"
server_port = ${deadPort}
server_database = "postgres"

[[pools.dead.users]]
username = "md5user"
password = "md5pass"
`,
  });
}

beforeAll(async () => {
  db = await startTestPostgres();
  deadPort = await closedPort();
  h = await startOperator(toml('700ms'));
});
afterAll(async () => {
  await h?.stop();
  await db?.cleanup();
});

async function apiEvents(): Promise<ApiEvent[]> {
  const r = await h.api('/api/events');
  expect(r.status).toBe(200);
  return r.body as ApiEvent[];
}

/** The newest event of `kind`, from /api/events, checked against the same event in SHOW EVENTS. */
async function newest(kind: string): Promise<ApiEvent> {
  const api = (await apiEvents()).find((e) => e.kind === kind);
  expect(api, kind).toBeDefined();
  const shown = (await h.show('EVENTS')).find((e) => e['kind'] === kind)!;
  expect(shown).toEqual({ time: api!.time, kind, pool: api!.pool, message: api!.message });
  expect(Date.parse(api!.time)).toBeGreaterThan(Date.now() - 60_000);
  return api!;
}

describe('events', () => {
  it('pause, resume, reconnect, kill from the admin console', async () => {
    await h.admin('PAUSE ev');
    expect(await newest('pause')).toMatchObject({ pool: 'ev/md5user', message: expect.stringContaining('PAUSE') });
    await h.admin('RESUME ev');
    expect(await newest('resume')).toMatchObject({ pool: 'ev/md5user' });
    await h.admin('RECONNECT ev');
    expect(await newest('reconnect')).toMatchObject({ pool: 'ev/md5user' });
    const c = h.client('ev', 'md5user', 'md5pass');
    await c.connect();
    c.on('error', () => undefined);
    await h.admin('KILL ev');
    expect(await newest('kill')).toMatchObject({ pool: null, message: expect.stringMatching(/^KILL ev: 1 clients/) });
    await h.admin('RESUME ev');
    await c.end().catch(() => undefined);
    // Newest first.
    const kinds = (await apiEvents()).map((e) => e.kind);
    expect(kinds.indexOf('resume')).toBeLessThan(kinds.indexOf('kill'));
    expect(kinds.indexOf('kill')).toBeLessThan(kinds.indexOf('reconnect'));
  });

  it('reload says what changed', async () => {
    h.tp.writeConfig(toml('800ms'));
    await h.admin('RELOAD');
    expect(await newest('reload')).toMatchObject({
      pool: null,
      message: expect.stringContaining('changed: general.query_wait_timeout'),
    });
  });

  it('a server connect failure and a client login failure', async () => {
    const c = h.client('dead', 'md5user', 'md5pass');
    await expect(c.connect()).rejects.toThrow();
    expect(await newest('connect_failure')).toMatchObject({
      pool: 'dead/md5user',
      message: expect.stringContaining(`127.0.0.1:${deadPort}`),
    });
    const wrong = h.client('ev', 'md5user', 'not-the-password');
    await expect(wrong.connect()).rejects.toMatchObject({ code: '28P01' });
    expect(await newest('login_failure')).toMatchObject({ pool: null, message: expect.stringContaining('28P01') });
  });

  it("fallback_active: set while a pool's server connects fail, cleared by the next that succeeds", async () => {
    const fallback = async () => ({
      show: (await h.show('POOLS')).find((r) => r['database'] === 'dead')?.['fallback_active'],
      api: ((await h.api('/api/pools')).body as Record<string, unknown>[]).find((r) => r['database'] === 'dead')?.[
        'fallback_active'
      ],
      metric: /pooler_pool_fallback_active\{database="dead",user="md5user"\} (\d)/.exec(await h.metrics())?.[1],
    });
    // The test before left the pool's last connect failed.
    expect(await fallback()).toEqual({ show: '1', api: true, metric: '1' });
    // PostgreSQL appears on the dead port (a forwarder): the next client's connect succeeds.
    const forwarder = await startForwarder(db, { port: deadPort });
    try {
      // Within server_login_retry of the last failure a client gets the cached error; the first after it connects.
      const deadline = Date.now() + 20_000;
      for (;;) {
        const c = h.client('dead', 'md5user', 'md5pass');
        c.on('error', () => undefined);
        const rows = await c
          .connect()
          .then(() => c.query('SELECT 1 AS one'))
          .then(
            (r) => r.rows,
            (e: Error) => e,
          );
        await c.end().catch(() => undefined);
        if (!(rows instanceof Error)) {
          expect(rows).toEqual([{ one: 1 }]);
          break;
        }
        expect(rows.message).toMatch(/server_login_retry/);
        if (Date.now() > deadline) throw rows;
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(await fallback()).toEqual({ show: '0', api: false, metric: '0' });
    } finally {
      await forwarder.stop();
    }
  });

  it('pool exhaustion: a client waited past query_wait_timeout', async () => {
    const holder = h.client('ev', 'md5user', 'md5pass');
    const waiter = h.client('ev', 'md5user', 'md5pass');
    await holder.connect();
    await waiter.connect();
    try {
      await holder.query('BEGIN');
      await expect(waiter.query('SELECT 1')).rejects.toMatchObject({ code: '57014' });
      expect(await newest('pool_exhaustion')).toMatchObject({
        pool: 'ev/md5user',
        message: expect.stringContaining('query_wait_timeout 800 ms'),
      });
      await holder.query('COMMIT');
    } finally {
      await holder.end();
      await waiter.end().catch(() => undefined);
    }
  });

  it('a PAUSE keeps clients waiting past query_wait_timeout, without an error or an exhaustion; RESUME serves them', async () => {
    const waiter = h.client('ev', 'md5user', 'md5pass');
    await waiter.connect();
    const exhaustions = (await apiEvents()).filter((e) => e.kind === 'pool_exhaustion').length;
    await h.admin('PAUSE ev');
    let answer: unknown = null;
    const q = waiter.query('SELECT 7 AS seven').then(
      (r) => (answer = r.rows),
      (e: Error) => (answer = e),
    );
    try {
      // Waited two maintenance ticks (1 s each) past query_wait_timeout (800 ms): the timeout would have fired by now.
      await until('the client to wait past query_wait_timeout twice over', async () => {
        const row = (await h.show('CLIENTS')).find((r) => r['database'] === 'ev');
        return row?.['state'] === 'waiting' && Number(row['wait_us']) > 2_800_000;
      });
      expect((await h.show('CLIENTS')).find((r) => r['database'] === 'ev')).toMatchObject({
        wait_reason: 'pool paused',
      });
      expect(answer).toBeNull();
      expect((await apiEvents()).filter((e) => e.kind === 'pool_exhaustion').length).toBe(exhaustions);
    } finally {
      await h.admin('RESUME ev');
    }
    await q;
    expect(answer).toEqual([{ seven: 7 }]);
    await waiter.end();
  });

  it('a backend lost mid-query', async () => {
    const c = h.client('ev', 'md5user', 'md5pass');
    await c.connect();
    c.on('error', () => undefined);
    const pid = (await c.query('SELECT pg_backend_pid() AS pid')).rows[0].pid as number;
    const sleeping = c.query('SELECT pg_sleep(30)').then(
      () => null,
      (e: Error) => e,
    );
    const killer = new pg.Client({ host: db.host, port: db.port, user: 'trustuser', database: 'postgres' });
    await killer.connect();
    try {
      await until(
        'the query to run',
        async () =>
          (await killer.query(`SELECT 1 FROM pg_stat_activity WHERE pid = ${pid} AND state = 'active'`)).rowCount === 1,
      );
      await killer.query(`SELECT pg_terminate_backend(${pid})`);
      expect(await sleeping).toBeInstanceOf(Error);
      // The client stays until the pooler has seen the server go (a client leaving first releases a server that is
      // already gone, which is no backend lost under a client).
      await until('the backend_lost event', async () => (await apiEvents()).some((e) => e.kind === 'backend_lost'));
    } finally {
      await killer.end();
      await c.end().catch(() => undefined);
    }
    expect(await newest('backend_lost')).toMatchObject({
      pool: 'ev/md5user',
      message: expect.stringContaining(`backend pid ${pid}`),
    });
  });
});
