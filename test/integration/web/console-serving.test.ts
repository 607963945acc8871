// Console serving and access levels: SPA shell and assets, the startup gate, ui = false, anonymous reads, the log tap.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestPostgres, type TestPostgres } from '../../helpers/postgres.js';
import { buildWebApp } from '../../../src/pooler/web/app.js';
import { startTestPooler } from '../../helpers/pooler.js';
import { basicHeader, parseLogfmt, startWeb, webToml, type WebHarness } from '../../helpers/web.js';

let db: TestPostgres;
const site = mkdtempSync(path.join(os.tmpdir(), 'tidepool-site-'));
mkdirSync(path.join(site, 'assets'));
writeFileSync(
  path.join(site, 'index.html'),
  '<!doctype html><html><body><div id="root"></div><script type="module" src="/assets/index-AbC123.js"></script></body></html>',
);
writeFileSync(path.join(site, 'assets', 'index-AbC123.js'), 'console.log("console bundle")');
writeFileSync(path.join(site, 'secret.txt'), 'outside the assets directory');
const admin = { authorization: basicHeader(), accept: 'application/json' };
const json = { accept: 'application/json' };

beforeAll(async () => {
  db = await startTestPostgres();
});
afterAll(async () => {
  await db?.cleanup();
  rmSync(site, { recursive: true, force: true });
});

