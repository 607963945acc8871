// The JSON API against a real pooler and PostgreSQL: SHOW mirrors, admin actions, 401 shapes, bad input.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { startTestPostgres, type TestPostgres } from '../../helpers/postgres.js';
import { basicHeader, startWeb, type WebHarness } from '../../helpers/web.js';
import type { Row } from '../../../src/pooler/web/show-rows.js';

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

async function get(url: string, headers: Record<string, string> = admin) {
  return h.app.inject({ method: 'GET', url, headers });
}
async function post(url: string, payload?: unknown, headers: Record<string, string> = admin) {
  return h.app.inject({
    method: 'POST',
    url,
    headers: payload === undefined ? headers : { ...headers, 'content-type': 'application/json' },
    payload: payload === undefined ? undefined : JSON.stringify(payload),
  });
}
async function poolRow(user = 'md5user') {
  const rows = (await get('/api/pools')).json() as Record<string, unknown>[];
  return rows.find((r) => r['database'] === 'app' && r['user'] === user)!;
}

describe('authentication answers', () => {
  it('401 without credentials: JSON body, no Basic challenge for Accept: application/json', async () => {
    const r = await get('/api/pools', { accept: 'application/json' });
    expect(r.statusCode).toBe(401);
    expect(r.json()).toEqual({ error: 'unauthorized', message: 'authentication required' });
    expect(r.headers['www-authenticate']).toBeUndefined();
  });
  it('401 with a Basic challenge for other Accept values', async () => {
    const r = await get('/api/pools', { accept: '*/*' });
    expect(r.statusCode).toBe(401);
    expect(r.headers['www-authenticate']).toMatch(/^Basic /);
  });
  it('a wrong password is 401 on reads and admin actions', async () => {
    const bad = { authorization: basicHeader('admin', 'wrong'), accept: 'application/json' };
    expect((await get('/api/pools', bad)).statusCode).toBe(401);
    expect((await post('/api/admin/reload', undefined, bad)).statusCode).toBe(401);
  });
  it('/api/auth/config needs no credentials and reports the role', async () => {
    expect((await get('/api/auth/config', {})).json()).toMatchObject({
      sso_enabled: false,
      sso_admin_groups_configured: false,
      role: 'none',
      username: null,
    });
    expect((await get('/api/auth/config')).json()).toMatchObject({ role: 'admin', username: 'admin' });
  });
});

