// Page tests across pages: the command palette, (i) help on metrics, keyboard use, polling paused in a hidden tab, what each role sees.
import { describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import type { Shared } from './pages.test.js';

/** Makes the page believe its tab is hidden (or shown again), as a browser does when the user switches tabs. */
async function setHidden(page: Page, hidden: boolean): Promise<void> {
  await page.evaluate((h) => {
    Object.defineProperty(document, 'visibilityState', { configurable: true, get: () => (h ? 'hidden' : 'visible') });
    document.dispatchEvent(new Event('visibilitychange'));
  }, hidden);
}

export function describeCrossPage(s: Shared): void {
  describe('across pages', () => {
    it('command palette: Ctrl+K, type, arrows and Enter go to a pool or a page; Escape closes', async () => {
      const page = await s.env.open('anonymous', '/overview');
      await page.getByTestId('overview-cards').waitFor();
      await page.keyboard.press('Control+k');
      const dialog = page.getByRole('dialog', { name: 'Go to a page or a pool' });
      await dialog.waitFor();
      await page.keyboard.type('scram');
      expect(await dialog.getByRole('option').allTextContents()).toEqual(['app/scramuser pool']);
      await page.keyboard.press('Enter');
      await page.getByRole('heading', { name: 'app/scramuser' }).waitFor();
      expect(page.url()).toBe(`${s.env.base}/pools/app/scramuser`);
      await page.keyboard.press('Meta+k');
      await dialog.waitFor();
      await page.keyboard.type('l');
      const options = await dialog.getByRole('option').allTextContents();
      expect(options.length).toBeGreaterThan(1);
      for (const o of options) expect(o.toLowerCase()).toContain('l');
      expect(await dialog.getByRole('option', { selected: true }).textContent()).toBe(options[0]);
      await page.keyboard.press('ArrowDown');
      expect(await dialog.getByRole('option', { selected: true }).textContent()).toBe(options[1]);
      await page.keyboard.press('Escape');
      expect(await dialog.count()).toBe(0);
      await page.keyboard.press('Control+k');
      await page.keyboard.type('logs');
      await page.keyboard.press('Enter');
      await expect.poll(() => page.url(), { timeout: 10_000 }).toBe(`${s.env.base}/logs`);
      await page.context().close();
    });

    it('every metric has an (i) help that says what it means, by mouse and by keyboard (Enter, Escape)', async () => {
      const page = await s.env.open('anonymous', '/overview');
      await page.getByTestId('overview-cards').waitFor();
      const cards = page.getByTestId('overview-cards').locator('.card');
      for (let i = 0; i < (await cards.count()); i++)
        expect(
          await cards
            .nth(i)
            .getByRole('button', { name: /^What is / })
            .count(),
        ).toBe(1);
      const help = page.getByRole('button', { name: 'What is transactions per second?' });
      await help.click();
      const tip = page.getByRole('tooltip').filter({ hasText: 'Transactions the pooler saw finish per second' });
      expect(await tip.isVisible()).toBe(true);
      expect(await help.getAttribute('aria-describedby')).toBe(await tip.getAttribute('id'));
      await page.keyboard.press('Escape');
      await page.mouse.move(0, 0);
      expect(await tip.isVisible()).toBe(false);
      await help.focus();
      await page.keyboard.press('Enter');
      expect(await tip.isVisible()).toBe(true);
      expect(await help.getAttribute('aria-expanded')).toBe('true');
      await page.keyboard.press('Escape');
      expect(await tip.isVisible()).toBe(false);
      for (const url of ['/clients', '/pools', '/servers']) {
        await page.goto(s.env.base + url);
        const table = page.locator('table').first();
        await table.waitFor();
        // Fields the API adds later (data-extra) show up without a help text until the console learns them.
        const numeric = table.locator('th.num:not([data-extra])');
        for (let i = 0; i < (await numeric.count()); i++)
          expect(
            await numeric
              .nth(i)
              .getByRole('button', { name: /^What is / })
              .count(),
            `${url} column ${i}`,
          ).toBe(1);
      }
      await page.context().close();
    });

    it('keyboard: the skip link comes first; a sort header works with Enter; the pages have landmarks and labelled tables', async () => {
      const page = await s.env.open('anonymous', '/clients');
      await page.getByTestId('clients-table').waitFor();
      await page.keyboard.press('Tab');
      expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Skip to content');
      await page.keyboard.press('Enter');
      expect(await page.evaluate(() => document.activeElement?.id)).toBe('content');
      await page.getByTestId('clients-table').getByRole('button', { name: 'user' }).focus();
      await page.keyboard.press('Enter');
      await expect.poll(() => new URL(page.url()).searchParams.get('sort'), { timeout: 10_000 }).toBe('user');
      expect(
        await page
          .getByRole('navigation', { name: 'Console pages' })
          .getByRole('link', { name: 'Clients' })
          .getAttribute('aria-current'),
      ).toBe('page');
      expect(await page.getByRole('table', { name: 'Client connections' }).count()).toBe(1);
      expect(await page.getByRole('search', { name: 'Filter clients' }).count()).toBe(1);
      await page.context().close();
    });

    it('polling stops while the tab is hidden and resumes when it shows again', async () => {
      const page = await s.env.open('anonymous', '/pools');
      await page.getByTestId('pools-table').waitFor();
      const requests: string[] = [];
      page.on('request', (r) => {
        if (r.url().includes('/api/')) requests.push(r.url());
      });
      await setHidden(page, true);
      requests.length = 0;
      await new Promise((r) => setTimeout(r, 5000));
      expect(requests).toEqual([]);
      await setHidden(page, false);
      await expect.poll(() => requests.some((u) => u.endsWith('/api/pools')), { timeout: 10_000 }).toBe(true);
      await page.context().close();
    });

    it('roles: an Sso user reads Logs and Caches but sees no actions; Anonymous gets the sign-in prompt there', async () => {
      const sso = await s.env.open('sso', '/logs');
      await sso.getByTestId('log-list').waitFor();
      await sso.goto(`${s.env.base}/pools/app/md5user`);
      await sso.getByTestId('pool-cards').waitFor();
      expect(await sso.getByRole('button', { name: /^(PAUSE|RESUME|RECONNECT)$/ }).count()).toBe(0);
      await sso.context().close();
      const anon = await s.env.open('anonymous', '/logs');
      await anon.getByTestId('needs-sign-in').waitFor();
      expect(await anon.getByTestId('log-list').count()).toBe(0);
      await anon.context().close();
    });
  });
}
