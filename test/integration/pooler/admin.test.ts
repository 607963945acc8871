// The admin console through real clients: every SHOW with its columns, SET log_level, RELOAD, PAUSE, RESUME, RECONNECT, KILL, SHUTDOWN.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import postgres from 'postgres';
import { startTestPostgres, type TestPostgres } from '../../helpers/postgres.js';
import { ADMIN_PASSWORD, poolerToml, startTestPooler, type TestPooler } from '../../helpers/pooler.js';

let db: TestPostgres;
let tp: TestPooler;
let admin: pg.Client;

const COLUMNS: Record<string, string[]> = {
  POOLS: [
    'database',
    'user',
    'pool_mode',
    'cl_idle',
    'cl_active',
    'cl_waiting',
    'cl_cancel_req',
    'sv_active',
    'sv_idle',
    'sv_used',
    'sv_login',
    'pool_size',
    'maxwait',
    'maxwait_us',
    'avg_xact_time',
    'paused',
    'fallback_active',
    'oldest_active_age_ms',
    'cl_pinned',
    'backend_unreachable',
    'unreachable_since',
    'last_connect_error',
    'last_connect_error_code',
    'last_connect_error_at',
    'connect_failures_per_sec',
    'cl_idle_in_transaction',
    'sv_idle_in_transaction',
    'max_idle_xact_age_ms',
  ],
  POOLS_EXTENDED: [
    'database',
    'user',
    'cl_active',
    'cl_waiting',
    'sv_active',
    'sv_idle',
    'sv_used',
    'sv_login',
    'pool_size',
    'maxwait',
    'maxwait_us',
    'pool_mode',
    'bytes_received',
    'bytes_sent',
    'query_0.99',
    'transaction_0.99',
    'query_0.95',
    'transaction_0.95',
    'query_0.5',
    'transaction_0.5',
  ],
  STATS: [
    'database',
    'user',
    'total_xact_count',
    'total_query_count',
    'total_received',
    'total_sent',
    'total_xact_time',
    'total_query_time',
    'total_wait_time',
    'total_errors',
    'avg_xact_count',
    'avg_query_count',
    'avg_recv',
    'avg_sent',
    'avg_errors',
    'avg_xact_time',
    'avg_query_time',
    'avg_wait_time',
  ],
  CLIENTS: [
    'client_id',
    'database',
    'user',
    'application_name',
    'addr',
    'tls',
    'state',
    'wait',
    'transaction_count',
    'query_count',
    'error_count',
    'age_seconds',
  ],
  SERVERS: [
    'server_id',
    'server_process_id',
    'database_name',
    'user',
    'application_name',
    'tls',
    'state',
    'wait',
    'transaction_count',
    'query_count',
    'bytes_sent',
    'bytes_received',
    'age_seconds',
    'prepare_cache_hit',
    'prepare_cache_miss',
    'prepare_cache_size',
  ],
  DATABASES: [
    'name',
    'host',
    'port',
    'database',
    'force_user',
    'pool_size',
    'min_pool_size',
    'reserve_pool',
    'pool_mode',
    'max_connections',
    'current_connections',
  ],
  USERS: ['name', 'pool_mode'],
  CONFIG: ['key', 'value', 'default', 'changeable'],
  VERSION: ['version'],
  LOG_LEVEL: ['log_level'],
  LISTS: ['list', 'items'],
  CONNECTIONS: ['total', 'errors', 'tls', 'plain', 'cancel'],
  POOL_COORDINATOR: [
    'database',
    'max_db_conn',
    'current',
    'reserve_size',
    'reserve_used',
    'evictions',
    'reserve_acq',
    'exhaustions',
  ],
  POOL_SCALING: [
    'user',
    'database',
    'inflight',
    'creates',
    'gate_waits',
    'gate_budget_ex',
    'antic_notify',
    'antic_timeout',
    'create_fallback',
    'replenish_def',
  ],
  EVENTS: ['time', 'kind', 'pool', 'message'],
};

/** Columns tidepool adds after the reference ones (README lists them). */
const ADDED: Record<string, string[]> = {
  POOLS_EXTENDED: ['wait_0.99', 'wait_0.95', 'wait_0.5', 'errors'],
  CLIENTS: ['wait_us', 'query_age_ms', 'bytes_received', 'bytes_sent', 'xact_time_us', 'wait_reason'],
  SERVERS: ['reserve', 'query_age_ms'],
};

