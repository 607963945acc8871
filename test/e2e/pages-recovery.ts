// Page tests: the pooler stopped and started again under an open console: a clear banner, then recovery without a reload.
import { describe, expect, it } from 'vitest';
import { startTraffic } from './console-harness.js';
import { chartMax } from './pages-api.js';
import type { Shared } from './pages.test.js';

export function describeRecovery(s: Shared): void {
  describe('the pooler goes away', () => {
    it('shows the offline banner while the pooler is down and recovers by itself when it is back', async () => {
      const page = await s.env.open('admin', '/overview');
      await page.getByTestId('chart-rates').locator('canvas').waitFor();
      await s.traffic.end();
      await s.env.stopPooler();
      await page.getByTestId('offline-banner').waitFor({ timeout: 15_000 });
      expect(await page.getByTestId('offline-banner').textContent()).toContain('The pooler is not answering');
      // The last figures stay on screen under the banner.
      expect(await page.getByTestId('overview-cards').count()).toBe(1);
      await page.getByRole('link', { name: 'Pools', exact: true }).click();
      await s.env.startPooler();
      s.traffic = await startTraffic(s.env.tp.port);
      await page.getByTestId('offline-banner').waitFor({ state: 'detached', timeout: 15_000 });
      await page.getByTestId('pools-table').waitFor();
      await page.getByRole('link', { name: 'Overview', exact: true }).click();
      // New traffic on the new pooler reaches the same charts, which kept their history.
      await expect.poll(() => chartMax(page, 'chart-rates', 'qps'), { timeout: 30_000 }).toBeGreaterThan(0);
      expect(await page.getByTestId('role-label').textContent()).toBe('admin');
      await page.context().close();
    });
  });
}
