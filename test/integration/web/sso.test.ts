// SSO against a real pooler: carriers, roles, 403, failure reasons in metrics, failed state, RELOAD recovery and key rotation.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestPostgres, type TestPostgres } from '../../helpers/postgres.js';
import { basicHeader, parseLogfmt, startWeb, webToml, type WebHarness } from '../../helpers/web.js';
import {
  hs256WithPublicKey,
  makeKeyDir,
  makeRsaKey,
  noneToken,
  signToken,
  type KeyDir,
} from '../../helpers/web-sso.js';

let db: TestPostgres;
const keys: KeyDir = makeKeyDir();
const key = makeRsaKey();
const other = makeRsaKey();
const json = { accept: 'application/json' };

beforeAll(async () => {
  db = await startTestPostgres();
  keys.write('sso.pem', key.publicPem);
});
afterAll(async () => {
  await db?.cleanup();
  keys.cleanup();
});

const ssoWeb = (extra = '') => `sso_enabled = true
sso_public_key_file = "${keys.dir}/sso.pem"
sso_audience = ["console"]
sso_allowed_users = ["alice", "carol"]
sso_admin_groups = ["dba"]
sso_proxy_url = "https://sso.example.test/login"
${extra}`;

function metric(text: string, name: string, labels = ''): number | undefined {
  const line = text
    .split('\n')
    .find((l) => l.startsWith(`${name}${labels} `) || (labels === '' && l.startsWith(`${name} `)));
  return line === undefined ? undefined : Number(line.split(' ').pop());
}

