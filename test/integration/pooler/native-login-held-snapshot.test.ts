// Snapshots and held logins (native/relay-lend.cc Hold): SHOW, every /api read and a /metrics scrape count and list a
// login held in the native relay without making it a session, so it stays held. What they report is what they
// reported when a snapshot made every held login a session: the same counts and the same rows, client ids included,
// before and after the held logins are reported (RELOAD reports them). On the JavaScript relay (and with lending off)
// nothing is held and the same checks hold for its sessions.
import type { FastifyInstance } from 'fastify';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_PASSWORD, type TestPooler } from '../../helpers/pooler.js';
import { buildWebApp } from '../../../src/pooler/web/app.js';
import { client, nativeRelay, show, startBlockedPool, until, useNativeLoginPooler } from './native-login-harness.js';

const env = useNativeLoginPooler();
const holding = nativeRelay && process.env.TIDEPOOL_NATIVE_LEND !== '0';
let tp: TestPooler;
let web: FastifyInstance;
/** The pool's only server, in a transaction: a login meanwhile finds no idle server. */
let blocker: pg.Client;
const held: pg.Client[] = [];

const relayOnly = () => tp.pooler.nativeLogins.relayOnly;
const sessions = () => tp.pooler.clients.size;
const headers = {
  authorization: `Basic ${Buffer.from(`admin:${ADMIN_PASSWORD}`).toString('base64')}`,
  accept: 'application/json',
};

beforeAll(async () => {
  ({ tp, blocker } = await startBlockedPool(env.db, 'blocker', '[web]\nhost = "127.0.0.1"\nport = 0\nui = true'));
  web = await buildWebApp(tp.pooler);
});

afterAll(async () => {
  await Promise.all(held.map((c) => c.end().catch(() => undefined)));
  await blocker?.end().catch(() => undefined);
  await web?.close();
  await tp?.stop();
});

async function get(url: string): Promise<string> {
  const r = await web.inject({ method: 'GET', url, headers });
  expect(r.statusCode, url).toBe(200);
  return r.body;
}

const localPort = (c: pg.Client) =>
  (c as unknown as { connection: { stream: { localPort: number } } }).connection.stream.localPort;

/** What every reader of a snapshot says about pool app/md5user and the test's clients (apps named snap-*). Columns that
 * move with the clock (age_seconds, rates) are left out; the rest must match exactly. */
async function views(): Promise<Record<string, unknown>> {
  const pool = (await show('POOLS', tp)).find((r) => r['database'] === 'app' && r['user'] === 'md5user')!;
  const clientRows = (await show('CLIENTS', tp))
    .filter((r) => String(r['application_name']).startsWith('snap-'))
    .map(({ age_seconds: _age, ...rest }) => rest);
  const apiClients = (JSON.parse(await get('/api/clients?limit=1000')) as Record<string, unknown>[])
    .filter((r) => String(r['application_name']).startsWith('snap-'))
    .map((r) => [r['client_id'], r['addr'], r['state'], r['activity'], r['xact_age_ms']]);
  const apiPool = (JSON.parse(await get('/api/pools')) as Record<string, unknown>[]).find(
    (r) => r['database'] === 'app' && r['user'] === 'md5user',
  )!;
  const apps = (await show('APPS', tp))
    .filter((r) => String(r['application_name']).startsWith('snap-'))
    .map((r) => [r['application_name'], r['clients'], r['cl_active'], r['cl_waiting']])
    .sort((x, y) => String(x[0]).localeCompare(String(y[0])));
  const metrics = (await get('/metrics'))
    .split('\n')
    .filter((l) => l.startsWith('pooler_clients{') && l.includes('database="app"') && l.includes('user="md5user"'));
  const overview = JSON.parse(await get('/api/overview')) as { clients: Record<string, number> };
  return {
    pool: [pool['cl_idle'], pool['cl_active'], pool['cl_waiting'], pool['sv_active'], pool['sv_idle']],
    apiPool: [apiPool['cl_idle'], apiPool['cl_active'], apiPool['cl_waiting']],
    lists: await show('LISTS', tp),
    clients: clientRows,
    apiClients,
    apps,
    metrics,
    overview: overview.clients,
    connections: (await show('CONNECTIONS', tp))[0],
  };
}

