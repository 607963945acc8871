// The listener on a real port: peer address behind (un)trusted proxies, sso_require_https, raw traversal attempts.
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestPostgres, type TestPostgres } from '../../helpers/postgres.js';
import { parseLogfmt, startWeb, type WebHarness } from '../../helpers/web.js';
import { makeKeyDir, makeRsaKey, signToken } from '../../helpers/web-sso.js';

let db: TestPostgres;
const keys = makeKeyDir();
const key = makeRsaKey();
const pem = keys.write('sso.pem', key.publicPem);
const sso = `sso_enabled = true\nsso_public_key_file = "${pem}"\nsso_audience = ["console"]\nsso_require_https = true`;

beforeAll(async () => {
  db = await startTestPostgres();
});
afterAll(async () => {
  await db?.cleanup();
  keys.cleanup();
});

async function lastAccess(h: WebHarness, path: string): Promise<Record<string, string>> {
  // The access line is written when the response has been sent; the client may see the response first.
  for (let i = 0; i < 100; i++) {
    const line = h
      .accessLines()
      .filter((l) => l.includes(`path=${path} `))
      .pop();
    if (line) return parseLogfmt(line);
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`no access line for ${path}`);
}

/** Sends a raw request line (no client-side URL normalisation) and returns the status line and body. */
function raw(port: number, target: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1', () =>
      s.write(`GET ${target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`),
    );
    let out = '';
    s.on('data', (d) => {
      out += d.toString();
    });
    s.on('end', () => resolve(out));
    s.on('error', reject);
  });
}

describe('untrusted peer (trusted_proxies empty)', () => {
  let h: WebHarness;
  beforeAll(async () => {
    h = await startWeb(db, { listen: true, web: sso });
  });
  afterAll(async () => {
    await h?.stop();
  });

  it('startWebListener binds the configured host on a real port', () => {
    expect(h.listener!.host).toBe('127.0.0.1');
    expect(h.listener!.port).toBeGreaterThan(0);
  });
  it('forged X-Forwarded-For and Forwarded do not change peer', async () => {
    const r = await fetch(`${h.base}/api/auth/config`, {
      headers: { 'x-forwarded-for': '203.0.113.7', forwarded: 'for=198.51.100.9' },
    });
    expect(r.status).toBe(200);
    expect((await lastAccess(h, '/api/auth/config')).peer).toMatch(/^127\.0\.0\.1:\d+$/);
  });
  it('sso_require_https: X-Forwarded-Proto from an untrusted peer does not make the request secure', async () => {
    const t = await signToken(key, { aud: 'console', preferred_username: 'alice' });
    const r = await fetch(`${h.base}/api/pools`, {
      headers: { authorization: `Bearer ${t}`, 'x-forwarded-proto': 'https', accept: 'application/json' },
    });
    expect(r.status).toBe(401);
  });
  it('a raw `..` path on /assets/ is refused with a JSON error', async () => {
    for (const target of [
      '/assets/../../package.json',
      '/assets/..%2f..%2fpackage.json',
      '/assets/%2e%2e%2f%2e%2e%2fsrc%2fweb%2fapp.ts',
    ]) {
      const res = await raw(h.listener!.port, target);
      const status = Number(res.split(' ')[1]);
      expect([400, 404]).toContain(status);
      expect(res).toMatch(/content-type: application\/json/i);
      expect(res).not.toContain('"name": "tidepool"');
    }
  });
});

describe('trusted proxy (127.0.0.1/32)', () => {
  let h: WebHarness;
  beforeAll(async () => {
    h = await startWeb(db, { listen: true, web: `${sso}\ntrusted_proxies = ["127.0.0.1/32", "10.0.0.0/8"]` });
  });
  afterAll(async () => {
    await h?.stop();
  });

  it('X-Forwarded-For is read right to left, skipping trusted hops', async () => {
    await fetch(`${h.base}/api/auth/config`, { headers: { 'x-forwarded-for': '6.6.6.6, 198.51.100.4, 10.1.1.1' } });
    expect((await lastAccess(h, '/api/auth/config')).peer).toBe('198.51.100.4');
  });
  it('RFC 7239 Forwarded is read the same way, with ports', async () => {
    await fetch(`${h.base}/api/version?x=1`, {
      headers: { forwarded: 'for="[2001:db8::5]:4711", for=10.2.2.2;proto=https' },
    });
    expect((await lastAccess(h, '/api/version')).peer).toBe('[2001:db8::5]:4711');
  });
  it('sso_require_https: a token passes only with X-Forwarded-Proto: https from the trusted proxy', async () => {
    const t = await signToken(key, { aud: 'console', preferred_username: 'alice' });
    const plain = await fetch(`${h.base}/api/pools`, {
      headers: { authorization: `Bearer ${t}`, accept: 'application/json' },
    });
    expect(plain.status).toBe(401);
    const secure = await fetch(`${h.base}/api/pools`, {
      headers: { authorization: `Bearer ${t}`, 'x-forwarded-proto': 'https' },
    });
    expect(secure.status).toBe(200);
    const viaQuery = await fetch(`${h.base}/api/pools?token=${t}`, { headers: { accept: 'application/json' } });
    expect(viaQuery.status).toBe(401);
  });
});
