// The pool coordinator against real PostgreSQL: max_db_connections never exceeded in pg_stat_activity, the reserve after
// reserve_pool_timeout, eviction of another user's idle connection, min_guaranteed_pool_size never evicted.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { startTestPostgres, type TestPostgres } from '../../helpers/postgres.js';
import { operatorToml, poolToml, startOperator, until, type OperatorHarness } from '../../helpers/operator.js';
import { startForwarder } from '../../helpers/forwarder.js';

let db: TestPostgres;
let monitor: pg.Client;
let h: OperatorHarness | null = null;

beforeAll(async () => {
  db = await startTestPostgres();
  monitor = new pg.Client({ host: db.host, port: db.port, user: 'trustuser', database: 'postgres' });
  await monitor.connect();
});
afterEach(async () => {
  await h?.stop();
  h = null;
  // A stopped pooler leaves no backend (a server connect in flight at the stop used to log in afterwards and stay,
  // and the next test counted it).
  await until('no backend left by the stopped pooler', async () => (await backends()).length === 0);
});
afterAll(async () => {
  await monitor?.end();
  await db?.cleanup();
});

const USERS = [
  { username: 'md5user', password: 'md5pass' },
  { username: 'scramuser', password: 'scrampass' },
];

/** Backends of the two pool users on database app, by pid and user. */
async function backends(): Promise<{ pid: number; usename: string }[]> {
  const r = await monitor.query(
    `SELECT pid, usename FROM pg_stat_activity WHERE datname = 'app' AND usename IN ('md5user', 'scramuser') AND backend_type = 'client backend'`,
  );
  return r.rows as { pid: number; usename: string }[];
}

async function start(poolLines: string, userExtra: string, general = ''): Promise<OperatorHarness> {
  h = await startOperator(
    operatorToml({
      general,
      pools: poolToml(
        db,
        'capped',
        poolLines,
        USERS.map((u) => ({ ...u, extra: userExtra })),
      ),
    }),
  );
  return h;
}

async function coordinator(x: OperatorHarness): Promise<Record<string, string | null>> {
  return (await x.show('POOL_COORDINATOR')).find((r) => r['database'] === 'capped')!;
}

async function pidOf(c: pg.Client): Promise<number> {
  return (await c.query('SELECT pg_backend_pid() AS pid')).rows[0].pid as number;
}

describe('max_db_connections', () => {
  it('two users and 20 clients never hold more than 3 connections in pg_stat_activity, and every query runs', async () => {
    const x = await start(
      'max_db_connections = 3\nmin_connection_lifetime = "0"',
      'pool_size = 5',
      'query_wait_timeout = "60s"',
    );
    let maxSeen = 0;
    let maxCurrent = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        maxSeen = Math.max(maxSeen, (await backends()).length);
        maxCurrent = Math.max(maxCurrent, Number((await coordinator(x))['current']));
      }
    })();
    const clients = Array.from({ length: 20 }, (_, i) =>
      x.client('capped', USERS[i % 2]!.username, USERS[i % 2]!.password),
    );
    let done = 0;
    try {
      await Promise.all(clients.map((c) => c.connect()));
      await Promise.all(
        clients.map(async (c) => {
          for (let i = 0; i < 15; i++) {
            await c.query('SELECT pg_sleep(0.005)');
            done++;
          }
        }),
      );
    } finally {
      sampling = false;
      await sampler;
      await Promise.all(clients.map((c) => c.end()));
    }
    expect(done).toBe(20 * 15);
    expect(maxSeen).toBeGreaterThanOrEqual(1);
    expect(maxSeen).toBeLessThanOrEqual(3);
    expect(maxCurrent).toBeLessThanOrEqual(3);
    const stats = await x.show('STATS');
    // Both users got their turn.
    for (const u of ['md5user', 'scramuser'])
      expect(Number(stats.find((r) => r['user'] === u)!['total_xact_count'])).toBe(10 * 15);
    expect(await coordinator(x)).toMatchObject({
      max_db_conn: '3',
      reserve_size: '0',
      reserve_used: '0',
      reserve_acq: '0',
      exhaustions: '0',
    });
  });
});