describe('snapshots leave held logins held', () => {
  it('SHOW, /api and /metrics count and list them as sessions, the same before and after they are reported', async () => {
    const before = await views();
    const relayOnlyBefore = relayOnly();
    const sessionsBefore = sessions();
    for (const app of ['snap-a', 'snap-b', 'snap-b']) {
      const c = client('md5user', { application_name: app }, tp);
      c.on('error', () => undefined);
      await c.connect();
      held.push(c);
    }
    if (holding) {
      expect(relayOnly()).toBe(relayOnlyBefore + 3);
      expect(sessions()).toBe(sessionsBefore);
    }
    const whileHeld = await views();
    // Every read above took a snapshot: none made a held login a session.
    if (holding) {
      expect(relayOnly()).toBe(relayOnlyBefore + 3);
      expect(sessions()).toBe(sessionsBefore);
    }
    const pool = whileHeld['pool'] as number[];
    expect(pool[0]).toBe((before['pool'] as number[])[0]! + 3);
    expect(whileHeld['apiPool']).toEqual([pool[0], pool[1], pool[2]]);
    expect((whileHeld['overview'] as Record<string, number>)['idle']).toBe(
      (before['overview'] as Record<string, number>)['idle']! + 3,
    );
    expect(whileHeld['metrics']).toContain(`pooler_clients{database="app",user="md5user",state="idle"} ${pool[0]}`);
    expect(whileHeld['apps']).toEqual([
      ['snap-a', 1, 0, 0],
      ['snap-b', 2, 0, 0],
    ]);
    const rows = whileHeld['clients'] as Record<string, unknown>[];
    expect(rows.map((r) => r['addr']).sort()).toEqual(held.map((c) => `127.0.0.1:${localPort(c)}`).sort());
    for (const r of rows) {
      expect(r).toMatchObject({
        database: 'app',
        user: 'md5user',
        tls: '',
        state: 'idle',
        wait: 0,
        transaction_count: 0,
        query_count: 0,
        error_count: 0,
        bytes_received: 0,
        bytes_sent: 0,
        wait_reason: '',
      });
    }
    expect(new Set(rows.map((r) => r['client_id'])).size).toBe(3);
    expect(
      Number((whileHeld['lists'] as Record<string, unknown>[]).find((r) => r['list'] === 'used_clients')!['items']),
    ).toBe(
      Number((before['lists'] as Record<string, unknown>[]).find((r) => r['list'] === 'used_clients')!['items']) + 3,
    );

    // RELOAD reports every held login: each is a session now, and every view reads as it did, client ids included.
    const a = new pg.Client({
      host: '127.0.0.1',
      port: tp.port,
      user: 'admin',
      password: ADMIN_PASSWORD,
      database: 'tidepool',
    });
    await a.connect();
    await a.query('RELOAD');
    await a.end();
    expect(relayOnly()).toBe(0);
    // The admin session is gone once its close is heard (SHOW LISTS used_clients would count it).
    await until('the admin session gone', () => sessions() === sessionsBefore + 3);
    const after = await views();
    // The admin connection that sent RELOAD is one more connection; nothing else moved.
    const total = (v: Record<string, unknown>) => Number((v['connections'] as Record<string, unknown>)['total']);
    expect(total(after)).toBe(total(whileHeld) + 1);
    expect({ ...after, connections: null }).toEqual({ ...whileHeld, connections: null });
  });

  it('a held login listed by SHOW CLIENTS keeps its client id and runs its query after a scrape', async () => {
    const c = client('md5user', { application_name: 'snap-query' }, tp);
    c.on('error', () => undefined);
    await c.connect();
    held.push(c);
    const addr = `127.0.0.1:${localPort(c)}`;
    const relayOnlyBefore = relayOnly();
    const id = (await show('CLIENTS', tp)).find((r) => r['addr'] === addr)!['client_id'];
    await get('/metrics');
    await get('/api/clients');
    if (holding) expect(relayOnly()).toBe(relayOnlyBefore);
    const q = c.query<{ app: string }>("select current_setting('application_name') as app");
    await blocker.query('COMMIT');
    expect((await q).rows[0]!.app).toBe('snap-query');
    await blocker.query('BEGIN');
    await blocker.query('select 1');
    const row = (await show('CLIENTS', tp)).find((r) => r['addr'] === addr)!;
    expect(row['client_id']).toBe(id);
    expect(row['transaction_count']).toBe(1);
    // Ids stay unique: a login after the listing gets a later one.
    const later = client('md5user', { application_name: 'snap-later' }, tp);
    later.on('error', () => undefined);
    await later.connect();
    held.push(later);
    const ids = (await show('CLIENTS', tp)).map((r) => r['client_id']);
    expect(new Set(ids).size).toBe(ids.length);
    const laterId = (await show('CLIENTS', tp)).find((r) => r['application_name'] === 'snap-later')!['client_id'];
    expect(Number(laterId)).toBeGreaterThan(Number(id));
  });
});
