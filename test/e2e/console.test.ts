// The console in Debian's Chromium against a real listener, pooler and PostgreSQL: Basic and SSO sign-in, typed PAUSE/RESUME/RECONNECT/RELOAD, role views, 401 and 403.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import pg from 'pg';
import { DEFAULT_STATIC_DIR } from '../../src/pooler/web/app.js';
import { startTestPostgres, type TestPostgres } from '../helpers/postgres.js';
import { startWeb, WEB_ADMIN, webToml, type WebHarness } from '../helpers/web.js';
import { launchChromium, seedLocalStorage, startSsoProxy, type SsoProxy } from '../helpers/web-browser.js';
import { makeKeyDir, makeRsaKey, signToken } from '../helpers/web-sso.js';
import { expectScreenshot } from '../helpers/screenshots.js';
import { DESKTOP, hideLive, settled } from './console-harness.js';

/** Each page compared with its kept screenshot (test/helpers/screenshots.ts; UPDATE_SCREENSHOTS=1 rewrites them); live values blanked. */
const shot = async (page: Page, name: string) => {
  await settled(page);
  await expectScreenshot(page, name, { mask: await hideLive(page) });
};
const keys = makeKeyDir();
const key = makeRsaKey();
const pem = keys.write('sso.pem', key.publicPem);
let db: TestPostgres;
let h: WebHarness;
let proxy: SsoProxy;
let browser: Browser;
let context: BrowserContext | null = null;

const ssoWeb = (proxyUrl: string) => `sso_enabled = true
sso_public_key_file = "${pem}"
sso_audience = ["console"]
sso_admin_groups = ["dba"]
sso_proxy_url = "${proxyUrl}"`;

beforeAll(async () => {
  if (!existsSync(path.join(DEFAULT_STATIC_DIR, 'index.html')))
    throw new Error(`console bundle missing in ${DEFAULT_STATIC_DIR}: run npm run build`);
  db = await startTestPostgres();
  proxy = await startSsoProxy(key, 'console');
  h = await startWeb(db, { listen: true, web: ssoWeb(proxy.url) });
  browser = await launchChromium();
});
afterEach(async () => {
  await context?.close();
  context = null;
  proxy.user.name = 'alice';
  proxy.user.groups = [];
  proxy.user.lifetime = 600;
  proxy.user.fail = false;
  proxy.issued.length = 0;
  proxy.failures = 0;
});
afterAll(async () => {
  await browser?.close();
  await h?.stop();
  await proxy?.close();
  await db?.cleanup();
  keys.cleanup();
});

async function open(url = '/'): Promise<Page> {
  context = await browser.newContext({ viewport: DESKTOP });
  const page = await context.newPage();
  await page.goto(h.base + url);
  return page;
}

async function signInBasic(page: Page, remember = false): Promise<void> {
  await page.getByRole('dialog').getByLabel('User').fill(WEB_ADMIN.user);
  await page.getByLabel('Password').fill(WEB_ADMIN.password);
  if (remember) await page.getByLabel('Remember me').check();
  await page.getByRole('dialog').getByRole('button', { name: 'Sign in', exact: true }).click();
  await expect.poll(() => page.getByTestId('role-label').textContent(), { timeout: 10_000 }).toBe('admin');
}

const paused = (user: string, on: WebHarness = h) => {
  const t = on.tp.pooler.show('POOLS');
  const row = t.rows.find((r) => r[t.columns.indexOf('database')] === 'app' && r[t.columns.indexOf('user')] === user)!;
  return row[t.columns.indexOf('paused')];
};

/** PostgreSQL pids of the pool's server connections, as SHOW SERVERS lists them. */
const serverPids = (user: string) => {
  const t = h.tp.pooler.show('SERVERS');
  const col = (n: string) => t.columns.indexOf(n);
  return t.rows
    .filter((r) => r[col('database_name')] === 'app' && r[col('user')] === user)
    .map((r) => r[col('server_process_id')]);
};