describe('the reserve', () => {
  it('a client that waited reserve_pool_timeout gets a connection from the reserve', async () => {
    const x = await start(
      'max_db_connections = 1\nreserve_pool_size = 1\nreserve_pool_timeout = "300ms"\nmin_connection_lifetime = "1h"',
      'pool_size = 2',
    );
    const holder = x.client('capped', 'md5user', 'md5pass');
    await holder.connect();
    await holder.query('BEGIN');
    const late = x.client('capped', 'scramuser', 'scrampass');
    try {
      const t0 = Date.now();
      await late.connect();
      await late.query('BEGIN');
      expect(Date.now() - t0).toBeGreaterThanOrEqual(280);
      // The regular slot and one reserve connection (the login's reserve connection went back when the login was done).
      await until('the two backends', async () => (await backends()).length === 2);
      expect(await coordinator(x)).toMatchObject({
        max_db_conn: '1',
        current: '2',
        reserve_size: '1',
        reserve_used: '1',
        evictions: '0',
      });
      expect(Number((await coordinator(x))['reserve_acq'])).toBeGreaterThanOrEqual(1);
      const servers = await x.show('SERVERS');
      expect(servers.find((r) => r['user'] === 'scramuser')).toMatchObject({ reserve: '1', state: 'active' });
      expect(servers.find((r) => r['user'] === 'md5user')).toMatchObject({ reserve: '0' });
      await late.query('COMMIT');
      // A reserve connection goes back when nobody waits for it.
      await until(
        'the reserve connection to close',
        async () => (await coordinator(x))['reserve_used'] === '0' && (await backends()).length === 1,
      );
    } finally {
      await holder.query('COMMIT');
      await holder.end();
      await late.end();
    }
  });
});

