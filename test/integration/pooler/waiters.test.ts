// Many clients over few servers: every transaction's server comes from the pool's waiter queue. A checkout that finds
// no idle server looks for parked pairs and lent servers in the relay only when the relay could have parked or taken
// one since the last look (Pool.findIdle): these tests run that path with native logins, lending and parking on (the
// js-relay project: the JavaScript relay, which parks nothing), and check what SHOW POOLS says during and after, that
// PAUSE holds the waiters, that query_wait_timeout still fires and that a pair parked after a wait is taken back at
// once by the next checkout.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { adminClient, poolToml, poolerToml, startTestPooler, type TestPooler } from '../../helpers/pooler.js';
import { startTestPostgres, type TestPostgres } from '../../helpers/postgres.js';
import type { Pool } from '../../../src/pooler/pool.js';
import { client, show, until } from './native-login-harness.js';

let db: TestPostgres;
let tp: TestPooler;
/** query_wait_timeout 1 s. */
let quick: TestPooler;

function toml(general: string): string {
  const md5Secret = db.sql(`select rolpassword from pg_authid where rolname = 'md5user'`).trim();
  return poolerToml(db, {
    general,
    pools: poolToml(db, 'app', '', [{ username: 'md5user', password: md5Secret, extra: 'pool_size = 2' }]),
  });
}

beforeAll(async () => {
  db = await startTestPostgres();
  // The waits here are about order and counts, not the limit: a loaded host may take long over a turn.
  tp = await startTestPooler(toml('query_wait_timeout = "120s"'));
  quick = await startTestPooler(toml('query_wait_timeout = "1s"'));
  // The first login of the pool runs in JavaScript (its server's parameters make the greeting).
  for (const p of [tp, quick]) {
    const c = client('md5user', {}, p);
    await c.connect();
    await c.end();
  }
});

afterAll(async () => {
  await tp?.stop();
  await quick?.stop();
  await db?.cleanup();
});

function pool(p = tp): Pool {
  return [...p.pooler.pools.values()].find((x) => x.name === 'md5user@app')!;
}

async function poolRow(p = tp): Promise<Record<string, number>> {
  const row = (await show('POOLS', p)).find((r) => r['database'] === 'app' && r['user'] === 'md5user')!;
  return Object.fromEntries(Object.entries(row).map(([k, v]) => [k, Number(v)]));
}

async function connected(n: number, p = tp): Promise<pg.Client[]> {
  const cs = Array.from({ length: n }, () => client('md5user', {}, p));
  await Promise.all(cs.map((c) => c.connect()));
  return cs;
}

/** Two clients each in a transaction: the pool's two servers are theirs until they commit. */
async function holdBoth(p = tp): Promise<pg.Client[]> {
  const holders = await connected(2, p);
  for (const h of holders) {
    await h.query('BEGIN');
    await h.query('select 1');
  }
  return holders;
}

