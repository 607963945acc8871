// Explorer E2E, tools: aggregations as charts, export in both formats, live tail, saved queries per user, the dark theme.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { bulk, ndjson } from '../helpers/logstore.js';
import {
  DESKTOP,
  DOCS,
  FROM,
  NEWEST_FIRST,
  RANGE,
  params,
  searched,
  shootBoth,
  total,
  type ExplorerShared,
  type Doc,
} from './explorer-harness.js';

export function describeTools(s: ExplorerShared): void {
  describe('aggregations, export, live tail, saved queries, themes', () => {
    const rank = (values: number[], q: number) => {
      const sorted = [...values].sort((a, b) => a - b);
      return sorted[Math.max(0, Math.ceil(q * sorted.length) - 1)];
    };
    const aggRows = (page: Page) =>
      page
        .getByTestId('agg-row')
        .evaluateAll((els) =>
          els.map((e) => [
            e.getAttribute('data-key'),
            Number(e.getAttribute('data-value')),
            e.getAttribute('data-quantiles'),
          ]),
        );
    const aggDone = (page: Page) => page.locator('[data-testid="aggs"][data-loading="false"]').waitFor();

    it('draws count, avg and quantiles by group, and a count by group over time; the form is in the URL', async () => {
      const page = await s.env.open(`/?${RANGE}&q=level:error`);
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
      await page.waitForFunction(
        () =>
          document.querySelectorAll('[data-testid="agg-row"]').length === 1 &&
          document.querySelector('[data-testid="agg-row"]')!.getAttribute('data-quantiles')!.split(',').length === 2,
      );
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
      const byLevel = Object.fromEntries(
        ['info', 'warn', 'error'].map((l) => [l, DOCS.filter((d) => d.level === l).length]),
      );
      expect(Object.fromEntries((await aggRows(page)).map((r) => [r[0], r[1]]))).toEqual(byLevel);
      await shootBoth(page, 'aggs');
      await page.getByTestId('agg-interval').selectOption('15m');
      await page.getByTestId('agg-series').waitFor();
      await aggDone(page);
      // Lines by total, then name: info (6 667), then error and warn (1 666 each).
      expect((await page.getByTestId('agg-series').getAttribute('data-lines'))!.split('|')).toEqual([
        'info',
        'error',
        'warn',
      ]);
      expect(params(page).get('aint')).toBe('15m');
      await shootBoth(page, 'aggs-over-time');
      // The link reproduces the panel.
      const again = await s.env.open(new URL(page.url()).search ? `/${new URL(page.url()).search}` : '/');
      await again.getByTestId('agg-series').waitFor();
      expect(await again.getByTestId('agg-interval').inputValue()).toBe('15m');
      await again.context().close();
      await page.context().close();
    });

    it('exports the current query as JSON lines and as CSV; a limit over max_export_limit is refused with its name', async () => {
      const q = 'service:db and level:error';
      const page = await s.env.open(`/?${RANGE}&q=${encodeURIComponent(q)}&cols=service,n`);
      const expected = NEWEST_FIRST.filter((d) => d.service === 'db' && d.level === 'error');
      await page.getByTestId('export-open').click();
      expect(await page.getByTestId('export-limit').inputValue()).toBe(String(expected.length));
      await page.getByTestId('export-fields').fill('');
      const [jsonl] = await Promise.all([page.waitForEvent('download'), page.getByTestId('export-start').click()]);
      const lines = readFileSync((await jsonl.path())!, 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as { id: string; time: string; data: Doc });
      expect(lines.map((l) => l.data)).toEqual(expected);
      expect(lines.map((l) => l.time)).toEqual(expected.map((d) => d.timestamp));
      await page.getByTestId('export-open').click();
      await page.getByTestId('export-csv').check();
      // The columns of the view are offered (after the time).
      expect(await page.getByTestId('export-fields').inputValue()).toBe('_time, service, n');
      const [csv] = await Promise.all([page.waitForEvent('download'), page.getByTestId('export-start').click()]);
      expect(csv.suggestedFilename()).toMatch(/\.csv$/);
      const rows = readFileSync((await csv.path())!, 'utf8')
        .trim()
        .split('\r\n');
      expect(rows[0]).toBe('_time,service,n');
      expect(rows.slice(1)).toEqual(expected.map((d) => `${d.timestamp},${d.service},${d.n}`));
      await page.getByTestId('export-open').click();
      await page.getByTestId('export-limit').fill('200000');
      await page.getByTestId('export-start').click();
      expect(await page.getByTestId('export-problem').textContent()).toContain('max_export_limit (100000)');
      await page.context().close();
    });

    it('live tail appends new matching documents, keeps the scroll position when scrolled up, and counts the unseen ones', async () => {
      const page = await s.env.open(`/?${RANGE}&q=${encodeURIComponent('host:tail-host')}`);
      await page.getByTestId('live').click();
      expect(params(page).get('live')).toBe('1');
      await page.getByTestId('live-waiting').waitFor();
      let k = 0;
      const ingest = async (n: number, host = 'tail-host') => {
        const docs = Array.from({ length: n }, () => ({
          ...DOCS[0]!,
          timestamp: new Date().toISOString(),
          host,
          n: `tail-${k++}`,
        }));
        const r = await bulk(s.env.store.url, ndjson(docs));
        expect(r.body.errors).toBe(false);
      };
      const count = async () => Number(await page.getByTestId('live-count').textContent());
      await ingest(3);
      await ingest(2, 'other-host');
      await page.waitForFunction(() => document.querySelector('[data-testid="live-count"]')?.textContent === '3');
      expect(await page.getByTestId('result-row').locator('.r-doc').allTextContents()).toEqual(
        ['tail-0', 'tail-1', 'tail-2'].map((n) => expect.stringContaining(`n=${n}`)),
      );
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
      const page = await s.env.open(`/?${RANGE}&q=${encodeURIComponent(q)}&cols=service,status`);
      await page.getByTestId('saved-open').click();
      await page.getByTestId('user-name').fill('ana');
      await page.getByTestId('user-name').press('Enter');
      await page.getByTestId('save-name').fill('404s on host-2');
      await page.getByTestId('save').click();
      await page.getByTestId('saved-item').first().waitFor();
      expect(await page.getByTestId('saved-item').getAttribute('data-name')).toBe('404s on host-2');
      await page.context().close();
      // Another browser as ana finds it and opens the same view.
      const other = await s.env.open('/?range=15m', DESKTOP, { 'tidepool.explorer.user': 'ana' });
      await other.getByTestId('saved-open').click();
      await searched(other, () => other.getByTestId('saved-item').locator('.saved-open').click());
      expect(params(other).get('q')).toBe(q);
      expect(params(other).get('cols')).toBe('service,status');
      expect(params(other).get('from')).toBe(FROM);
      expect(await other.getByTestId('query-input').inputValue()).toBe(q);
      expect(await total(other)).toBe(DOCS.filter((d) => d.status === '404' && d.host === 'host-2').length);
      // bob has none of ana's.
      const bob = await s.env.open(`/?${RANGE}`, DESKTOP, { 'tidepool.explorer.user': 'bob' });
      await bob.getByTestId('saved-open').click();
      await bob.getByText('Nothing saved yet.').waitFor();
      await bob.context().close();
      await other.getByTestId('saved-open').click();
      await other.getByRole('button', { name: 'Delete 404s on host-2' }).click();
      await other.getByText('Nothing saved yet.').waitFor();
      await other.context().close();
    });

    it('switches to the dark theme and keeps it', async () => {
      const page = await s.env.open(`/?${RANGE}&q=level:warn&cols=service,message`);
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
}
