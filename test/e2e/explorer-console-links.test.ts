// Links between the pooler's console and the log explorer, in Chromium over real processes: a pooler shipping its
// records to a log store, the UI backend and both SPAs. The console links a pool and a client to their records
// (only while `[logs] explorer_url` names the explorer); an opened record with a pool links back to its page.
import pg from 'pg';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWebListener, type WebListener } from '../../src/pooler/web/server.js';
import { postJson, startLogstore, type LogstoreProcess } from '../helpers/logstore.js';
import { startUi, type UiProcess } from '../helpers/logstore-ui.js';
import { appPoolToml, startTestPooler, type TestPooler } from '../helpers/pooler.js';
import { startTestPostgres, type TestPostgres } from '../helpers/postgres.js';
import { launchChromium } from '../helpers/web-browser.js';
import { DESKTOP, idle, total } from './explorer-harness.js';

let db: TestPostgres;
let store: LogstoreProcess;
let ui: UiProcess;
let tp: TestPooler;
let web: WebListener;
let consoleBase: string;
let browser: Browser;
let client: pg.Client;
const contexts = new Set<BrowserContext>();

const toml = (explorerUrl: string) => `
[general]
host = "127.0.0.1"
port = 0
admin_password = "links-admin-pw"
log_level = "debug"
[web]
enabled = true
host = "127.0.0.1"
port = 0
ui = true
ui_anonymous = true
[logs]
ship_to = "${store.url}"
ship_flush_interval = "100ms"
${explorerUrl ? `explorer_url = "${explorerUrl}"` : ''}
${appPoolToml(db)}`;

beforeAll(async () => {
  db = await startTestPostgres();
  store = await startLogstore();
  // The console's address is known once the web listener is up: the UI backend starts after it.
  tp = await startTestPooler(toml('http://placeholder.invalid'));
  web = await startWebListener(tp.pooler, { host: '127.0.0.1', port: 0 });
  consoleBase = `http://127.0.0.1:${web.port}`;
  ui = await startUi({ logstoreAddrs: [store.grpcAddr], extraYaml: `links:\n  console_url: "${consoleBase}/"\n` });
  tp.writeConfig(toml(ui.url));
  await tp.pooler.reload();
  client = new pg.Client({ host: '127.0.0.1', port: tp.port, user: 'md5user', password: 'md5pass', database: 'app' });
  await client.connect();
  await client.query('SELECT 1');
  // The pool's "server connection ready" record (debug) carries pool: md5user@app.
  const deadline = Date.now() + 30_000;
  while (
    (await postJson<{ total: number }>(`${store.url}/search`, { query: { query: 'pool:`md5user@app`' }, size: 0 })).body
      .total === 0
  ) {
    if (Date.now() > deadline) throw new Error('no pool record reached the log store');
    await new Promise((r) => setTimeout(r, 100));
  }
  browser = await launchChromium();
}, 120_000);

afterAll(async () => {
  for (const c of contexts) await c.close();
  await browser?.close();
  await client?.end().catch(() => undefined);
  await web?.close();
  await tp?.stop();
  await ui?.cleanup();
  await store?.cleanup();
  await db?.cleanup();
});

async function page(url: string): Promise<Page> {
  const context = await browser.newContext({ viewport: DESKTOP });
  contexts.add(context);
  const p = await context.newPage();
  await p.goto(url);
  return p;
}