async function confirmAction(page: Page, verb: string, word: string, shotName?: string): Promise<void> {
  await page.getByRole('button', { name: verb, exact: true }).click();
  const dialog = page.getByRole('dialog');
  const confirm = dialog.getByRole('button', { name: 'Confirm' });
  await expect.poll(() => confirm.isDisabled(), { timeout: 10_000 }).toBe(true);
  await dialog.getByLabel('confirmation').fill(word.slice(0, -1));
  expect(await confirm.isDisabled()).toBe(true);
  await dialog.getByLabel('confirmation').fill(word);
  expect(await confirm.isDisabled()).toBe(false);
  if (shotName) await shot(page, shotName);
  await confirm.click();
}

describe('console', () => {
  it('Basic sign-in, overview, pools, typed PAUSE and RESUME of one pool', async () => {
    const page = await open('/');
    await page.getByRole('dialog').waitFor();
    await shot(page, 'sign-in');
    await signInBasic(page);
    await page.getByTestId('overview-cards').waitFor();
    const processCards = page.getByTestId('process-cards');
    await expect.poll(() => processCards.textContent(), { timeout: 10_000 }).toContain(`pid ${process.pid}`);

    await page.getByRole('link', { name: 'Pools', exact: true }).click();
    const table = page.getByTestId('pools-table');
    await table.waitFor();
    expect(await table.textContent()).toContain('md5user');
    expect(page.url()).toBe(`${h.base}/pools`);

    await table.getByRole('row').filter({ hasText: 'md5user' }).click();
    await page.getByRole('heading', { name: 'app/md5user' }).waitFor();
    expect(page.url()).toBe(`${h.base}/pools/app/md5user`);
    await settled(page);
    await confirmAction(page, 'PAUSE', 'app', 'pause-confirmation');
    await page.getByTestId('action-result').waitFor();
    expect(await page.getByTestId('action-result').textContent()).toContain('PAUSE');
    expect(paused('md5user')).toBe(true);
    expect(paused('scramuser')).toBe(false);
    await page.getByRole('button', { name: 'Close' }).click();
    await expect.poll(() => page.getByTestId('pool-state').textContent(), { timeout: 10_000 }).toBe('paused');
    await shot(page, 'pool-detail-paused');

    await confirmAction(page, 'RESUME', 'app');
    await page.getByTestId('action-result').waitFor();
    expect(paused('md5user')).toBe(false);
    await page.getByRole('button', { name: 'Close' }).click();
    await expect.poll(() => page.getByTestId('pool-state').textContent(), { timeout: 10_000 }).toBe('running');
  });

  it('PAUSE with a transaction open: the dialog counts it and its waiting clients live, ends at "no transaction running"; Resume in the dialog; Escape closes', async () => {
    const page = await open('/pools/app/md5user');
    await signInBasic(page);
    await page.getByRole('heading', { name: 'app/md5user' }).waitFor();
    await settled(page);
    // Escape closes the typed confirmation without acting.
    await page.getByRole('button', { name: 'PAUSE', exact: true }).click();
    await page.getByRole('dialog').getByLabel('confirmation').fill('app');
    await page.keyboard.press('Escape');
    await expect.poll(() => page.getByRole('dialog').count(), { timeout: 10_000 }).toBe(0);
    expect(paused('md5user')).toBe(false);

    const client = (name: string) =>
      new pg.Client({
        host: '127.0.0.1',
        port: h.tp.port,
        database: 'app',
        user: 'md5user',
        password: 'md5pass',
        application_name: name,
      });
    const tx = client('pause-tx');
    const late = client('pause-late');
    await tx.connect();
    await late.connect();
    try {
      await tx.query('BEGIN');
      await tx.query('select 1');
      await confirmAction(page, 'PAUSE', 'app');
      const status = page.getByTestId('pause-status');
      await expect.poll(() => status.textContent(), { timeout: 10_000 }).toBe('paused, waiting for 1 transaction');
      expect(paused('md5user')).toBe(true);
      expect(await page.getByTestId('pause-waiting').textContent()).toBe('No client is waiting for a server.');
      // The page behind shows the pause and both clients (the servers table, whose rows depend on earlier tests, painted over).
      await expect.poll(() => page.getByTestId('pool-state').textContent(), { timeout: 10_000 }).toBe('paused');
      await expect
        .poll(() => page.getByTestId('pool-clients').locator('tbody tr').count(), { timeout: 10_000 })
        .toBe(2);
      await settled(page);
      await expectScreenshot(page, 'pause-waiting-for-transactions', {
        mask: [...(await hideLive(page)), page.getByTestId('pool-servers')],
      });
      // A client that asks for a server now waits through the PAUSE; the dialog shows it and for how long.
      let lateDone = false;
      const lateQuery = late.query('select 2 as two').then((r) => {
        lateDone = true;
        return r;
      });
      await expect
        .poll(() => page.getByTestId('pause-waiting').textContent(), { timeout: 10_000 })
        .toMatch(/^1 client waiting for a server, the longest for \d+ s$/);
      await tx.query('COMMIT');
      await expect.poll(() => status.textContent(), { timeout: 10_000 }).toBe('paused: no transaction running');
      expect(lateDone).toBe(false);
      await page.getByRole('dialog').getByRole('button', { name: 'Resume', exact: true }).click();
      await expect
        .poll(() => page.getByTestId('action-result').textContent(), { timeout: 10_000 })
        .toBe('RESUME: RESUME md5user@app');
      expect(paused('md5user')).toBe(false);
      expect((await lateQuery).rows[0]).toEqual({ two: 2 });
      await page.keyboard.press('Escape');
      await expect.poll(() => page.getByRole('dialog').count(), { timeout: 10_000 }).toBe(0);
      await expect.poll(() => page.getByTestId('pool-state').textContent(), { timeout: 10_000 }).toBe('running');
    } finally {
      if (paused('md5user')) h.tp.pooler.resume('app', 'md5user');
      await tx.end();
      await late.end();
    }
  });

  it('RELOAD (on the config page) asks for the word RELOAD', async () => {
    const page = await open('/config');
    await signInBasic(page);
    await confirmAction(page, 'RELOAD', 'RELOAD');
    await page.getByTestId('action-result').waitFor();
    expect(await page.getByTestId('action-result').textContent()).toMatch(/RELOAD: RELOAD done/);
  });

  it('Remember me keeps Basic in localStorage; sign-out clears both keys', async () => {
    const page = await open('/overview');
    await signInBasic(page, true);
    expect(await page.evaluate(() => localStorage.getItem('pooler.admin-auth'))).toBeTruthy();
    await page.reload();
    await expect.poll(() => page.getByTestId('role-label').textContent(), { timeout: 10_000 }).toBe('admin');
    await page.getByRole('button', { name: 'Sign out' }).click();
    expect(
      await page.evaluate(() => [localStorage.getItem('pooler.admin-auth'), localStorage.getItem('pooler.sso-token')]),
    ).toEqual([null, null]);
    await page.getByRole('dialog').waitFor();
  });

  it('fetches omit cookies: a valid sso_access_token cookie does not sign the console in', async () => {
    context = await browser.newContext();
    const token = await signToken(key, { aud: 'console', preferred_username: 'alice', groups: ['dba'] });
    await context.addCookies([{ name: 'sso_access_token', value: token, url: h.base }]);
    const page = await context.newPage();
    await page.goto(`${h.base}/overview`);
    await page.getByRole('dialog').waitFor();
    expect(await page.getByTestId('role-label').textContent()).toBe('signed out');
  });

  it('SSO: the token comes back in ?token=, is stored and removed from the URL; an Sso user sees no actions', async () => {
    const page = await open('/pools');
    await page.getByRole('button', { name: 'Sign in via SSO' }).click();
    await expect.poll(() => page.getByTestId('role-label').textContent(), { timeout: 10_000 }).toBe('sso: alice');
    expect(page.url()).toBe(`${h.base}/pools`);
    expect(await page.evaluate(() => localStorage.getItem('pooler.sso-token'))).toBe(proxy.issued.at(-1));
    await page.getByTestId('pools-table').getByRole('row').filter({ hasText: 'scramuser' }).click();
    await page.getByTestId('pool-cards').waitFor();
    expect(await page.getByRole('button', { name: /^(PAUSE|RESUME|RECONNECT)$/ }).count()).toBe(0);
    await page.getByRole('link', { name: 'Config', exact: true }).click();
    await page.getByTestId('config-table').waitFor();
    expect(await page.getByRole('button', { name: 'RELOAD', exact: true }).count()).toBe(0);
  });

  it('an SSO admin demoted while the console is open (admin group removed, RELOAD) gets the 403 banner', async () => {
    proxy.user.name = 'dora';
    proxy.user.groups = ['dba'];
    const page = await open('/pools/app/scramuser');
    await page.getByRole('button', { name: 'Sign in via SSO' }).click();
    await expect.poll(() => page.getByTestId('role-label').textContent(), { timeout: 10_000 }).toBe('sso: dora');
    await page.getByRole('button', { name: 'PAUSE', exact: true }).click();
    await page.getByRole('dialog').getByLabel('confirmation').fill('app');
    h.tp.writeConfig(
      webToml(db, { web: ssoWeb(proxy.url).replace('sso_admin_groups = ["dba"]', 'sso_admin_groups = ["nobody"]') }),
    );
    await h.tp.pooler.reload();
    try {
      await page.getByRole('dialog').getByRole('button', { name: 'Confirm' }).click();
      await page.getByTestId('forbidden-banner').waitFor();
      expect(await page.getByTestId('forbidden-banner').textContent()).toContain('admin role required');
      expect(paused('scramuser')).toBe(false);
      await shot(page, 'forbidden-banner');
    } finally {
      h.tp.writeConfig(webToml(db, { web: ssoWeb(proxy.url) }));
      await h.tp.pooler.reload();
    }
  });

  it("SSO admin group: the sidebar shows sso: <user>; RECONNECT replaces the pool's server connections", async () => {
    const c = new pg.Client({
      host: '127.0.0.1',
      port: h.tp.port,
      database: 'app',
      user: 'scramuser',
      password: 'scrampass',
    });
    await c.connect();
    try {
      const old = (await c.query('select pg_backend_pid() as pid')).rows[0].pid as number;
      expect(serverPids('scramuser')).toEqual([old]);
      proxy.user.name = 'carol';
      proxy.user.groups = ['dba'];
      const page = await open('/pools');
      await page.getByRole('button', { name: 'Sign in via SSO' }).click();
      await expect.poll(() => page.getByTestId('role-label').textContent(), { timeout: 10_000 }).toBe('sso: carol');
      await page.getByTestId('pools-table').getByRole('row').filter({ hasText: 'scramuser' }).click();
      await confirmAction(page, 'RECONNECT', 'app');
      await page.getByTestId('action-result').waitFor();
      expect(await page.getByTestId('action-result').textContent()).toBe('RECONNECT: RECONNECT scramuser@app');
      // The idle server is gone from SHOW SERVERS and from PostgreSQL; the next query gets a new backend.
      expect(serverPids('scramuser')).not.toContain(old);
      await expect
        .poll(() => db.sql(`select count(*) from pg_stat_activity where pid = ${old}`), { timeout: 10_000 })
        .toBe('0');
      const next = (await c.query('select pg_backend_pid() as pid')).rows[0].pid as number;
      expect(next).not.toBe(old);
      expect(serverPids('scramuser')).toEqual([next]);
    } finally {
      await c.end();
    }
  });

  /** Opens the console with localStorage prepared as a previous visit would have left it. */
  async function openWithStorage(url: string, storage: Record<string, string>): Promise<Page> {
    context = await browser.newContext({ viewport: DESKTOP });
    await seedLocalStorage(context, storage);
    const page = await context.newPage();
    await page.goto(h.base + url);
    return page;
  }

  it('silent refresh: a token close to exp is replaced through the hidden /?sso_silent=1 frame', async () => {
    const short = await signToken(key, { aud: 'console', preferred_username: 'alice', expiresIn: 60 });
    const page = await openWithStorage('/overview', { 'pooler.sso-token': short });
    await expect
      .poll(() => page.evaluate(() => localStorage.getItem('pooler.sso-token')), { timeout: 20_000 })
      .not.toBe(short);
    expect(proxy.issued).toHaveLength(1);
    expect(await page.evaluate(() => localStorage.getItem('pooler.sso-token'))).toBe(proxy.issued[0]);
    await expect.poll(() => page.getByTestId('role-label').textContent(), { timeout: 10_000 }).toBe('sso: alice');
    expect(page.url()).toBe(`${h.base}/overview`);
  });

  it('silent refresh failure with a Basic credential drops the token and falls back to Basic', async () => {
    proxy.user.fail = true;
    const short = await signToken(key, { aud: 'console', preferred_username: 'alice', expiresIn: 60 });
    const basic = Buffer.from(`${WEB_ADMIN.user}:${WEB_ADMIN.password}`).toString('base64');
    const page = await openWithStorage('/overview', { 'pooler.sso-token': short, 'pooler.admin-auth': basic });
    await expect
      .poll(() => page.evaluate(() => localStorage.getItem('pooler.sso-token')), { timeout: 20_000 })
      .toBeNull();
    await expect.poll(() => page.getByTestId('role-label').textContent(), { timeout: 10_000 }).toBe('admin');
    expect(await page.evaluate(() => localStorage.getItem('pooler.admin-auth'))).toBe(basic);
  });

  it('silent refresh failure without Basic goes through the SSO proxy again; a refusal there asks to sign in', async () => {
    const short = await signToken(key, { aud: 'console', preferred_username: 'alice', expiresIn: 60 });
    proxy.user.fail = true;
    const page = await openWithStorage('/pools', { 'pooler.sso-token': short });
    await page.getByRole('dialog').waitFor({ timeout: 20_000 });
    expect(await page.getByRole('dialog').textContent()).toContain('SSO sign-in failed: denied');
    expect(proxy.failures).toBe(2);
    expect(page.url()).toBe(`${h.base}/pools`);
    expect(await page.evaluate(() => localStorage.getItem('pooler.sso-token'))).toBeNull();
    proxy.user.fail = false;
    await page.getByRole('button', { name: 'Sign in via SSO' }).click();
    await expect.poll(() => page.getByTestId('role-label').textContent(), { timeout: 10_000 }).toBe('sso: alice');
  });

  it('a 401 during use reopens the sign-in modal', async () => {
    const page = await open('/pools');
    await signInBasic(page);
    await page.getByTestId('pools-table').waitFor();
    h.tp.writeConfig(
      webToml(db, { web: ssoWeb(proxy.url) }).replace(
        `admin_password = "${WEB_ADMIN.password}"`,
        'admin_password = "rotated-password"',
      ),
    );
    await h.tp.pooler.reload();
    try {
      await page.getByRole('dialog').waitFor();
      expect(await page.getByRole('dialog').textContent()).toContain('Sign in');
    } finally {
      h.tp.writeConfig(webToml(db, { web: ssoWeb(proxy.url) }));
      await h.tp.pooler.reload();
    }
  });
});

