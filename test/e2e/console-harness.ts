// E2E harness for the console pages: one PostgreSQL, one pooler with its web listener, one Chromium, real node-postgres traffic.
import { existsSync } from 'node:fs';
import path from 'node:path';
import type { Browser, BrowserContext, Locator, Page } from 'playwright-core';
import pg from 'pg';
import { DEFAULT_STATIC_DIR } from '../../src/pooler/web/app.js';
import { startWebListener, type WebListener } from '../../src/pooler/web/server.js';
import { startTestPooler, type TestPooler } from '../helpers/pooler.js';
import { startTestPostgres, type TestPostgres } from '../helpers/postgres.js';
import { expectScreenshot } from '../helpers/screenshots.js';
import { WEB_ADMIN, webToml } from '../helpers/web.js';
import { launchChromium, seedLocalStorage } from '../helpers/web-browser.js';
import { makeKeyDir, makeRsaKey, signToken, type KeyDir, type TestKey } from '../helpers/web-sso.js';

export const DESKTOP = { width: 1440, height: 900 };
export const PHONE = { width: 390, height: 844 };
export const WALL = { width: 1920, height: 1080 };

export type ConsoleRole = 'admin' | 'sso' | 'anonymous';

export interface ConsoleEnv {
  db: TestPostgres;
  tp: TestPooler;
  web: WebListener;
  base: string;
  browser: Browser;
  key: TestKey;
  /** Opens a page (new context) as the role, at `url`, in the viewport. */
  open(role: ConsoleRole, url: string, viewport?: { width: number; height: number }): Promise<Page>;
  /** Stops the pooler and its web listener (the console is left without an answer). */
  stopPooler(): Promise<void>;
  /** Starts a pooler again with the web listener on the same port. */
  startPooler(): Promise<void>;
  close(): Promise<void>;
}

/** The [web] lines: anonymous reads, SSO with an admin group, a small log ring (so it wraps in a test). */
function webLines(pem: string): string {
  return `ui_anonymous = true
log_tap_max_entries = 300
sso_enabled = true
sso_public_key_file = "${pem}"
sso_audience = ["console"]
sso_admin_groups = ["dba"]`;
}

export async function startConsoleEnv(): Promise<ConsoleEnv> {
  if (!existsSync(path.join(DEFAULT_STATIC_DIR, 'index.html')))
    throw new Error(`console bundle missing in ${DEFAULT_STATIC_DIR}: run npm run build`);
  const keys: KeyDir = makeKeyDir();
  const key = makeRsaKey();
  const pem = keys.write('sso.pem', key.publicPem);
  const db = await startTestPostgres();
  const contexts = new Set<BrowserContext>();
  let tp: TestPooler | null = null;
  let web: WebListener | null = null;
  let browser: Browser | null = null;
  // Rates over 1 s periods (default 15 s): charts of the test's traffic fill within a few polls.
  const toml = () => webToml(db, { web: webLines(pem) }).replace('[general]\n', '[general]\nstats_period = 1000\n');
  try {
    tp = await startTestPooler(toml());
    web = await startWebListener(tp.pooler, { port: 0, host: '127.0.0.1' });
    browser = await launchChromium();
  } catch (err) {
    await web?.close();
    await tp?.stop();
    await db.cleanup();
    keys.cleanup();
    throw err;
  }
  const port = web.port;
  const env: ConsoleEnv = {
    db,
    tp,
    web,
    browser,
    key,
    base: `http://127.0.0.1:${port}`,
    async open(role, url, viewport = DESKTOP) {
      const context = await env.browser.newContext({ viewport });
      contexts.add(context);
      context.on('close', () => contexts.delete(context));
      const storage: Record<string, string> = {};
      if (role === 'admin')
        storage['pooler.admin-auth'] = Buffer.from(`${WEB_ADMIN.user}:${WEB_ADMIN.password}`).toString('base64');
      if (role === 'sso')
        storage['pooler.sso-token'] = await signToken(key, {
          aud: 'console',
          preferred_username: 'olga',
          groups: ['support'],
          expiresIn: 3600,
        });
      await seedLocalStorage(context, storage);
      const page = await context.newPage();
      await page.goto(env.base + url);
      const label = role === 'admin' ? 'admin' : role === 'sso' ? 'sso: olga' : 'anonymous';
      // The wall has no sidebar (and no role label): it is ready when it shows its numbers.
      if (url.startsWith('/wall')) await page.getByTestId('wall-numbers').waitFor();
      else await page.getByTestId('role-label').filter({ hasText: label }).waitFor();
      return page;
    },
    async stopPooler() {
      await env.web.close();
      await env.tp.stop();
    },
    async startPooler() {
      env.tp = await startTestPooler(toml());
      env.web = await startWebListener(env.tp.pooler, { port, host: '127.0.0.1' });
    },
    async close() {
      for (const c of [...contexts]) await c.close();
      await env.browser.close();
      await env.web.close();
      await env.tp.stop();
      await db.cleanup();
      keys.cleanup();
    },
  };
  return env;
}

