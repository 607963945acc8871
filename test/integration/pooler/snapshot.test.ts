// One source of truth: the numbers of SHOW (admin console), /api/* and /metrics agree once traffic stops, and /metrics
// passes promtool; sv_used is a server running server_reset_query after its session-mode client left.
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestPostgres, type TestPostgres } from '../../helpers/postgres.js';
import { promtoolCheckMetrics } from '../../helpers/promtool.js';
import { startForwarder, type Forwarder } from '../../helpers/forwarder.js';
import { operatorToml, poolToml, startOperator, until, type OperatorHarness } from '../../helpers/operator.js';

let db: TestPostgres;
let h: OperatorHarness;
/** A forwarder to PostgreSQL that holds each new connection 4 s first: the pool `slow` connects through it (long
 * enough for SHOW CLIENTS to catch a client waiting on it on a loaded machine; connect_timeout is above it). */
let slow: Forwarder;

beforeAll(async () => {
  db = await startTestPostgres();
  slow = await startForwarder(db, { delayMs: 4000 });
  h = await startOperator(
    operatorToml({
      general: 'server_reset_query = "SELECT pg_sleep(0.3)"\nconnect_timeout = "15s"\nquery_wait_timeout = "30s"',
      pools:
        poolToml(db, 'one', 'max_db_connections = 4\nreserve_pool_size = 1', [
          { username: 'md5user', password: 'md5pass', extra: 'pool_size = 2' },
          { username: 'scramuser', password: 'scrampass', extra: 'pool_size = 2' },
        ]) +
        poolToml(db, 'sess', 'pool_mode = "session"', [
          { username: 'md5user', password: 'md5pass', extra: 'pool_size = 1' },
        ]) +
        poolToml({ ...db, port: slow.port }, 'slow', '', [
          { username: 'md5user', password: 'md5pass', extra: 'pool_size = 1' },
        ]),
    }),
  );
});
afterAll(async () => {
  await h?.stop();
  await slow?.stop();
  await db?.cleanup();
});

