// The console read by an operator (issue 36 item 6), in Chromium against a real pooler, PostgreSQL and traffic:
// durations with units, chart axes that fit their labels, charts kept across a reload, sign-in kept for the tab,
// and a wall readable across a room and usable on a phone.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { PHONE, startConsoleEnv, startTraffic, WALL, type ConsoleEnv, type Traffic } from './console-harness.js';
import { column } from './pages-api.js';
import { basicHeader, WEB_ADMIN } from '../helpers/web.js';

let env: ConsoleEnv;
let traffic: Traffic;
let slow: pg.Client;
let slowRunning = true;
let slowLoop: Promise<void> = Promise.resolve();

beforeAll(async () => {
  env = await startConsoleEnv();
  traffic = await startTraffic(env.tp.port);
  // Queries of about 20 ms, so the latency chart's axis counts in milliseconds ("20 ms", the label uPlot's default cut).
  slow = new pg.Client({
    host: '127.0.0.1',
    port: env.tp.port,
    database: 'app',
    user: 'md5user',
    password: 'md5pass',
    application_name: 'slow',
  });
  slow.on('error', () => undefined);
  await slow.connect();
  slowLoop = (async () => {
    while (slowRunning) await slow.query('select pg_sleep(0.02)');
  })();
});
afterAll(async () => {
  slowRunning = false;
  await slowLoop.catch(() => undefined);
  await slow?.end().catch(() => undefined);
  await traffic?.end();
  await env?.close();
});

const DURATION = /^-?\d[\d.,]* (µs|ms|s)$|^\d+ (min|h|d)( \d+ (s|min|h))?$/;

describe('units', () => {
  it('pools: maxwait and avg_xact_time carry units; overview: uptime and event-loop delay', async () => {
    const page = await env.open('anonymous', '/pools');
    await page.getByTestId('pools-table').waitFor();
    await expect
      .poll(async () => (await column(page, 'pools-table', 'avg_xact_time')).every((v) => DURATION.test(v)), {
        timeout: 20_000,
      })
      .toBe(true);
    expect((await column(page, 'pools-table', 'maxwait')).every((v) => DURATION.test(v))).toBe(true);
    await page.goto(`${env.base}/overview`);
    const proc = page.getByTestId('process-cards');
    await expect.poll(() => proc.textContent(), { timeout: 20_000 }).toMatch(/up \d+(\.\d+)? (s|min)/);
    expect(await proc.textContent()).toMatch(/event loop p99 \d[\d.]* (µs|ms|s)/);
    await page.context().close();
  });
});

/** The value axis of a chart as drawn: its font, width, the tick and gap inside it, its labels. */
interface YAxis {
  font: string;
  width: number;
  inner: number;
  labels: string[];
}

/** Labels of the chart's value axis that do not fit the axis (measured in the page with the axis font). */
async function clipped(page: import('playwright-core').Page, testId: string): Promise<{ axis: YAxis; cut: string[] }> {
  return page.getByTestId(testId).evaluate((fig) => {
    const axis = JSON.parse(fig.getAttribute('data-y-axis') ?? 'null') as YAxis;
    const ctx = document.createElement('canvas').getContext('2d')!;
    ctx.font = axis.font;
    return { axis, cut: axis.labels.filter((l) => ctx.measureText(l).width + axis.inner > axis.width) };
  });
}

describe('chart axes', () => {
  it('latency axis labels are whole durations with a unit and fit the axis', async () => {
    const page = await env.open('anonymous', '/overview');
    const chart = page.getByTestId('chart-latency');
    await expect.poll(() => chart.getAttribute('data-y-axis'), { timeout: 30_000 }).not.toBeNull();
    // Once the slow queries reach the chart, its top label is in milliseconds (seconds on a machine so loaded that
    // the queries' p99 passes a second).
    await expect
      .poll(async () => (await clipped(page, 'chart-latency')).axis.labels.at(-1) ?? '', { timeout: 30_000 })
      .toMatch(/ m?s$/);
    const { axis, cut } = await clipped(page, 'chart-latency');
    expect(axis.labels.length).toBeGreaterThan(1);
    for (const l of axis.labels) expect(l).toMatch(/^\d+(\.\d+)? (µs|ms|s)$/);
    expect(new Set(axis.labels.map((l) => l.split(' ')[1])).size).toBe(1);
    expect(cut).toEqual([]);
    await page.context().close();
  });
});