describe('SSO loaded', () => {
  let h: WebHarness;
  beforeAll(async () => {
    h = await startWeb(db, { web: ssoWeb() });
  });
  afterAll(async () => {
    await h?.stop();
  });
  const alice = () => signToken(key, { aud: 'console', preferred_username: 'alice' });

  it('/api/auth/config reports SSO and the proxy URL', async () => {
    const r = (await h.app.inject({ url: '/api/auth/config' })).json();
    expect(r).toMatchObject({
      sso_enabled: true,
      sso_proxy_url: 'https://sso.example.test/login',
      sso_admin_groups_configured: true,
      role: 'none',
    });
    expect(r).not.toHaveProperty('sso_config_error');
    const me = (
      await h.app.inject({ url: '/api/auth/config', headers: { authorization: `Bearer ${await alice()}` } })
    ).json();
    expect(me).toMatchObject({ role: 'sso', username: 'alice' });
  });
  it('Bearer, cookie and ?token= carriers each give Sso', async () => {
    const t = await alice();
    for (const req of [
      { url: '/api/pools', headers: { authorization: `Bearer ${t}` } },
      { url: '/api/pools', headers: { cookie: `theme=dark; sso_access_token=${t}` } },
      { url: `/api/pools?token=${t}`, headers: {} },
    ]) {
      const r = await h.app.inject(req);
      expect(r.statusCode).toBe(200);
    }
    const line = h
      .accessLines()
      .filter((l) => l.includes('path=/api/pools'))
      .map(parseLogfmt)
      .pop()!;
    expect(line).toMatchObject({ auth_role: 'sso', auth_source: 'sso', auth_user: 'alice', query: 'true' });
    expect(h.accessLines().join('\n')).not.toContain(t);
  });
  it('a cookie that is not valid percent-encoding is a rejected credential, not an error', async () => {
    const r = await h.app.inject({ url: '/api/pools', headers: { cookie: 'sso_access_token=%E0%A4%A', ...json } });
    expect(r.statusCode).toBe(401);
  });
  it('an Sso user reads personal data but gets 403 on admin actions', async () => {
    const headers = { authorization: `Bearer ${await alice()}`, ...json };
    expect((await h.app.inject({ url: '/api/logs', headers })).statusCode).toBe(200);
    expect((await h.app.inject({ url: '/api/top/queries', headers })).statusCode).toBe(200);
    const r = await h.app.inject({
      method: 'POST',
      url: '/api/admin/pause',
      headers: { ...headers, 'content-type': 'application/json' },
      payload: '{"database":"app","user":"md5user"}',
    });
    expect(r.statusCode).toBe(403);
    expect(r.json()).toEqual({ error: 'forbidden', message: 'admin role required' });
    expect(
      h.tp.pooler.show('POOLS').rows.every((row) => row[h.tp.pooler.show('POOLS').columns.indexOf('paused')] !== true),
    ).toBe(true);
  });
  it('an admin group makes an Sso user Admin, logged as auth_role=admin auth_source=sso', async () => {
    const t = await signToken(key, { aud: 'console', preferred_username: 'carol', groups: ['dev', 'dba'] });
    const r = await h.app.inject({
      method: 'POST',
      url: '/api/admin/reconnect',
      headers: { authorization: `Bearer ${t}`, 'content-type': 'application/json' },
      payload: '{"database":"app","user":"md5user"}',
    });
    expect(r.statusCode).toBe(200);
    const line = h
      .accessLines()
      .filter((l) => l.includes('path=/api/admin/reconnect'))
      .pop()!;
    expect(line).toMatch(
      /level=info target=pooler::web::access method=POST path=\/api\/admin\/reconnect .*auth_role=admin auth_source=sso auth_user=carol/,
    );
  });
  it('a wrong Basic password does not block a valid JWT; a right one wins over a bad JWT', async () => {
    const t = await alice();
    const viaCookie = await h.app.inject({
      url: '/api/pools',
      headers: { authorization: basicHeader('admin', 'nope'), cookie: `sso_access_token=${t}` },
    });
    expect(viaCookie.statusCode).toBe(200);
    const basicWins = await h.app.inject({
      url: `/api/pools?token=garbage`,
      headers: { authorization: basicHeader() },
    });
    expect(basicWins.statusCode).toBe(200);
  });
  it('every rejected token is 401 and counted under its reason', async () => {
    const exp = Math.floor(Date.now() / 1000) + 600;
    const cases: [string, string][] = [
      [noneToken({ aud: 'console', preferred_username: 'alice', exp }), 'signature'],
      [await hs256WithPublicKey(key, { aud: 'console', preferred_username: 'alice', exp }), 'signature'],
      [await signToken(other, { aud: 'console', preferred_username: 'alice' }), 'signature'],
      [await signToken(key, { aud: 'console', preferred_username: 'alice', expiresIn: -600 }), 'expired'],
      [await signToken(key, { aud: 'nope', preferred_username: 'alice' }), 'audience'],
      [await signToken(key, { aud: 'console' }), 'no_username'],
      [await signToken(key, { aud: 'console', preferred_username: 'mallory' }), 'allowlist'],
    ];
    const before = (await h.app.inject({ url: '/metrics' })).body;
    for (const [t] of cases) {
      const r = await h.app.inject({ url: '/api/pools', headers: { authorization: `Bearer ${t}`, ...json } });
      expect(r.statusCode).toBe(401);
      expect(r.json()).toEqual({ error: 'unauthorized', message: 'authentication required' });
    }
    const after = (await h.app.inject({ url: '/metrics' })).body;
    const count = (text: string, reason: string) =>
      metric(text, 'pooler_web_sso_validation_errors_total', `{reason="${reason}"}`) ?? 0;
    expect(count(after, 'signature') - count(before, 'signature')).toBe(3);
    for (const reason of ['expired', 'audience', 'no_username', 'allowlist'])
      expect(count(after, reason) - count(before, reason)).toBe(1);
    expect(metric(after, 'pooler_web_sso_enabled')).toBe(1);
    expect(metric(after, 'pooler_web_sso_config_error')).toBe(0);
    expect(
      metric(after, 'pooler_web_auth_attempts_total', '{role="rejected",source="sso"}') ?? 0,
    ).toBeGreaterThanOrEqual(7);
  });
  it('/api/sso/session describes the token; /api/sso/login redirects to the proxy; /api/sso/logout clears the cookie', async () => {
    const s = await h.app.inject({ url: '/api/sso/session', headers: { authorization: `Bearer ${await alice()}` } });
    expect(s.json()).toMatchObject({ username: 'alice', role: 'sso', exp: expect.any(Number) });
    const bad = await h.app.inject({
      url: '/api/sso/session',
      headers: {
        authorization: `Bearer ${await signToken(key, { aud: 'console', preferred_username: 'alice', expiresIn: -600 })}`,
      },
    });
    expect(bad.statusCode).toBe(401);
    expect(bad.json()).toMatchObject({ reason: 'expired' });
    const login = await h.app.inject({
      url: '/api/sso/login?return_to=/pools',
      headers: { host: 'console.test:9127' },
    });
    expect(login.statusCode).toBe(302);
    expect(login.headers['location']).toBe(
      `https://sso.example.test/login?redirect_to=${encodeURIComponent('http://console.test:9127/pools')}`,
    );
    const evil = await h.app.inject({
      url: '/api/sso/login?return_to=//evil.test/x',
      headers: { host: 'console.test' },
    });
    expect(new URL(String(evil.headers['location'])).searchParams.get('redirect_to')).toBe('http://console.test/');
    const out = await h.app.inject({ method: 'POST', url: '/api/sso/logout' });
    expect(out.headers['set-cookie']).toMatch(/^sso_access_token=; .*Max-Age=0/);
    expect(
      h
        .accessLines()
        .filter((l) => l.includes('path=/api/sso/'))
        .every((l) => l.includes('level=info')),
    ).toBe(true);
  });
});