/** The value of a sample line `name{labels} value` of the exposition. */
function sample(text: string, name: string, labels: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}} `));
  expect(line, `${name}{${labels}}`).toBeDefined();
  return Number(line!.slice(line!.lastIndexOf(' ') + 1));
}

describe('SHOW, /api and /metrics format one snapshot', () => {
  it('pools, stats, coordinator and overview carry the same numbers everywhere', async () => {
    const a = h.client('one', 'md5user', 'md5pass', 'snap-a');
    const b = h.client('one', 'scramuser', 'scrampass', 'snap-b');
    await a.connect();
    await b.connect();
    for (let i = 0; i < 7; i++) await a.query('SELECT 1');
    await expect(a.query('SELECT 1/0')).rejects.toMatchObject({ code: '22012' });
    await b.query('BEGIN');
    await b.query(`SELECT repeat('y', 5000)`);
    try {
      const show = async (what: string) => (await h.show(what)).filter((r) => r['database'] === 'one');
      const api = async (path: string) =>
        ((await h.api(path)).body as Record<string, unknown>[]).filter((r) => r['database'] === 'one');
      const [showPools, showStats, showCoord, apiPools, apiStats, apiCoord, text, overview] = [
        await show('POOLS'),
        await show('STATS'),
        await show('POOL_COORDINATOR'),
        await api('/api/pools'),
        await api('/api/stats'),
        await api('/api/pool_coordinator'),
        await h.metrics(),
        (await h.api('/api/overview')).body as Record<string, unknown>,
      ];
      expect(showPools).toHaveLength(2);
      for (const user of ['md5user', 'scramuser']) {
        const labels = `database="one",user="${user}"`;
        const sp = showPools.find((r) => r['user'] === user)!;
        const ap = apiPools.find((r) => r['user'] === user)!;
        for (const [col, state] of [
          ['cl_active', 'active'],
          ['cl_idle', 'idle'],
          ['cl_waiting', 'waiting'],
          ['cl_cancel_req', 'cancel_req'],
        ] as const) {
          expect(ap[col], col).toBe(Number(sp[col]));
          expect(sample(text, 'pooler_clients', `${labels},state="${state}"`), col).toBe(Number(sp[col]));
        }
        for (const [col, state] of [
          ['sv_active', 'active'],
          ['sv_idle', 'idle'],
          ['sv_used', 'used'],
          ['sv_login', 'login'],
        ] as const) {
          expect(ap[col], col).toBe(Number(sp[col]));
          expect(sample(text, 'pooler_servers', `${labels},state="${state}"`), col).toBe(Number(sp[col]));
        }
        expect(sample(text, 'pooler_pool_size', labels)).toBe(Number(sp['pool_size']));
        const ss = showStats.find((r) => r['user'] === user)!;
        const as = apiStats.find((r) => r['user'] === user)!;
        for (const col of Object.keys(as)) if (typeof as[col] === 'number') expect(as[col], col).toBe(Number(ss[col]));
        for (const [metric, col, scale] of [
          ['pooler_transactions_total', 'total_xact_count', 1],
          ['pooler_queries_total', 'total_query_count', 1],
          ['pooler_received_bytes_total', 'total_received', 1],
          ['pooler_sent_bytes_total', 'total_sent', 1],
          ['pooler_errors_total', 'total_errors', 1],
          ['pooler_wait_seconds_total', 'total_wait_time', 1e6],
          ['pooler_transaction_seconds_total', 'total_xact_time', 1e6],
          ['pooler_query_seconds_total', 'total_query_time', 1e6],
        ] as const) {
          expect(Math.round(sample(text, metric, labels) * scale), metric).toBe(Number(ss[col]));
        }
        expect(sample(text, 'pooler_transaction_duration_seconds_count', labels)).toBe(Number(ss['total_xact_count']));
      }
      const md5 = showStats.find((r) => r['user'] === 'md5user')!;
      expect(md5).toMatchObject({ total_xact_count: '8', total_query_count: '8', total_errors: '1' });
      expect(showPools.find((r) => r['user'] === 'scramuser')).toMatchObject({ cl_active: '1', sv_active: '1' });
      const sc = showCoord[0]!;
      expect(apiCoord[0]).toEqual(
        Object.fromEntries(Object.entries(sc).map(([k, v]) => [k, k === 'database' ? v : Number(v)])),
      );
      expect(sample(text, 'pooler_db_connections', 'database="one"')).toBe(Number(sc['current']));
      expect(sample(text, 'pooler_db_max_connections', 'database="one"')).toBe(4);
      expect(sample(text, 'pooler_db_evictions_total', 'database="one"')).toBe(Number(sc['evictions']));
      expect(sc).toMatchObject({ max_db_conn: '4', current: '2', reserve_size: '1' });
      // SHOW DATABASES counts the database's connections as its coordinator does.
      expect((await h.show('DATABASES')).find((r) => r['name'] === 'one')).toMatchObject({
        current_connections: sc['current'],
      });
      // The overview adds up the pools (the sess pool has nobody).
      const sum = (col: string) => showPools.reduce((n, r) => n + Number(r[col]), 0);
      expect(overview).toMatchObject({
        cl_waiting: sum('cl_waiting'),
        sv_active: sum('sv_active'),
        sv_idle: sum('sv_idle'),
        sv_used: sum('sv_used'),
        sv_login: sum('sv_login'),
      });
      expect((overview['clients'] as Record<string, number>)['total']).toBe(
        sum('cl_active') + sum('cl_idle') + sum('cl_waiting'),
      );
      expect(overview['errors']).toBe(1);
      expect(promtoolCheckMetrics(text)).toEqual({ output: '', status: 0 });
    } finally {
      await b.query('COMMIT');
      await a.end();
      await b.end();
    }
  });

  it('prepared statements: SHOW PREPARED_STATEMENTS, /api/prepared, /api/top/prepared, /api/top/queries and the text agree', async () => {
    const c = h.client('one', 'md5user', 'md5pass', 'snap-prepared');
    await c.connect();
    try {
      for (let i = 0; i < 5; i++)
        await c.query({ name: 'snap_q', text: 'SELECT $1::int + 40 AS snap_answer', values: [i] });
      for (let i = 0; i < 2; i++)
        await c.query({ name: 'snap_r', text: 'SELECT $1::text AS snap_echo', values: ['x'] });
      const mine = <T extends Record<string, unknown>>(rows: T[]) =>
        rows.filter((r) => /snap_(answer|echo)/.test(String(r['query'] ?? r['preview'] ?? '')));
      const shown = mine(await h.show('PREPARED_STATEMENTS'));
      // count_used: the first call's Parse and each call's Bind.
      expect(shown.map((r) => [r['query'], r['count_used'], r['executions'], r['kind']]).sort()).toEqual([
        ['SELECT $1::int + 40 AS snap_answer', '6', '5', 'protocol'],
        ['SELECT $1::text AS snap_echo', '3', '2', 'protocol'],
      ]);
      const hashes = new Map(shown.map((r) => [r['hash'], r]));
      // /api/prepared: the same rows without the text (personal data).
      const listed = ((await h.api('/api/prepared')).body as Record<string, unknown>[]).filter((r) =>
        hashes.has(String(r['hash'])),
      );
      expect(listed).toHaveLength(2);
      for (const r of listed) {
        const s = hashes.get(String(r['hash']))!;
        expect(r).not.toHaveProperty('query');
        for (const col of ['count_used', 'executions', 'total_time_us', 'cache_hits', 'cache_misses'])
          expect(r[col], col).toBe(Number(s[col]));
      }
      const topPrepared = ((await h.api('/api/top/prepared')).body as Record<string, unknown>[]).filter((r) =>
        hashes.has(String(r['hash'])),
      );
      expect(topPrepared.map((r) => r['count_used'])).toEqual([6, 3]);
      const topQueries = ((await h.api('/api/top/queries?limit=1000')).body as Record<string, unknown>[]).filter((r) =>
        hashes.has(String(r['hash'])),
      );
      expect(topQueries.map((r) => [r['count'], r['count_used'], r['pool'], r['kind']])).toEqual([
        [5, 6, 'md5user@one', 'protocol'],
        [2, 3, 'md5user@one', 'protocol'],
      ]);
      for (const r of topQueries)
        expect(r['total_time_us']).toBe(Number(hashes.get(String(r['hash']))!['total_time_us']));
      const text = await h.api(`/api/prepared/text/${String(topQueries[0]!['hash'])}`);
      expect(text.body).toEqual({ hash: topQueries[0]!['hash'], query: 'SELECT $1::int + 40 AS snap_answer' });
      // INTERNER counts the same statements' bytes.
      const protocol = (await h.show('INTERNER')).find((r) => r['kind'] === 'protocol')!;
      expect(Number(protocol['entries'])).toBeGreaterThanOrEqual(2);
    } finally {
      await c.end();
    }
  });

  it('sv_used: a session-mode server runs server_reset_query after its client left, then is idle again', async () => {
    const c = h.client('sess', 'md5user', 'md5pass');
    await c.connect();
    await c.query('SELECT 1');
    await c.end();
    const pool = async () => (await h.show('POOLS')).find((r) => r['database'] === 'sess')!;
    await until('the server to be in sv_used', async () => (await pool())['sv_used'] === '1');
    expect(await pool()).toMatchObject({ sv_active: '0', sv_idle: '0', sv_used: '1' });
    expect((await h.show('SERVERS')).find((r) => r['database_name'] === 'sess')).toMatchObject({ state: 'used' });
    expect(((await h.api('/api/overview')).body as Record<string, number>)['sv_used']).toBe(1);
    await until('the reset query to finish', async () => (await pool())['sv_idle'] === '1');
    expect(await pool()).toMatchObject({ sv_used: '0', sv_idle: '1' });
  });

  it('SHOW LISTS login_clients counts connections that have not logged in yet', async () => {
    const lists = async () => Object.fromEntries((await h.show('LISTS')).map((r) => [r['list'], Number(r['items'])]));
    const before = await lists();
    expect(before['login_clients']).toBe(0);
    const raw = net.connect(h.tp.port, '127.0.0.1');
    await new Promise<void>((r) => raw.once('connect', () => r()));
    // The first bytes of a startup packet: the client is mid-login (with tcp_defer_accept, the default, a client that
    // has sent nothing is still the kernel's, as with PgBouncer).
    raw.write(Buffer.from([0, 0, 0, 8]));
    try {
      await until('the connection to be counted', async () => (await lists())['login_clients'] === 1);
      expect((await lists())['used_clients']).toBe(before['used_clients']);
    } finally {
      raw.destroy();
    }
    await until('the connection to leave', async () => (await lists())['login_clients'] === 0);
  });

  it("SHOW CLIENTS: why and how long a client waits, and the age of the query in flight (also on its server's row)", async () => {
    const holder = h.client('sess', 'md5user', 'md5pass');
    await holder.connect();
    try {
      const sleeping = holder.query('SELECT pg_sleep(3)');
      const clients = async () => (await h.show('CLIENTS')).filter((r) => r['database'] === 'sess');
      await until('the running query to be 100 ms old', async () =>
        (await clients()).some((r) => Number(r['query_age_ms']) >= 100),
      );
      const running = (await clients()).find((r) => Number(r['query_age_ms']) >= 100)!;
      expect(running).toMatchObject({ state: 'active', wait: '0', wait_reason: '', wait_us: '0' });
      const server = (await h.show('SERVERS')).find((r) => r['database_name'] === 'sess')!;
      expect(Number(server['query_age_ms'])).toBeGreaterThanOrEqual(100);
      await sleeping;
      expect((await clients()).find((r) => r['client_id'] === running['client_id'])).toMatchObject({
        query_age_ms: '0',
      });
    } finally {
      await holder.end();
    }
  });

  it('SHOW CLIENTS: a waiting client shows why and how long it waits', async () => {
    const holder = h.client('one', 'md5user', 'md5pass');
    const waiters = [h.client('one', 'md5user', 'md5pass'), h.client('one', 'md5user', 'md5pass')];
    await holder.connect();
    for (const w of waiters) await w.connect();
    await h.admin('PAUSE one');
    try {
      const pending = waiters.map((w) => w.query('SELECT 1'));
      const waiting = async () =>
        (await h.show('CLIENTS')).filter((r) => r['database'] === 'one' && r['state'] === 'waiting');
      await until('two waiting clients', async () => (await waiting()).length === 2);
      // wait in whole seconds (as PgBouncer), wait_us the whole wait.
      await until('a wait past one second', async () => (await waiting()).every((r) => Number(r['wait']) >= 1));
      for (const r of await waiting()) {
        expect(r['wait_reason']).toBe('pool paused');
        expect(Number(r['wait_us'])).toBeGreaterThanOrEqual(1_000_000);
        expect(Math.floor(Number(r['wait_us']) / 1e6)).toBe(Number(r['wait']));
      }
      const api = ((await h.api('/api/clients')).body as Record<string, unknown>[]).filter(
        (r) => r['state'] === 'waiting',
      );
      expect(api.map((r) => r['wait_reason'])).toEqual(['pool paused', 'pool paused']);
      expect(api.every((r) => typeof r['wait'] === 'number' && r['wait'] >= 1)).toBe(true);
      await h.admin('RESUME one');
      await Promise.all(pending);
    } finally {
      await h.admin('RESUME one');
      await holder.end();
      for (const w of waiters) await w.end();
    }
  });

  it('SHOW CLIENTS wait_reason: all servers busy while the pool is full, connecting while its server logs in', async () => {
    const holders = [h.client('one', 'md5user', 'md5pass'), h.client('one', 'md5user', 'md5pass')];
    const waiter = h.client('one', 'md5user', 'md5pass', 'busy-waiter');
    const slowClient = h.client('slow', 'md5user', 'md5pass', 'slow-waiter');
    const reason = async (app: string) =>
      (await h.show('CLIENTS')).find((r) => r['application_name'] === app && r['state'] === 'waiting')?.['wait_reason'];
    for (const c of [...holders, waiter]) await c.connect();
    try {
      for (const c of holders) await c.query('BEGIN');
      const pending = waiter.query('SELECT 1');
      await until('the waiter waits', async () => (await reason('busy-waiter')) !== undefined);
      expect(await reason('busy-waiter')).toBe('all servers busy');
      for (const c of holders) await c.query('COMMIT');
      await pending;
      // The slow pool's first server connects while this client logs in (the login waits for the server's greeting).
      await slowClient.connect();
      await slowClient.query('SELECT 1');
      // RECONNECT closes that server: the next query waits 4 s for a new one to connect.
      await h.admin('RECONNECT slow');
      const again = slowClient.query('SELECT 2 AS two');
      await until('the slow client waits for a connect', async () => (await reason('slow-waiter')) !== undefined, 3800);
      expect(await reason('slow-waiter')).toBe('connecting');
      expect((await again).rows).toEqual([{ two: 2 }]);
    } finally {
      for (const c of [...holders, waiter, slowClient]) await c.end().catch(() => undefined);
    }
  });
});