describe('SPA shell and assets', () => {
  let h: WebHarness;
  beforeAll(async () => {
    h = await startWeb(db, { staticDir: site });
  });
  afterAll(async () => {
    await h?.stop();
  });

  it.each(['/', '/pools', '/pools/md5user%40app', '/overview?x=1', '/clients'])(
    '%s serves index.html anonymously',
    async (url) => {
      const r = await h.app.inject({ url });
      expect(r.statusCode).toBe(200);
      expect(r.headers['content-type']).toMatch(/^text\/html/);
      expect(r.body).toContain('<div id="root">');
      expect(r.headers['www-authenticate']).toBeUndefined();
      expect(r.headers['referrer-policy']).toBe('no-referrer');
    },
  );
  it('hashed assets carry the immutable cache header', async () => {
    const r = await h.app.inject({ url: '/assets/index-AbC123.js' });
    expect(r.statusCode).toBe(200);
    expect(r.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect(r.headers['content-type']).toMatch(/^text\/javascript/);
    expect(r.body).toContain('console bundle');
  });
  it('a missing asset is a JSON 404, a file outside assets/ is unreachable', async () => {
    const r = await h.app.inject({ url: '/assets/nope-123.js' });
    expect(r.statusCode).toBe(404);
    expect(r.json()).toMatchObject({ error: 'not_found' });
    for (const url of ['/assets/..%2fsecret.txt', '/assets/%2e%2e%2fsecret.txt']) {
      const t = await h.app.inject({ url });
      expect(t.statusCode).toBe(400);
      expect(t.body).not.toContain('outside the assets');
    }
  });
  it('non-GET on a console path is 405 JSON', async () => {
    const r = await h.app.inject({ method: 'POST', url: '/pools' });
    expect(r.statusCode).toBe(405);
    expect(r.json()).toMatchObject({ error: 'method_not_allowed' });
  });
});

describe('startup gate', () => {
  it.each([['admin'], ['']])('ui = true with admin_password %j serves /metrics only and logs why', async (password) => {
    const h = await startWeb(db, { adminPassword: password, staticDir: site });
    try {
      expect(
        h
          .lines()
          .some((l) => /target=pooler::web msg="web\.ui = true ignored: admin_password is default\/empty/.test(l)),
      ).toBe(true);
      expect((await h.app.inject({ url: '/metrics' })).statusCode).toBe(200);
      for (const url of ['/api/pools', '/api/auth/config', '/', '/pools']) {
        const r = await h.app.inject({ url, headers: { authorization: basicHeader('admin', password) } });
        expect(r.statusCode).toBe(404);
        expect(r.json()).toMatchObject({ error: 'not_found' });
      }
    } finally {
      await h.stop();
    }
  });
});

describe('ui = false', () => {
  it('/metrics works, /api/* and the console are 404', async () => {
    const tp = await startTestPooler(webToml(db).replace('ui = true', 'ui = false'));
    const app = await buildWebApp(tp.pooler, { staticDir: site });
    try {
      expect((await app.inject({ url: '/metrics' })).statusCode).toBe(200);
      expect((await app.inject({ url: '/api/pools', headers: admin })).statusCode).toBe(404);
      expect((await app.inject({ url: '/' })).statusCode).toBe(404);
      expect(tp.logText()).not.toContain('ignored: admin_password');
    } finally {
      await app.close();
      await tp.stop();
    }
  });
});

describe('ui_anonymous = true', () => {
  let h: WebHarness;
  beforeAll(async () => {
    h = await startWeb(db, { staticDir: site, web: 'ui_anonymous = true' });
  });
  afterAll(async () => {
    await h?.stop();
  });

  it('public reads work without credentials and are logged as anonymous', async () => {
    const r = await h.app.inject({ url: '/api/pools', headers: json });
    expect(r.statusCode).toBe(200);
    const line = parseLogfmt(
      h
        .accessLines()
        .filter((l) => l.includes('path=/api/pools '))
        .pop()!,
    );
    expect(line).toMatchObject({ auth_role: 'anonymous', auth_source: '-', auth_user: '-' });
    expect((await h.app.inject({ url: '/api/auth/config' })).json()).toMatchObject({ role: 'anonymous' });
  });
  it.each(['/api/logs', '/api/prepared/text/abc', '/api/interner/top', '/api/top/queries'])(
    'personal-data path %s is 401 for Anonymous',
    async (url) => {
      const r = await h.app.inject({ url, headers: json });
      expect(r.statusCode).toBe(401);
      expect(r.json()).toEqual({ error: 'unauthorized', message: 'authentication required' });
    },
  );
  it('admin actions are 401 for Anonymous', async () => {
    expect((await h.app.inject({ method: 'POST', url: '/api/admin/reload', headers: json })).statusCode).toBe(401);
  });
  it('a wrong credential is 401 even though anonymous reads are on', async () => {
    expect(
      (await h.app.inject({ url: '/api/pools', headers: { authorization: basicHeader('admin', 'bad'), ...json } }))
        .statusCode,
    ).toBe(401);
  });
});

describe('/api/logs', () => {
  it('activates on first request and returns the pooler records, filtered', async () => {
    const h = await startWeb(db, { staticDir: site });
    try {
      const first = (await h.app.inject({ url: '/api/logs', headers: admin })).json();
      expect(first).toMatchObject({ active: true });
      h.tp.logs.get('pooler::test').warn({ pool: 'app' }, 'tap me');
      h.tp.logs.get('pooler::test').debug('quiet');
      await new Promise((r) => setImmediate(r));
      const r = (await h.app.inject({ url: '/api/logs?level=warn&q=tap', headers: admin })).json() as {
        active: boolean;
        entries: Record<string, unknown>[];
      };
      expect(r.entries).toEqual([
        expect.objectContaining({
          seq: expect.any(Number),
          time: expect.any(String),
          level: 'warn',
          target: 'pooler::test',
          msg: 'tap me',
          fields: { pool: 'app' },
        }),
      ]);
      const seq = r.entries[0]!['seq'] as number;
      const later = (await h.app.inject({ url: `/api/logs?since=${seq}&q=tap`, headers: admin })).json() as {
        entries: unknown[];
      };
      expect(later.entries).toEqual([]);
      expect((await h.app.inject({ url: '/api/logs?level=loud', headers: admin })).statusCode).toBe(400);
      expect((await h.app.inject({ url: '/api/logs?limit=-1', headers: admin })).statusCode).toBe(400);
    } finally {
      await h.stop();
    }
  });
  it('log_tap_max_entries = 0 disables it with a 404', async () => {
    const h = await startWeb(db, { staticDir: site, web: 'log_tap_max_entries = 0' });
    try {
      const r = await h.app.inject({ url: '/api/logs', headers: admin });
      expect(r.statusCode).toBe(404);
      expect(r.json()).toEqual({ error: 'not_found', message: 'log tap disabled' });
    } finally {
      await h.stop();
    }
  });
});