describe('many clients over two servers', () => {
  it('40 clients, 10 transactions each: every answer right, every transaction on one backend, SHOW POOLS settled after', async () => {
    const cs = await connected(40);
    const pids = new Set<number>();
    const xactsBefore = pool().stats.totals.xactCount;
    try {
      await Promise.all(
        cs.map(async (c, i) => {
          for (let k = 0; k < 10; k++) {
            await c.query('BEGIN');
            const a = (await c.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]!;
            const b = (
              await c.query<{ pid: number; n: number }>('select pg_backend_pid() as pid, $1::int as n', [i * 100 + k])
            ).rows[0]!;
            await c.query('COMMIT');
            expect(b.pid).toBe(a.pid);
            expect(b.n).toBe(i * 100 + k);
            pids.add(a.pid);
          }
        }),
      );
      expect(pids.size).toBeLessThanOrEqual(2);
      expect(pool().stats.totals.xactCount - xactsBefore).toBeGreaterThanOrEqual(400);
      const row = await poolRow();
      expect(row['cl_waiting']).toBe(0);
      expect(row['sv_active']).toBe(0);
      expect(row['maxwait']).toBe(0);
      expect(row['cl_idle']).toBe(40);
      expect(row['cl_active']).toBe(0);
      expect(row['sv_idle'] + row['sv_used']).toBeLessThanOrEqual(2);
      expect(pool().waiting).toBe(0);
    } finally {
      await Promise.all(cs.map((c) => c.end()));
    }
  });

  it('SHOW POOLS counts the waiters while both servers are held; PAUSE holds them, RESUME serves them all', async () => {
    const holders = await holdBoth();
    const waiters = await connected(10);
    const admin = await adminClient(tp.port);
    try {
      let answered = 0;
      const results = waiters.map((c, i) =>
        c.query<{ n: number }>('select $1::int as n', [i]).then((r) => {
          answered++;
          return r.rows[0]!.n;
        }),
      );
      await until('10 clients waiting', async () => (await poolRow())['cl_waiting'] === 10);
      let row = await poolRow();
      expect(row['sv_active']).toBe(2);
      expect(row['cl_active']).toBe(2);
      expect(answered).toBe(0);
      // PAUSE waits for the two transactions; their servers then stay idle while the ten wait on.
      const paused = admin.query('PAUSE app');
      for (const h of holders) await h.query('COMMIT');
      await paused;
      row = await poolRow();
      expect(row['cl_waiting']).toBe(10);
      expect(row['sv_active']).toBe(0);
      expect(row['sv_idle']).toBe(2);
      expect(answered).toBe(0);
      await admin.query('RESUME app');
      expect(await Promise.all(results)).toEqual(waiters.map((_, i) => i));
      await until('nobody waiting', async () => (await poolRow())['cl_waiting'] === 0);
      row = await poolRow();
      expect(row['sv_active']).toBe(0);
      expect(row['maxwait']).toBe(0);
    } finally {
      await admin.end();
      await Promise.all([...holders, ...waiters].map((c) => c.end()));
    }
  });

  it('a pair parked after a wait is taken back by the next checkout, which does not queue', async () => {
    const [a, b] = await holdBoth();
    const [c, d] = await connected(2);
    const p = pool();
    // Two waiters: the second's checkout finds the relay unable to park (someone waits) and marks the search done.
    const waits = [c!.query('select 3 as n'), d!.query('select 4 as n')];
    await until('two clients waiting', () => p.waiting === 2);
    await a!.query('COMMIT');
    await b!.query('COMMIT');
    expect((await Promise.all(waits)).map((r) => r.rows[0].n)).toEqual([3, 4]);
    await until('nobody waiting', () => p.waiting === 0);
    // Nobody waits any more: the native relay parks the pair of each transaction that ends now. a, b, then c each
    // need a server, with none idle: each checkout must take back a parked pair (or a server lent since) at once,
    // not wait in the queue for the pool's tick to take them back.
    const queued: number[] = [];
    const acquire = p.acquire.bind(p);
    p.acquire = (w) => {
      acquire(w);
      queued.push(p.waiting);
    };
    try {
      expect((await a!.query('select 1 as n')).rows[0].n).toBe(1);
      expect((await b!.query('select 2 as n')).rows[0].n).toBe(2);
      expect((await c!.query('select 5 as n')).rows[0].n).toBe(5);
    } finally {
      p.acquire = acquire;
    }
    expect(queued).toEqual([0, 0, 0]);
    await Promise.all([a, b, c, d].map((x) => x!.end()));
  });
});

describe('query_wait_timeout with clients queued behind held servers', () => {
  it('every waiter gets the timeout, the holders finish, SHOW POOLS counts nobody waiting, and the pool serves again', async () => {
    const holders = await holdBoth(quick);
    const waiters = await connected(8, quick);
    // The timeout is FATAL: the pooler closes each waiter after its error.
    for (const c of waiters) c.on('error', () => undefined);
    try {
      const outcomes = waiters.map((c) =>
        c.query('select 1').then(
          () => 'answered',
          (e: { code?: string; message?: string }) => `${e.code}: ${e.message}`,
        ),
      );
      for (const o of await Promise.all(outcomes)) expect(o).toMatch(/^57014: query_wait_timeout/);
      for (const h of holders) await h.query('COMMIT');
      const row = await poolRow(quick);
      expect(row['cl_waiting']).toBe(0);
      expect(row['sv_active']).toBe(0);
      const fresh = client('md5user', {}, quick);
      await fresh.connect();
      expect((await fresh.query('select 7 as n')).rows[0].n).toBe(7);
      await fresh.end();
    } finally {
      await Promise.all([...holders, ...waiters].map((c) => c.end().catch(() => undefined)));
    }
  });
});
