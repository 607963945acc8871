// Explorer E2E, fields: the sidebar's top values and share, + and − filters, columns, show context, the phone panel.
import { describe, expect, it } from 'vitest';
import {
  DOCS,
  NEWEST_FIRST,
  N,
  PHONE,
  RANGE,
  params,
  searched,
  shootBoth,
  total,
  type ExplorerShared,
  type Doc,
} from './explorer-harness.js';

export function describeSidebar(s: ExplorerShared): void {
  describe('field sidebar, columns, context', () => {
    const share = (n: number, of: number) => `${((n / of) * 100).toFixed(1)}%`;
    const topOf = (docs: Doc[], field: keyof Doc) => {
      const m = new Map<string, number>();
      for (const d of docs) m.set(d[field], (m.get(d[field]) ?? 0) + 1);
      return [...m].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
    };

    it("shows a field's top values with their share; + and − add field:value and not field:value", async () => {
      const page = await s.env.open(`/?${RANGE}`);
      const sidebar = page.getByTestId('field-sidebar');
      expect(
        await sidebar.getByTestId('field').evaluateAll((els) => els.map((e) => e.getAttribute('data-field'))),
      ).toEqual(['host', 'latency_ms', 'level', 'message', 'n', 'service', 'status', 'timestamp', 'user']);
      await sidebar.getByRole('button', { name: 'level', exact: true }).click();
      const values = sidebar.getByTestId('top-value');
      await values.first().waitFor();
      const levels = topOf(DOCS, 'level');
      expect(
        await values.evaluateAll((els) =>
          els.map((e) => [e.getAttribute('data-key'), Number(e.getAttribute('data-count'))]),
        ),
      ).toEqual(levels);
      expect(await values.locator('.fs-share').allTextContents()).toEqual(levels.map(([, n]) => share(n, N)));
      await searched(page, () => sidebar.getByRole('button', { name: 'Filter for level: error' }).click());
      expect(params(page).get('q')).toBe('level:error');
      const errors = DOCS.filter((d) => d.level === 'error');
      expect(await total(page)).toBe(errors.length);
      // The opened field's values now count within the matches.
      await sidebar.getByRole('button', { name: 'service', exact: true }).click();
      await page.waitForFunction(
        (n) =>
          [...document.querySelectorAll('[data-testid="top-value"]')].reduce(
            (a, e) => a + Number(e.getAttribute('data-count')),
            0,
          ) === n,
        errors.length,
      );
      const services = topOf(errors, 'service');
      expect(
        await values.evaluateAll((els) =>
          els.map((e) => [e.getAttribute('data-key'), Number(e.getAttribute('data-count'))]),
        ),
      ).toEqual(services);
      expect(await values.locator('.fs-share').allTextContents()).toEqual(
        services.map(([, n]) => share(n, errors.length)),
      );
      await shootBoth(page, 'sidebar');
      await searched(page, () => sidebar.getByRole('button', { name: 'Filter out service: api' }).click());
      expect(params(page).get('q')).toBe('level:error and not service:api');
      expect(await page.getByTestId('query-input').inputValue()).toBe('level:error and not service:api');
      expect(await total(page)).toBe(errors.filter((d) => d.service !== 'api').length);
      await page.context().close();
    });

    it('adds and removes columns from the sidebar, kept in the URL', async () => {
      const page = await s.env.open(`/?${RANGE}&q=level:warn`);
      const sidebar = page.getByTestId('field-sidebar');
      await sidebar.getByRole('button', { name: 'Add column service' }).click();
      await sidebar.getByRole('button', { name: 'Add column latency_ms' }).click();
      expect(params(page).get('cols')).toBe('service,latency_ms');
      expect(await page.getByTestId('column-header').allTextContents()).toEqual(['service×', 'latency_ms×']);
      const warn = NEWEST_FIRST.filter((d) => d.level === 'warn');
      expect(await page.getByTestId('result-row').first().locator('.r-col').allTextContents()).toEqual([
        warn[0]!.service,
        warn[0]!.latency_ms,
      ]);
      expect(await sidebar.getByRole('button', { name: 'Remove column service' }).getAttribute('aria-pressed')).toBe(
        'true',
      );
      await sidebar.getByRole('button', { name: 'Remove column service' }).click();
      expect(params(page).get('cols')).toBe('latency_ms');
      await sidebar.getByRole('button', { name: 'Remove column latency_ms' }).click();
      expect(params(page).get('cols')).toBeNull();
      expect(await page.getByTestId('result-row').first().locator('.r-doc').count()).toBe(1);
      await page.context().close();
    });

    it('shows the documents around one, and around it within the same service', async () => {
      const page = await s.env.open(`/?${RANGE}&q=n:5000`);
      await page.getByTestId('result-row').first().getByRole('cell', { name: 'Open the document' }).click();
      await page.getByTestId('show-context').click();
      const ctx = page.getByTestId('context');
      const rows = ctx.getByTestId('context-row');
      await rows.first().waitFor();
      const ids = async () =>
        (await rows.locator('.ctx-doc').allTextContents()).map((t) => Number(/\bn=(\d+)/.exec(t)![1]));
      expect(await ids()).toEqual(Array.from({ length: 21 }, (_, i) => 4990 + i));
      expect(await ctx.locator('li[aria-current="true"] .ctx-doc').textContent()).toContain('n=5000');
      await shootBoth(page, 'context');
      await ctx.getByTestId('context-field').selectOption('service');
      await page.waitForFunction(() =>
        document.querySelector('[data-testid="context"] .fs-note')?.textContent?.includes('where'),
      );
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
      const page = await s.env.open(`/?${RANGE}`, PHONE);
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
}
