import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import postgres from 'postgres';
import net from 'node:net';
import { startTestPostgres, type TestPostgres } from '../../helpers/postgres.js';
import { poolerToml, poolToml, startTestPooler, type TestPooler } from '../../helpers/pooler.js';
import { nativeLoaded } from '../../../src/native/index.js';

let db: TestPostgres;
let tp: TestPooler;

beforeAll(async () => {
  db = await startTestPostgres();
  tp = await startTestPooler(
    poolerToml(db, {
      // 50 clients queue for 2 servers here: on a loaded CI host a waiter's turn can take longer than the 5 s default
      // (a CI run at load 20 timed one out); these tests are about pooling, not the wait limit (pool-exhaustion's).
      general: 'query_wait_timeout = "120s"',
      extra: poolToml(db, 'appsession1', 'pool_mode = "session"', [
        { username: 'md5user', password: 'md5pass', extra: 'pool_size = 1' },
      ]),
    }),
  );
});

afterAll(async () => {
  await tp?.stop();
  await db?.cleanup();
});

function client(database = 'app', user = 'md5user', password = 'md5pass'): pg.Client {
  return new pg.Client({ host: '127.0.0.1', port: tp.port, user, password, database });
}

describe('transaction pooling', () => {
  it('carries logged-in clients and servers on the native relay unless TIDEPOOL_NATIVE_RELAY=0', async () => {
    const expectNative = nativeLoaded && process.env.TIDEPOOL_NATIVE_RELAY !== '0';
    const c = client();
    await c.connect();
    try {
      expect((await c.query('select 1 as one')).rows[0].one).toBe(1);
      const sessions = [...tp.pooler.clients].filter((s) => !s.isAdmin);
      expect(sessions.length).toBe(1);
      expect(sessions[0]!.relayKind).toBe(expectNative ? 'native' : 'js');
      const servers = [...tp.pooler.pools.values()].flatMap((p) => [...p.servers]);
      expect(servers.length).toBeGreaterThan(0);
      for (const s of servers) expect(s.end.kind).toBe(expectNative ? 'native' : 'js');
      // SHOW CLIENTS counts the client's transaction and query wherever the bytes went.
      const row = tp.pooler.show('CLIENTS').rows.find((r) => r[0] === sessions[0]!.id)!;
      expect(row[8]).toBeGreaterThanOrEqual(1);
      expect(row[9]).toBeGreaterThanOrEqual(1);
    } finally {
      await c.end();
    }
  });

  it('serves 50 concurrent clients with 2 servers, each transaction on one backend', async () => {
    const clients = Array.from({ length: 50 }, () => client());
    await Promise.all(clients.map((c) => c.connect()));
    const pids = new Set<number>();
    try {
      await Promise.all(
        clients.map(async (c, i) => {
          for (let k = 0; k < 5; k++) {
            await c.query('BEGIN');
            const a = (await c.query('select pg_backend_pid() as pid')).rows[0].pid as number;
            await c.query('select pg_sleep(0.002)');
            const b = (await c.query('select pg_backend_pid() as pid, $1::int as i', [i])).rows[0];
            await c.query('COMMIT');
            expect(b.pid).toBe(a);
            expect(b.i).toBe(i);
            pids.add(a);
          }
        }),
      );
    } finally {
      await Promise.all(clients.map((c) => c.end()));
    }
    expect(pids.size).toBeLessThanOrEqual(2);
    const pool = tp.pooler.show('POOLS').rows.find((r) => r[0] === 'app' && r[1] === 'md5user')!;
    expect(pool[11]).toBe(2); // pool_size
  });

  it('keeps a failed transaction on its server until ROLLBACK', async () => {
    const c = client();
    await c.connect();
    try {
      await c.query('BEGIN');
      await expect(c.query('select 1/0')).rejects.toMatchObject({ code: '22012' });
      await expect(c.query('select 1')).rejects.toMatchObject({ code: '25P02' });
      await c.query('ROLLBACK');
      expect((await c.query('select 2 as x')).rows[0].x).toBe(2);
    } finally {
      await c.end();
    }
  });

  it('pipelines extended-protocol queries (postgres.js) and keeps their order', async () => {
    const sql = postgres({
      host: '127.0.0.1',
      port: tp.port,
      user: 'scramuser',
      password: 'scrampass',
      database: 'app',
      max: 1,
      prepare: false,
    });
    try {
      const results = await Promise.all(
        Array.from({ length: 200 }, (_, i) => sql`select ${i}::int as i, repeat('x', ${i}) as pad`),
      );
      results.forEach((r, i) => {
        expect(r[0]!.i).toBe(i);
        expect(r[0]!.pad.length).toBe(i);
      });
      const tx = await sql.begin(async (s) => {
        await s`create temp table t_pipe (v int)`;
        await Promise.all([s`insert into t_pipe values (1)`, s`insert into t_pipe values (2)`]);
        return s`select sum(v)::int as total from t_pipe`;
      });
      expect(tx[0]!.total).toBe(3);
    } finally {
      await sql.end();
    }
  });

  it('forwards NOTICE and NOTIFY', async () => {
    const c = client('appsession');
    await c.connect();
    const notices: string[] = [];
    const notes: string[] = [];
    c.on('notice', (n) => notices.push(n.message ?? ''));
    c.on('notification', (n) => notes.push(n.payload ?? ''));
    try {
      await c.query(`do $$ begin raise notice 'hello from plpgsql'; end $$`);
      await c.query('LISTEN tidepool_chan');
      await c.query(`NOTIFY tidepool_chan, 'ping'`);
      await new Promise((r) => setTimeout(r, 100));
      expect(notices).toContain('hello from plpgsql');
      expect(notes).toEqual(['ping']);
    } finally {
      await c.end();
    }
  });
});

