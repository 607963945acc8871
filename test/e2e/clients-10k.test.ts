// The clients page with 10 000 real client logins on a pooler process (trust, mostly idle, pool_size 2): server-side paging, and frame times measured.
import { writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import pg from 'pg';
import { writeStartupMessage } from '../../src/protocol/writer.js';
import { poolToml, startChildPooler, type ChildPooler } from '../helpers/pooler.js';
import { startTestPostgres, type TestPostgres } from '../helpers/postgres.js';
import { launchChromium } from '../helpers/web-browser.js';
import { DESKTOP } from './console-harness.js';
import { column, rowsOf, searchOf } from './pages-api.js';
import { freePorts } from '../../src/launcher/embedded-postgres.js';

const CLIENTS = 10_000;
const APPS = 20;
/** Logins in flight at once: enough to be quick, few enough not to starve the tests running beside this one. */
const BATCH = 200;

let db: TestPostgres;
let pooler: ChildPooler;
let browser: Browser;
let base = '';
let dir = '';
const sockets: net.Socket[] = [];
const busy: pg.Client[] = [];
let running = true;
let loops: Promise<void>[] = [];

/** One client login over TCP (trust): StartupMessage, then read until ReadyForQuery; the socket stays open, idle. */
function login(port: number, i: number): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1');
    let seen = Buffer.alloc(0);
    s.once('error', reject);
    s.on('connect', () =>
      s.write(writeStartupMessage({ user: 'trustuser', database: 'app', application_name: `load-${i % APPS}` })),
    );
    const onData = (d: Buffer) => {
      seen = Buffer.concat([seen, d]);
      // Walk whole messages: the greeting ends with ReadyForQuery ('Z'); an ErrorResponse ('E') is a failed login.
      let at = 0;
      while (seen.length - at >= 5) {
        const type = String.fromCharCode(seen[at]!);
        const len = seen.readInt32BE(at + 1);
        if (seen.length - at < 1 + len) break;
        if (type === 'E')
          return reject(
            new Error(
              `login ${i} refused: ${seen
                .subarray(at + 5, at + 1 + len)
                .toString('utf8')
                .replace(/\0/g, ' ')}`,
            ),
          );
        if (type === 'Z') {
          s.off('data', onData);
          s.removeAllListeners('error');
          s.on('error', () => undefined);
          return resolve(s);
        }
        at += 1 + len;
      }
    };
    s.on('data', onData);
  });
}

beforeAll(async () => {
  db = await startTestPostgres();
  const [port, webPort] = (await freePorts(2)) as [number, number];
  dir = db.tmp;
  const configFile = path.join(dir, 'pooler-10k.toml');
  writeFileSync(
    configFile,
    `
[general]
host = "127.0.0.1"
port = ${port}
admin_username = "admin"
admin_password = "ten-thousand-pw"
max_connections = ${CLIENTS + 1000}
log_level = "info"
# The busy clients must not be cut off when a loaded machine delays them past the default 5 s wait.
query_wait_timeout = "0"

[web]
enabled = true
host = "127.0.0.1"
port = ${webPort}
ui = true
ui_anonymous = true

${poolToml(db, 'app', '', [
  { username: 'trustuser', password: '', extra: 'pool_size = 2' },
  { username: 'md5user', password: 'md5pass', extra: 'pool_size = 2' },
])}`,
  );
  pooler = await startChildPooler(configFile, port);
  base = `http://127.0.0.1:${webPort}`;
  const started = Date.now();
  for (let i = 0; i < CLIENTS; i += BATCH) {
    sockets.push(
      ...(await Promise.all(Array.from({ length: Math.min(BATCH, CLIENTS - i) }, (_, j) => login(port, i + j)))),
    );
  }
  process.stdout.write(
    `clients-10k: ${sockets.length} client logins in ${((Date.now() - started) / 1000).toFixed(1)} s\n`,
  );
  for (let i = 0; i < 6; i++) {
    const c = new pg.Client({
      host: '127.0.0.1',
      port,
      database: 'app',
      user: 'md5user',
      password: 'md5pass',
      application_name: `busy-${i % 3}`,
    });
    c.on('error', () => undefined);
    await c.connect();
    busy.push(c);
  }
  loops = busy.map(async (c) => {
    while (running) {
      await c.query('select 1');
      await new Promise((r) => setTimeout(r, 25));
    }
  });
  browser = await launchChromium();
}, 300_000);