describe('history across reloads', () => {
  it('a reload draws the charts at once from /api/overview/history, even with its polls failing', async () => {
    const page = await env.open('admin', '/overview');
    // The pooler has kept a few samples since it started (one every 2 s).
    await expect
      .poll(
        async () => {
          const r = await fetch(`${env.base}/api/overview/history`, { headers: { authorization: basicHeader() } });
          return ((await r.json()) as { samples: unknown[] }).samples.length;
        },
        { timeout: 30_000 },
      )
      .toBeGreaterThan(3);
    // From here the page's own polls fail: only the pooler's history can fill the charts.
    await page.route(/\/api\/(overview|pools|pools_extended|stats)$/, (route) => route.abort());
    await page.reload();
    await page.getByTestId('role-label').waitFor();
    const rates = page.getByTestId('chart-rates');
    await expect.poll(async () => rates.locator('.chart-plot').count(), { timeout: 20_000 }).toBe(1);
    expect(await rates.getAttribute('data-summary')).toMatch(/tps now \d/);
    expect(await page.getByTestId('chart-latency').locator('.chart-plot').count()).toBe(1);
    await page.context().close();
  });
});

describe('sign-in across reloads', () => {
  it('without Remember me, Basic survives a reload of the tab (sessionStorage), not a new tab; sign-out clears both stores', async () => {
    const page = await env.open('anonymous', '/overview');
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.getByRole('dialog').getByLabel('User').fill(WEB_ADMIN.user);
    await page.getByLabel('Password').fill(WEB_ADMIN.password);
    await page.getByRole('dialog').getByRole('button', { name: 'Sign in', exact: true }).click();
    await expect.poll(() => page.getByTestId('role-label').textContent(), { timeout: 10_000 }).toBe('admin');
    const stored = () =>
      page.evaluate(() => [
        sessionStorage.getItem('pooler.admin-auth') !== null,
        localStorage.getItem('pooler.admin-auth') !== null,
      ]);
    expect(await stored()).toEqual([true, false]);
    await page.reload();
    await page.getByTestId('role-label').filter({ hasText: 'admin' }).waitFor({ timeout: 10_000 });
    expect(await page.getByRole('dialog').count()).toBe(0);
    // Another tab of the same browser has its own sessionStorage: not signed in there.
    const other = await page.context().newPage();
    await other.goto(`${env.base}/overview`);
    await other.getByTestId('role-label').filter({ hasText: 'anonymous' }).waitFor({ timeout: 10_000 });
    await other.close();
    await page.getByRole('button', { name: 'Sign out' }).click();
    expect(await stored()).toEqual([false, false]);
    await page.reload();
    await page.getByTestId('role-label').filter({ hasText: 'anonymous' }).waitFor({ timeout: 10_000 });
    await page.context().close();
  });
});