describe('session pooling', () => {
  it('resets the server between clients: the next client gets the same backend with nothing left of the last', async () => {
    // appsession1 has one server, so the second client must get the first one's backend once it is reset.
    const a = client('appsession1');
    await a.connect();
    const pidA = (await a.query('select pg_backend_pid() as pid')).rows[0].pid as number;
    await a.query(`SET statement_timeout = '123s'`);
    await a.query('CREATE TEMP TABLE leaked_temp (x int)');
    await a.query('PREPARE leaked_stmt AS select 1');
    expect((await a.query(`select current_setting('statement_timeout') as st`)).rows[0].st).toBe('123s');
    await a.end();
    const b = client('appsession1');
    await b.connect();
    try {
      const r = (
        await b.query(`select pg_backend_pid() as pid, current_setting('statement_timeout') as st,
        (select count(*)::int from pg_tables where tablename = 'leaked_temp') as temps,
        (select count(*)::int from pg_prepared_statements where name = 'leaked_stmt') as prepared`)
      ).rows[0];
      expect(r).toEqual({ pid: pidA, st: '0', temps: 0, prepared: 0 });
    } finally {
      await b.end();
    }
  });

  it('holds one server for the whole session', async () => {
    const a = client('appsession');
    await a.connect();
    try {
      const p1 = (await a.query('select pg_backend_pid() as pid')).rows[0].pid;
      await new Promise((r) => setTimeout(r, 20));
      const p2 = (await a.query('select pg_backend_pid() as pid')).rows[0].pid;
      expect(p2).toBe(p1);
    } finally {
      await a.end();
    }
  });
});

/** Waits until PostgreSQL runs `text` (seen in pg_stat_activity): a cancel sent earlier could arrive while
 * the backend still reads the command, and PostgreSQL ignores it then. */
async function waitRunning(text: string): Promise<void> {
  const direct = new pg.Client({ host: db.host, port: db.port, user: 'md5user', password: 'md5pass', database: 'app' });
  await direct.connect();
  try {
    for (let i = 0; i < 500; i++) {
      const r = await direct.query(
        "select count(*)::int as n from pg_stat_activity where state = 'active' and query = $1",
        [text],
      );
      if (r.rows[0].n > 0) return;
      await new Promise((res) => setTimeout(res, 10));
    }
    throw new Error(`never saw "${text}" running`);
  } finally {
    await direct.end();
  }
}

describe('cancel', () => {
  it('forwards a CancelRequest with the pooler key to the serving backend', async () => {
    const c = client();
    await c.connect();
    try {
      const key = c as unknown as { processID: number; secretKey: number };
      const q = c.query('select pg_sleep(20)');
      await waitRunning('select pg_sleep(20)');
      // What libpq's PQcancel sends: a fresh connection carrying CancelRequest with the key from BackendKeyData.
      const msg = Buffer.alloc(16);
      msg.writeInt32BE(16, 0);
      msg.writeInt32BE(80877102, 4);
      msg.writeInt32BE(key.processID, 8);
      msg.writeInt32BE(key.secretKey, 12);
      const sock = net.connect(tp.port, '127.0.0.1', () => sock.end(msg));
      await expect(q).rejects.toMatchObject({ code: '57014' });
      expect((await c.query('select 1 as one')).rows[0].one).toBe(1);
    } finally {
      await c.end();
    }
    const cancels = tp.pooler.show('CONNECTIONS').rows[0]![4] as number;
    expect(cancels).toBeGreaterThanOrEqual(1);
  });

  it('ignores a CancelRequest with a wrong key', async () => {
    const c = client();
    await c.connect();
    try {
      const key = c as unknown as { processID: number; secretKey: number };
      const q = c.query('select pg_sleep(0.5) as slept').catch((err: Error & { code?: string }) => err);
      await waitRunning('select pg_sleep(0.5) as slept');
      const msg = Buffer.alloc(16);
      msg.writeInt32BE(16, 0);
      msg.writeInt32BE(80877102, 4);
      msg.writeInt32BE(key.processID, 8);
      msg.writeInt32BE(key.secretKey ^ 1, 12);
      const sock = net.connect(tp.port, '127.0.0.1', () => sock.end(msg));
      const r = await q;
      if (r instanceof Error) throw new Error(`the query failed: ${r.code ?? ''} ${r.message}`);
      expect(r.rows).toHaveLength(1);
    } finally {
      await c.end();
    }
  });
});
