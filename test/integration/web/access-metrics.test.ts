// Access log lines (fields, order, levels, JSON mode) and /metrics (pooler_* and pooler_web_* series, promtool).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { startTestPostgres, type TestPostgres } from '../../helpers/postgres.js';
import { basicHeader, parseLogfmt, startWeb, type WebHarness } from '../../helpers/web.js';
import { promtoolCheckMetrics } from '../../helpers/promtool.js';

let db: TestPostgres;
let h: WebHarness;
const admin = { authorization: basicHeader(), accept: 'application/json' };

beforeAll(async () => {
  db = await startTestPostgres();
  h = await startWeb(db);
  const c = new pg.Client({
    host: '127.0.0.1',
    port: h.tp.port,
    database: 'app',
    user: 'md5user',
    password: 'md5pass',
  });
  await c.connect();
  await c.query('SELECT 1');
  await c.query('BEGIN');
  await c.query('SELECT 2');
  await c.query('COMMIT');
  await c.end();
});
afterAll(async () => {
  await h?.stop();
  await db?.cleanup();
});

const access = (path: string) => h.accessLines().filter((l) => l.includes(`path=${path} `));

describe('access log', () => {
  it('a 2xx read is one debug line with the spec fields in order', async () => {
    const r = await h.app.inject({ url: '/api/pools', headers: admin });
    const line = access('/api/pools').pop()!;
    expect(line).toMatch(
      /^time=\S+ level=debug target=pooler::web::access method=GET path=\/api\/pools query=false status=200 bytes=\d+ latency_ms=\d+ peer=127\.0\.0\.1(:\d+)? auth_role=admin auth_source=basic auth_user=admin$/,
    );
    expect(Number(parseLogfmt(line)['bytes'])).toBe(Buffer.byteLength(r.body));
  });
  it('a 401 is info with auth_role=rejected, auth_source and auth_user "-"', async () => {
    await h.app.inject({ url: '/api/stats', headers: { accept: 'application/json' } });
    expect(parseLogfmt(access('/api/stats').pop()!)).toMatchObject({
      level: 'info',
      status: '401',
      auth_role: 'rejected',
      auth_source: '-',
      auth_user: '-',
    });
  });
  it('the query string and the body are never logged', async () => {
    await h.app.inject({ url: '/api/servers?secret=hunter2', headers: admin });
    await h.app.inject({
      method: 'POST',
      url: '/api/admin/resume',
      headers: { ...admin, 'content-type': 'application/json' },
      payload: '{"database":"app","user":"body-secret"}',
    });
    expect(parseLogfmt(access('/api/servers').pop()!)).toMatchObject({ query: 'true', path: '/api/servers' });
    expect(h.lines().join('\n')).not.toContain('hunter2');
    expect(access('/api/admin/resume').join('\n')).not.toContain('body-secret');
  });
  it('info for admin actions, personal-data reads, /api/auth/*, non-2xx; debug for /metrics and other reads', async () => {
    await h.app.inject({
      method: 'POST',
      url: '/api/admin/reconnect',
      headers: { ...admin, 'content-type': 'application/json' },
      payload: '{"database":"app","user":"md5user"}',
    });
    await h.app.inject({ url: '/api/logs', headers: admin });
    await h.app.inject({ url: '/api/auth/config' });
    await h.app.inject({ url: '/api/nothing', headers: admin });
    await h.app.inject({ url: '/metrics' });
    await h.app.inject({ url: '/api/overview', headers: admin });
    const level = (p: string) => parseLogfmt(access(p).pop()!)['level'];
    expect(level('/api/admin/reconnect')).toBe('info');
    expect(level('/api/logs')).toBe('info');
    expect(level('/api/auth/config')).toBe('info');
    expect(level('/api/nothing')).toBe('info');
    expect(level('/metrics')).toBe('debug');
    expect(level('/api/overview')).toBe('debug');
    expect(parseLogfmt(access('/metrics').pop()!)).toMatchObject({ status: '200', auth_role: 'anonymous' });
  });
});

