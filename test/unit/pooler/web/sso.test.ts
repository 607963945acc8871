// SSO runtime: key loading states and JWT verification against the RSA key only, with failure reasons.
import { afterAll, describe, expect, it } from 'vitest';
import pino from 'pino';
import { parsePoolerConfig, type WebConfig } from '../../../../src/config/pooler.js';
import { SsoRuntime } from '../../../../src/pooler/web/auth/sso.js';
import { hs256WithPublicKey, makeKeyDir, makeRsaKey, noneToken, signToken } from '../../../helpers/web-sso.js';

const key = makeRsaKey();
const other = makeRsaKey();
const dir = makeKeyDir();
const pemFile = dir.write('sso.pem', key.publicPem);
afterAll(() => dir.cleanup());

function web(extra: string): WebConfig {
  const { config, problems } = parsePoolerConfig(`[web]\nenabled = true\nui = true\n${extra}\n`);
  expect(problems).toEqual([]);
  return config.web;
}

const good = web(
  `sso_enabled = true\nsso_public_key_file = "${pemFile}"\nsso_audience = ["console", "other"]\nsso_allowed_users = ["alice", "bob"]\nsso_admin_groups = ["dba"]`,
);
const quiet = pino({ level: 'silent' });

async function loaded(): Promise<SsoRuntime> {
  const sso = new SsoRuntime(quiet);
  sso.load(good);
  expect(sso.state).toBe('loaded');
  return sso;
}

describe('SsoRuntime.load', () => {
  it('is disabled when sso_enabled = false', () => {
    const sso = new SsoRuntime(quiet);
    sso.load(web(''));
    expect(sso.state).toBe('disabled');
    expect(sso.usable).toBe(false);
  });
  it.each([
    [
      'missing PEM file',
      `sso_enabled = true\nsso_public_key_file = "${dir.dir}/missing.pem"\nsso_audience = ["console"]`,
      /cannot read/,
    ],
    ['empty audience', `sso_enabled = true\nsso_public_key_file = "${pemFile}"`, /sso_audience is empty/],
    [
      'unparsable PEM',
      `sso_enabled = true\nsso_public_key_file = "${dir.write('bad.pem', '-----BEGIN PUBLIC KEY-----\nnot base64\n-----END PUBLIC KEY-----\n')}"\nsso_audience = ["console"]`,
      /no PEM public key/,
    ],
  ])('fails on %s and says why', (_name, cfg, why) => {
    const sso = new SsoRuntime(quiet);
    sso.load(web(cfg));
    expect(sso.state).toBe('failed');
    expect(sso.error).toMatch(why);
    expect(sso.usable).toBe(false);
  });
  it('recovers when loaded again with a fixed config', () => {
    const sso = new SsoRuntime(quiet);
    sso.load(web(`sso_enabled = true\nsso_public_key_file = "${pemFile}"`));
    expect(sso.state).toBe('failed');
    sso.load(good);
    expect(sso.state).toBe('loaded');
    expect(sso.error).toBeNull();
  });
});

describe('SsoRuntime.verify', () => {
  it('accepts a valid token; admin groups promote', async () => {
    const sso = await loaded();
    expect(await sso.verify(await signToken(key, { aud: 'console', preferred_username: 'alice' }), good)).toMatchObject(
      { ok: true, username: 'alice', admin: false },
    );
    expect(
      await sso.verify(await signToken(key, { aud: ['x', 'other'], sub: 'bob', groups: ['dev', 'dba'] }), good),
    ).toMatchObject({ ok: true, username: 'bob', admin: true });
    expect(
      await sso.verify(await signToken(key, { aud: 'console', preferred_username: 'alice', alg: 'PS256' }), good),
    ).toMatchObject({ ok: true });
  });
  it.each<[string, () => Promise<string>, string]>([
    [
      'alg none',
      async () => noneToken({ aud: 'console', preferred_username: 'alice', exp: Math.floor(Date.now() / 1000) + 600 }),
      'signature',
    ],
    [
      'HS256 signed with the public key as secret',
      () =>
        hs256WithPublicKey(key, {
          aud: 'console',
          preferred_username: 'alice',
          exp: Math.floor(Date.now() / 1000) + 600,
        }),
      'signature',
    ],
    [
      'a token signed by another key',
      () => signToken(other, { aud: 'console', preferred_username: 'alice' }),
      'signature',
    ],
    ['garbage', async () => 'not.a.jwt', 'signature'],
    ['expired', () => signToken(key, { aud: 'console', preferred_username: 'alice', expiresIn: -3600 }), 'expired'],
    ['wrong aud', () => signToken(key, { aud: 'elsewhere', preferred_username: 'alice' }), 'audience'],
    ['missing aud', () => signToken(key, { preferred_username: 'alice' }), 'audience'],
    ['missing both usernames', () => signToken(key, { aud: 'console' }), 'no_username'],
    ['user not on the allowlist', () => signToken(key, { aud: 'console', preferred_username: 'mallory' }), 'allowlist'],
  ])('rejects %s', async (_name, make, reason) => {
    const sso = await loaded();
    const r = await sso.verify(await make(), good);
    expect(r.ok).toBe(false);
    expect(r.ok ? null : r.reason).toBe(reason);
  });
  it('a "*" allowlist accepts every valid user', async () => {
    const sso = await loaded();
    const open = { ...good, sso_allowed_users: ['*'] };
    expect((await sso.verify(await signToken(key, { aud: 'console', preferred_username: 'mallory' }), open)).ok).toBe(
      true,
    );
  });
  it('picks up a rotated key on load', async () => {
    const sso = await loaded();
    const rotated = makeRsaKey();
    const file = dir.write('rotated.pem', rotated.publicPem);
    const cfg = { ...good, sso_public_key_file: file };
    sso.load(cfg);
    expect((await sso.verify(await signToken(rotated, { aud: 'console', preferred_username: 'alice' }), cfg)).ok).toBe(
      true,
    );
    expect(await sso.verify(await signToken(key, { aud: 'console', preferred_username: 'alice' }), cfg)).toMatchObject({
      ok: false,
      reason: 'signature',
    });
  });
});
