// Page tests: pools and deep links, clients filters in the URL, servers joined with pg_stat_activity, apps, caches, logs, config, the wall.
import { describe, expect, it } from 'vitest';
import pg from 'pg';
import { WALL } from './console-harness.js';
import { apiGet, apiPost, column, columns, rowsOf, searchOf } from './pages-api.js';
import type { Shared } from './pages.test.js';

export function describeDataPages(s: Shared): void {
  describe('pools and pool detail', () => {
    it('saturation bars; deep links typed by hand (/pools/<database>/<user>, the older user@database), an unknown pool, an unknown page', async () => {
      const page = await s.env.open('anonymous', '/pools');
      await page.getByTestId('pools-table').waitFor();
      expect(await page.getByTestId('pools-table').getByRole('meter').count()).toBe(2);
      expect(
        await page.getByRole('meter', { name: 'saturation of app/md5user' }).getAttribute('aria-valuenow'),
      ).toMatch(/^\d+$/);
      await page.goto(`${s.env.base}/pools/app/scramuser`);
      await page.getByRole('heading', { name: 'app/scramuser' }).waitFor();
      await expect
        .poll(() => column(page, 'pool-clients', 'application'), { timeout: 10_000 })
        .toEqual(['web', 'web', 'web']);
      // Per-pool p95 from /api/pools_extended, beside the mean.
      await expect.poll(() => page.getByTestId('pool-cards').textContent(), { timeout: 10_000 }).toMatch(/p95 \d/);
      const pids = await column(page, 'pool-servers', 'PostgreSQL pid');
      expect(pids.length).toBeGreaterThan(0);
      await page.goto(`${s.env.base}/pools/md5user@app`);
      await page.getByRole('heading', { name: 'app/md5user' }).waitFor();
      await expect
        .poll(async () => (await column(page, 'pool-clients', 'application')).sort(), { timeout: 10_000 })
        .toEqual(['billing', 'billing', 'reports']);
      await page.goto(`${s.env.base}/pools/app/nobody`);
      await page.getByTestId('no-pool').waitFor();
      expect(await page.getByTestId('no-pool').textContent()).toContain('There is no pool app/nobody');
      await page.goto(`${s.env.base}/no/such/page`);
      await page.getByRole('heading', { name: 'No such page' }).waitFor();
      await page.context().close();
    });
  });

  describe('clients', () => {
    it('URL filters round-trip: typed URL, form, reload, clear; sort in the URL; X-Total-Count', async () => {
      const page = await s.env.open('anonymous', '/clients?application_name=billing');
      await expect
        .poll(() => column(page, 'clients-table', 'application'), { timeout: 10_000 })
        .toEqual(['billing', 'billing']);
      expect(await page.getByRole('search', { name: 'Filter clients' }).getByLabel('Application').inputValue()).toBe(
        'billing',
      );
      expect(await page.getByTestId('clients-count').textContent()).toBe('1–2 of 2');
      // Columns of the fields SHOW CLIENTS carries: query age and bytes per client.
      const heads = await page.getByTestId('clients-table').locator('thead th').allTextContents();
      for (const h of ['query age', 'received', 'sent', 'wait reason', 'Q/s', 'Tx/s'])
        expect(heads.some((t) => t.startsWith(h))).toBe(true);
      for (const b of await column(page, 'clients-table', 'received')) expect(b).toMatch(/^\d+(\.\d)? (B|KiB|MiB)$/);
      await page.getByLabel('State').selectOption('idle');
      await expect.poll(() => searchOf(page).get('state'), { timeout: 10_000 }).toBe('idle');
      expect(searchOf(page).get('application_name')).toBe('billing');
      await page.reload();
      await expect.poll(() => column(page, 'clients-table', 'state'), { timeout: 10_000 }).toEqual(['idle', 'idle']);
      expect(await page.getByLabel('State').inputValue()).toBe('idle');
      await page.getByRole('button', { name: 'Clear' }).click();
      await expect.poll(() => rowsOf(page, 'clients-table').count(), { timeout: 10_000 }).toBe(6);
      expect(page.url()).toBe(`${s.env.base}/clients`);
      await page.getByLabel('Pool').selectOption('app/scramuser');
      await expect
        .poll(() => column(page, 'clients-table', 'user'), { timeout: 10_000 })
        .toEqual(['scramuser', 'scramuser', 'scramuser']);
      expect(searchOf(page).get('pool')).toBe('app/scramuser');
      await page.getByLabel('Pool').selectOption('');
      await page.getByLabel('Peer address').fill('10.9.9.9');
      await page.getByTestId('clients-empty').waitFor();
      expect(await page.getByTestId('clients-empty').textContent()).toBe('No client matches these filters.');
      await page.getByLabel('Peer address').fill('127.0.0.1');
      await expect.poll(() => rowsOf(page, 'clients-table').count(), { timeout: 10_000 }).toBe(6);
      // Sorting asks the server: the URL says how, the rows come back in that order.
      await page.getByTestId('clients-table').getByRole('button', { name: 'queries', exact: true }).click();
      await expect.poll(() => searchOf(page).get('sort'), { timeout: 10_000 }).toBe('query_count');
      expect(searchOf(page).get('order')).toBe('desc');
      expect(await page.getByTestId('clients-table').locator('th[aria-sort=descending]').textContent()).toContain(
        'queries',
      );
      // The URL changes before the next poll brings the rows in the new order: wait for that poll.
      await expect
        .poll(
          async () => {
            const counts = (await column(page, 'clients-table', 'queries')).map((t) => Number(t.replace(/,/g, '')));
            return counts.length === 6 && counts.every((c, i) => i === 0 || counts[i - 1] >= c);
          },
          { timeout: 10_000 },
        )
        .toBe(true);
      const api = await apiGet<unknown[]>(s.env.base, '/api/clients?application_name=web&limit=1');
      expect(api.body).toHaveLength(1);
      expect(api.headers.get('x-total-count')).toBe('3');
      const bad = await apiGet<{ error: string; message: string }>(s.env.base, '/api/clients?sort=nope');
      expect(bad.status).toBe(400);
      expect(bad.body).toMatchObject({ error: 'bad_request' });
      expect(bad.body.message).toContain('"sort" must be a column of SHOW CLIENTS');
      await page.context().close();
    });

    it('a waiting client shows its wait time and reason (pool paused)', async () => {
      const c = new pg.Client({
        host: '127.0.0.1',
        port: s.env.tp.port,
        database: 'app',
        user: 'md5user',
        password: 'md5pass',
        application_name: 'waiter',
      });
      await c.connect();
      expect(await apiPost(s.env.base, '/api/admin/pause', { database: 'app', user: 'md5user' })).toBe(200);
      const pending = c.query('select 1');
      try {
        const page = await s.env.open('anonymous', '/clients?application_name=waiter');
        await expect.poll(() => column(page, 'clients-table', 'state'), { timeout: 10_000 }).toEqual(['waiting']);
        expect(await column(page, 'clients-table', 'wait reason')).toEqual(['pool paused']);
        // Seconds from SHOW CLIENTS wait, or finer from wait_us when the pooler reports it; it grows while the pool is paused.
        await expect
          .poll(async () => (await column(page, 'clients-table', 'wait'))[0], { timeout: 10_000 })
          .toMatch(/^([1-9]\d* s|\d+\.\d+ s)$/);
        await page.context().close();
      } finally {
        expect(await apiPost(s.env.base, '/api/admin/resume', { database: 'app', user: 'md5user' })).toBe(200);
        await pending;
        await c.end();
      }
    });
  });

  describe('servers, apps, caches', () => {
    it('servers: every PostgreSQL pid shown is a backend in pg_stat_activity', async () => {
      const page = await s.env.open('anonymous', '/servers');
      await page.getByTestId('servers-table').waitFor();
      const pids = (await column(page, 'servers-table', 'PostgreSQL pid')).map((p) => p.replace(/,/g, ''));
      expect(pids.length).toBeGreaterThan(0);
      const live = s.env.db
        .sql(`select string_agg(pid::text, ',') from pg_stat_activity where datname = 'app'`)
        .split(',');
      for (const pid of pids) expect(live).toContain(pid);
      expect(await column(page, 'servers-table', 'database')).toEqual(pids.map(() => 'app'));
      await page.context().close();
    });

    it('apps: one row per application_name; its link opens the clients page filtered by it', async () => {
      const page = await s.env.open('anonymous', '/apps');
      await page.getByTestId('apps-table').waitFor();
      // By clients, most first; an application whose clients all left (an earlier test's) may stay with 0 clients.
      const apps = (await column(page, 'apps-table', 'application')).map((a, i) => [a, i] as const);
      const clients = await column(page, 'apps-table', 'clients');
      expect(apps.filter(([, i]) => clients[i] !== '0').map(([a]) => a)).toEqual(['web', 'billing', 'reports']);
      expect(clients.filter((c) => c !== '0')).toEqual(['3', '2', '1']);
      // One query in 26 of the traffic fails (select 1/0): about 38 errors per 1 000 queries for each application.
      const perMille = (await column(page, 'apps-table', 'errors / 1 000 q'))
        .filter((_, i) => clients[i] !== '0')
        .map(Number);
      for (const e of perMille) expect(e).toBeGreaterThan(20);
      await page
        .getByTestId('apps-table')
        .getByRole('row')
        .filter({ hasText: 'web' })
        .getByRole('link', { name: 'clients →' })
        .click();
      await expect
        .poll(() => column(page, 'clients-table', 'application'), { timeout: 10_000 })
        .toEqual(['web', 'web', 'web']);
      expect(searchOf(page).get('application_name')).toBe('web');
      await page.context().close();
    });

    it('caches (Sso): prepared statements with uses; the SQL text on click, copied with the button', async () => {
      const page = await s.env.open('sso', '/caches');
      await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: s.env.base });
      await page.getByTestId('prepared-table').waitFor();
      const uses = (await column(page, 'prepared-table', 'uses')).map((u) => Number(u.replace(/,/g, '')));
      expect(Math.max(...uses)).toBeGreaterThan(0);
      // Per statement: the hit rate is its hits / (hits + misses), shown beside them; the traffic's statement is reused.
      await expect
        .poll(
          async () =>
            Math.max(...(await column(page, 'prepared-table', 'hits')).map((h) => Number(h.replace(/,/g, '')) || 0)),
          { timeout: 10_000 },
        )
        .toBeGreaterThan(0);
      for (const [rate, hits, misses] of await columns(page, 'prepared-table', ['hit rate', 'hits', 'misses'])) {
        const [h, m] = [Number(hits!.replace(/,/g, '')), Number(misses!.replace(/,/g, ''))];
        if (h + m > 0) expect(rate).toBe(`${Math.round((100 * h) / (h + m))}%`);
      }
      expect(await column(page, 'top-queries-table', 'SQL (first 120 characters)')).toContain(
        'select $1::int + 1 as next',
      );
      expect(Number((await column(page, 'top-queries-table', 'uses'))[0]!.replace(/,/g, ''))).toBeGreaterThan(0);
      expect((await column(page, 'top-queries-table', 'mean time'))[0]).toMatch(/^\d+(\.\d+)? (µs|ms|s)$/);
      await page
        .getByTestId('prepared-table')
        .getByRole('button', { name: /^Show the SQL of / })
        .first()
        .click();
      await expect
        .poll(() => page.getByTestId('sql-text').locator('pre').textContent(), { timeout: 10_000 })
        .toBe('select $1::int + 1 as next');
      await page.getByTestId('sql-text').getByRole('button', { name: 'Copy' }).click();
      await page.getByTestId('sql-text').getByRole('button', { name: 'Copied' }).waitFor();
      expect(await page.evaluate(() => navigator.clipboard.readText())).toBe('select $1::int + 1 as next');
      await page.context().close();
    });
  });

  describe('logs and config', () => {
    it('logs: level and q in the URL, the access log hidden or alone, pause, and the dropped count when the ring wraps', async () => {
      // The tap collects while someone reads it: open the page, then act.
      const page = await s.env.open('admin', '/logs?level=info&q=web%20admin%20action');
      await page.getByTestId('log-list').waitFor();
      await page.getByText('Starting the log tap…').waitFor({ state: 'detached' });
      expect(await apiPost(s.env.base, '/api/admin/reconnect', { database: 'app', user: 'scramuser' })).toBe(200);
      // Only info records about admin actions: the pause and resume of an earlier test, this reconnect.
      await expect
        .poll(
          async () =>
            (await page.getByTestId('log-line').allTextContents()).some((l) =>
              l.includes('web admin action reconnect'),
            ),
          { timeout: 10_000 },
        )
        .toBe(true);
      for (const line of await page.getByTestId('log-line').allTextContents())
        expect(line).toMatch(/^\S+ info .*web admin action/);
      expect(await page.getByLabel('Level at least').inputValue()).toBe('info');
      expect(await page.getByLabel('Text').inputValue()).toBe('web admin action');
      await page.getByLabel('Text').fill('');
      await page.getByLabel('Access log').selectOption('only');
      await expect.poll(() => searchOf(page).get('access'), { timeout: 10_000 }).toBe('only');
      await expect.poll(() => page.getByTestId('log-line').count(), { timeout: 10_000 }).toBeGreaterThan(0);
      for (const t of await page.locator('[data-testid=log-line] .target').allTextContents())
        expect(t).toBe('pooler::web::access');
      await page.getByLabel('Access log').selectOption('hide');
      await page.getByLabel('Level at least').selectOption('');
      await expect.poll(() => page.getByTestId('log-line').count(), { timeout: 10_000 }).toBeGreaterThan(0);
      for (const t of await page.locator('[data-testid=log-line] .target').allTextContents())
        expect(t).not.toBe('pooler::web::access');
      // Paused, the console reads nothing; meanwhile 1 000 reads write 1 000 access lines into a ring of 300.
      await page.getByRole('button', { name: 'Pause' }).click();
      const status = page.locator('.log-status');
      const before = await status.textContent();
      for (let i = 0; i < 10; i++)
        await Promise.all(Array.from({ length: 100 }, () => apiGet(s.env.base, '/api/version')));
      await new Promise((r) => setTimeout(r, 2500));
      expect(await status.textContent()).toBe(before);
      // Resumed, the first read after its last one finds the gap: those entries were dropped before it could read them.
      await page.getByRole('button', { name: 'Resume' }).click();
      await page.getByTestId('logs-dropped').waitFor({ timeout: 10_000 });
      expect(Number((await page.getByTestId('logs-dropped').textContent())!.replace(/\D/g, ''))).toBeGreaterThanOrEqual(
        700,
      );
      await page.context().close();
    });

    it('config: every key with default and RELOAD flag, a key filter, databases, users, log level, coordinator; RELOAD for Admin only', async () => {
      const page = await s.env.open('admin', '/config');
      await page.getByTestId('config-table').waitFor();
      const keys = await column(page, 'config-table', 'key');
      expect(keys).toContain('general.pool_mode');
      expect(keys).toContain('web.port');
      await page.getByLabel('Find a key').fill('web.port');
      await expect.poll(() => column(page, 'config-table', 'key'), { timeout: 10_000 }).toEqual(['web.port']);
      expect(await column(page, 'config-table', 'RELOAD changes it')).toEqual(['no, restart']);
      expect(await column(page, 'databases-table', 'name')).toEqual(['app']);
      expect((await column(page, 'users-table', 'name')).sort()).toEqual(['md5user', 'scramuser']);
      expect(await page.getByTestId('log-level').textContent()).toContain('debug');
      const coordinator = (await apiGet<unknown[]>(s.env.base, '/api/pool_coordinator')).body;
      if (coordinator.length === 0) await page.getByTestId('coordinator-empty').waitFor();
      else expect(await rowsOf(page, 'coordinator-table').count()).toBe(coordinator.length);
      expect(await page.getByRole('button', { name: 'RELOAD', exact: true }).count()).toBe(1);
      await page.context().close();
      const sso = await s.env.open('sso', '/config');
      await sso.getByTestId('config-table').waitFor();
      expect(await sso.getByRole('button', { name: 'RELOAD', exact: true }).count()).toBe(0);
      await sso.context().close();
    });

    it('wall at 1920x1080: no sidebar, the big numbers, pools by saturation, the admin events (or their empty state)', async () => {
      const page = await s.env.open('anonymous', '/wall', WALL);
      await page.getByTestId('wall-pools').waitFor();
      expect(await page.getByRole('navigation', { name: 'Console pages' }).count()).toBe(0);
      expect(await page.getByTestId('wall-numbers').textContent()).toMatch(
        /Transactions\/s.*Waiting clients.*Errors\/s/,
      );
      expect(await rowsOf(page, 'wall-pools').count()).toBe(2);
      const big = await page
        .locator('.big-value')
        .first()
        .evaluate((e) => parseFloat(getComputedStyle(e).fontSize));
      expect(big).toBeGreaterThanOrEqual(90);
      // The pause and resume of the waiting-client test, newest first, as /api/events lists them.
      const events = (await apiGet<{ kind: string; pool: string | null }[]>(s.env.base, '/api/events')).body;
      expect(events.map((e) => e.kind)).toEqual(expect.arrayContaining(['pause', 'resume']));
      await expect
        .poll(() => page.getByTestId('wall-events').locator('li').count(), { timeout: 10_000 })
        .toBe(Math.min(8, events.length));
      const shown = await page.getByTestId('wall-events').locator('li .kind').allTextContents();
      expect(shown).toEqual(events.slice(0, 8).map((e) => e.kind));
      expect(await page.getByTestId('wall-pools').locator('thead').textContent()).toContain('p95');
      await page.context().close();
    });
  });
}
