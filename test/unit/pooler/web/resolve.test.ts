// Role resolution rules: Basic first, wrong Basic does not block SSO, tokens ignored with SSO off, HTTPS rule, carriers.
import { afterAll, describe, expect, it } from 'vitest';
import pino from 'pino';
import { parsePoolerConfig, type PoolerConfig } from '../../../../src/config/pooler.js';
import { authorize, extractToken, resolveAuth, type AuthInput } from '../../../../src/pooler/web/auth/resolve.js';
import { SsoRuntime, type SsoFailureReason } from '../../../../src/pooler/web/auth/sso.js';
import { makeKeyDir, makeRsaKey, signToken } from '../../../helpers/web-sso.js';

const key = makeRsaKey();
const dir = makeKeyDir();
const pem = dir.write('k.pem', key.publicPem);
afterAll(() => dir.cleanup());

function config(web: string): PoolerConfig {
  const { config, problems } = parsePoolerConfig(
    `[general]\nadmin_username = "root"\nadmin_password = "s3cret"\n[web]\nui = true\n${web}\n`,
  );
  expect(problems).toEqual([]);
  return config;
}
const ssoCfg = config(
  `sso_enabled = true\nsso_public_key_file = "${pem}"\nsso_audience = ["console"]\nsso_admin_groups = ["dba"]`,
);
const basic = (u: string, p: string) => `Basic ${Buffer.from(`${u}:${p}`).toString('base64')}`;
const input = (o: Partial<AuthInput>): AuthInput => ({
  authorization: undefined,
  cookie: undefined,
  queryToken: undefined,
  secure: false,
  ...o,
});

function runtime(cfg: PoolerConfig): SsoRuntime {
  const sso = new SsoRuntime(pino({ level: 'silent' }));
  sso.load(cfg.web);
  return sso;
}

describe('resolveAuth', () => {
  const sso = runtime(ssoCfg);
  const failures: SsoFailureReason[] = [];
  const resolve = (i: Partial<AuthInput>, cfg = ssoCfg, rt = sso) =>
    resolveAuth(input(i), cfg, rt, (r) => failures.push(r));

  it('correct Basic is Admin, with the configured user name', async () => {
    expect(await resolve({ authorization: basic('root', 's3cret') })).toMatchObject({
      role: 'admin',
      source: 'basic',
      user: 'root',
    });
  });
  it('correct Basic is Admin even when SSO failed to load', async () => {
    const broken = config('sso_enabled = true');
    expect(await resolve({ authorization: basic('root', 's3cret') }, broken, runtime(broken))).toMatchObject({
      role: 'admin',
      source: 'basic',
    });
  });
  it('wrong Basic alone is rejected', async () => {
    expect(await resolve({ authorization: basic('root', 'nope') })).toMatchObject({
      role: 'rejected',
      source: 'basic',
      credentials: true,
    });
  });
  it('wrong Basic does not block a valid JWT in the cookie', async () => {
    const t = await signToken(key, { aud: 'console', preferred_username: 'alice' });
    expect(await resolve({ authorization: basic('root', 'nope'), cookie: `x=1; sso_access_token=${t}` })).toMatchObject(
      { role: 'sso', source: 'sso', user: 'alice' },
    );
  });
  it('a JWT in an admin group is Admin with source sso', async () => {
    const t = await signToken(key, { aud: 'console', preferred_username: 'carol', groups: ['dba'] });
    expect(await resolve({ authorization: `Bearer ${t}` })).toMatchObject({
      role: 'admin',
      source: 'sso',
      user: 'carol',
    });
  });
  it('each carrier works: Bearer, cookie, ?token=', async () => {
    const t = await signToken(key, { aud: 'console', preferred_username: 'alice' });
    for (const i of [{ authorization: `Bearer ${t}` }, { cookie: `sso_access_token=${t}` }, { queryToken: t }]) {
      expect(await resolve(i)).toMatchObject({ role: 'sso', user: 'alice' });
    }
    expect(extractToken({ authorization: 'Bearer a', cookie: 'sso_access_token=b', queryToken: 'c' })).toBe('a');
    expect(extractToken({ authorization: undefined, cookie: 'sso_access_token=b', queryToken: 'c' })).toBe('b');
  });
  it('an invalid JWT is rejected and its reason reported', async () => {
    failures.length = 0;
    const t = await signToken(key, { aud: 'wrong', preferred_username: 'alice' });
    expect(await resolve({ authorization: `Bearer ${t}` })).toMatchObject({
      role: 'rejected',
      source: 'sso',
      ssoFailure: 'audience',
    });
    expect(failures).toEqual(['audience']);
  });
  it('with SSO off, tokens are no credential at all', async () => {
    const off = config('ui_anonymous = true');
    const t = await signToken(key, { aud: 'console', preferred_username: 'alice' });
    expect(await resolve({ authorization: `Bearer ${t}` }, off, runtime(off))).toMatchObject({
      role: 'anonymous',
      source: 'none',
    });
  });
  it('sso_require_https rejects tokens unless the request is secure', async () => {
    const strict = { ...ssoCfg, web: { ...ssoCfg.web, sso_require_https: true } };
    const t = await signToken(key, { aud: 'console', preferred_username: 'alice' });
    expect(await resolve({ authorization: `Bearer ${t}` }, strict)).toMatchObject({
      role: 'rejected',
      ssoFailure: 'https_required',
    });
    expect(await resolve({ authorization: `Bearer ${t}`, secure: true }, strict)).toMatchObject({ role: 'sso' });
    expect(await resolve({ authorization: basic('root', 's3cret') }, strict)).toMatchObject({ role: 'admin' });
  });
  it('no credentials: Anonymous only when ui_anonymous = true', async () => {
    expect(await resolve({})).toMatchObject({ role: 'rejected', source: 'none', credentials: false });
    const anon = { ...ssoCfg, web: { ...ssoCfg.web, ui_anonymous: true } };
    expect(await resolve({}, anon)).toMatchObject({ role: 'anonymous', source: 'none' });
  });
});

describe('authorize', () => {
  const r = (role: 'admin' | 'sso' | 'anonymous' | 'rejected') => ({
    role,
    source: 'none' as const,
    user: null,
    credentials: false,
  });
  it('applies the role table', () => {
    expect(authorize(r('anonymous'), 'public')).toEqual({ allow: true });
    expect(authorize(r('anonymous'), 'personal')).toEqual({ allow: false, status: 401 });
    expect(authorize(r('anonymous'), 'admin')).toEqual({ allow: false, status: 401 });
    expect(authorize(r('sso'), 'personal')).toEqual({ allow: true });
    expect(authorize(r('sso'), 'admin')).toEqual({ allow: false, status: 403 });
    expect(authorize(r('admin'), 'admin')).toEqual({ allow: true });
    expect(authorize(r('rejected'), 'public')).toEqual({ allow: false, status: 401 });
    expect(authorize(r('rejected'), 'none')).toEqual({ allow: true });
  });
});
