// The console tells the truth when PostgreSQL is down (pool page, overview, wall, servers) and when the pooler itself
// stops answering (a frozen process): Chromium against a pooler run as a child process, so it can be stopped by signal.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../src/launcher/embedded-postgres.js';
import { appPoolToml, startChildPooler, type ChildPooler } from '../helpers/pooler.js';
import { startTestPostgres, type TestPostgres } from '../helpers/postgres.js';
import { WEB_ADMIN } from '../helpers/web.js';
import { launchChromium } from '../helpers/web-browser.js';
import { until } from '../helpers/operator.js';

let db: TestPostgres;
let pooler: ChildPooler;
let browser: Browser;
let dir: string;
let port: number;
let base: string;
const contexts = new Set<BrowserContext>();

beforeAll(async () => {
  db = await startTestPostgres();
  dir = mkdtempSync(path.join(os.tmpdir(), 'tidepool-health-'));
  port = await freePort();
  const webPort = await freePort();
  base = `http://127.0.0.1:${webPort}`;
  const file = path.join(dir, 'pooler.toml');
  writeFileSync(
    file,
    `
[general]
host = "127.0.0.1"
port = ${port}
admin_username = "${WEB_ADMIN.user}"
admin_password = "${WEB_ADMIN.password}"
log_level = "info"
connect_timeout = "2s"
stats_period = "1s"

[web]
enabled = true
host = "127.0.0.1"
port = ${webPort}
ui = true
ui_anonymous = true
${appPoolToml(db)}`,
  );
  pooler = await startChildPooler(file, port);
  browser = await launchChromium();
});

afterAll(async () => {
  for (const c of [...contexts]) await c.close();
  await browser?.close();
  await pooler?.stop();
  await db?.cleanup();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function open(url: string): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
  contexts.add(context);
  const page = await context.newPage();
  await page.goto(base + url);
  return page;
}

async function api<T>(p: string): Promise<T> {
  const r = await fetch(base + p, { headers: { accept: 'application/json' } });
  expect(r.status).toBe(200);
  return (await r.json()) as T;
}

type ApiRow = Record<string, unknown>;
const poolRow = async () =>
  (await api<ApiRow[]>('/api/pools')).find((r) => r['database'] === 'app' && r['user'] === 'md5user')!;

/** Clients that keep connecting and querying through the pooler until stopped; their errors are expected. */
function tryingClients(n: number): { queries: () => number; stop(): Promise<void> } {
  let running = true;
  let queries = 0;
  const loops = Array.from({ length: n }, async () => {
    while (running) {
      const c = new pg.Client({ host: '127.0.0.1', port, database: 'app', user: 'md5user', password: 'md5pass' });
      c.on('error', () => undefined);
      try {
        await c.connect();
        while (running) {
          await c.query('SELECT 1');
          queries++;
          await new Promise((r) => setTimeout(r, 20));
        }
      } catch {
        await new Promise((r) => setTimeout(r, 100));
      } finally {
        await c.end().catch(() => undefined);
      }
    }
  });
  return {
    queries: () => queries,
    async stop() {
      running = false;
      await Promise.all(loops);
    },
  };
}

describe('errors by SQLSTATE', () => {
  it('the pool page lists the errors its clients got, by SQLSTATE, as the API counts them', async () => {
    const c = new pg.Client({ host: '127.0.0.1', port, database: 'app', user: 'scramuser', password: 'scrampass' });
    await c.connect();
    try {
      for (let i = 0; i < 3; i++) await expect(c.query('SELECT 1/0')).rejects.toMatchObject({ code: '22012' });
      await expect(c.query('SELECT * FROM no_such_table')).rejects.toMatchObject({ code: '42P01' });
    } finally {
      await c.end();
    }
    expect(await api('/api/pools/app/scramuser/errors')).toEqual([
      { sqlstate: '22012', count: 3 },
      { sqlstate: '42P01', count: 1 },
    ]);
    const page = await open('/pools/app/scramuser');
    const table = page.getByTestId('pool-errors');
    await table.locator('tbody tr').nth(1).waitFor();
    const rows = await table
      .locator('tbody tr')
      .evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent?.trim())));
    expect(rows).toEqual([
      ['22012', 'division_by_zero', '3'],
      ['42P01', 'undefined_table', '1'],
    ]);
    await page.context().close();
  });
});

