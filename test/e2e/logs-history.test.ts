// The Logs page opened during an incident shows what already happened: with [logs] ship_to set, the last hour of the
// pooler's records comes back from the log store (/api/logs/history, the tap's filters), before the tap's own records
// (the tap starts at its first request). Real processes: PostgreSQL, the pooler shipping to a real log store, Chromium.
import pg from 'pg';
import type { Browser, BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWebListener, type WebListener } from '../../src/pooler/web/server.js';
import { postJson, startLogstore, type LogstoreProcess } from '../helpers/logstore.js';
import { appPoolToml, startTestPooler, type TestPooler } from '../helpers/pooler.js';
import { startTestPostgres, type TestPostgres } from '../helpers/postgres.js';
import { launchChromium, seedLocalStorage } from '../helpers/web-browser.js';
import { DESKTOP } from './console-harness.js';

const ADMIN_PW = 'history-admin-pw';
let db: TestPostgres;
let store: LogstoreProcess;
let tp: TestPooler;
let web: WebListener;
let base = '';
let browser: Browser;
const contexts = new Set<BrowserContext>();

const toml = (shipTo: string) => `
[general]
host = "127.0.0.1"
port = 0
admin_password = "${ADMIN_PW}"
log_level = "info"
[web]
enabled = true
host = "127.0.0.1"
port = 0
ui = true
[logs]
ship_to = "${shipTo}"
ship_flush_interval = "100ms"
${appPoolToml(db)}`;

const auth = { authorization: `Basic ${Buffer.from(`admin:${ADMIN_PW}`).toString('base64')}` };

async function api(path: string): Promise<{ status: number; body: any }> {
  const res = await fetch(`${base}${path}`, { headers: auth });
  return { status: res.status, body: await res.json() };
}

/** A login with a wrong password: the pooler logs "client authentication failed" at warn. */
async function failLogin(user: string): Promise<void> {
  const c = new pg.Client({ host: '127.0.0.1', port: tp.port, user, password: 'wrong', database: 'app' });
  c.on('error', () => undefined);
  await c.connect().then(
    () => c.end(),
    () => undefined,
  );
}

beforeAll(async () => {
  db = await startTestPostgres();
  store = await startLogstore();
  tp = await startTestPooler(toml(store.url));
  web = await startWebListener(tp.pooler, { host: '127.0.0.1', port: 0 });
  base = `http://127.0.0.1:${web.port}`;
  // Failed logins before anyone opened the Logs page: the tap never saw them.
  for (let i = 0; i < 3; i++) await failLogin('md5user');
  const deadline = Date.now() + 30_000;
  while (
    (
      await postJson<{ total: number }>(`${store.url}/search`, {
        query: { query: '"client authentication failed"' },
        size: 0,
      })
    ).body.total < 3
  ) {
    if (Date.now() > deadline) throw new Error('the failed logins did not reach the log store');
    await new Promise((r) => setTimeout(r, 100));
  }
  browser = await launchChromium();
}, 120_000);

afterAll(async () => {
  for (const c of contexts) await c.close();
  await browser?.close();
  await web?.close();
  await tp?.stop();
  await store?.cleanup();
  await db?.cleanup();
});

describe('the Logs page history from the log store', () => {
  it("GET /api/logs/history answers the last hour with the tap's filters, records the tap never saw", async () => {
    expect(tp.pooler.show('CONFIG').rows.length).toBeGreaterThan(0);
    const warn = await api('/api/logs/history?level=warn');
    expect(warn.status).toBe(200);
    const failed = (
      warn.body.entries as { level: string; msg: string; target: string; fields: Record<string, unknown> }[]
    ).filter((e) => e.msg === 'client authentication failed');
    expect(failed.length).toBeGreaterThanOrEqual(3);
    expect(failed[0]).toMatchObject({ level: 'warn', fields: { user: 'md5user', database: 'app' } });
    // Oldest first, as the tap's; no record below the level.
    const times = (warn.body.entries as { time: string }[]).map((e) => e.time);
    expect([...times].sort()).toEqual(times);
    expect((warn.body.entries as { level: string }[]).every((e) => ['warn', 'error', 'fatal'].includes(e.level))).toBe(
      true,
    );
    // Text and access-log filters are the tap's.
    const text = await api(`/api/logs/history?q=${encodeURIComponent('authentication failed')}`);
    expect((text.body.entries as { msg: string }[]).length).toBeGreaterThanOrEqual(3);
    expect((text.body.entries as { msg: string }[]).every((e) => /authentication failed/.test(JSON.stringify(e)))).toBe(
      true,
    );
    const only = await api('/api/logs/history?access=only');
    expect((only.body.entries as { target: string }[]).every((e) => e.target === 'pooler::web::access')).toBe(true);
    // Bad filters are a 400, an anonymous caller a 401/403, as for /api/logs.
    expect((await api('/api/logs/history?level=loud')).status).toBe(400);
    expect([401, 403]).toContain((await fetch(`${base}/api/logs/history`)).status);
  });

  it("the Logs page opens on the history, marked as from the log store, above the tap's records", async () => {
    const context = await browser.newContext({ viewport: DESKTOP });
    contexts.add(context);
    await seedLocalStorage(context, { 'pooler.admin-auth': Buffer.from(`admin:${ADMIN_PW}`).toString('base64') });
    const page = await context.newPage();
    await page.goto(`${base}/logs?level=warn`);
    await page.getByTestId('log-line-past').filter({ hasText: 'client authentication failed' }).first().waitFor();
    expect(
      await page.getByTestId('log-line-past').filter({ hasText: 'client authentication failed' }).count(),
    ).toBeGreaterThanOrEqual(3);
    await expect
      .poll(() => page.getByTestId('logs-history-count').textContent())
      .toMatch(/from the log store \(last hour/);
    // A failure after the page opened comes through the tap, below the history.
    await failLogin('md5user');
    await page
      .getByTestId('log-line')
      .filter({ hasText: 'client authentication failed' })
      .first()
      .waitFor({ timeout: 20_000 });
    const order = await page
      .locator('[data-testid="log-line-past"], [data-testid="log-line"]')
      .evaluateAll((els) => els.map((e) => e.getAttribute('data-testid')));
    expect(order.indexOf('log-line')).toBeGreaterThan(order.lastIndexOf('log-line-past'));
  });

  it('without ship_to there is no history (404 not_configured), and a log store that is down is a 502 the page names', async () => {
    tp.writeConfig(toml('http://127.0.0.1:1'));
    await tp.pooler.reload();
    const down = await api('/api/logs/history');
    expect(down.status).toBe(502);
    expect(down.body.error).toBe('upstream');
    expect(down.body.message).toMatch(/log store at http:\/\/127\.0\.0\.1:1 did not answer/);
    tp.writeConfig(toml('').replace('ship_to = ""', ''));
    await tp.pooler.reload();
    const off = await api('/api/logs/history');
    expect(off.status).toBe(404);
    expect(off.body.error).toBe('not_configured');
  });
});