describe('read endpoints mirror SHOW', () => {
  // The state the rows must show: md5user ran three one-statement transactions (one of them a named
  // prepared statement) and sits idle; scramuser is inside a transaction (BEGIN + one query), holding a server.
  let idle: pg.Client;
  let busy: pg.Client;
  let idlePid: number;
  let busyPid: number;
  let before: { stats: Row[]; connections: Row[] };
  const localAddr = (c: pg.Client) => {
    const sock = (c as unknown as { connection: { stream: { localAddress: string; localPort: number } } }).connection
      .stream;
    return `${sock.localAddress}:${sock.localPort}`;
  };
  const rowsOf = async (url: string) => {
    const r = await get(url);
    expect(r.statusCode).toBe(200);
    return r.json() as Row[];
  };
  const appRow = (rows: Row[], user: string, userCol = 'user', dbCol = 'database') => {
    const mine = rows.filter((r) => r[dbCol] === 'app' && r[userCol] === user);
    expect(mine).toHaveLength(1);
    return mine[0]!;
  };

  beforeAll(async () => {
    before = { stats: await rowsOf('/api/stats'), connections: await rowsOf('/api/connections') };
    idle = new pg.Client({
      host: '127.0.0.1',
      port: h.tp.port,
      database: 'app',
      user: 'md5user',
      password: 'md5pass',
      application_name: 'api-idle',
    });
    busy = new pg.Client({
      host: '127.0.0.1',
      port: h.tp.port,
      database: 'app',
      user: 'scramuser',
      password: 'scrampass',
      application_name: 'api-busy',
    });
    await idle.connect();
    await busy.connect();
    idlePid = (await idle.query('select pg_backend_pid() as pid')).rows[0].pid as number;
    await idle.query('select 1');
    await idle.query({ name: 'api_named', text: 'select $1::int as v', values: [1] });
    await busy.query('BEGIN');
    busyPid = (await busy.query('select pg_backend_pid() as pid')).rows[0].pid as number;
  });
  afterAll(async () => {
    await busy?.query('COMMIT');
    await idle?.end();
    await busy?.end();
  });

  it('every SHOW mirror carries the SHOW column names in order, one object per SHOW row', async () => {
    for (const [url, name] of [
      ['/api/pools', 'POOLS'],
      ['/api/clients', 'CLIENTS'],
      ['/api/servers', 'SERVERS'],
      ['/api/stats', 'STATS'],
      ['/api/databases', 'DATABASES'],
      ['/api/users', 'USERS'],
      ['/api/connections', 'CONNECTIONS'],
      ['/api/log_level', 'LOG_LEVEL'],
      ['/api/sockets', 'SOCKETS'],
      ['/api/config', 'CONFIG'],
    ] as const) {
      const rows = await rowsOf(url);
      const show = h.tp.pooler.show(name);
      expect(rows.length, url).toBe(show.rows.length);
      expect(rows.length, url).toBeGreaterThan(0);
      // /api/clients and /api/servers add activity and transaction age after the SHOW columns, /api/clients its rates.
      const extra =
        url === '/api/clients'
          ? ['activity', 'xact_age_ms', 'qps', 'tps']
          : url === '/api/servers'
            ? ['activity', 'xact_age_ms']
            : [];
      for (const r of rows) expect(Object.keys(r), url).toEqual([...show.columns, ...extra]);
    }
  });

  it('/api/pools: one row per user@database with the clients and servers the test holds', async () => {
    const rows = await rowsOf('/api/pools');
    expect(rows.map((r) => `${String(r['user'])}@${String(r['database'])}`).sort()).toEqual([
      'md5user@app',
      'scramuser@app',
    ]);
    expect(appRow(rows, 'md5user')).toMatchObject({
      pool_mode: 'transaction',
      cl_idle: 1,
      cl_active: 0,
      cl_waiting: 0,
      sv_active: 0,
      sv_idle: 1,
      pool_size: 2,
      paused: false,
    });
    expect(appRow(rows, 'scramuser')).toMatchObject({
      pool_mode: 'transaction',
      cl_idle: 0,
      cl_active: 1,
      cl_waiting: 0,
      sv_active: 1,
      sv_idle: 0,
      pool_size: 2,
      paused: false,
    });
  });

  it('/api/clients: each connected client with its address, application_name, state and counts', async () => {
    const rows = await rowsOf('/api/clients');
    expect(rows).toHaveLength(2);
    const a = rows.find((r) => r['application_name'] === 'api-idle');
    const b = rows.find((r) => r['application_name'] === 'api-busy');
    expect(a).toMatchObject({
      database: 'app',
      user: 'md5user',
      addr: localAddr(idle),
      tls: '',
      state: 'idle',
      wait: 0,
      wait_us: 0,
      wait_reason: '',
      query_age_ms: 0,
      transaction_count: 3,
      query_count: 3,
      error_count: 0,
    });
    expect(b).toMatchObject({
      database: 'app',
      user: 'scramuser',
      addr: localAddr(busy),
      tls: '',
      state: 'active',
      wait: 0,
      wait_us: 0,
      wait_reason: '',
      query_age_ms: 0,
      transaction_count: 0,
      query_count: 2,
      error_count: 0,
    });
    expect(Number(a!['bytes_received'])).toBeGreaterThan(0);
    expect(Number(a!['bytes_sent'])).toBeGreaterThan(0);
    expect(Number(a!['xact_time_us'])).toBeGreaterThan(0);
    expect(a!['client_id']).not.toBe(b!['client_id']);
  });

  it('/api/servers: the backends the clients used, by PostgreSQL pid, idle and active', async () => {
    const rows = await rowsOf('/api/servers');
    expect(rows).toHaveLength(2);
    expect(appRow(rows, 'md5user', 'user', 'database_name')).toMatchObject({
      server_process_id: idlePid,
      state: 'idle',
      transaction_count: 3,
      query_count: 3,
      tls: '',
    });
    expect(appRow(rows, 'scramuser', 'user', 'database_name')).toMatchObject({
      server_process_id: busyPid,
      state: 'active',
      wait: 0,
      tls: '',
    });
  });

  it('/api/stats: the three finished transactions and their queries; the open one is not counted yet', async () => {
    const rows = await rowsOf('/api/stats');
    const delta = (user: string, col: string) =>
      Number(appRow(rows, user)[col]) - Number(appRow(before.stats, user)[col]);
    expect(delta('md5user', 'total_xact_count')).toBe(3);
    expect(delta('md5user', 'total_query_count')).toBe(3);
    expect(delta('md5user', 'total_errors')).toBe(0);
    expect(delta('md5user', 'total_received')).toBeGreaterThan(0);
    expect(delta('md5user', 'total_sent')).toBeGreaterThan(0);
    expect(delta('scramuser', 'total_xact_count')).toBe(0);
  });

  it('/api/databases, /api/users: the configured pool and its users', async () => {
    expect(await rowsOf('/api/databases')).toEqual([
      {
        name: 'app',
        host: db.host,
        port: db.port,
        database: 'app',
        force_user: null,
        pool_size: 4,
        min_pool_size: 0,
        reserve_pool: 0,
        pool_mode: 'transaction',
        max_connections: 4,
        current_connections: 2,
      },
    ]);
    expect(await rowsOf('/api/users')).toEqual([
      { name: 'md5user', pool_mode: 'transaction' },
      { name: 'scramuser', pool_mode: 'transaction' },
    ]);
  });

  it('/api/connections counts the two logins; /api/log_level is the configured level; /api/sockets sees them', async () => {
    const [now] = await rowsOf('/api/connections');
    expect(Number(now!['total']) - Number(before.connections[0]!['total'])).toBe(2);
    expect(now).toMatchObject({ tls: 0, plain: now!['total'] });
    expect(await rowsOf('/api/log_level')).toEqual([{ log_level: 'debug' }]);
    const [sockets] = await rowsOf('/api/sockets');
    // This process holds the pooler's listener, both ends of the two client connections and the two server connections.
    expect(Number(sockets!['tcp_listen'])).toBeGreaterThanOrEqual(1);
    expect(Number(sockets!['tcp_established'])).toBeGreaterThanOrEqual(6);
  });

  it('/api/config: the loaded values, the admin password masked', async () => {
    const rows = await rowsOf('/api/config');
    const byKey = new Map(rows.map((r) => [r['key'], r]));
    expect(byKey.get('general.admin_username')).toMatchObject({ value: 'admin', changeable: 'yes' });
    expect(byKey.get('general.admin_password')).toMatchObject({ value: '********' });
    expect(byKey.get('general.pool_mode')).toMatchObject({ value: 'transaction', default: 'transaction' });
    expect(byKey.get('general.port')).toMatchObject({ value: '0', changeable: 'no' });
    expect(byKey.get('general.log_level')).toMatchObject({ value: 'debug', default: 'info' });
    expect(byKey.get('web.ui')).toMatchObject({ value: 'true', default: 'false' });
    expect(JSON.stringify(rows)).not.toContain('web-admin-pw');
  });

  it('/api/apps groups the load by application_name; /api/top/clients orders the clients by the key asked for', async () => {
    const apps = await rowsOf('/api/apps');
    expect(apps.find((r) => r['application_name'] === 'api-idle')).toMatchObject({
      clients: 1,
      cl_active: 0,
      cl_waiting: 0,
      xact_count: 3,
      query_count: 3,
      error_count: 0,
    });
    // The open transaction's queries are counted when it ends.
    expect(apps.find((r) => r['application_name'] === 'api-busy')).toMatchObject({
      clients: 1,
      cl_active: 1,
      cl_waiting: 0,
      xact_count: 0,
      query_count: 0,
      error_count: 0,
    });
    expect((await rowsOf('/api/top/clients?by=transactions')).map((r) => [r['application_name'], r['value']])).toEqual([
      ['api-idle', 3],
      ['api-busy', 0],
    ]);
    expect(
      (await rowsOf('/api/top/clients?by=queries&limit=1')).map((r) => [r['application_name'], r['value']]),
    ).toEqual([['api-idle', 3]]);
    expect((await get('/api/top/clients?by=nonsense')).statusCode).toBe(400);
    expect((await get('/api/top/clients?limit=0')).json()).toMatchObject({ error: 'bad_request' });
  });

  it('/api/overview counts the same clients and servers', async () => {
    expect((await get('/api/overview')).json()).toMatchObject({
      clients: { active: 1, idle: 1, waiting: 0, total: 2 },
      servers: { active: 1, idle: 1, total: 2 },
      pools: 2,
      pools_paused: 0,
      errors: 0,
    });
    expect((await get('/api/version')).json()).toEqual({
      version: expect.stringMatching(/^\d+\.\d+\.\d+/),
      node: process.version,
    });
    expect((await get('/api/process')).json()).toMatchObject({
      pid: process.pid,
      uptime_seconds: expect.any(Number),
      rss_bytes: expect.any(Number),
      heap_used_bytes: expect.any(Number),
      cpu_percent: expect.any(Number),
      event_loop_delay_ms: { p99: expect.any(Number) },
    });
  });

  it('/api/prepared, /api/top/prepared, /api/interner[/top], /api/top/queries, /api/prepared/text: the named statement md5user prepared', async () => {
    const text = 'select $1::int as v';
    const prepared = await rowsOf('/api/prepared');
    expect(prepared).toEqual([
      {
        pool: 'md5user@app',
        hash: expect.stringMatching(/^[0-9a-f]{16}$/),
        name: expect.stringMatching(/^tp_[0-9a-f]{16}$/),
        count_used: 2,
        kind: 'protocol',
        executions: 1,
        total_time_us: expect.any(Number),
        cache_hits: 1,
        cache_misses: 1,
      },
    ]);
    const hash = prepared[0]!['hash'] as string;
    expect(prepared[0]!['name']).toBe(`tp_${hash}`);
    expect(await rowsOf('/api/top/prepared')).toEqual(prepared);
    expect(await rowsOf('/api/interner')).toEqual([
      { kind: 'protocol', entries: 1, bytes: expect.any(Number) },
      { kind: 'sql', entries: 0, bytes: 0 },
    ]);
    expect(Number((await rowsOf('/api/interner'))[0]!['bytes'])).toBeGreaterThanOrEqual(text.length);
    expect(await rowsOf('/api/interner/top')).toEqual([
      { hash, kind: 'protocol', bytes: expect.any(Number), idle_ms: expect.any(Number), query: text },
    ]);
    const [top] = await rowsOf('/api/top/queries');
    expect(top).toEqual({
      hash,
      preview: text,
      count: 1,
      total_time_us: expect.any(Number),
      avg_time_us: top!['total_time_us'],
      pool: 'md5user@app',
      kind: 'protocol',
      count_used: 2,
    });
    expect(Number(top!['total_time_us'])).toBeGreaterThan(0);
    expect((await get('/api/top/queries?by=cpu')).statusCode).toBe(400);
    expect((await get(`/api/prepared/text/${hash}`)).json()).toEqual({ hash, query: text });
    expect((await get('/api/prepared/text/0000000000000000')).statusCode).toBe(404);
    // The server md5user used prepared it once (a miss) and holds it.
    const server = (await rowsOf('/api/servers')).find((r) => r['server_process_id'] === idlePid)!;
    expect(server).toMatchObject({ prepare_cache_miss: 1, prepare_cache_size: 1 });
  });

  it('/api/auth_query is a clear 404 while auth_query is not configured', async () => {
    const r = await get('/api/auth_query');
    expect(r.statusCode).toBe(404);
    expect(r.json()).toMatchObject({
      error: 'not_configured',
      feature: 'auth_query',
      message: expect.stringContaining('auth_query is not configured'),
    });
  });

  it('/api/pool_coordinator and /api/pool_scaling: one row per database and per pool with real counters', async () => {
    expect(await rowsOf('/api/pool_coordinator')).toEqual([
      {
        database: 'app',
        max_db_conn: 0,
        current: 2,
        reserve_size: 0,
        reserve_used: 0,
        evictions: 0,
        reserve_acq: 0,
        exhaustions: 0,
      },
    ]);
    const scaling = await rowsOf('/api/pool_scaling');
    expect(scaling.map((r) => `${String(r['user'])}@${String(r['database'])}`).sort()).toEqual([
      'md5user@app',
      'scramuser@app',
    ]);
    for (const r of scaling) expect(r).toMatchObject({ inflight: 0, creates: 1, create_fallback: 0 });
  });
});