afterAll(async () => {
  running = false;
  // Settled, not all: a busy loop that failed must not keep the pooler and PostgreSQL running after the test.
  const failed = (await Promise.allSettled(loops)).filter((r) => r.status === 'rejected');
  await Promise.allSettled(busy.map((c) => c.end()));
  for (const s of sockets) s.destroy();
  await browser?.close().catch(() => undefined);
  await pooler?.stop();
  await db?.cleanup();
  if (failed.length)
    throw new Error(`${failed.length} busy client(s) failed: ${String((failed[0] as PromiseRejectedResult).reason)}`);
});

interface FrameStats {
  frames: number;
  p50: number;
  p95: number;
  p99: number;
  max: number;
  over50: number;
}

/** In every page of the context: a recorder of requestAnimationFrame intervals, started at load and restarted by startFrames. */
function installFrameRecorder(): void {
  const w = window as unknown as { __frames: number[]; __stop: boolean; __startFrames: () => void };
  w.__startFrames = () => {
    w.__frames = [];
    w.__stop = false;
    let last = performance.now();
    const tick = (t: number) => {
      if (w.__stop) return;
      w.__frames.push(t - last);
      last = t;
      requestAnimationFrame(tick);
    };
    requestAnimationFrame(tick);
  };
  w.__startFrames();
}

async function startFrames(page: Page): Promise<void> {
  await page.evaluate(() => {
    const w = window as unknown as { __stop: boolean; __startFrames: () => void };
    w.__stop = true;
    w.__startFrames();
  });
}

async function stopFrames(page: Page): Promise<FrameStats> {
  const frames = await page.evaluate(() => {
    const w = window as unknown as { __frames: number[]; __stop: boolean };
    w.__stop = true;
    return w.__frames.slice(1);
  });
  const sorted = [...frames].sort((a, b) => a - b);
  const q = (p: number) =>
    Math.round((sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? 0) * 10) / 10;
  return {
    frames: frames.length,
    p50: q(0.5),
    p95: q(0.95),
    p99: q(0.99),
    max: Math.round((sorted.at(-1) ?? 0) * 10) / 10,
    over50: frames.filter((f) => f > 50).length,
  };
}

/** Milliseconds of the /api/clients requests the page made (Resource Timing), median and max. */
async function apiTimes(page: Page): Promise<{ requests: number; median: number; max: number }> {
  const times = await page.evaluate(() =>
    performance
      .getEntriesByType('resource')
      .filter((e) => e.name.includes('/api/clients'))
      .map((e) => e.duration),
  );
  const sorted = [...times].sort((a, b) => a - b);
  return {
    requests: times.length,
    median: Math.round(sorted[Math.floor(sorted.length / 2)] ?? 0),
    max: Math.round(sorted.at(-1) ?? 0),
  };
}

