// The log explorer in Chromium against a real single-mode log store and UI backend holding 10 000 known documents.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { bulk, ndjson } from '../helpers/logstore.js';
import { DESKTOP, DOCS, FROM, NEWEST_FIRST, N, PHONE, RANGE, TO, params, searched, shootBoth, startExplorerEnv, type Doc, type ExplorerEnv } from './explorer-harness.js';

let env: ExplorerEnv;

beforeAll(async () => {
  env = await startExplorerEnv();
}, 120_000);

afterAll(async () => {
  await env?.close();
});

const between = (from: string, to: string) => (d: Doc) => d.timestamp >= from && d.timestamp <= to;
const total = async (page: Page) => Number((await page.getByTestId('total').textContent())!.replace(/,/g, ''));
const rowsInDom = (page: Page) => page.getByTestId('result-row').count();

/** Types a query into the editor (replacing what is there) and runs it with Enter. */
async function runQuery(page: Page, q: string): Promise<void> {
  const input = page.getByTestId('query-input');
  await input.fill(q);
  await input.press('Escape');
  await searched(page, () => input.press('Enter'));
}

describe('query, time range, results, URL, histogram', () => {
  it('shows every document of the range newest first, the histogram and only the rows in view', async () => {
    const page = await env.open(`/?${RANGE}`);
    expect(await total(page)).toBe(N);
    expect(Number(await page.getByTestId('histogram').getAttribute('data-total'))).toBe(N);
    const first = page.getByTestId('result-row').first();
    expect(await first.locator('.r-time').textContent()).toBe(NEWEST_FIRST[0]!.timestamp.replace('T', ' ').replace('Z', ''));
    expect(await first.locator('.r-doc').textContent()).toContain(`n=${NEWEST_FIRST[0]!.n}`);
    // A thousand rows are loaded; the DOM holds the visible ones and a few more.
    expect(await page.getByTestId('summary').textContent()).toContain('1,000 loaded');
    expect(await rowsInDom(page)).toBeLessThan(80);
    expect(await page.getByTestId('time-button').textContent()).toContain('2026-03-02 09:55:00 → 2026-03-02 12:05:00 UTC');
    await shootBoth(page, 'results');
    await page.context().close();
  });

  it('runs a typed query, highlights it, keeps it in the URL, and the back button returns to the previous view', async () => {
    const page = await env.open(`/?${RANGE}`);
    await runQuery(page, 'service:db and level:error');
    const expected = NEWEST_FIRST.filter((d) => d.service === 'db' && d.level === 'error');
    expect(await total(page)).toBe(expected.length);
    expect(params(page).get('q')).toBe('service:db and level:error');
    const shown = await page.getByTestId('result-row').locator('.r-doc').allTextContents();
    expect(shown.length).toBeGreaterThan(5);
    shown.forEach((text, i) => expect(text).toContain(`n=${expected[i]!.n}`));
    const mirror = page.locator('.editor-mirror');
    expect(await mirror.locator('.tok-field').allTextContents()).toEqual(['service', 'level']);
    expect(await mirror.locator('.tok-value').allTextContents()).toEqual(['db', 'error']);
    expect(await mirror.locator('.tok-keyword').allTextContents()).toEqual(['and']);
    await searched(page, () => page.goBack());
    expect(await total(page)).toBe(N);
    expect(await page.getByTestId('query-input').inputValue()).toBe('');
    await page.context().close();
  });

  it('shows a syntax error at its position, and a query that fails leaves the rest of the page working', async () => {
    const page = await env.open(`/?${RANGE}`);
    await runQuery(page, 'service:db and (level:error');
    const err = page.getByTestId('query-error');
    await err.waitFor();
    // The parser stops at the end of the text: position 27 (0-based), shown as 28.
    expect(await err.textContent()).toContain('at 28:');
    expect(await err.textContent()).toContain('expected ")"');
    expect(await page.getByTestId('query-input').getAttribute('aria-invalid')).toBe('true');
    await page.getByTestId('error-mark').waitFor();
    await runQuery(page, 'service:db and level:error )');
    expect(await page.getByTestId('query-error').textContent()).toContain('at 28:');
    expect(await page.getByTestId('error-mark').textContent()).toBe(')');
    await shootBoth(page, 'query-error');
    await runQuery(page, 'level:warn');
    expect(await page.getByTestId('query-error').count()).toBe(0);
    expect(await total(page)).toBe(DOCS.filter((d) => d.level === 'warn').length);
    await page.context().close();
  });

  it('completes field names, then values with their counts; a high-cardinality field is capped', async () => {
    const page = await env.open(`/?${RANGE}`);
    const input = page.getByTestId('query-input');
    await input.fill('');
    await input.pressSequentially('serv');
    const list = page.getByTestId('completions');
    await list.waitFor();
    expect(await list.locator('.c-label').allTextContents()).toEqual(['service']);
    await input.press('Enter');
    expect(await input.inputValue()).toBe('service:');
    await list.locator('li', { hasText: 'auth' }).waitFor();
    const counts = Object.fromEntries(['api', 'web', 'db', 'auth'].map((s) => [s, DOCS.filter((d) => d.service === s).length]));
    const items = await list.locator('li[role="option"]').evaluateAll((lis) => lis.map((li) => [li.querySelector('.c-label')!.textContent, li.querySelector('.c-detail')!.textContent]));
    expect(items).toEqual(Object.entries(counts).sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).map(([k, v]) => [k, String(v)]));
    await input.press('ArrowDown');
    await input.press('Tab');
    expect(await input.inputValue()).toBe('service:web ');
    await shootBoth(page, 'completion-closed');
    // 1 500 distinct users: the most frequent 50 come back, and the list says there are more.
    await input.pressSequentially('and user:');
    await list.locator('.c-note').waitFor();
    expect(await list.locator('li[role="option"]').count()).toBe(12);
    await input.pressSequentially('user-149');
    await list.locator('li', { hasText: 'user-1499' }).waitFor();
    expect((await list.locator('.c-label').allTextContents()).every((v) => v.startsWith('user-149'))).toBe(true);
    await input.press('Escape');
    // Enter on a value typed in full runs the query (the list offers just what is typed).
    await input.fill('');
    await input.pressSequentially('level:warn');
    await list.locator('li', { hasText: 'warn' }).waitFor();
    await searched(page, () => input.press('Enter'));
    expect(params(page).get('q')).toBe('level:warn');
    expect(await total(page)).toBe(DOCS.filter((d) => d.level === 'warn').length);
    await page.context().close();
  });

  it('picks relative, custom and absolute ranges, and each lands in the URL', async () => {
    const page = await env.open(`/?${RANGE}`);
    await page.getByTestId('time-button').click();
    await searched(page, () => page.getByTestId('time-panel').getByRole('button', { name: 'Last 15 minutes' }).click());
    expect(params(page).get('range')).toBe('15m');
    expect(params(page).get('from')).toBeNull();
    // The data set is from March: nothing in the last 15 minutes.
    await page.getByTestId('no-results').waitFor();
    await page.getByTestId('time-button').click();
    await page.getByTestId('custom-rel').fill('400d');
    await searched(page, () => page.getByTestId('custom-rel').press('Enter'));
    expect(params(page).get('range')).toBe('400d');
    expect(await total(page)).toBe(N);
    await page.getByTestId('time-button').click();
    await page.getByTestId('abs-from').fill('2026-03-02 10:30:00');
    await page.getByTestId('abs-to').fill('2026-03-02 11:00:00');
    await searched(page, () => page.getByTestId('abs-apply').click());
    expect(params(page).get('from')).toBe('2026-03-02T10:30:00.000Z');
    expect(params(page).get('to')).toBe('2026-03-02T11:00:00.000Z');
    expect(await total(page)).toBe(DOCS.filter(between('2026-03-02T10:30:00.000Z', '2026-03-02T11:00:00.000Z')).length);
    // A bad absolute time is refused in the picker, the view stays.
    await page.getByTestId('time-button').click();
    await page.getByTestId('abs-from').fill('yesterday');
    await page.getByTestId('abs-apply').click();
    await page.getByTestId('time-panel').getByRole('alert').waitFor();
    expect(params(page).get('from')).toBe('2026-03-02T10:30:00.000Z');
    await page.keyboard.press('Escape');
    await page.context().close();
  });

  it('zooms the range to a drag across the histogram', async () => {
    const page = await env.open(`/?${RANGE}&q=level:error`);
    const box = (await page.locator('.hist-plot .u-over').boundingBox())!;
    await page.mouse.move(box.x + box.width * 0.25, box.y + box.height / 2);
    await page.mouse.down();
    await page.mouse.move(box.x + box.width * 0.5, box.y + box.height / 2, { steps: 8 });
    await searched(page, () => page.mouse.up());
    const from = params(page).get('from')!;
    const to = params(page).get('to')!;
    const span = Date.parse(TO) - Date.parse(FROM);
    // About a quarter of the range, starting about a quarter in (the plot's pixels round it).
    expect(Math.abs(Date.parse(from) - (Date.parse(FROM) + span / 4))).toBeLessThan(span / 20);
    expect(Math.abs(Date.parse(to) - Date.parse(from) - span / 4)).toBeLessThan(span / 20);
    expect(params(page).get('q')).toBe('level:error');
    expect(await total(page)).toBe(DOCS.filter((d) => d.level === 'error').filter(between(from, to)).length);
    await page.context().close();
  });

  it('opens a row to its JSON; a link reproduces the view (query, range, columns)', async () => {
    const url = `/?q=${encodeURIComponent('status:404 and service:api')}&${RANGE}&cols=service,status,message`;
    const page = await env.open(url);
    const expected = NEWEST_FIRST.filter((d) => d.status === '404' && d.service === 'api');
    expect(await total(page)).toBe(expected.length);
    expect(await page.getByTestId('query-input').inputValue()).toBe('status:404 and service:api');
    expect(await page.getByTestId('column-header').allTextContents()).toEqual(['service×', 'status×', 'message×']);
    const row = page.getByTestId('result-row').nth(1);
    expect(await row.locator('.r-col').allTextContents()).toEqual([expected[1]!.service, expected[1]!.status, expected[1]!.message]);
    await row.getByRole('cell', { name: 'Open the document' }).click();
    const json = JSON.parse((await row.locator('.r-json').textContent())!);
    expect(json).toEqual(expected[1]);
    await shootBoth(page, 'row-open');
    await page.getByRole('table').getByRole('button', { name: 'Remove column status' }).click();
    expect(params(page).get('cols')).toBe('service,message');
    await page.context().close();
  });

  it('loads all 10 000 documents by scrolling, with a bounded DOM, down to the oldest', async () => {
    const page = await env.open(`/?${RANGE}`);
    const scroller = page.getByTestId('results-scroll');
    const started = Date.now();
    for (let i = 0; i < 60; i++) {
      await scroller.evaluate((el) => el.scrollTo({ top: el.scrollHeight }));
      const text = (await page.getByTestId('summary').textContent())!;
      if (!text.includes('loaded')) break;
      await page.waitForTimeout(100);
    }
    await page.waitForFunction(() => !document.querySelector('[data-testid="summary"]')!.textContent!.includes('loaded'));
    const scrollMs = Date.now() - started;
    await scroller.evaluate((el) => el.scrollTo({ top: el.scrollHeight }));
    expect(await rowsInDom(page)).toBeLessThan(80);
    const last = page.locator(`[data-testid="result-row"][data-index="${N - 1}"]`);
    await last.waitFor();
    expect(await last.locator('.r-doc').textContent()).toContain(`n=${DOCS[0]!.n}`);
    // Scrolling back to the middle draws the middle rows (and only around them).
    await scroller.evaluate((el) => el.scrollTo({ top: el.scrollHeight / 2 }));
    await page.locator(`[data-testid="result-row"][data-index="${N / 2}"]`).waitFor();
    const frame = await page.evaluate(async () => {
      const el = document.querySelector('[data-testid="results-scroll"]')!;
      const t0 = performance.now();
      for (let i = 0; i < 50; i++) {
        el.scrollTop += 400;
        await new Promise((r) => requestAnimationFrame(r));
      }
      return (performance.now() - t0) / 50;
    });
    console.log(`explorer: 10 000 rows loaded by scrolling in ${scrollMs} ms; ${frame.toFixed(1)} ms per scrolled frame`);
    expect(await rowsInDom(page)).toBeLessThan(80);
    await page.setViewportSize(DESKTOP);
    await page.context().close();
  });
});

