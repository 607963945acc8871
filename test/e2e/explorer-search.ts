// Explorer E2E, search: the query editor (highlighting, completion, errors), time ranges, histogram zoom, results and the URL.
import { describe, expect, it } from 'vitest';
import {
  DESKTOP,
  DOCS,
  FROM,
  NEWEST_FIRST,
  N,
  RANGE,
  TO,
  params,
  searched,
  shootBoth,
  between,
  total,
  rowsInDom,
  runQuery,
  type ExplorerShared,
} from './explorer-harness.js';

export function describeSearch(s: ExplorerShared): void {
  describe('query, time range, results, URL, histogram', () => {
    it('shows every document of the range newest first, the histogram and only the rows in view', async () => {
      const page = await s.env.open(`/?${RANGE}`);
      expect(await total(page)).toBe(N);
      expect(Number(await page.getByTestId('histogram').getAttribute('data-total'))).toBe(N);
      const first = page.getByTestId('result-row').first();
      expect(await first.locator('.r-time').textContent()).toBe(
        NEWEST_FIRST[0]!.timestamp.replace('T', ' ').replace('Z', ''),
      );
      expect(await first.locator('.r-doc').textContent()).toContain(`n=${NEWEST_FIRST[0]!.n}`);
      // A thousand rows are loaded; the DOM holds the visible ones and a few more.
      expect(await page.getByTestId('summary').textContent()).toContain('1,000 loaded');
      expect(await rowsInDom(page)).toBeLessThan(80);
      expect(await page.getByTestId('time-button').textContent()).toContain(
        '2026-03-02 09:55:00 → 2026-03-02 12:05:00 UTC',
      );
      await shootBoth(page, 'results');
      await page.context().close();
    });

    it('runs a typed query, highlights it, keeps it in the URL, and the back button returns to the previous view', async () => {
      const page = await s.env.open(`/?${RANGE}`);
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
      const page = await s.env.open(`/?${RANGE}`);
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
      const page = await s.env.open(`/?${RANGE}`);
      const input = page.getByTestId('query-input');
      await input.fill('');
      await input.pressSequentially('serv');
      const list = page.getByTestId('completions');
      await list.waitFor();
      expect(await list.locator('.c-label').allTextContents()).toEqual(['service']);
      await input.press('Tab');
      expect(await input.inputValue()).toBe('service:');
      await list.locator('li', { hasText: 'auth' }).waitFor();
      const counts = Object.fromEntries(
        ['api', 'web', 'db', 'auth'].map((s) => [s, DOCS.filter((d) => d.service === s).length]),
      );
      const items = await list
        .locator('li[role="option"]')
        .evaluateAll((lis) =>
          lis.map((li) => [li.querySelector('.c-label')!.textContent, li.querySelector('.c-detail')!.textContent]),
        );
      expect(items).toEqual(
        Object.entries(counts)
          .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
          .map(([k, v]) => [k, String(v)]),
      );
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
      const page = await s.env.open(`/?${RANGE}`);
      await page.getByTestId('time-button').click();
      await searched(page, () =>
        page.getByTestId('time-panel').getByRole('button', { name: 'Last 15 minutes' }).click(),
      );
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
      expect(await total(page)).toBe(
        DOCS.filter(between('2026-03-02T10:30:00.000Z', '2026-03-02T11:00:00.000Z')).length,
      );
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
      const page = await s.env.open(`/?${RANGE}&q=level:error`);
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
      const page = await s.env.open(url);
      const expected = NEWEST_FIRST.filter((d) => d.status === '404' && d.service === 'api');
      expect(await total(page)).toBe(expected.length);
      expect(await page.getByTestId('query-input').inputValue()).toBe('status:404 and service:api');
      expect(await page.getByTestId('column-header').allTextContents()).toEqual(['service×', 'status×', 'message×']);
      const row = page.getByTestId('result-row').nth(1);
      expect(await row.locator('.r-col').allTextContents()).toEqual([
        expected[1]!.service,
        expected[1]!.status,
        expected[1]!.message,
      ]);
      await row.getByRole('cell', { name: 'Open the document' }).click();
      const json = JSON.parse((await row.locator('.r-json').textContent())!);
      expect(json).toEqual(expected[1]);
      await shootBoth(page, 'row-open');
      await page.getByRole('table').getByRole('button', { name: 'Remove column status' }).click();
      expect(params(page).get('cols')).toBe('service,message');
      await page.context().close();
    });

    it('loads all 10 000 documents by scrolling, with a bounded DOM, down to the oldest', async () => {
      const page = await s.env.open(`/?${RANGE}`);
      const scroller = page.getByTestId('results-scroll');
      const started = Date.now();
      for (let i = 0; i < 60; i++) {
        await scroller.evaluate((el) => el.scrollTo({ top: el.scrollHeight }));
        const text = (await page.getByTestId('summary').textContent())!;
        if (!text.includes('loaded')) break;
        await page.waitForTimeout(100);
      }
      await page.waitForFunction(
        () => !document.querySelector('[data-testid="summary"]')!.textContent!.includes('loaded'),
      );
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
      console.log(
        `explorer: 10 000 rows loaded by scrolling in ${scrollMs} ms; ${frame.toFixed(1)} ms per scrolled frame`,
      );
      expect(await rowsInDom(page)).toBeLessThan(80);
      await page.setViewportSize(DESKTOP);
      await page.context().close();
    });
  });
}