describe('clients page with 10 000 clients', () => {
  it('pages, sorts and filters on the server, draws at most one page of rows; frame times reported', async () => {
    const context = await browser.newContext({ viewport: DESKTOP });
    await context.addInitScript(installFrameRecorder);
    const page = await context.newPage();
    await page.goto(`${base}/overview`);
    const total = CLIENTS + busy.length;
    const report: string[] = [];
    const step = async (name: string, action: () => Promise<void>, restart = true) => {
      if (restart) await startFrames(page);
      const t = Date.now();
      await action();
      // A poll more with the page at rest after the action.
      await new Promise((r) => setTimeout(r, 2500));
      const f = await stopFrames(page);
      report.push(
        `| ${name} | ${Date.now() - t} | ${f.frames} | ${f.p50} | ${f.p95} | ${f.p99} | ${f.max} | ${f.over50} |`,
      );
    };
    const count = () => page.getByTestId('clients-count').textContent();

    await step(
      'open /clients (first page of 50)',
      async () => {
        await page.goto(`${base}/clients`);
        await expect.poll(count, { timeout: 30_000 }).toBe(`1–50 of ${total.toLocaleString('en-US')}`);
      },
      false,
    );
    expect(await rowsOf(page, 'clients-table').count()).toBe(50);
    await step('sort by id, descending', async () => {
      const header = page.getByTestId('clients-table').getByRole('button', { name: 'id', exact: true });
      await header.click();
      await expect.poll(() => searchOf(page).get('order'), { timeout: 10_000 }).toBe('desc');
      await expect
        .poll(async () => Number((await column(page, 'clients-table', 'id'))[0]!.replace(/,/g, '')), {
          timeout: 10_000,
        })
        .toBeGreaterThanOrEqual(CLIENTS);
    });
    await step('next page x5', async () => {
      for (let i = 1; i <= 5; i++) {
        await page.getByRole('button', { name: 'Next' }).click();
        await expect
          .poll(count, { timeout: 10_000 })
          .toBe(`${i * 50 + 1}–${(i + 1) * 50} of ${total.toLocaleString('en-US')}`);
      }
    });
    await step('200 per page', async () => {
      await page.getByLabel('Per page').selectOption('200');
      await expect.poll(count, { timeout: 10_000 }).toBe(`1–200 of ${total.toLocaleString('en-US')}`);
    });
    // The pager's label follows the chosen page size at once; the rows come with the next answer.
    await expect.poll(() => rowsOf(page, 'clients-table').count(), { timeout: 30_000 }).toBe(200);
    await step('filter application_name = load-7 (typed)', async () => {
      await page.getByLabel('Application').fill('load-7');
      await expect.poll(count, { timeout: 10_000 }).toBe(`1–200 of ${(CLIENTS / APPS).toLocaleString('en-US')}`);
    });
    for (const app of await column(page, 'clients-table', 'application')) expect(app).toBe('load-7');
    await step('sort by queries, descending', async () => {
      await page.getByRole('button', { name: 'Clear' }).click();
      await page.getByTestId('clients-table').getByRole('button', { name: 'queries', exact: true }).click();
      await expect
        .poll(async () => (await column(page, 'clients-table', 'application'))[0], { timeout: 10_000 })
        .toMatch(/^busy-/);
    });
    await step('scroll the page of 200 to the end and back', async () => {
      for (let i = 0; i < 20; i++) {
        await page.mouse.wheel(0, 400);
        await new Promise((r) => setTimeout(r, 30));
      }
      for (let i = 0; i < 20; i++) {
        await page.mouse.wheel(0, -400);
        await new Promise((r) => setTimeout(r, 30));
      }
    });
    await step('idle on the page (polls every 2 s)', async () => {
      await new Promise((r) => setTimeout(r, 4000));
    });
    const api = await apiTimes(page);
    const load = os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(' ');
    const table = [
      `clients page, ${total.toLocaleString('en-US')} clients (${CLIENTS.toLocaleString('en-US')} idle trust logins + ${busy.length} busy node-postgres), Chromium ${browser.version()}, ${os.cpus().length} cores, load ${load}`,
      `/api/clients as the page fetched it: ${api.requests} requests, median ${api.median} ms, max ${api.max} ms`,
      '| step | ms | frames | p50 ms | p95 ms | p99 ms | max ms | frames > 50 ms |',
      '|---|---|---|---|---|---|---|---|',
      ...report,
    ].join('\n');
    process.stdout.write(`${table}\n`);
    writeFileSync(path.join(os.tmpdir(), 'tidepool-clients-10k.md'), `${table}\n`);
    await context.close();
  }, 180_000);
});