describe('admin actions', () => {
  it('PAUSE through the API pauses the pool for real clients; RESUME lets them through', async () => {
    const r = await post('/api/admin/pause', { database: 'app', user: 'md5user' });
    expect(r.statusCode).toBe(200);
    expect(r.json()).toMatchObject({ ok: true, message: expect.stringContaining('PAUSE') });
    expect(await poolRow()).toMatchObject({ paused: true });
    expect(await poolRow('scramuser')).toMatchObject({ paused: false });

    const c = new pg.Client({
      host: '127.0.0.1',
      port: h.tp.port,
      database: 'app',
      user: 'md5user',
      password: 'md5pass',
    });
    await c.connect();
    try {
      let done = false;
      const q = c.query('SELECT 42 AS answer').then((res) => {
        done = true;
        return res;
      });
      while (Number((await poolRow())['cl_waiting']) < 1) await new Promise((res) => setTimeout(res, 20));
      expect(done).toBe(false);
      const resumed = await post('/api/admin/resume', { database: 'app', user: 'md5user' });
      expect(resumed.json()).toMatchObject({ ok: true });
      expect((await q).rows[0]).toEqual({ answer: 42 });
      expect(await poolRow()).toMatchObject({ paused: false });
    } finally {
      await c.end();
    }
  });
  it('PAUSE answers while a transaction is open, with running_transactions; the count reaches 0 at COMMIT; RESUME', async () => {
    const c = new pg.Client({
      host: '127.0.0.1',
      port: h.tp.port,
      database: 'app',
      user: 'md5user',
      password: 'md5pass',
    });
    await c.connect();
    try {
      await c.query('BEGIN');
      await c.query('select 1');
      // A generous bound that only a PAUSE waiting for the transaction (which nobody ends here) would reach.
      const answer = await Promise.race([
        post('/api/admin/pause', { database: 'app', user: 'md5user' }),
        new Promise<'no answer'>((res) => setTimeout(() => res('no answer'), 10_000)),
      ]);
      expect(answer).not.toBe('no answer');
      const r = answer as Awaited<ReturnType<typeof post>>;
      // The answer came while the transaction is still open on its backend.
      expect(
        db.sql(`select count(*) from pg_stat_activity where datname = 'app' and state = 'idle in transaction'`),
      ).toBe('1');
      expect(r.statusCode).toBe(200);
      expect(r.json()).toEqual({ ok: true, message: 'PAUSE md5user@app', state: 'paused', running_transactions: 1 });
      expect(await poolRow()).toMatchObject({ paused: true, sv_active: 1 });
      // The open transaction goes on while the pool is paused.
      expect((await c.query('select 2 as two')).rows[0]).toEqual({ two: 2 });
      await c.query('COMMIT');
      await expect.poll(async () => (await poolRow())['sv_active'], { timeout: 10_000 }).toBe(0);
      expect(await poolRow()).toMatchObject({ paused: true });
      // A second PAUSE of a quiet pool counts nothing running.
      expect((await post('/api/admin/pause', { database: 'app', user: 'md5user' })).json()).toMatchObject({
        running_transactions: 0,
      });
      const resumed = await post('/api/admin/resume', { database: 'app', user: 'md5user' });
      expect(resumed.json()).toEqual({ ok: true, message: 'RESUME md5user@app', state: 'running' });
      expect(await poolRow()).toMatchObject({ paused: false });
      expect((await c.query('select 3 as three')).rows[0]).toEqual({ three: 3 });
    } finally {
      await c.end();
    }
  });
  it('PAUSE right after a login: the server lent at login (still syncing application_name) does not carry its first query past the PAUSE', async () => {
    // Each login asks for an application_name the pool's servers do not hold, so the lent server syncs it first:
    // a PAUSE in that window once left the pair to be parked after it, and the query ran on a paused pool.
    for (let i = 0; i < 10; i++) {
      const c = new pg.Client({
        host: '127.0.0.1',
        port: h.tp.port,
        database: 'app',
        user: 'md5user',
        password: 'md5pass',
        application_name: `pause-login-${i}`,
      });
      await c.connect();
      try {
        expect((await post('/api/admin/pause', { database: 'app', user: 'md5user' })).statusCode).toBe(200);
        let done = false;
        const q = c.query('select 1 as one').then((r) => {
          done = true;
          return r;
        });
        await expect
          .poll(async () => done || Number((await poolRow())['cl_waiting']) === 1, { timeout: 10_000 })
          .toBe(true);
        expect(done).toBe(false);
        expect((await post('/api/admin/resume', { database: 'app', user: 'md5user' })).statusCode).toBe(200);
        expect((await q).rows).toEqual([{ one: 1 }]);
      } finally {
        await c.end();
      }
    }
  });
  it("RECONNECT closes the pool's idle servers: the next query runs on a new backend", async () => {
    const c = new pg.Client({
      host: '127.0.0.1',
      port: h.tp.port,
      database: 'app',
      user: 'scramuser',
      password: 'scrampass',
    });
    await c.connect();
    try {
      const old = (await c.query('select pg_backend_pid() as pid')).rows[0].pid as number;
      const pids = async () =>
        ((await get('/api/servers')).json() as Row[])
          .filter((r) => r['user'] === 'scramuser')
          .map((r) => r['server_process_id']);
      expect(await pids()).toContain(old);
      expect((await post('/api/admin/reconnect', { database: 'app', user: 'scramuser' })).json()).toMatchObject({
        ok: true,
        message: expect.stringContaining('RECONNECT'),
      });
      expect(await pids()).not.toContain(old);
      const next = (await c.query('select pg_backend_pid() as pid')).rows[0].pid as number;
      expect(next).not.toBe(old);
      expect(await pids()).toEqual([next]);
    } finally {
      await c.end();
    }
  });
  it('RELOAD re-reads the config file', async () => {
    const r = await post('/api/admin/reload');
    expect(r.statusCode).toBe(200);
    expect(r.json()).toMatchObject({ ok: true, message: expect.stringContaining('RELOAD') });
  });
  it('cross-site admin requests are refused (a cookie carrier rides along with cross-site forms)', async () => {
    const evil = await post('/api/admin/reload', undefined, { ...admin, origin: 'https://evil.test' });
    expect(evil.statusCode).toBe(403);
    expect(evil.json()).toEqual({ error: 'forbidden', message: 'cross-site admin request refused' });
    expect((await post('/api/admin/reload', undefined, { ...admin, 'sec-fetch-site': 'cross-site' })).statusCode).toBe(
      403,
    );
    expect(
      (
        await post('/api/admin/reload', undefined, {
          ...admin,
          origin: 'http://console.test:9127',
          host: 'console.test:9127',
          'sec-fetch-site': 'same-origin',
        })
      ).statusCode,
    ).toBe(200);
  });
  it('an unknown pool is 404', async () => {
    const r = await post('/api/admin/pause', { database: 'app', user: 'nobody' });
    expect(r.statusCode).toBe(404);
    expect(r.json()).toMatchObject({ error: 'not_found' });
  });
  it.each([[{}], [{ database: 'app' }], [{ database: 'app', user: 7 }], [['app', 'md5user']]])(
    'a malformed body %j is 400',
    async (body) => {
      const r = await post('/api/admin/pause', body);
      expect(r.statusCode).toBe(400);
      expect(r.json()).toMatchObject({ error: 'bad_request' });
    },
  );
  it('unparsable JSON is 400, a missing body is 400', async () => {
    const r = await h.app.inject({
      method: 'POST',
      url: '/api/admin/resume',
      headers: { ...admin, 'content-type': 'application/json' },
      payload: '{"database":',
    });
    expect(r.statusCode).toBe(400);
    expect(r.json()).toMatchObject({ error: 'bad_request' });
    expect((await post('/api/admin/resume')).statusCode).toBe(400);
  });
});