describe('field sidebar, columns, context', () => {
  const share = (n: number, of: number) => `${((n / of) * 100).toFixed(1)}%`;
  const topOf = (docs: Doc[], field: keyof Doc) => {
    const m = new Map<string, number>();
    for (const d of docs) m.set(d[field], (m.get(d[field]) ?? 0) + 1);
    return [...m].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
  };

  it('shows a field\'s top values with their share; + and − add field:value and not field:value', async () => {
    const page = await env.open(`/?${RANGE}`);
    const sidebar = page.getByTestId('field-sidebar');
    expect(await sidebar.getByTestId('field').evaluateAll((els) => els.map((e) => e.getAttribute('data-field')))).toEqual(
      ['host', 'latency_ms', 'level', 'message', 'n', 'service', 'status', 'timestamp', 'user']);
    await sidebar.getByRole('button', { name: 'level', exact: true }).click();
    const values = sidebar.getByTestId('top-value');
    await values.first().waitFor();
    const levels = topOf(DOCS, 'level');
    expect(await values.evaluateAll((els) => els.map((e) => [e.getAttribute('data-key'), Number(e.getAttribute('data-count'))]))).toEqual(levels);
    expect(await values.locator('.fs-share').allTextContents()).toEqual(levels.map(([, n]) => share(n, N)));
    await searched(page, () => sidebar.getByRole('button', { name: 'Filter for level: error' }).click());
    expect(params(page).get('q')).toBe('level:error');
    const errors = DOCS.filter((d) => d.level === 'error');
    expect(await total(page)).toBe(errors.length);
    // The opened field's values now count within the matches.
    await sidebar.getByRole('button', { name: 'service', exact: true }).click();
    await page.waitForFunction((n) => [...document.querySelectorAll('[data-testid="top-value"]')].reduce((a, e) => a + Number(e.getAttribute('data-count')), 0) === n, errors.length);
    const services = topOf(errors, 'service');
    expect(await values.evaluateAll((els) => els.map((e) => [e.getAttribute('data-key'), Number(e.getAttribute('data-count'))]))).toEqual(services);
    expect(await values.locator('.fs-share').allTextContents()).toEqual(services.map(([, n]) => share(n, errors.length)));
    await shootBoth(page, 'sidebar');
    await searched(page, () => sidebar.getByRole('button', { name: 'Filter out service: api' }).click());
    expect(params(page).get('q')).toBe('level:error and not service:api');
    expect(await page.getByTestId('query-input').inputValue()).toBe('level:error and not service:api');
    expect(await total(page)).toBe(errors.filter((d) => d.service !== 'api').length);
    await page.context().close();
  });

  it('adds and removes columns from the sidebar, kept in the URL', async () => {
    const page = await env.open(`/?${RANGE}&q=level:warn`);
    const sidebar = page.getByTestId('field-sidebar');
    await sidebar.getByRole('button', { name: 'Add column service' }).click();
    await sidebar.getByRole('button', { name: 'Add column latency_ms' }).click();
    expect(params(page).get('cols')).toBe('service,latency_ms');
    expect(await page.getByTestId('column-header').allTextContents()).toEqual(['service×', 'latency_ms×']);
    const warn = NEWEST_FIRST.filter((d) => d.level === 'warn');
    expect(await page.getByTestId('result-row').first().locator('.r-col').allTextContents()).toEqual([warn[0]!.service, warn[0]!.latency_ms]);
    expect(await sidebar.getByRole('button', { name: 'Remove column service' }).getAttribute('aria-pressed')).toBe('true');
    await sidebar.getByRole('button', { name: 'Remove column service' }).click();
    expect(params(page).get('cols')).toBe('latency_ms');
    await sidebar.getByRole('button', { name: 'Remove column latency_ms' }).click();
    expect(params(page).get('cols')).toBeNull();
    expect(await page.getByTestId('result-row').first().locator('.r-doc').count()).toBe(1);
    await page.context().close();
  });

  it('shows the documents around one, and around it within the same service', async () => {
    const page = await env.open(`/?${RANGE}&q=n:5000`);
    await page.getByTestId('result-row').first().getByRole('cell', { name: 'Open the document' }).click();
    await page.getByTestId('show-context').click();
    const ctx = page.getByTestId('context');
    const rows = ctx.getByTestId('context-row');
    await rows.first().waitFor();
    const ids = async () => (await rows.locator('.ctx-doc').allTextContents()).map((t) => Number(/\bn=(\d+)/.exec(t)![1]));
    expect(await ids()).toEqual(Array.from({ length: 21 }, (_, i) => 4990 + i));
    expect(await ctx.locator('li[aria-current="true"] .ctx-doc').textContent()).toContain('n=5000');
    await shootBoth(page, 'context');
    await ctx.getByTestId('context-field').selectOption('service');
    await page.waitForFunction(() => document.querySelector('[data-testid="context"] .fs-note')?.textContent?.includes('where'));
    const service = DOCS[5000]!.service;
    expect(await ctx.locator('.fs-note').textContent()).toContain(`service:\`${service}\``);
    const same = DOCS.filter((d) => d.service === service).map((d) => Number(d.n));
    const at = same.indexOf(5000);
    expect(await ids()).toEqual(same.slice(at - 10, at + 11));
    await page.keyboard.press('Escape');
    expect(await page.getByTestId('context').count()).toBe(0);
    await page.context().close();
  });

  it('opens the field sidebar from a button on a phone', async () => {
    const page = await env.open(`/?${RANGE}`, PHONE);
    const sidebar = page.getByTestId('field-sidebar');
    expect(await sidebar.isVisible()).toBe(false);
    await page.getByRole('button', { name: 'Fields' }).click();
    await sidebar.getByRole('button', { name: 'host', exact: true }).click();
    await sidebar.getByTestId('top-value').first().waitFor();
    const path = process.env['E2E_RAW_SHOTS'];
    if (path) await page.screenshot({ path: `${path}/explorer-sidebar-open-phone.png` });
    await searched(page, () => sidebar.getByRole('button', { name: 'Filter for host: host-0' }).click());
    expect(params(page).get('q')).toBe('host:host-0');
    expect(await sidebar.isVisible()).toBe(false);
    await page.context().close();
  });
});

