// Servers between transactions: what a client sees when its last server is taken by another client, dies,
// is reconnected or paused. The native relay keeps ("parks") a finished transaction's server with its
// client while nobody waits; these tests hold on both relays (vitest projects main and js-relay).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { startTestPostgres, type TestPostgres } from '../../helpers/postgres.js';
import { ADMIN_PASSWORD, appPoolToml, poolerToml, startTestPooler, type TestPooler } from '../../helpers/pooler.js';

let db: TestPostgres;
let tp: TestPooler;
let admin: pg.Client;

beforeAll(async () => {
  db = await startTestPostgres();
  tp = await startTestPooler(poolerToml(db, { pools: appPoolToml(db, 1) }));
  admin = new pg.Client({
    host: '127.0.0.1',
    port: tp.port,
    user: 'admin',
    password: ADMIN_PASSWORD,
    database: 'tidepool',
  });
  await admin.connect();
});

afterAll(async () => {
  await admin?.end().catch(() => undefined);
  await tp?.stop();
  await db?.cleanup();
});

function client(): pg.Client {
  return new pg.Client({ host: '127.0.0.1', port: tp.port, user: 'md5user', password: 'md5pass', database: 'app' });
}

async function pid(c: pg.Client): Promise<number> {
  return (await c.query('select pg_backend_pid() as pid')).rows[0].pid as number;
}

describe('a server between transactions', () => {
  it('goes to the next client that asks, on a one-server pool, turn after turn', async () => {
    const a = client();
    const b = client();
    await a.connect();
    await b.connect();
    try {
      const pids = new Set<number>();
      for (let i = 0; i < 25; i++) {
        pids.add(await pid(a));
        pids.add(await pid(b));
      }
      expect(pids.size).toBe(1);
      // Both at once: one waits for the other's transaction, neither fails.
      const both = await Promise.all(
        Array.from({ length: 20 }, (_, i) => (i % 2 ? a : b).query('select $1::int as i', [i])),
      );
      expect(both.map((r) => r.rows[0].i)).toEqual(Array.from({ length: 20 }, (_, i) => i));
    } finally {
      await a.end();
      await b.end();
    }
  });

  it('is reported idle by SHOW, with its client idle', async () => {
    const a = client();
    await a.connect();
    try {
      await a.query('select 1');
      const clients = (await admin.query('SHOW CLIENTS')).rows.filter((r) => r.database === 'app');
      expect(clients.map((r) => r.state)).toEqual(['idle']);
      const servers = (await admin.query('SHOW SERVERS')).rows.filter((r) => r.database_name === 'app');
      expect(servers.map((r) => r.state)).toEqual(['idle']);
      const pools = (await admin.query('SHOW POOLS')).rows.find((r) => r.database === 'app')!;
      expect([pools.cl_active, pools.sv_active, pools.sv_idle].map(Number)).toEqual([0, 0, 1]);
    } finally {
      await a.end();
    }
  });

  it('dying quietly costs its client nothing: the next query gets a new backend', async () => {
    const a = client();
    const killer = new pg.Client({
      host: db.host,
      port: db.port,
      user: 'md5user',
      password: 'md5pass',
      database: 'app',
    });
    await a.connect();
    await killer.connect();
    try {
      const first = await pid(a);
      await killer.query('select pg_terminate_backend($1)', [first]);
      // The pooler notices the close; until then a query may still meet the dying server (08006), after it never.
      for (
        let i = 0;
        i < 500 && (await admin.query('SHOW SERVERS')).rows.some((r) => Number(r.server_process_id) === first);
        i++
      ) {
        await new Promise((r) => setTimeout(r, 20));
      }
      const second = await pid(a);
      expect(second).not.toBe(first);
      expect((await a.query('select 2 as two')).rows[0].two).toBe(2);
    } finally {
      await a.end();
      await killer.end();
    }
  });

  it('RECONNECT replaces it before the next transaction', async () => {
    const a = client();
    await a.connect();
    try {
      const first = await pid(a);
      await admin.query('RECONNECT app');
      expect(await pid(a)).not.toBe(first);
    } finally {
      await a.end();
    }
  });

  it('PAUSE returns at once and holds the next transaction until RESUME', async () => {
    const a = client();
    await a.connect();
    try {
      await a.query('select 1');
      await admin.query('PAUSE app');
      let done = false;
      const q = a.query('select 3 as three').then((r) => {
        done = true;
        return r;
      });
      await new Promise((r) => setTimeout(r, 200));
      expect(done).toBe(false);
      await admin.query('RESUME app');
      expect((await q).rows[0].three).toBe(3);
    } finally {
      await a.end();
    }
  });

  it('a transaction left open keeps the server: another client waits for COMMIT', async () => {
    const a = client();
    const b = client();
    await a.connect();
    await b.connect();
    try {
      await a.query('BEGIN');
      const inside = await pid(a);
      let bDone = false;
      const bq = b.query('select pg_backend_pid() as pid').then((r) => {
        bDone = true;
        return r;
      });
      await new Promise((r) => setTimeout(r, 200));
      expect(bDone).toBe(false);
      expect(await pid(a)).toBe(inside);
      await a.query('COMMIT');
      expect((await bq).rows[0].pid).toBe(inside);
    } finally {
      await a.end();
      await b.end();
    }
  });
});
