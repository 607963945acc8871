// Page tests: the overview's charts of generated traffic (kept across navigation), per-client rates, and every page's screenshots.
import { describe, expect, it } from 'vitest';
import { expectScreenshot } from '../helpers/screenshots.js';
import { hideLive, settled, shootBoth, WALL } from './console-harness.js';
import { chartMax, column, rowsOf } from './pages-api.js';
import type { Shared } from './pages.test.js';

export function describeOverviewAndShots(s: Shared): void {
  describe('with traffic running', () => {
    it('overview: charts show the traffic the test generated and survive navigation between pages', async () => {
      const page = await s.env.open('admin', '/overview');
      await page.getByTestId('overview-cards').waitFor();
      // The pooler's rates are averages over its stats period: wait until a poll has seen the traffic.
      await expect.poll(() => chartMax(page, 'chart-rates', 'qps'), { timeout: 30_000 }).toBeGreaterThan(0);
      expect(await chartMax(page, 'chart-rates', 'tps')).toBeGreaterThan(0);
      await expect.poll(() => chartMax(page, 'chart-errors', 'errors/s'), { timeout: 30_000 }).toBeGreaterThan(0);
      expect(await chartMax(page, 'chart-servers', 'active')).not.toBeNull();
      await page.getByTestId('chart-rates').locator('canvas').waitFor();
      const before = (await chartMax(page, 'chart-rates', 'qps'))!;
      await page.getByRole('link', { name: 'Pools', exact: true }).click();
      await page.getByTestId('pools-table').waitFor();
      await page.getByRole('link', { name: 'Overview', exact: true }).click();
      // The history lives in the browser across pages: the chart comes back drawn (never 'Collecting data'), with at least what it had.
      await page.getByTestId('chart-rates').waitFor();
      expect(await page.getByTestId('chart-rates').textContent()).not.toContain('Collecting data');
      await page.getByTestId('chart-rates').locator('canvas').waitFor();
      expect(await chartMax(page, 'chart-rates', 'qps')).toBeGreaterThanOrEqual(before);
      // Latency percentiles of the traffic (query_p50_us, query_p95_us, query_p99_us of /api/overview).
      await expect.poll(() => chartMax(page, 'chart-latency', 'p95'), { timeout: 20_000 }).toBeGreaterThan(0);
      expect(await chartMax(page, 'chart-latency', 'p99')).toBeGreaterThanOrEqual(
        (await chartMax(page, 'chart-latency', 'p50'))!,
      );
      await page.context().close();
    });

    it('clients: per-client Q/s and Tx/s from the change between two polls, sorted by the pooler', async () => {
      const page = await s.env.open('admin', '/clients?sort=qps&order=desc');
      await page.getByTestId('clients-table').waitFor();
      const numbers = async (label: string) =>
        (await column(page, 'clients-table', label))
          .map((t) => Number(t.replace(/,/g, '')))
          .filter((n) => !Number.isNaN(n));
      await expect.poll(async () => Math.max(...(await numbers('Q/s'))), { timeout: 20_000 }).toBeGreaterThan(0);
      // Sorted on the server: the rates shown come in descending order (clients without a rate yet last).
      await expect
        .poll(
          async () => {
            const q = await numbers('Q/s');
            return q.length > 0 && q.every((v, i) => i === 0 || q[i - 1]! >= v);
          },
          { timeout: 20_000 },
        )
        .toBe(true);
      expect(await page.getByTestId('clients-table').locator('th[aria-sort=descending]').textContent()).toContain(
        'Q/s',
      );
      await page.goto(`${s.env.base}/clients?sort=tps&order=desc`);
      await page.getByTestId('clients-table').waitFor();
      await expect.poll(async () => Math.max(...(await numbers('Tx/s'))), { timeout: 20_000 }).toBeGreaterThan(0);
      await page.context().close();
    });
  });

  describe('screenshots', () => {
    it('every page at 1440x900 and 390x844, the wall at 1920x1080, the overview in the dark theme', async () => {
      await s.traffic.stop();
      const page = await s.env.open('admin', '/overview');
      const table = (id: string) => () => page.getByTestId(id).waitFor();
      const go = async (link: string, ready: () => Promise<unknown>) => {
        await page
          .getByRole('navigation', { name: 'Console pages' })
          .getByRole('link', { name: link, exact: true })
          .click();
        await ready();
      };
      await page.getByTestId('chart-rates').locator('canvas').waitFor();
      await shootBoth(page, 'overview', table('overview-charts'));
      await page.emulateMedia({ colorScheme: 'dark' });
      await settled(page);
      await expectScreenshot(page, 'overview-dark-desktop', { mask: await hideLive(page) });
      await page.emulateMedia({ colorScheme: 'light' });
      await go('Pools', table('pools-table'));
      await shootBoth(page, 'pools', table('pools-table'));
      await page.getByTestId('pools-table').getByRole('link', { name: 'app' }).first().click();
      await page.getByTestId('pool-clients').waitFor();
      await shootBoth(page, 'pool-detail', table('pool-servers'));
      await go('Clients', table('clients-table'));
      await expect.poll(() => rowsOf(page, 'clients-table').count(), { timeout: 10_000 }).toBe(6);
      await shootBoth(page, 'clients', table('clients-table'));
      await go('Servers', table('servers-table'));
      // Each pool had clients enough to open both its servers: four rows, in pool order.
      await expect.poll(() => rowsOf(page, 'servers-table').count(), { timeout: 10_000 }).toBe(4);
      await shootBoth(page, 'servers', table('servers-table'));
      await go('Apps', table('apps-table'));
      await shootBoth(page, 'apps', table('apps-table'));
      await go('Caches', table('prepared-table'));
      // Sorted by pool: the default order (uses) depends on the traffic's timing.
      await page.getByTestId('prepared-table').getByRole('button', { name: 'pool' }).click();
      // Top queries too: by uses, which pool's row of a text comes first changes from run to run.
      await page.getByTestId('top-queries-table').getByRole('button', { name: 'pool' }).click();
      // Whether a pool's `select 1/0` (every 25th query of a client) made it into Top queries before the traffic
      // stopped depends on timing: 4 to 6 rows, so the image allows the rows that come and go (about 1 % of pixels).
      await shootBoth(page, 'caches', table('prepared-table'), 0.02);
      await go('Logs', () => page.getByTestId('log-line').first().waitFor());
      await page.getByRole('button', { name: 'Pause' }).click();
      // Log lines differ from run to run in number and text: the image checks the page's frame and controls.
      await shootBoth(page, 'logs', () => page.getByTestId('log-list').waitFor(), 0.05);
      await go('Config', table('config-table'));
      // The SSO key file lives in a fresh temporary directory each run.
      await shootBoth(page, 'config', table('databases-table'), undefined, [
        page.getByTestId('config-table').getByRole('row').filter({ hasText: 'sso_public_key_file' }),
      ]);
      await page.goto(`${s.env.base}/wall`);
      await page.getByTestId('wall-pools').waitFor();
      await shootBoth(page, 'wall', table('wall-pools'));
      await page.setViewportSize(WALL);
      await settled(page);
      await expectScreenshot(page, 'wall-1920x1080', { mask: await hideLive(page) });
      await page.context().close();
      // Twenty-odd pages drawn and compared on a shared 2-core machine.
    }, 180_000);
  });
}
