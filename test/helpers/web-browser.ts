// Test helper: Debian's Chromium through playwright-core, and a stand-in SSO proxy that signs tokens with a test key.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { chromium, type Browser, type BrowserContext } from 'playwright-core';
import { signToken, type TestKey } from './web-sso.js';

export const CHROMIUM = '/usr/bin/chromium';

export async function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
  });
}

/** Seeds localStorage with `items` once per browser tab, as a previous visit would have left it (reloads keep what the page wrote since). */
export async function seedLocalStorage(context: BrowserContext, items: Record<string, string>): Promise<void> {
  await context.addInitScript((seed: Record<string, string>) => {
    if (sessionStorage.getItem('seeded')) return;
    sessionStorage.setItem('seeded', '1');
    for (const [k, v] of Object.entries(seed)) localStorage.setItem(k, v);
  }, items);
}

export interface SsoProxy {
  url: string;
  /** Who the next sign-in is, the token lifetime in seconds, or `fail` to answer with ?sso_error=. */
  user: { name: string; groups: string[]; lifetime: number; fail: boolean };
  issued: string[];
  /** Sign-ins answered with ?sso_error=. */
  failures: number;
  close(): Promise<void>;
}

/**
 * GET /login?redirect_to=<url>: signs a JWT for `user` and redirects back with ?token=<JWT> (or ?sso_error=denied),
 * as an identity-provider-backed SSO proxy would once the user is signed in there.
 */
export async function startSsoProxy(key: TestKey, audience: string): Promise<SsoProxy> {
  const proxy = {
    user: { name: 'alice', groups: [] as string[], lifetime: 600, fail: false },
    issued: [] as string[],
    failures: 0,
  };
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://proxy');
    const back = url.searchParams.get('redirect_to');
    if (url.pathname !== '/login' || !back) {
      res.writeHead(404).end('not found');
      return;
    }
    const target = new URL(back);
    const respond = (param: string, value: string) => {
      target.searchParams.set(param, value);
      res.writeHead(302, { location: target.toString() }).end();
    };
    if (proxy.user.fail) {
      proxy.failures++;
      return respond('sso_error', 'denied');
    }
    signToken(key, {
      aud: audience,
      preferred_username: proxy.user.name,
      groups: proxy.user.groups,
      expiresIn: proxy.user.lifetime,
      claims: { n: proxy.issued.length },
    }).then(
      (token) => {
        proxy.issued.push(token);
        respond('token', token);
      },
      (err: Error) => res.writeHead(500).end(err.message),
    );
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/login`,
    get user() {
      return proxy.user;
    },
    issued: proxy.issued,
    get failures() {
      return proxy.failures;
    },
    set failures(n: number) {
      proxy.failures = n;
    },
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
