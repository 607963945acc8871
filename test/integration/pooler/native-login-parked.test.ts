// A client the native relay logged in takes an idle server parked with it (ClientSession.prelink), so a client that
// connects per transaction costs no trip into JavaScript for its server: the first query needs no NeedServer, the
// client's own parameters are on the server before it, and a parked server is taken back whenever another client,
// PAUSE, SHOW or the server's death needs it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { ADMIN_PASSWORD, poolToml, poolerToml, startTestPooler, type TestPooler } from '../../helpers/pooler.js';
import { NativeRelay } from '../../../src/pooler/relay/native.js';
import { client, expectPath, logins, nativeRelay, show, until, useNativeLoginPooler } from './native-login-harness.js';

const env = useNativeLoginPooler();
const needServers = () => NativeRelay.get()?.needServers ?? 0;

describe('a client logged in by the native relay starts with an idle server parked', () => {
  it('connect, one query, disconnect: no NeedServer report, for md5 and SCRAM, one server reused', async () => {
    for (const user of ['md5user', 'scramuser']) {
      const pids = new Set<number>();
      const before = needServers();
      const got = await logins(async () => {
        for (let i = 0; i < 20; i++) {
          const c = client(user);
          await c.connect();
          const r = await c.query<{ pid: number; n: number }>('select pg_backend_pid() as pid, $1::int + 1 as n', [i]);
          expect(r.rows[0]!.n).toBe(i + 1);
          pids.add(r.rows[0]!.pid);
          await c.end();
          // The next login finds the server idle again.
          await until(
            'the server back in the pool',
            async () =>
              Number(
                (await show('POOLS')).find((p) => p['database'] === 'app' && p['user'] === user)?.['cl_active'],
              ) === 0,
          );
        }
      });
      expectPath(got, 20);
      if (nativeRelay) expect(needServers() - before, user).toBe(0);
      expect(pids.size, user).toBe(1);
    }
  });

  it('SHOW CLIENTS lists clients in login order, also after some left', async () => {
    const cs = Array.from({ length: 5 }, () => client('md5user'));
    for (const c of cs) await c.connect();
    await cs[1]!.end();
    await cs[3]!.end();
    const late = client('scramuser');
    await late.connect();
    try {
      await until('two clients gone', async () => (await show('CLIENTS')).length === 4);
      const ids = (await show('CLIENTS')).map((r) => Number(r['client_id']));
      expect(ids).toEqual([...ids].sort((a, b) => a - b));
    } finally {
      await Promise.all([cs[0]!.end(), cs[2]!.end(), cs[4]!.end(), late.end()]);
    }
  });

  it("the client's application_name is on the server before its first query", async () => {
    const c = client('md5user', { application_name: 'parked-at-login' });
    await c.connect();
    expect((await c.query('show application_name')).rows[0]).toEqual({ application_name: 'parked-at-login' });
    await c.end();
    const d = client('md5user', { application_name: 'another-one' });
    await d.connect();
    expect((await d.query('show application_name')).rows[0]).toEqual({ application_name: 'another-one' });
    await d.end();
  });
});

describe('a server parked at login is taken back when needed (pool_size 1)', () => {
  let tp: TestPooler;
  beforeAll(async () => {
    const md5Secret = env.db.sql(`select rolpassword from pg_authid where rolname = 'md5user'`).trim();
    tp = await startTestPooler(
      poolerToml(env.db, {
        pools: poolToml(env.db, 'app', '', [{ username: 'md5user', password: md5Secret, extra: 'pool_size = 1' }]),
      }),
    );
    // The pool's first login runs in JavaScript and opens its one server.
    const c = client('md5user', {}, tp);
    await c.connect();
    await c.query('select 1');
    await c.end();
  });
  afterAll(async () => {
    await tp?.stop();
  });

  it('an idle client holding it parked does not keep it from another client, nor from PAUSE; SHOW sees it idle', async () => {
    const idle = client('md5user', {}, tp);
    const got = await logins(async () => {
      await idle.connect();
    }, tp);
    expectPath(got, 1);
    // SHOW takes parked servers back first: the server is idle, nobody active.
    const pool = (await show('POOLS', tp)).find((p) => p['database'] === 'app')!;
    expect({ sv_idle: pool['sv_idle'], sv_active: pool['sv_active'], cl_active: pool['cl_active'] }).toEqual({
      sv_idle: 1,
      sv_active: 0,
      cl_active: 0,
    });
    // Parked again at the next login.
    const idle2 = client('md5user', {}, tp);
    await idle2.connect();
    const other = client('md5user', {}, tp);
    await other.connect();
    expect((await other.query('select 41 + 1 as n')).rows[0]).toEqual({ n: 42 });
    expect((await idle.query('select 2 as n')).rows[0]).toEqual({ n: 2 });
    expect((await idle2.query('select 3 as n')).rows[0]).toEqual({ n: 3 });
    await Promise.all([idle.end(), idle2.end()]);
    // A fresh login parks the server; PAUSE must not wait for that idle client.
    const waiting = client('md5user', {}, tp);
    await waiting.connect();
    const admin = new pg.Client({
      host: '127.0.0.1',
      port: tp.port,
      user: 'admin',
      password: ADMIN_PASSWORD,
      database: 'tidepool',
    });
    await admin.connect();
    try {
      await admin.query('PAUSE app');
      const during = other.query('select 7 as n');
      await new Promise((r) => setTimeout(r, 100));
      await admin.query('RESUME app');
      expect((await during).rows[0]).toEqual({ n: 7 });
      expect((await waiting.query('select 8 as n')).rows[0]).toEqual({ n: 8 });
    } finally {
      await admin.end();
    }
    await Promise.all([waiting.end(), other.end()]);
  });

  it('a parked server that dies leaves its client logged in: the next query gets a new server', async () => {
    const c = client('md5user', {}, tp);
    await c.connect();
    // Nobody has a query in flight: the pool's one backend is the parked server.
    const killed = env.db
      .sql(
        `select count(pg_terminate_backend(pid)) from pg_stat_activity where usename = 'md5user' and datname = 'app' and state = 'idle' and application_name <> 'keep'`,
      )
      .trim();
    expect(Number(killed)).toBeGreaterThan(0);
    await new Promise((r) => setTimeout(r, 200));
    const r = await c.query<{ n: number }>('select 5 as n');
    expect(r.rows[0]).toEqual({ n: 5 });
    await c.end();
  });
});