describe('eviction', () => {
  it('the idle connection of the user with the largest surplus is closed for another user', async () => {
    const x = await start('max_db_connections = 2\nmin_connection_lifetime = "0"', 'pool_size = 2');
    const a1 = x.client('capped', 'md5user', 'md5pass');
    const a2 = x.client('capped', 'md5user', 'md5pass');
    const b = x.client('capped', 'scramuser', 'scrampass');
    try {
      await a1.connect();
      await a2.connect();
      await a1.query('BEGIN');
      await a2.query('BEGIN');
      const pids = [await pidOf(a1), await pidOf(a2)];
      await a1.query('COMMIT');
      await a2.query('COMMIT');
      expect((await backends()).map((r) => r.pid).sort()).toEqual([...pids].sort());
      await b.connect();
      const bPid = await pidOf(b);
      const now = await backends();
      expect(now).toHaveLength(2);
      expect(now.map((r) => r.pid)).toContain(bPid);
      // One of md5user's two idle connections made room.
      expect(now.filter((r) => pids.includes(r.pid))).toHaveLength(1);
      expect(await coordinator(x)).toMatchObject({ current: '2', evictions: '1', exhaustions: '0' });
      const events = (await x.api('/api/events')).body as { kind: string; pool: string; message: string }[];
      expect(events.find((e) => e.kind === 'eviction')).toMatchObject({
        pool: 'capped/md5user',
        message: expect.stringContaining('evicted for scramuser@capped'),
      });
      // md5user still runs on its remaining connection.
      expect((await a1.query('SELECT 1 AS one')).rows[0].one).toBe(1);
    } finally {
      await Promise.all([a1.end(), a2.end(), b.end()]);
    }
  });

  it('min_connection_lifetime: an idle connection younger than it is not evicted, an older one is', async () => {
    const x = await start(
      'max_db_connections = 2\nmin_connection_lifetime = "3s"',
      'pool_size = 2',
      'query_wait_timeout = "1s"',
    );
    const a1 = x.client('capped', 'md5user', 'md5pass');
    const a2 = x.client('capped', 'md5user', 'md5pass');
    const b1 = x.client('capped', 'scramuser', 'scrampass');
    const b2 = x.client('capped', 'scramuser', 'scrampass');
    try {
      await a1.connect();
      await a2.connect();
      await a1.query('BEGIN');
      const old = await pidOf(a1);
      await a1.query('COMMIT');
      // The first connection grows older than min_connection_lifetime; then a second, young one opens beside it.
      await new Promise((r) => setTimeout(r, 3100));
      await a1.query('BEGIN');
      await a2.query('BEGIN');
      const young = [await pidOf(a1), await pidOf(a2)].find((pid) => pid !== old)!;
      expect([await pidOf(a1), await pidOf(a2)]).toContain(old);
      await a1.query('COMMIT');
      await a2.query('COMMIT');
      // scramuser needs a connection at the cap: only the old one may go.
      await b1.connect();
      await b1.query('BEGIN');
      const left = (await backends()).map((r) => r.pid);
      expect(left).toContain(young);
      expect(left).not.toContain(old);
      expect(await coordinator(x)).toMatchObject({ current: '2', evictions: '1' });
      // Another scramuser connection would need the young one: it stays, and the client times out instead.
      await b2.connect().catch(() => undefined);
      const err = await b2.query('SELECT 1').then(
        () => null,
        (e: Error & { code?: string }) => e,
      );
      expect(err).toMatchObject({ code: '57014' });
      expect((await backends()).map((r) => r.pid)).toContain(young);
      expect(await coordinator(x)).toMatchObject({ evictions: '1' });
      await b1.query('COMMIT');
    } finally {
      await Promise.all([a1.end(), a2.end(), b1.end(), b2.end().catch(() => undefined)]);
    }
  });

  it('between users with the same surplus, the one with the higher p95 transaction time gives up its connection', async () => {
    h = await startOperator(
      operatorToml({
        pools: poolToml(db, 'capped', 'max_db_connections = 2\nmin_connection_lifetime = "0"', [
          { username: 'md5user', password: 'md5pass' },
          { username: 'scramuser', password: 'scrampass' },
          { username: 'trustuser', password: '' },
        ]),
      }),
    );
    const x = h;
    const slow = x.client('capped', 'md5user', 'md5pass');
    const fast = x.client('capped', 'scramuser', 'scrampass');
    const third = x.client('capped', 'trustuser', '');
    try {
      await slow.connect();
      await fast.connect();
      for (let i = 0; i < 3; i++) await slow.query('SELECT pg_sleep(0.05)');
      for (let i = 0; i < 3; i++) await fast.query('SELECT 1');
      const slowPid = await pidOf(slow);
      const fastPid = await pidOf(fast);
      await third.connect();
      expect((await third.query('SELECT 1 AS one')).rows[0].one).toBe(1);
      const left = (
        await monitor.query(
          `SELECT pid FROM pg_stat_activity WHERE datname = 'app' AND backend_type = 'client backend' AND pid IN (${slowPid}, ${fastPid})`,
        )
      ).rows.map((r) => r.pid as number);
      expect(left).toEqual([fastPid]);
      expect(await coordinator(x)).toMatchObject({ evictions: '1' });
    } finally {
      await Promise.all([slow.end(), fast.end(), third.end()]);
    }
  });

  it('connections within min_guaranteed_pool_size are never evicted: the other user waits and times out', async () => {
    const x = await start(
      'max_db_connections = 3\nmin_guaranteed_pool_size = 2\nmin_connection_lifetime = "0"',
      'pool_size = 3',
      'query_wait_timeout = "1s"',
    );
    const a1 = x.client('capped', 'md5user', 'md5pass');
    const a2 = x.client('capped', 'md5user', 'md5pass');
    const b1 = x.client('capped', 'scramuser', 'scrampass');
    const b2 = x.client('capped', 'scramuser', 'scrampass');
    try {
      for (const c of [a1, a2, b1, b2]) await c.connect();
      await a1.query('BEGIN');
      await a2.query('BEGIN');
      const guarded = [await pidOf(a1), await pidOf(a2)];
      await a1.query('COMMIT');
      await a2.query('COMMIT');
      await b1.query('BEGIN');
      expect((await backends()).length).toBe(3);
      const failing = b2.query('SELECT 1').then(
        () => null,
        (e: Error & { code?: string }) => e,
      );
      // While it waits, SHOW CLIENTS says the database's cap holds it.
      await until(
        'b2 waiting on the cap',
        async () => (await x.show('CLIENTS')).some((r) => r['user'] === 'scramuser' && r['state'] === 'waiting'),
        900,
      );
      expect(
        (await x.show('CLIENTS')).find((r) => r['user'] === 'scramuser' && r['state'] === 'waiting'),
      ).toMatchObject({ wait_reason: 'max_db_connections 3' });
      const err = await failing;
      expect(err).toMatchObject({ code: '57014', message: expect.stringContaining('query_wait_timeout') });
      const left = (await backends()).map((r) => r.pid);
      for (const pid of guarded) expect(left).toContain(pid);
      expect(await coordinator(x)).toMatchObject({ evictions: '0', current: '3' });
      expect(Number((await coordinator(x))['exhaustions'])).toBe(1);
      const events = (await x.api('/api/events')).body as { kind: string; pool: string; message: string }[];
      expect(events.find((e) => e.kind === 'pool_exhaustion')).toMatchObject({
        pool: 'capped/scramuser',
        message: expect.stringContaining('max_db_connections 3'),
      });
      await b1.query('COMMIT');
    } finally {
      await Promise.all([a1.end(), a2.end(), b1.end(), b2.end().catch(() => undefined)]);
    }
  });
});