beforeAll(async () => {
  db = await startTestPostgres();
  tp = await startTestPooler(poolerToml(db));
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

function client(database = 'app'): pg.Client {
  return new pg.Client({ host: '127.0.0.1', port: tp.port, user: 'md5user', password: 'md5pass', database });
}

async function show(what: string): Promise<Record<string, string | null>[]> {
  return (await admin.query(`SHOW ${what}`)).rows;
}

describe('SHOW', () => {
  it('returns the reference columns for every SHOW', async () => {
    for (const [what, cols] of Object.entries(COLUMNS)) {
      const r = await admin.query(`SHOW ${what}`);
      expect(
        r.fields.map((f) => f.name),
        what,
      ).toEqual([...cols, ...(ADDED[what] ?? [])]);
    }
    const sockets = await admin.query('SHOW SOCKETS');
    expect(sockets.fields.map((f) => f.name)).toContain('tcp_established');
    expect(Number(sockets.rows[0].tcp_listen)).toBeGreaterThanOrEqual(1);
  });

  it('reports real values after traffic', async () => {
    const c = client();
    await c.connect();
    for (let i = 0; i < 5; i++) await c.query('select 1');
    const stats = (await show('STATS')).find((r) => r.database === 'app' && r.user === 'md5user')!;
    expect(Number(stats.total_xact_count)).toBeGreaterThanOrEqual(5);
    expect(Number(stats.total_query_count)).toBeGreaterThanOrEqual(5);
    expect(Number(stats.total_received)).toBeGreaterThan(0);
    expect(Number(stats.total_sent)).toBeGreaterThan(0);
    const servers = (await show('SERVERS')).filter((r) => r.database_name === 'app');
    expect(servers.length).toBeGreaterThanOrEqual(1);
    expect(Number(servers[0]!.server_process_id)).toBeGreaterThan(0);
    const clients = await show('CLIENTS');
    expect(clients.some((r) => r.user === 'md5user' && r.database === 'app')).toBe(true);
    expect(clients.some((r) => r.user === 'admin' && r.database === 'tidepool')).toBe(true);
    const dbs = await show('DATABASES');
    expect(dbs.find((r) => r.name === 'appsession')!.pool_mode).toBe('session');
    const hist = tp.pooler.durationHistograms().find((h) => h.database === 'app' && h.user === 'md5user')!;
    expect(hist.transaction.count).toBeGreaterThanOrEqual(5);
    expect(hist.transaction.counts.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(hist.transaction.count);
    expect(hist.query.sum).toBeGreaterThan(0);
    const cfg = await show('CONFIG');
    expect(cfg.find((r) => r.key === 'general.admin_password')!.value).toBe('********');
    expect(cfg.find((r) => r.key === 'general.port')!.changeable).toBe('no');
    await c.end();
  });

  it('SHOW AUTH_QUERY says auth_query is not configured (0A000); the console keeps serving', async () => {
    await expect(admin.query('SHOW AUTH_QUERY')).rejects.toMatchObject({
      code: '0A000',
      message: expect.stringContaining('auth_query is not configured'),
    });
    expect((await show('VERSION'))[0]!.version).toMatch(/^tidepool /);
  });

  it('SHOW HELP lists the commands; an unknown SHOW or command is a clear error', async () => {
    const notices: string[] = [];
    admin.on('notice', (n) => notices.push(n.message ?? ''));
    await admin.query('SHOW HELP');
    expect(notices.join('\n')).toContain('RECONNECT');
    await expect(admin.query('SHOW NONSENSE')).rejects.toMatchObject({
      code: '42601',
      message: expect.stringContaining('NONSENSE'),
    });
    await expect(admin.query('FROBNICATE')).rejects.toMatchObject({
      code: '42601',
      message: expect.stringContaining('unknown admin command'),
    });
    await expect(admin.query('SHOW POOLS WHERE $1', [1])).rejects.toMatchObject({ code: '0A000' });
  });

  it('SET log_level changes the level at run time', async () => {
    await admin.query(`SET log_level = 'debug'`);
    expect((await show('LOG_LEVEL'))[0]!.log_level).toBe('debug');
    expect(tp.logs.get('pooler').isLevelEnabled('debug')).toBe(true);
    await expect(admin.query(`SET log_level = 'loud'`)).rejects.toMatchObject({ code: '22023' });
    await admin.query(`SET log_level TO warn`);
    expect((await show('LOG_LEVEL'))[0]!.log_level).toBe('warn');
  });
});

describe('verbs', () => {
  it('PAUSE waits for running transactions, blocks new checkouts; RESUME lets them run', async () => {
    const inTx = client();
    await inTx.connect();
    await inTx.query('BEGIN');
    await inTx.query('select 1');
    const events: string[] = [];
    const paused = admin.query('PAUSE app').then(() => events.push('paused'));
    await new Promise((r) => setTimeout(r, 200));
    events.push('commit');
    await inTx.query('COMMIT');
    await paused;
    expect(events).toEqual(['commit', 'paused']);
    expect((await show('POOLS')).find((r) => r.database === 'app' && r.user === 'md5user')!.paused).toBe('1');
    const waiting = inTx.query('select 2 as two').then((r) => {
      events.push('ran');
      return r;
    });
    await new Promise((r) => setTimeout(r, 200));
    expect(events).not.toContain('ran');
    expect(Number((await show('POOLS')).find((r) => r.database === 'app' && r.user === 'md5user')!.cl_waiting)).toBe(1);
    await admin.query('RESUME app');
    expect((await waiting).rows[0].two).toBe(2);
    await inTx.end();
  });

  it('a client flooding a pipeline while it waits is held back and loses nothing', async () => {
    await admin.query('PAUSE app');
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
      const pad = 'p'.repeat(1000);
      const all = Promise.all(Array.from({ length: 3000 }, (_, i) => sql`select ${i}::int as i, ${pad}::text as pad`));
      await new Promise((r) => setTimeout(r, 300));
      await admin.query('RESUME app');
      const rows = await all;
      rows.forEach((r, i) => expect(r[0]!.i).toBe(i));
    } finally {
      await sql.end();
    }
  });

  it('RECONNECT closes idle servers: the next query runs on a new backend', async () => {
    const c = client();
    await c.connect();
    const before = (await c.query('select pg_backend_pid() as pid')).rows[0].pid;
    await admin.query('RECONNECT app');
    const after = (await c.query('select pg_backend_pid() as pid')).rows[0].pid;
    expect(after).not.toBe(before);
    await c.end();
  });

  it('RECONNECT closes an active server when its transaction ends', async () => {
    const c = client();
    await c.connect();
    await c.query('BEGIN');
    const inTx = (await c.query('select pg_backend_pid() as pid')).rows[0].pid;
    await admin.query('RECONNECT app');
    expect((await c.query('select pg_backend_pid() as pid')).rows[0].pid).toBe(inTx);
    await c.query('COMMIT');
    const servers = (await show('SERVERS')).map((r) => Number(r.server_process_id));
    expect(servers).not.toContain(inTx);
    await c.end();
  });

  it("KILL drops the database's clients; new ones wait until RESUME", async () => {
    const c = client();
    await c.connect();
    c.on('error', () => undefined);
    await c.query('select 1');
    const ended = new Promise<void>((r) => c.once('end', () => r()));
    await admin.query('KILL app');
    await ended;
    const d = client();
    await d.connect();
    const q = d.query('select 3 as three');
    await new Promise((r) => setTimeout(r, 200));
    await admin.query('RESUME app');
    expect((await q).rows[0].three).toBe(3);
    await d.end();
  });

  it('RELOAD applies a new pool_size; a bad file is an error and the old config stays', async () => {
    tp.writeConfig(poolerToml(db).replace(/pool_size = 2\n/, 'pool_size = 3\n'));
    await admin.query('RELOAD');
    const pool = () => show('POOLS').then((rows) => rows.find((r) => r.database === 'app' && r.user === 'md5user')!);
    expect((await pool()).pool_size).toBe('3');
    // Shrinking: both servers busy, pool_size 2 -> 1; the surplus server closes when it is released.
    const busy = [client(), client()];
    await Promise.all(busy.map((b) => b.connect()));
    await Promise.all(busy.map((b) => b.query('BEGIN')));
    await Promise.all(busy.map((b) => b.query('select 1')));
    const appServers = async () =>
      (await show('SERVERS')).filter((r) => r.database_name === 'app' && r.user === 'md5user').length;
    expect(await appServers()).toBe(2);
    tp.writeConfig(poolerToml(db).replace(/pool_size = 2\n/, 'pool_size = 1\n'));
    await admin.query('RELOAD');
    expect(await appServers()).toBe(2);
    await Promise.all(busy.map((b) => b.query('COMMIT')));
    expect(await appServers()).toBe(1);
    await Promise.all(busy.map((b) => b.end()));
    tp.writeConfig('[general]\nprot = 1\n');
    await expect(admin.query('RELOAD')).rejects.toMatchObject({
      message: expect.stringContaining('did you mean "port"'),
    });
    expect((await pool()).pool_size).toBe('1');
    await expect(admin.query('PAUSE nosuchdb')).rejects.toMatchObject({ code: '3D000' });
  });
});