describe('console with ui_anonymous = true', () => {
  it('reads without signing in; no actions; Logs and Caches ask for a sign-in and never fetch', async () => {
    const anon = await startWeb(db, { listen: true, web: 'ui_anonymous = true' });
    try {
      context = await browser.newContext({ viewport: DESKTOP });
      const page = await context.newPage();
      const personal: string[] = [];
      page.on('request', (r) => {
        if (/\/api\/(logs|prepared|interner|top)/.test(r.url())) personal.push(r.url());
      });
      await page.goto(`${anon.base}/pools`);
      await page.getByTestId('pools-table').waitFor();
      expect(await page.getByTestId('role-label').textContent()).toBe('anonymous');
      await page.getByRole('button', { name: 'Sign in', exact: true }).click();
      await page.getByRole('dialog').getByRole('button', { name: 'Cancel' }).click();
      expect(await page.getByRole('dialog').count()).toBe(0);
      await page.getByTestId('pools-table').getByRole('row').filter({ hasText: 'md5user' }).click();
      await page.getByTestId('pool-cards').waitFor();
      expect(await page.getByRole('button', { name: /^(PAUSE|RESUME|RECONNECT)$/ }).count()).toBe(0);
      for (const name of ['Logs', 'Caches']) {
        await page.getByRole('link', { name: new RegExp(`^${name}`) }).click();
        await page.getByTestId('needs-sign-in').waitFor();
      }
      await page.getByTestId('needs-sign-in').getByRole('button', { name: 'Sign in' }).click();
      await expect
        .poll(() => page.getByRole('dialog').textContent(), { timeout: 10_000 })
        .toContain('need an Sso or Admin sign-in');
      expect(personal).toEqual([]);
      expect(paused('md5user', anon)).toBe(false);
    } finally {
      await context?.close();
      context = null;
      await anon.stop();
    }
  });
});