describe('aggregations, export, live tail, saved queries, themes', () => {
  const rank = (values: number[], q: number) => {
    const sorted = [...values].sort((a, b) => a - b);
    return sorted[Math.max(0, Math.ceil(q * sorted.length) - 1)];
  };
  const aggRows = (page: Page) => page.getByTestId('agg-row').evaluateAll((els) => els.map((e) => [e.getAttribute('data-key'), Number(e.getAttribute('data-value')), e.getAttribute('data-quantiles')]));
  const aggDone = (page: Page) => page.locator('[data-testid="aggs"][data-loading="false"]').waitFor();

  it('draws count, avg and quantiles by group, and a count by group over time; the form is in the URL', async () => {
    const page = await env.open(`/?${RANGE}&q=level:error`);
    await page.getByTestId('tab-aggs').click();
    await page.getByTestId('agg-func').selectOption('avg');
    await page.getByTestId('agg-field').selectOption('latency_ms');
    await page.getByTestId('agg-group').selectOption('service');
    await page.getByTestId('agg-row').first().waitFor();
    await aggDone(page);
    const errors = DOCS.filter((d) => d.level === 'error');
    const avg = (ds: Doc[]) => ds.reduce((a, d) => a + Number(d.latency_ms), 0) / ds.length;
    const rows = await aggRows(page);
    expect(rows.map((r) => r[0]).sort()).toEqual(['api', 'auth', 'db', 'web']);
    for (const [key, value] of rows) expect(value).toBeCloseTo(avg(errors.filter((d) => d.service === key)), 6);
    expect(params(page).get('tab')).toBe('aggs');
    expect(params(page).get('af')).toBe('avg');
    expect(params(page).get('afield')).toBe('latency_ms');
    expect(params(page).get('agroup')).toBe('service');
    // Quantiles of 1 666 values: exact (under the store's 2 048-value sketch threshold).
    await page.getByTestId('agg-func').selectOption('quantile');
    await page.getByTestId('agg-group').selectOption('');
    await page.getByTestId('agg-quantiles').fill('0.5, 0.99');
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="agg-row"]').length === 1 && document.querySelector('[data-testid="agg-row"]')!.getAttribute('data-quantiles')!.split(',').length === 2);
    await aggDone(page);
    const lat = errors.map((d) => Number(d.latency_ms));
    expect((await aggRows(page))[0]![2]).toBe(`${rank(lat, 0.5)},${rank(lat, 0.99)}`);
    // A bad quantile list is refused in the panel.
    await page.getByTestId('agg-quantiles').fill('0.5, 2');
    await page.getByTestId('agg-error').waitFor();
    // Count by level over all matches, then over time.
    await searched(page, async () => {
      await page.getByTestId('query-input').fill('');
      await page.getByTestId('query-input').press('Enter');
    });
    await page.getByTestId('agg-func').selectOption('count');
    await page.getByTestId('agg-field').selectOption('');
    await page.getByTestId('agg-group').selectOption('level');
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="agg-row"]').length === 3);
    await aggDone(page);
    const byLevel = Object.fromEntries(['info', 'warn', 'error'].map((l) => [l, DOCS.filter((d) => d.level === l).length]));
    expect(Object.fromEntries((await aggRows(page)).map((r) => [r[0], r[1]]))).toEqual(byLevel);
    await shootBoth(page, 'aggs');
    await page.getByTestId('agg-interval').selectOption('15m');
    await page.getByTestId('agg-series').waitFor();
    await aggDone(page);
    // Lines by total, then name: info (6 667), then error and warn (1 666 each).
    expect((await page.getByTestId('agg-series').getAttribute('data-lines'))!.split('|')).toEqual(['info', 'error', 'warn']);
    expect(params(page).get('aint')).toBe('15m');
    await shootBoth(page, 'aggs-over-time');
    // The link reproduces the panel.
    const again = await env.open(new URL(page.url()).search ? `/${new URL(page.url()).search}` : '/');
    await again.getByTestId('agg-series').waitFor();
    expect(await again.getByTestId('agg-interval').inputValue()).toBe('15m');
    await again.context().close();
    await page.context().close();
  });

  it('exports the current query as JSON lines and as CSV; a limit over max_export_limit is refused with its name', async () => {
    const q = 'service:db and level:error';
    const page = await env.open(`/?${RANGE}&q=${encodeURIComponent(q)}&cols=service,n`);
    const expected = NEWEST_FIRST.filter((d) => d.service === 'db' && d.level === 'error');
    await page.getByTestId('export-open').click();
    expect(await page.getByTestId('export-limit').inputValue()).toBe(String(expected.length));
    await page.getByTestId('export-fields').fill('');
    const [jsonl] = await Promise.all([page.waitForEvent('download'), page.getByTestId('export-start').click()]);
    const lines = readFileSync((await jsonl.path())!, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { id: string; time: string; data: Doc });
    expect(lines.map((l) => l.data)).toEqual(expected);
    expect(lines.map((l) => l.time)).toEqual(expected.map((d) => d.timestamp));
    await page.getByTestId('export-open').click();
    await page.getByTestId('export-csv').check();
    // The columns of the view are offered (after the time).
    expect(await page.getByTestId('export-fields').inputValue()).toBe('_time, service, n');
    const [csv] = await Promise.all([page.waitForEvent('download'), page.getByTestId('export-start').click()]);
    expect(csv.suggestedFilename()).toMatch(/\.csv$/);
    const rows = readFileSync((await csv.path())!, 'utf8').trim().split('\r\n');
    expect(rows[0]).toBe('_time,service,n');
    expect(rows.slice(1)).toEqual(expected.map((d) => `${d.timestamp},${d.service},${d.n}`));
    await page.getByTestId('export-open').click();
    await page.getByTestId('export-limit').fill('200000');
    await page.getByTestId('export-start').click();
    expect(await page.getByTestId('export-problem').textContent()).toContain('max_export_limit (100000)');
    await page.context().close();
  });

  it('live tail appends new matching documents, keeps the scroll position when scrolled up, and counts the unseen ones', async () => {
    const page = await env.open(`/?${RANGE}&q=${encodeURIComponent('host:tail-host')}`);
    await page.getByTestId('live').click();
    expect(params(page).get('live')).toBe('1');
    await page.getByTestId('live-waiting').waitFor();
    let k = 0;
    const ingest = async (n: number, host = 'tail-host') => {
      const docs = Array.from({ length: n }, () => ({ ...DOCS[0]!, timestamp: new Date().toISOString(), host, n: `tail-${k++}` }));
      const r = await bulk(env.store.url, ndjson(docs));
      expect(r.body.errors).toBe(false);
    };
    const count = async () => Number(await page.getByTestId('live-count').textContent());
    await ingest(3);
    await ingest(2, 'other-host');
    await page.waitForFunction(() => document.querySelector('[data-testid="live-count"]')?.textContent === '3');
    expect(await page.getByTestId('result-row').locator('.r-doc').allTextContents()).toEqual(['tail-0', 'tail-1', 'tail-2'].map((n) => expect.stringContaining(`n=${n}`)));
    await ingest(60);
    await page.waitForFunction(() => document.querySelector('[data-testid="live-count"]')?.textContent === '63');
    // At the bottom, the view follows: the newest row is in view.
    const scroller = page.getByTestId('results-scroll');
    expect(await scroller.evaluate((el) => el.scrollTop + el.clientHeight >= el.scrollHeight - 30)).toBe(true);
    await scroller.evaluate((el) => el.scrollTo({ top: 200 }));
    await page.waitForTimeout(100);
    const firstShown = await page.getByTestId('result-row').first().getAttribute('data-index');
    await ingest(5);
    await page.waitForFunction(() => document.querySelector('[data-testid="live-count"]')?.textContent === '68');
    expect(await scroller.evaluate((el) => el.scrollTop)).toBe(200);
    expect(await page.getByTestId('result-row').first().getAttribute('data-index')).toBe(firstShown);
    expect(await page.getByTestId('new-rows').textContent()).toBe('5 new ↓');
    await page.getByTestId('new-rows').click();
    await page.waitForFunction(() => !document.querySelector('[data-testid="new-rows"]'));
    expect(await count()).toBe(68);
    await page.getByTestId('live').click();
    expect(params(page).get('live')).toBeNull();
    // Back to the search over the range, which has none of the tail's documents.
    await page.getByTestId('no-results').waitFor();
    await page.context().close();
  });

  it('saves views per user name on the server, opens and deletes them', async () => {
    const q = 'status:404 and host:host-2';
    const page = await env.open(`/?${RANGE}&q=${encodeURIComponent(q)}&cols=service,status`);
    await page.getByTestId('saved-open').click();
    await page.getByTestId('user-name').fill('ana');
    await page.getByTestId('user-name').press('Enter');
    await page.getByTestId('save-name').fill('404s on host-2');
    await page.getByTestId('save').click();
    await page.getByTestId('saved-item').first().waitFor();
    expect(await page.getByTestId('saved-item').getAttribute('data-name')).toBe('404s on host-2');
    await page.context().close();
    // Another browser as ana finds it and opens the same view.
    const other = await env.open('/?range=15m', DESKTOP, { 'tidepool.explorer.user': 'ana' });
    await other.getByTestId('saved-open').click();
    await searched(other, () => other.getByTestId('saved-item').locator('.saved-open').click());
    expect(params(other).get('q')).toBe(q);
    expect(params(other).get('cols')).toBe('service,status');
    expect(params(other).get('from')).toBe(FROM);
    expect(await other.getByTestId('query-input').inputValue()).toBe(q);
    expect(await total(other)).toBe(DOCS.filter((d) => d.status === '404' && d.host === 'host-2').length);
    // bob has none of ana's.
    const bob = await env.open(`/?${RANGE}`, DESKTOP, { 'tidepool.explorer.user': 'bob' });
    await bob.getByTestId('saved-open').click();
    await bob.getByText('Nothing saved yet.').waitFor();
    await bob.context().close();
    await other.getByTestId('saved-open').click();
    await other.getByRole('button', { name: 'Delete 404s on host-2' }).click();
    await other.getByText('Nothing saved yet.').waitFor();
    await other.context().close();
  });

  it('switches to the dark theme and keeps it', async () => {
    const page = await env.open(`/?${RANGE}&q=level:warn&cols=service,message`);
    expect(await page.evaluate(() => document.documentElement.dataset['theme'])).toBe('light');
    await page.getByTestId('theme-toggle').click();
    expect(await page.evaluate(() => document.documentElement.dataset['theme'])).toBe('dark');
    await page.getByTestId('result-row').nth(2).getByRole('cell', { name: 'Open the document' }).click();
    await shootBoth(page, 'dark');
    await page.reload();
    await page.locator('[data-testid="app"][data-loading="false"]').waitFor();
    expect(await page.evaluate(() => document.documentElement.dataset['theme'])).toBe('dark');
    await page.getByTestId('theme-toggle').click();
    expect(await page.evaluate(() => document.documentElement.dataset['theme'])).toBe('light');
    await page.context().close();
  });
});