/**
 * CSS that blanks what changes between runs but keeps the layout around it: data-live text (a card's detail line
 * on one line, so that its length cannot change the layout: a pool's Queries/s card adds "· p95 ..." once a poll
 * has a p95, which wrapped on a phone and moved everything below), chart plots, and a card's tone (the Errors card turns red while
 * the last poll's error rate is above 0, which on a loaded machine it still was after the traffic stopped), as the wall's
 * figures' state colours.
 */
export const LIVE_CSS =
  '[data-live], [data-live] * { color: transparent !important; } .card { min-width: 0; } ' +
  '.card .detail[data-live] { white-space: nowrap !important; overflow: hidden !important; } .chart-plot { visibility: hidden !important; } ' +
  '.card.bad, .card.warn { border-left-color: transparent !important; } ' +
  '.big-number.ok, .big-number.warn, .big-number.bad { border-left-color: transparent !important; background: var(--panel) !important; }';

/** Hides the live parts of the page for a screenshot (see LIVE_CSS); returns the masks to pass as well (none). */
export async function hideLive(page: Page): Promise<Locator[]> {
  await page.evaluate((css) => {
    if (document.getElementById('e2e-live-css')) return;
    const style = document.createElement('style');
    style.id = 'e2e-live-css';
    style.textContent = css;
    document.head.appendChild(style);
  }, LIVE_CSS);
  return [];
}

/** Waits until nothing on the page is loading and every chart has drawn (two polls at least), so a screenshot is of a settled page. */
export async function settled(page: Page): Promise<void> {
  await page.waitForFunction(
    () =>
      document.querySelectorAll('.state.loading').length === 0 &&
      ![...document.querySelectorAll('.chart-empty')].some((e) => e.textContent?.startsWith('Collecting data')),
    undefined,
    { timeout: 20_000 },
  );
}

export async function showLive(page: Page): Promise<void> {
  await page.evaluate(() => document.getElementById('e2e-live-css')?.remove());
}

/** Screenshots the page at the desktop and the phone size (`<name>-desktop`, `<name>-phone`), then restores the desktop size. */
export async function shootBoth(
  page: Page,
  name: string,
  ready: () => Promise<unknown>,
  tolerance?: number,
  mask: Locator[] = [],
): Promise<void> {
  for (const [suffix, size] of [
    ['desktop', DESKTOP],
    ['phone', PHONE],
  ] as const) {
    await page.setViewportSize(size);
    await ready();
    await settled(page);
    await page.evaluate(() => document.fonts.ready);
    // E2E_RAW_SHOTS=<dir> also keeps each page as it looked, live values included, for a person to look at.
    const raw = process.env['E2E_RAW_SHOTS'];
    if (raw) await page.screenshot({ path: path.join(raw, `${name}-${suffix}.png`) });
    await expectScreenshot(page, `${name}-${suffix}`, {
      mask: [...(await hideLive(page)), ...mask],
      ...(tolerance === undefined ? {} : { tolerance }),
    });
    await showLive(page);
  }
  await page.setViewportSize(DESKTOP);
}

export interface Traffic {
  clients: pg.Client[];
  /** Queries and errors sent so far. */
  counts: { queries: number; errors: number };
  /** Stops the query loops; the clients stay connected, idle. */
  stop(): Promise<void>;
  end(): Promise<void>;
}

/** The applications the traffic runs as: name, user and number of clients. */
export const APPS = [
  { name: 'billing', user: 'md5user', password: 'md5pass', clients: 2 },
  { name: 'web', user: 'scramuser', password: 'scrampass', clients: 3 },
  { name: 'reports', user: 'md5user', password: 'md5pass', clients: 1 },
] as const;

/** node-postgres clients of each app running simple, prepared and failing queries in a loop through the pooler. */
export async function startTraffic(port: number): Promise<Traffic> {
  const clients: pg.Client[] = [];
  for (const app of APPS) {
    for (let i = 0; i < app.clients; i++) {
      const c = new pg.Client({
        host: '127.0.0.1',
        port,
        database: 'app',
        user: app.user,
        password: app.password,
        application_name: app.name,
      });
      c.on('error', () => undefined);
      await c.connect();
      clients.push(c);
    }
  }
  const counts = { queries: 0, errors: 0 };
  let running = true;
  const loops = clients.map(async (c, i) => {
    let n = 0;
    while (running) {
      n++;
      if (i % 3 === 0) await c.query({ name: 'console_by_id', text: 'select $1::int + 1 as next', values: [n] });
      else await c.query('select 1');
      counts.queries++;
      if (n % 25 === 0) {
        await c.query('select 1/0').catch(() => undefined);
        counts.errors++;
      }
      await new Promise((r) => setTimeout(r, 20));
    }
  });
  return {
    clients,
    counts,
    async stop() {
      running = false;
      await Promise.all(loops);
    },
    async end() {
      running = false;
      await Promise.all(loops);
      await Promise.all(clients.map((c) => c.end().catch(() => undefined)));
    },
  };
}