describe('PostgreSQL stopped under the console', () => {
  it('the pool page, overview, wall and servers page show the outage and its last error, then the recovery', async () => {
    const clients = tryingClients(3);
    try {
      await until('queries through the pooler', () => clients.queries() > 20);
      const poolPage = await open('/pools/app/md5user');
      const overview = await open('/overview');
      const wall = await open('/wall');
      const servers = await open('/servers');
      await poolPage.getByTestId('pool-state').filter({ hasText: 'running' }).waitFor();
      await overview.getByTestId('overview-cards').waitFor();
      await wall.getByTestId('wall-numbers').waitFor();
      await servers.getByTestId('servers-table').waitFor();
      expect(await overview.getByTestId('overview-outage').count()).toBe(0);

      await db.stop();
      // Within 10 s: connect_timeout (2 s) of failed connects, a maintenance tick, a poll.
      await poolPage.getByTestId('pool-state').filter({ hasText: 'unreachable' }).waitFor({ timeout: 10_000 });
      const outage = poolPage.getByTestId('pool-outage');
      await outage.waitFor({ timeout: 10_000 });
      expect(await outage.textContent()).toMatch(/PostgreSQL unreachable since \d\d:\d\d:\d\d/);
      expect(await outage.textContent()).toMatch(
        /Last error: .+\((ECONNREFUSED|08006|57P01|57P03)\) at \d\d:\d\d:\d\d/,
      );
      await overview
        .getByTestId('overview-outage')
        .filter({ hasText: 'PostgreSQL unreachable since' })
        .waitFor({ timeout: 10_000 });
      expect(await overview.getByTestId('overview-outage').textContent()).toContain('database app');
      const wallOutage = wall.getByTestId('wall-outage');
      await wallOutage.filter({ hasText: 'PostgreSQL unreachable since' }).waitFor({ timeout: 10_000 });
      // Readable across a room: large, red.
      const style = await wallOutage
        .locator('strong')
        .first()
        .evaluate((e) => ({ size: parseFloat(getComputedStyle(e).fontSize), color: getComputedStyle(e).color }));
      expect(style.size).toBeGreaterThanOrEqual(40);
      const [r, g, b] = style.color.match(/\d+/g)!.map(Number);
      expect(r).toBeGreaterThan(150);
      expect(g! + b!).toBeLessThan(r!);
      await servers
        .getByTestId('servers-empty')
        .filter({ hasText: 'PostgreSQL is unreachable (app)' })
        .waitFor({ timeout: 10_000 });
      await servers.getByTestId('servers-outage').waitFor();
      // E2E_RAW_SHOTS=<dir>: the pages during the outage, for a person to look at.
      const raw = process.env['E2E_RAW_SHOTS'];
      if (raw)
        for (const [name, p] of [
          ['pool', poolPage],
          ['overview', overview],
          ['wall', wall],
          ['servers', servers],
        ] as const)
          await p.screenshot({ path: path.join(raw, `outage-${name}.png`) });

      const row = await poolRow();
      expect(row).toMatchObject({
        backend_unreachable: true,
        last_connect_error_code: expect.stringMatching(/^(ECONNREFUSED|08006|57P01|57P03)$/),
      });
      const metrics = await (await fetch(`${base}/metrics`)).text();
      expect(metrics).toMatch(/^pooler_pool_backend_unreachable\{database="app",user="md5user"\} 1$/m);
      const events = await api<ApiRow[]>('/api/events');
      expect(
        events.find((e) => e['kind'] === 'backend_unreachable' && e['pool'] === 'app/md5user')?.['message'],
      ).toContain(`unreachable since ${String(row['unreachable_since'])}`);
      await wall.getByTestId('wall-events').filter({ hasText: 'backend_unreachable' }).waitFor({ timeout: 10_000 });

      await db.restart();
      await poolPage.getByTestId('pool-state').filter({ hasText: 'running' }).waitFor({ timeout: 15_000 });
      await poolPage.getByTestId('pool-outage').waitFor({ state: 'detached' });
      // The last error stays readable after the recovery.
      expect(await poolPage.getByTestId('pool-last-error').textContent()).toMatch(/^Last server connect error: /);
      await overview.getByTestId('overview-outage').waitFor({ state: 'detached', timeout: 10_000 });
      await wallOutage.waitFor({ state: 'detached', timeout: 10_000 });
      await wall.getByTestId('wall-events').filter({ hasText: 'backend_reachable' }).waitFor({ timeout: 10_000 });
      await servers.getByTestId('servers-outage').waitFor({ state: 'detached', timeout: 10_000 });
      expect(
        (await api<ApiRow[]>('/api/events')).some(
          (e) => e['kind'] === 'backend_reachable' && e['pool'] === 'app/md5user',
        ),
      ).toBe(true);
      expect(await (await fetch(`${base}/metrics`)).text()).toMatch(
        /^pooler_pool_backend_unreachable\{database="app",user="md5user"\} 0$/m,
      );
      for (const p of [poolPage, overview, wall, servers]) await p.context().close();
    } finally {
      await clients.stop();
    }
  });
});

describe('the pooler frozen under the console', () => {
  it('says "not answering since" within 10 s of SIGSTOP, marks the figures stale, and clears both after SIGCONT', async () => {
    const page = await open('/overview');
    await page.getByTestId('overview-cards').waitFor();
    const figures = page.getByTestId('page-figures');
    expect(await figures.getAttribute('data-stale')).toBeNull();
    const pid = pooler.child.pid!;
    process.kill(pid, 'SIGSTOP');
    try {
      const banner = page.getByTestId('offline-banner');
      await banner.waitFor({ timeout: 10_000 });
      const text = (await banner.textContent())!;
      // "since": when the first unanswered poll was sent.
      expect(text).toMatch(/The pooler is not answering since \d\d:\d\d:\d\d\./);
      expect(text).toMatch(/The figures below are stale: the last ones received, at \d\d:\d\d:\d\d\./);
      expect(await figures.getAttribute('data-stale')).toBe('');
      expect(Number(await figures.evaluate((e) => getComputedStyle(e).opacity))).toBeLessThan(1);
      // The last figures stay on screen under the banner.
      expect(await page.getByTestId('overview-cards').count()).toBe(1);
    } finally {
      process.kill(pid, 'SIGCONT');
    }
    await page.getByTestId('offline-banner').waitFor({ state: 'detached', timeout: 15_000 });
    expect(await figures.getAttribute('data-stale')).toBeNull();
    await page.context().close();
  });
});