describe('/metrics', () => {
  let text = '';
  beforeAll(async () => {
    await h.app.inject({ url: '/api/pools', headers: admin });
    const r = await h.app.inject({ url: '/metrics' });
    expect(r.statusCode).toBe(200);
    expect(r.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
    text = r.body;
  });

  it('parses as text exposition: every sample belongs to a family declared with HELP and TYPE', () => {
    const types = new Map<string, string>();
    for (const line of text.split('\n')) {
      if (line === '') continue;
      const t = /^# TYPE (\S+) (counter|gauge|histogram|summary|untyped)$/.exec(line);
      if (t) {
        expect(types.has(t[1]!)).toBe(false);
        types.set(t[1]!, t[2]!);
        continue;
      }
      if (line.startsWith('# HELP ')) continue;
      const m =
        /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\]|\\.)*",?)*\})? (-?[0-9.e+-]+|NaN|[+-]Inf)$/.exec(
          line,
        );
      expect(m, line).not.toBeNull();
      const name = m![1]!;
      const family = [name, name.replace(/_(bucket|sum|count)$/, '')].find((n) => types.has(n));
      expect(family, `family of ${name}`).toBeDefined();
    }
    expect([...types.keys()].every((n) => n.startsWith('pooler_'))).toBe(true);
  });
  it('carries the web series of the spec', () => {
    expect(text).toMatch(/^# TYPE pooler_web_sso_enabled gauge$/m);
    expect(text).toMatch(/^pooler_web_sso_enabled 0$/m);
    expect(text).toMatch(/^pooler_web_sso_config_error 0$/m);
    expect(text).toMatch(/^# TYPE pooler_web_auth_attempts_total counter$/m);
    expect(text).toMatch(/^pooler_web_auth_attempts_total\{role="admin",source="basic"\} \d+$/m);
    expect(text).toMatch(/^pooler_web_requests_total\{status_class="2xx",role="admin"\} \d+$/m);
    expect(text).toMatch(/^pooler_web_requests_total\{status_class="4xx",role="rejected"\} \d+$/m);
    expect(text).toMatch(/^# TYPE pooler_web_sso_validation_errors_total counter$/m);
  });
  it('carries the pooler series per pool with database and user labels', () => {
    for (const state of ['active', 'idle', 'waiting'])
      expect(text).toMatch(
        new RegExp(`^pooler_clients\\{database="app",user="md5user",state="${state}"\\} \\d+$`, 'm'),
      );
    for (const state of ['active', 'idle', 'used', 'login'])
      expect(text).toMatch(
        new RegExp(`^pooler_servers\\{database="app",user="md5user",state="${state}"\\} \\d+$`, 'm'),
      );
    const tx = /^pooler_transactions_total\{database="app",user="md5user"\} (\d+)$/m.exec(text);
    expect(Number(tx?.[1])).toBeGreaterThanOrEqual(2);
    for (const name of [
      'pooler_queries_total',
      'pooler_received_bytes_total',
      'pooler_sent_bytes_total',
      'pooler_errors_total',
      'pooler_wait_seconds_total',
      'pooler_pool_size',
      'pooler_pool_paused',
    ]) {
      expect(text).toMatch(new RegExp(`^${name}\\{database="app",user="scramuser"\\} `, 'm'));
    }
  });
  it('passes promtool check metrics', () => {
    expect(promtoolCheckMetrics(text)).toEqual({ output: '', status: 0 });
  });
});

describe('log_format = "json"', () => {
  it('writes JSON lines; the access record still carries the logfmt line', async () => {
    const j = await startWeb(db, { logFormat: 'json' });
    try {
      await j.app.inject({ url: '/api/nope', headers: admin });
      const rec = j
        .lines()
        .map((l) => JSON.parse(l) as Record<string, unknown>)
        .filter((r) => r['target'] === 'pooler::web::access')
        .pop()!;
      expect(rec).toMatchObject({
        method: 'GET',
        path: '/api/nope',
        query: false,
        status: 404,
        auth_role: 'admin',
        auth_source: 'basic',
        auth_user: 'admin',
      });
      expect(rec['msg']).toMatch(
        /^target=pooler::web::access method=GET path=\/api\/nope query=false status=404 bytes=\d+ latency_ms=\d+ peer=\S+ auth_role=admin auth_source=basic auth_user=admin$/,
      );
    } finally {
      await j.stop();
    }
  });
});