describe('bad input gets clean JSON errors', () => {
  it('an oversize body is 413', async () => {
    const r = await post('/api/admin/pause', { database: 'app', user: 'x'.repeat(64 * 1024) });
    expect(r.statusCode).toBe(413);
    expect(r.json()).toMatchObject({ error: 'payload_too_large' });
    expect(await poolRow()).toMatchObject({ paused: false });
  });
  it('a wrong method is 405 with Allow', async () => {
    const r = await h.app.inject({ method: 'DELETE', url: '/api/pools', headers: admin });
    expect(r.statusCode).toBe(405);
    expect(r.headers['allow']).toContain('GET');
    expect(r.json()).toMatchObject({ error: 'method_not_allowed' });
    const g = await get('/api/admin/pause');
    expect(g.statusCode).toBe(405);
    expect(g.headers['allow']).toBe('POST');
  });
  it('an unknown /api path is a JSON 404, not the SPA', async () => {
    for (const url of ['/api/nope', '/api/pools/extra', '/api']) {
      const r = await get(url);
      expect(r.statusCode).toBe(404);
      expect(r.headers['content-type']).toMatch(/application\/json/);
      expect(r.json()).toMatchObject({ error: 'not_found' });
    }
  });
  it('a malformed URL is a JSON 400 with an access line', async () => {
    for (const url of ['/api/%zz', '/assets/%zz', '/%zz']) {
      const r = await get(url);
      expect(r.statusCode).toBe(400);
      expect(r.json()).toMatchObject({ error: 'bad_request' });
      expect(
        h
          .accessLines()
          .filter((l) => l.includes(`path=${url} `))
          .pop(),
      ).toMatch(/level=info .* status=400 /);
    }
  });
  it('path traversal on /assets/ is refused', async () => {
    for (const url of [
      '/assets/..%2f..%2fpackage.json',
      '/assets/%2e%2e%2f%2e%2e%2fpackage.json',
      '/assets/..%5c..%5cpackage.json',
      '/assets/.hidden',
      '/assets/a%00.js',
    ]) {
      const r = await get(url, {});
      expect([400, 404]).toContain(r.statusCode);
      expect(r.headers['content-type']).toMatch(/application\/json/);
      expect(r.body).not.toContain('"name": "tidepool"');
    }
  });
});