describe('console and explorer links', () => {
  it('the pool page links to its records in the explorer, and a record links back to the pool page', async () => {
    const con = await page(`${consoleBase}/pools/app/md5user`);
    const link = con.getByTestId('pool-logs');
    await link.waitFor();
    const href = new URL((await link.getAttribute('href'))!);
    expect(href.origin).toBe(new URL(ui.url).origin);
    expect(href.searchParams.get('q')).toBe('pool:`md5user@app` or (user:`md5user` and database:`app`)');
    expect(href.searchParams.get('range')).toBe('1h');
    const want = (
      await postJson<{ total: number }>(`${store.url}/search`, {
        query: { query: href.searchParams.get('q') },
        size: 0,
      })
    ).body.total;
    expect(want).toBeGreaterThan(0);

    const exp = await page(href.toString());
    await idle(exp);
    expect(await total(exp)).toBeGreaterThanOrEqual(want);
    const row = exp.getByTestId('result-row').filter({ hasText: 'server connection ready' }).first();
    await row.getByRole('cell').first().click();
    const back = exp.getByTestId('console-pool-link');
    await back.waitFor();
    expect(await back.getAttribute('href')).toBe(`${consoleBase}/pools/app/md5user`);
    expect(await back.textContent()).toContain('app/md5user');
    await exp.goto((await back.getAttribute('href'))!);
    await exp.locator('#pool-title').filter({ hasText: 'app/md5user' }).waitFor();
  });

  it('client rows and admin events link to their records; without explorer_url the console shows no links', async () => {
    const con = await page(`${consoleBase}/clients`);
    const link = con.getByTestId('client-logs').first();
    await link.waitFor();
    const id = await con.getByTestId('clients-table').locator('tbody tr').first().locator('td').first().textContent();
    const href = new URL((await link.getAttribute('href'))!);
    expect(href.searchParams.get('q')).toBe(`client_id:${id!.replace(/\s*logs$/, '').trim()}`);
    // The client's "client logged in" record (debug) is what the link finds.
    expect(
      (
        await postJson<{ total: number }>(`${store.url}/search`, {
          query: { query: href.searchParams.get('q') },
          size: 0,
        })
      ).body.total,
    ).toBeGreaterThan(0);

    // Admin events (the RELOAD of beforeAll, a PAUSE and RESUME of the pool) link to the records around them.
    const admin = {
      authorization: `Basic ${Buffer.from('admin:links-admin-pw').toString('base64')}`,
      'content-type': 'application/json',
    };
    for (const verb of ['pause', 'resume']) {
      expect(
        (
          await fetch(`${consoleBase}/api/admin/${verb}`, {
            method: 'POST',
            headers: admin,
            body: JSON.stringify({ database: 'app', user: 'md5user' }),
          })
        ).status,
      ).toBe(200);
    }
    const events = (await (await fetch(`${consoleBase}/api/events`)).json()) as {
      time: string;
      kind: string;
      pool: string | null;
    }[];
    const wall = await page(`${consoleBase}/wall`);
    await wall.getByTestId('event-logs').first().waitFor();
    const hrefs = (
      await wall.getByTestId('event-logs').evaluateAll((as) => as.map((a) => a.getAttribute('href')!))
    ).map((h) => new URL(h));
    const shown = events.slice(0, hrefs.length);
    expect(shown.some((e) => e.pool === 'app/md5user') && shown.some((e) => e.pool === null)).toBe(true);
    shown.forEach((e, i) => {
      const p = hrefs[i]!.searchParams;
      expect(p.get('q')).toBe(
        e.pool === 'app/md5user' ? 'pool:`md5user@app` or (user:`md5user` and database:`app`)' : '*',
      );
      expect(Date.parse(p.get('from')!)).toBe(Date.parse(e.time) - 300_000);
      expect(Date.parse(p.get('to')!)).toBe(Date.parse(e.time) + 300_000);
    });

    tp.writeConfig(toml(''));
    await tp.pooler.reload();
    expect(await (await fetch(`${consoleBase}/api/links`)).json()).toEqual({ explorer_url: null });
    const plain = await page(`${consoleBase}/clients`);
    await plain.getByTestId('clients-table').locator('tbody tr').first().waitFor();
    expect(await plain.getByTestId('client-logs').count()).toBe(0);
    const poolPage = await page(`${consoleBase}/pools/app/md5user`);
    await poolPage.getByTestId('pool-state').waitFor();
    expect(await poolPage.getByTestId('pool-logs').count()).toBe(0);
    const plainWall = await page(`${consoleBase}/wall`);
    await plainWall.getByTestId('wall-events').waitFor();
    expect(await plainWall.getByTestId('event-logs').count()).toBe(0);
    tp.writeConfig(toml(ui.url));
    await tp.pooler.reload();
  });
});