describe('SHOW POOL_SCALING', () => {
  it('counts connects, refusals by the cap and failed connects per pool', async () => {
    const x = await start(
      'max_db_connections = 1\nmin_connection_lifetime = "1h"',
      'pool_size = 2',
      'query_wait_timeout = "500ms"',
    );
    const a = x.client('capped', 'md5user', 'md5pass');
    const b = x.client('capped', 'md5user', 'md5pass');
    try {
      await a.connect();
      await b.connect();
      await a.query('BEGIN');
      const err = await b.query('SELECT 1').then(
        () => null,
        (e: Error & { code?: string }) => e,
      );
      expect(err).toMatchObject({ code: '57014' });
      const row = (await x.show('POOL_SCALING')).find((r) => r['user'] === 'md5user' && r['database'] === 'capped')!;
      expect(row).toMatchObject({ inflight: '0', creates: '1', create_fallback: '0' });
      expect(Number(row['gate_budget_ex'])).toBeGreaterThanOrEqual(1);
      await a.query('COMMIT');
    } finally {
      await Promise.all([a.end(), b.end().catch(() => undefined)]);
    }
  });

  it('gate_waits, antic_notify, antic_timeout and replenish_def: connects that take 2 s behind a gate of one', async () => {
    // query_wait_timeout (500 ms, checked every second) ends a wait before such a connect arrives (and the connect
    // stays within the default 3 s server connect timeout).
    const slow = await startForwarder(db, { delayMs: 2000 });
    const x = (h = await startOperator(
      operatorToml({
        general: 'max_concurrent_connects = 1\nquery_wait_timeout = "500ms"',
        pools:
          poolToml({ ...db, port: slow.port }, 'slow', '', [
            { username: 'md5user', password: 'md5pass', extra: 'pool_size = 3' },
          ]) +
          poolToml({ ...db, port: slow.port }, 'topup', '', [
            { username: 'md5user', password: 'md5pass', extra: 'pool_size = 3\nmin_pool_size = 3' },
          ]),
      }),
    ));
    const [c1, c2, c3] = [1, 2, 3].map(() => x.client('slow', 'md5user', 'md5pass'));
    const scaling = async (db: string) => (await x.show('POOL_SCALING')).find((r) => r['database'] === db)!;
    try {
      for (const c of [c1!, c2!, c3!]) await c.connect();
      await c1!.query('BEGIN');
      // c2 starts a connect (2 s); c3 finds the gate of one connect taken.
      // Each holds the server it gets 2.5 s, so the other one's wait outlasts query_wait_timeout.
      const r2 = c2!.query('SELECT 2 AS v, pg_sleep(2.5)').then(
        (r) => r.rows[0].v as number,
        (e: Error & { code?: string }) => e.code,
      );
      const r3 = c3!.query('SELECT 2 AS v, pg_sleep(2.5)').then(
        (r) => r.rows[0].v as number,
        (e: Error & { code?: string }) => e.code,
      );
      await until(
        'a connect in flight and a gate wait',
        async () =>
          Number((await scaling('slow'))['inflight']) === 1 && Number((await scaling('slow'))['gate_waits']) >= 1,
        900,
      );
      // c1's server comes back while that connect is still on its way: the first waiter takes it (antic_notify);
      // the other waits past query_wait_timeout with the connect still in flight (antic_timeout).
      await c1!.query('COMMIT');
      const results = (await Promise.all([r2, r3])).sort();
      expect(results).toEqual([2, '57014'].sort());
      const row = await scaling('slow');
      expect(Number(row['antic_notify'])).toBeGreaterThanOrEqual(1);
      expect(Number(row['antic_timeout'])).toBeGreaterThanOrEqual(1);
      expect(Number(row['gate_waits'])).toBeGreaterThanOrEqual(1);
      // min_pool_size 3 behind the same gate: the top-ups that cannot start yet are deferred, then all three open.
      await until('topup deferred', async () => Number((await scaling('topup'))['replenish_def']) >= 1, 10_000);
      await until('topup at min_pool_size', async () => Number((await scaling('topup'))['creates']) >= 3, 20_000);
      // The same counters on /api/pool_scaling.
      const api = ((await x.api('/api/pool_scaling')).body as Record<string, unknown>[]).find(
        (r) => r['database'] === 'slow',
      )!;
      expect(api['antic_timeout']).toBe(Number((await scaling('slow'))['antic_timeout']));
    } finally {
      await Promise.all([c1!, c2!, c3!].map((c) => c.end().catch(() => undefined)));
      await x.stop();
      h = null;
      await slow.stop();
    }
  });
});
