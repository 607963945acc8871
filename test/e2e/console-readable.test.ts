// The console read by an operator (issue 36 item 6), in Chromium against a real pooler, PostgreSQL and traffic:
// durations with units, chart axes that fit their labels, charts kept across a reload, sign-in kept for the tab,
// and a wall readable across a room and usable on a phone.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startConsoleEnv, startTraffic, type ConsoleEnv, type Traffic } from './console-harness.js';
import { column } from './pages-api.js';

let env: ConsoleEnv;
let traffic: Traffic;

beforeAll(async () => {
  env = await startConsoleEnv();
  traffic = await startTraffic(env.tp.port);
});
afterAll(async () => {
  await traffic?.end();
  await env?.close();
});

const DURATION = /^-?\d[\d.,]* (µs|ms|s)$|^\d+ (min|h|d)( \d+ (s|min|h))?$/;

describe('units', () => {
  it('pools: maxwait and avg_xact_time carry units; overview: uptime and event-loop delay', async () => {
    const page = await env.open('anonymous', '/pools');
    await page.getByTestId('pools-table').waitFor();
    await expect.poll(async () => (await column(page, 'pools-table', 'avg_xact_time')).every((v) => DURATION.test(v)), { timeout: 20_000 }).toBe(true);
    expect((await column(page, 'pools-table', 'maxwait')).every((v) => DURATION.test(v))).toBe(true);
    await page.goto(`${env.base}/overview`);
    const proc = page.getByTestId('process-cards');
    await expect.poll(() => proc.textContent(), { timeout: 20_000 }).toMatch(/up \d+(\.\d+)? (s|min)/);
    expect(await proc.textContent()).toMatch(/event loop p99 \d[\d.]* (µs|ms|s)/);
    await page.context().close();
  });
});
