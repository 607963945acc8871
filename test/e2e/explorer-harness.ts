// E2E harness for the log explorer: a single-mode log store holding a known data set, the UI backend serving the bundle, Chromium.
import { existsSync } from 'node:fs';
import path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { bulk, ndjson, ROOT, startLogstore, type LogstoreProcess } from '../helpers/logstore.js';
import { startUi, type UiProcess } from '../helpers/logstore-ui.js';
import { expectScreenshot } from '../helpers/screenshots.js';
import { launchChromium, seedLocalStorage } from '../helpers/web-browser.js';
import { DESKTOP, PHONE } from './console-harness.js';

export { DESKTOP, PHONE };

export const N = 10_000;
/** Documents 720 ms apart over two hours of a fixed day: the views (and screenshots) do not depend on today's date. */
export const T0 = Date.UTC(2026, 2, 2, 10, 0, 0);
export const STEP = 720;
export const FROM = '2026-03-02T09:55:00.000Z';
export const TO = '2026-03-02T12:05:00.000Z';
export const RANGE = `from=${encodeURIComponent(FROM)}&to=${encodeURIComponent(TO)}`;

export const SERVICES = ['api', 'api', 'api', 'web', 'web', 'db', 'auth'] as const;
export const LEVELS = ['info', 'info', 'info', 'info', 'warn', 'error'] as const;

export interface Doc {
  timestamp: string;
  service: string;
  level: string;
  status: string;
  latency_ms: string;
  host: string;
  user: string;
  message: string;
  n: string;
}

export const DOCS: Doc[] = Array.from({ length: N }, (_, i) => {
  const level = LEVELS[(i * 7) % LEVELS.length]!;
  return {
    timestamp: new Date(T0 + i * STEP).toISOString(),
    service: SERVICES[i % SERVICES.length]!,
    level,
    status: level === 'error' ? '500' : i % 11 === 0 ? '404' : '200',
    latency_ms: String(5 + ((i * 37) % 400)),
    host: `host-${i % 5}`,
    user: `user-${String(i % 1500).padStart(4, '0')}`,
    message: `${['GET', 'POST', 'PUT'][i % 3]} /api/items/${i % 40} ${level === 'error' ? 'failed' : 'ok'}`,
    n: String(i),
  };
});

/** Documents newest first, as the explorer lists them. */
export const NEWEST_FIRST = [...DOCS].reverse();

export interface ExplorerEnv {
  store: LogstoreProcess;
  ui: UiProcess;
  browser: Browser;
  /** Opens a page (new context, so its own local storage) at `url` and waits for the first search to finish. */
  open(url: string, viewport?: { width: number; height: number }, storage?: Record<string, string>): Promise<Page>;
  close(): Promise<void>;
}

const BUNDLE = path.join(ROOT, 'ui', 'dist', 'explorer', 'index.html');

export async function startExplorerEnv(opts: { uiLimits?: Record<string, unknown> } = {}): Promise<ExplorerEnv> {
  if (!existsSync(BUNDLE)) throw new Error(`explorer bundle missing (${BUNDLE}): run npm run build`);
  const contexts = new Set<BrowserContext>();
  let store: LogstoreProcess | null = null;
  let ui: UiProcess | null = null;
  let browser: Browser | null = null;
  try {
    store = await startLogstore();
    for (let i = 0; i < N; i += 2500) {
      const r = await bulk(store.url, ndjson(DOCS.slice(i, i + 2500)));
      if (r.body.errors)
        throw new Error(`bulk failed: ${JSON.stringify(r.body.items.find((x) => Object.values(x)[0]!.error))}`);
    }
    ui = await startUi({ logstoreAddrs: [store.grpcAddr], limits: { ...opts.uiLimits } });
    browser = await launchChromium();
  } catch (err) {
    await ui?.cleanup();
    await store?.cleanup();
    throw err;
  }
  const env: ExplorerEnv = {
    store,
    ui,
    browser,
    async open(url, viewport = DESKTOP, storage = {}) {
      const context = await env.browser.newContext({ viewport, acceptDownloads: true });
      contexts.add(context);
      context.on('close', () => contexts.delete(context));
      await seedLocalStorage(context, storage);
      const page = await context.newPage();
      await page.goto(env.ui.url + url);
      await idle(page);
      return page;
    },
    async close() {
      for (const c of [...contexts]) await c.close();
      await env.browser.close();
      await env.ui.cleanup();
      await env.store.cleanup();
    },
  };
  return env;
}

/** Waits until the page's search has answered. */
export async function idle(page: Page): Promise<void> {
  await page.locator('[data-testid="app"][data-loading="false"]').waitFor({ timeout: 30_000 });
}

/** Does `act` and waits for the search it starts to be answered and shown. */
export async function searched(page: Page, act: () => Promise<unknown>): Promise<void> {
  const answered = page.waitForResponse(
    (r) =>
      r.url().endsWith('/api/v1/search') &&
      r.request().method() === 'POST' &&
      !JSON.parse(r.request().postData() ?? '{}').offset,
  );
  await act();
  await answered;
  await idle(page);
}

/** The view's URL parameters. */
export function params(page: Page): URLSearchParams {
  return new URL(page.url()).searchParams;
}

/** Screenshots at 1440x900 and 390x844 (`explorer-<name>-desktop|phone`), timings masked; restores the desktop size. */
export async function shootBoth(page: Page, name: string): Promise<void> {
  for (const [suffix, size] of [
    ['desktop', DESKTOP],
    ['phone', PHONE],
  ] as const) {
    await page.setViewportSize(size);
    await page.waitForTimeout(150);
    await page.evaluate(() => document.fonts.ready);
    const raw = process.env['E2E_RAW_SHOTS'];
    if (raw) await page.screenshot({ path: path.join(raw, `explorer-${name}-${suffix}.png`) });
    await expectScreenshot(page, `explorer-${name}-${suffix}`, { mask: [page.locator('[data-live]')] });
  }
  await page.setViewportSize(DESKTOP);
}

/** What the explorer's test modules share: one environment for the whole file. */
export interface ExplorerShared {
  env: ExplorerEnv;
}

export const between = (from: string, to: string) => (d: Doc) => d.timestamp >= from && d.timestamp <= to;
export const total = async (page: Page) => Number((await page.getByTestId('total').textContent())!.replace(/,/g, ''));
export const rowsInDom = (page: Page) => page.getByTestId('result-row').count();

/** Types a query into the editor (replacing what is there) and runs it with Enter. */
export async function runQuery(page: Page, q: string): Promise<void> {
  const input = page.getByTestId('query-input');
  await input.fill(q);
  await input.press('Escape');
  await searched(page, () => input.press('Enter'));
}
