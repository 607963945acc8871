// The JSON API against a real pooler and PostgreSQL: SHOW mirrors, admin actions, 401 shapes, bad input.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { startTestPostgres, type TestPostgres } from '../../helpers/postgres.js';
import { basicHeader, startWeb, type WebHarness } from '../../helpers/web.js';

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
  return h.app.inject({ method: 'POST', url, headers: payload === undefined ? headers : { ...headers, 'content-type': 'application/json' }, payload: payload === undefined ? undefined : JSON.stringify(payload) });
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
    expect((await get('/api/auth/config', {})).json()).toMatchObject({ sso_enabled: false, sso_admin_groups_configured: false, role: 'none', username: null });
    expect((await get('/api/auth/config')).json()).toMatchObject({ role: 'admin', username: 'admin' });
  });
});

describe('read endpoints mirror SHOW', () => {
  it('/api/pools rows carry the SHOW POOLS column names and values', async () => {
    const rows = (await get('/api/pools')).json() as Record<string, unknown>[];
    const show = h.tp.pooler.show('POOLS');
    expect(rows).toHaveLength(show.rows.length);
    for (const r of rows) expect(Object.keys(r)).toEqual([...show.columns]);
    expect(show.columns).toEqual(expect.arrayContaining(['database', 'user', 'pool_mode', 'cl_idle', 'cl_active', 'cl_waiting', 'sv_active', 'sv_idle', 'pool_size', 'paused']));
    expect(rows.map((r) => `${String(r['user'])}@${String(r['database'])}`).sort()).toEqual(['md5user@app', 'scramuser@app']);
  });
  it.each([
    ['/api/clients', 'CLIENTS'], ['/api/servers', 'SERVERS'], ['/api/stats', 'STATS'], ['/api/databases', 'DATABASES'],
    ['/api/users', 'USERS'], ['/api/connections', 'CONNECTIONS'], ['/api/log_level', 'LOG_LEVEL'], ['/api/sockets', 'SOCKETS'],
  ])('%s mirrors SHOW %s', async (url, name) => {
    const r = await get(url);
    expect(r.statusCode).toBe(200);
    const rows = r.json() as Record<string, unknown>[];
    const show = h.tp.pooler.show(name);
    expect(rows).toHaveLength(show.rows.length);
    for (const row of rows) expect(Object.keys(row)).toEqual([...show.columns]);
  });
  it.each(['/api/auth_query', '/api/pool_coordinator', '/api/pool_scaling', '/api/prepared', '/api/interner', '/api/top/clients', '/api/top/prepared', '/api/apps', '/api/events'])(
    '%s answers a JSON array', async (url) => {
      const r = await get(url);
      expect(r.statusCode).toBe(200);
      expect(Array.isArray(r.json())).toBe(true);
    });
  it('/api/config masks the admin password', async () => {
    const rows = (await get('/api/config')).json() as { key: string; value: unknown }[];
    expect(rows.length).toBeGreaterThan(0);
    expect(JSON.stringify(rows)).not.toContain('web-admin-pw');
  });
  it('/api/overview, /api/version and /api/process', async () => {
    expect((await get('/api/overview')).json()).toMatchObject({ clients: { total: expect.any(Number) }, servers: { total: expect.any(Number) }, tps: expect.any(Number), qps: expect.any(Number), errors: expect.any(Number), pools: 2, pools_paused: 0 });
    expect((await get('/api/version')).json()).toEqual({ version: expect.stringMatching(/^\d+\.\d+\.\d+/), node: process.version });
    expect((await get('/api/process')).json()).toMatchObject({ pid: process.pid, uptime_seconds: expect.any(Number), rss_bytes: expect.any(Number), heap_used_bytes: expect.any(Number), cpu_percent: expect.any(Number), event_loop_delay_ms: { p99: expect.any(Number) } });
  });
  it('/api/clients shows a real client connected through the pooler', async () => {
    const c = new pg.Client({ host: '127.0.0.1', port: h.tp.port, database: 'app', user: 'md5user', password: 'md5pass', application_name: 'api-test' });
    await c.connect();
    try {
      const rows = (await get('/api/clients')).json() as Record<string, unknown>[];
      expect(rows.some((r) => r['application_name'] === 'api-test' && r['user'] === 'md5user')).toBe(true);
      const apps = (await get('/api/apps')).json() as Record<string, unknown>[];
      expect(apps.find((a) => a['application_name'] === 'api-test')).toMatchObject({ clients: 1 });
    } finally {
      await c.end();
    }
  });
});

describe('admin actions', () => {
  it('PAUSE through the API pauses the pool for real clients; RESUME lets them through', async () => {
    const r = await post('/api/admin/pause', { database: 'app', user: 'md5user' });
    expect(r.statusCode).toBe(200);
    expect(r.json()).toMatchObject({ ok: true, message: expect.stringContaining('PAUSE') });
    expect(await poolRow()).toMatchObject({ paused: true });
    expect(await poolRow('scramuser')).toMatchObject({ paused: false });

    const c = new pg.Client({ host: '127.0.0.1', port: h.tp.port, database: 'app', user: 'md5user', password: 'md5pass' });
    await c.connect();
    try {
      let done = false;
      const q = c.query('SELECT 42 AS answer').then((res) => { done = true; return res; });
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
  it('RECONNECT answers ok for a known pool', async () => {
    expect((await post('/api/admin/reconnect', { database: 'app', user: 'scramuser' })).json()).toMatchObject({ ok: true });
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
    expect((await post('/api/admin/reload', undefined, { ...admin, 'sec-fetch-site': 'cross-site' })).statusCode).toBe(403);
    expect((await post('/api/admin/reload', undefined, { ...admin, origin: 'http://console.test:9127', host: 'console.test:9127', 'sec-fetch-site': 'same-origin' })).statusCode).toBe(200);
  });
  it('an unknown pool is 404', async () => {
    const r = await post('/api/admin/pause', { database: 'app', user: 'nobody' });
    expect(r.statusCode).toBe(404);
    expect(r.json()).toMatchObject({ error: 'not_found' });
  });
  it.each([[{}], [{ database: 'app' }], [{ database: 'app', user: 7 }], [['app', 'md5user']]])('a malformed body %j is 400', async (body) => {
    const r = await post('/api/admin/pause', body);
    expect(r.statusCode).toBe(400);
    expect(r.json()).toMatchObject({ error: 'bad_request' });
  });
  it('unparsable JSON is 400, a missing body is 400', async () => {
    const r = await h.app.inject({ method: 'POST', url: '/api/admin/resume', headers: { ...admin, 'content-type': 'application/json' }, payload: '{"database":' });
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
      expect(h.accessLines().filter((l) => l.includes(`path=${url} `)).pop()).toMatch(/level=info .* status=400 /);
    }
  });
  it('path traversal on /assets/ is refused', async () => {
    for (const url of ['/assets/..%2f..%2fpackage.json', '/assets/%2e%2e%2f%2e%2e%2fpackage.json', '/assets/..%5c..%5cpackage.json', '/assets/.hidden', '/assets/a%00.js']) {
      const r = await get(url, {});
      expect([400, 404]).toContain(r.statusCode);
      expect(r.headers['content-type']).toMatch(/application\/json/);
      expect(r.body).not.toContain('"name": "tidepool"');
    }
  });
});