describe('SSO failed state and recovery by RELOAD', () => {
  it.each([
    ['missing PEM file', ssoWeb().replace('sso.pem', 'absent.pem'), /cannot read/],
    ['empty audience', ssoWeb().replace('sso_audience = ["console"]', 'sso_audience = []'), /sso_audience is empty/],
    ['unparsable PEM', ssoWeb().replace('sso.pem', 'garbage.pem'), /no PEM public key/],
  ])(
    '%s: listener and Basic keep working, gauges and sso_config_error set; RELOAD after the fix recovers',
    async (_name, web, why) => {
      keys.write('garbage.pem', '-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n');
      const h = await startWeb(db, { web });
      try {
        const cfg = (await h.app.inject({ url: '/api/auth/config' })).json();
        expect(cfg).toMatchObject({ sso_enabled: false, sso_config_error: expect.stringMatching(why) });
        expect(cfg).not.toHaveProperty('sso_proxy_url');
        expect((await h.app.inject({ url: '/api/pools', headers: { authorization: basicHeader() } })).statusCode).toBe(
          200,
        );
        const m = (await h.app.inject({ url: '/metrics' })).body;
        expect(metric(m, 'pooler_web_sso_enabled')).toBe(0);
        expect(metric(m, 'pooler_web_sso_config_error')).toBe(1);
        expect(
          h.lines().some((l) => l.includes('level=error') && l.includes('target=pooler::web::sso') && why.test(l)),
        ).toBe(true);
        const t = await signToken(key, { aud: 'console', preferred_username: 'alice' });
        expect(
          (await h.app.inject({ url: '/api/pools', headers: { authorization: `Bearer ${t}`, ...json } })).statusCode,
        ).toBe(401);

        h.tp.writeConfig(webToml(db, { web: ssoWeb() }));
        const reload = await h.app.inject({
          method: 'POST',
          url: '/api/admin/reload',
          headers: { authorization: basicHeader() },
        });
        expect(reload.statusCode).toBe(200);
        expect((await h.app.inject({ url: '/api/auth/config' })).json()).toMatchObject({
          sso_enabled: true,
          sso_proxy_url: 'https://sso.example.test/login',
        });
        expect((await h.app.inject({ url: '/api/pools', headers: { authorization: `Bearer ${t}` } })).statusCode).toBe(
          200,
        );
        const m2 = (await h.app.inject({ url: '/metrics' })).body;
        expect(metric(m2, 'pooler_web_sso_enabled')).toBe(1);
        expect(metric(m2, 'pooler_web_sso_config_error')).toBe(0);
      } finally {
        await h.stop();
      }
    },
  );
  it('a key rotation is picked up by RELOAD without restart', async () => {
    keys.write('rot.pem', key.publicPem);
    const h = await startWeb(db, { web: ssoWeb().replace('sso.pem', 'rot.pem') });
    try {
      const rotated = makeRsaKey();
      const newToken = await signToken(rotated, { aud: 'console', preferred_username: 'alice' });
      const oldToken = await signToken(key, { aud: 'console', preferred_username: 'alice' });
      expect(
        (await h.app.inject({ url: '/api/pools', headers: { authorization: `Bearer ${newToken}`, ...json } }))
          .statusCode,
      ).toBe(401);
      keys.write('rot.pem', rotated.publicPem);
      expect(
        (await h.app.inject({ method: 'POST', url: '/api/admin/reload', headers: { authorization: basicHeader() } }))
          .statusCode,
      ).toBe(200);
      expect(
        (await h.app.inject({ url: '/api/pools', headers: { authorization: `Bearer ${newToken}` } })).statusCode,
      ).toBe(200);
      expect(
        (await h.app.inject({ url: '/api/pools', headers: { authorization: `Bearer ${oldToken}`, ...json } }))
          .statusCode,
      ).toBe(401);
    } finally {
      await h.stop();
    }
  });
});