describe('the wall', () => {
  it('at 1920x1080: figures on one line, chart labels of 18 px or more that fit their axis, state colours', async () => {
    const page = await env.open('anonymous', '/wall', WALL);
    // Wait for a p95 in milliseconds (the slow client's 20 ms queries): the widest figure, the one that wrapped.
    await expect
      .poll(() => page.getByTestId('wall-p95').locator('.big-value').textContent(), { timeout: 30_000 })
      .toMatch(/ ms$/);
    const values = await page.locator('.big-value').evaluateAll((els) =>
      els.map((e) => {
        const style = getComputedStyle(e);
        return {
          text: e.textContent,
          height: e.getBoundingClientRect().height,
          line: parseFloat(style.lineHeight),
          font: parseFloat(style.fontSize),
          fits: e.scrollWidth <= e.clientWidth,
        };
      }),
    );
    expect(values).toHaveLength(4);
    for (const v of values) {
      expect(v.height, `${v.text} wraps`).toBeLessThan(v.line * 1.5);
      expect(v.fits, `${v.text} is cut`).toBe(true);
      expect(v.font, `${v.text} is small`).toBeGreaterThanOrEqual(80);
    }
    for (const id of ['wall-chart-tps', 'wall-chart-waiting', 'wall-chart-errors']) {
      await expect.poll(() => page.getByTestId(id).getAttribute('data-y-axis'), { timeout: 30_000 }).not.toBeNull();
      const { axis, cut } = await clipped(page, id);
      expect(parseFloat(/(\d+(\.\d+)?)px/.exec(axis.font)![1]!)).toBeGreaterThanOrEqual(18);
      expect(cut).toEqual([]);
      const legend = await page
        .getByTestId(id)
        .locator('.u-legend .u-label')
        .evaluateAll((els) => els.map((e) => parseFloat(getComputedStyle(e).fontSize)));
      expect(legend.length).toBeGreaterThan(0);
      for (const px of legend) expect(px).toBeGreaterThanOrEqual(18);
    }
    // State colours follow the figures: waiting clients and errors are ok (green) at 0, bad (red) above.
    for (const id of ['wall-waiting', 'wall-errors']) {
      const { value, cls } = await page
        .getByTestId(id)
        .evaluate((e) => ({ value: Number(e.querySelector('.big-value')!.textContent), cls: e.className }));
      expect(cls, `${id} ${value}`).toContain(value > 0 ? 'bad' : 'ok');
    }
    await page.context().close();
  });

  it('on a 390x844 phone: nothing wider than the screen', async () => {
    const page = await env.open('anonymous', '/wall', PHONE);
    await page.getByTestId('wall-pools').waitFor({ timeout: 20_000 });
    await expect
      .poll(() => page.getByTestId('wall-chart-tps').locator('.chart-plot').count(), { timeout: 30_000 })
      .toBe(1);
    const { scroll, inner } = await page.evaluate(() => ({
      scroll: document.documentElement.scrollWidth,
      inner: window.innerWidth,
    }));
    expect(scroll).toBeLessThanOrEqual(inner);
    const values = await page
      .locator('.big-value')
      .evaluateAll((els) => els.map((e) => e.scrollWidth <= e.clientWidth));
    expect(values).toEqual([true, true, true, true]);
    await page.context().close();
  });
});

describe('logs page', () => {
  it("hides the console's own polling lines by default; the Console polling toggle shows them and goes into the URL", async () => {
    const page = await env.open('admin', '/logs');
    await page.getByText('Starting the log tap…').waitFor({ state: 'detached', timeout: 20_000 });
    // The pages poll /api/* every 2 s; a reconnect writes an info access line that stays visible.
    expect(
      (
        await fetch(`${env.base}/api/admin/reconnect`, {
          method: 'POST',
          headers: { authorization: basicHeader(), 'content-type': 'application/json' },
          body: JSON.stringify({ database: 'app', user: 'scramuser' }),
        })
      ).status,
    ).toBe(200);
    const lines = () => page.getByTestId('log-line').allTextContents();
    await expect
      .poll(async () => (await lines()).some((l) => l.includes('path=/api/admin/reconnect')), { timeout: 20_000 })
      .toBe(true);
    const polling = (l: string) =>
      / debug pooler::web::access /.test(l) && / method=GET /.test(l) && / path=\/api\//.test(l);
    expect((await lines()).filter(polling)).toEqual([]);
    await page.getByLabel('Console polling').check();
    await expect.poll(() => new URL(page.url()).searchParams.get('polls'), { timeout: 10_000 }).toBe('show');
    await expect.poll(async () => (await lines()).some(polling), { timeout: 20_000 }).toBe(true);
    await page.reload();
    expect(await page.getByLabel('Console polling').isChecked()).toBe(true);
    await page.context().close();
  });
});
