// The pool page in Chromium lists an idle-in-transaction client first, with its transaction age, ahead of more idle
// clients than the page shows; the overview's and the pool page's cards count idle-in-transaction clients and servers
// apart (run on the native relay and, in the js-relay project, on the JavaScript relay).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { startConsoleEnv, type ConsoleEnv } from './console-harness.js';

let env: ConsoleEnv;
const clients: pg.Client[] = [];

beforeAll(async () => {
  env = await startConsoleEnv();
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.end().catch(() => undefined)));
  await env?.close();
});

async function connect(applicationName: string): Promise<pg.Client> {
  const c = new pg.Client({
    host: '127.0.0.1',
    port: env.tp.port,
    database: 'app',
    user: 'md5user',
    password: 'md5pass',
    application_name: applicationName,
  });
  c.on('error', () => undefined);
  await c.connect();
  clients.push(c);
  return c;
}

describe('pool page: idle in transaction', () => {
  it('shows the idle-in-transaction client first with its age, though 25 idle clients came before it', async () => {
    // More idle clients than the page's 20 rows, all connected before the one that opens a transaction.
    for (let i = 0; i < 25; i++) await connect(`idle-${i}`);
    const open = await connect('stuck-in-tx');
    await open.query('begin');
    await open.query('select 1');

    const page = await env.open('admin', '/pools/app/md5user');
    const first = page.getByTestId('pool-clients').locator('tbody tr').first();
    await expect.poll(() => first.textContent(), { timeout: 20_000 }).toContain('stuck-in-tx');
    await expect.poll(() => first.locator('.state-tag').textContent(), { timeout: 20_000 }).toBe('idle in transaction');
    // Its transaction age is shown with a unit; its query age (none runs) is blank rather than "0 s".
    const heads = page.getByTestId('pool-clients').locator('thead th');
    const column = (name: string) =>
      heads.evaluateAll((ths, n) => ths.findIndex((th) => th.textContent?.startsWith(n)), name);
    const age = first.locator('td').nth(await column('transaction age'));
    await expect.poll(() => age.textContent(), { timeout: 20_000 }).toMatch(/^\d[\d.]* (µs|ms|s)$|min|h/);
    expect(await page.getByTestId('pool-clients').locator('tbody tr').count()).toBe(20);
    await open.query('rollback');
  });

  it('the clients page filters idle-in-transaction clients from its State select, kept in the URL', async () => {
    const open = await connect('filtered-in-tx');
    await open.query('begin');
    await open.query('select 1');
    const page = await env.open('admin', '/clients');
    await page.getByTestId('clients-table').waitFor();
    await page.getByRole('search', { name: 'Filter clients' }).getByLabel('State').selectOption('idle in transaction');
    await expect
      .poll(() => new URL(page.url()).searchParams.get('activity'), { timeout: 10_000 })
      .toBe('idle in transaction');
    const apps = () =>
      page
        .getByTestId('clients-table')
        .locator('tbody tr')
        .evaluateAll((trs) => trs.map((tr) => tr.textContent ?? ''));
    await expect.poll(async () => (await apps()).length, { timeout: 20_000 }).toBe(1);
    expect((await apps())[0]).toContain('filtered-in-tx');
    await page.reload();
    expect(await page.getByRole('search', { name: 'Filter clients' }).getByLabel('State').inputValue()).toBe(
      'idle in transaction',
    );
    await open.query('rollback');
    await page.context().close();
  });

  it('the overview and pool page cards count idle-in-transaction clients and servers apart, with the oldest age; COMMIT clears them', async () => {
    const a = await connect('card-in-tx-a');
    const b = await connect('card-in-tx-b');
    await a.query('begin');
    await a.query('select 1');
    await b.query('begin');
    const page = await env.open('admin', '/overview');
    const line = page.getByTestId('overview-clients-idle-xact');
    await expect
      .poll(() => line.textContent().catch(() => null), { timeout: 20_000 })
      .toMatch(/^2 idle in transaction \(oldest \d[\d.]* (ms|s)\)$/);
    await expect
      .poll(
        () =>
          page
            .getByTestId('overview-servers-idle-xact')
            .textContent()
            .catch(() => null),
        { timeout: 20_000 },
      )
      .toMatch(/^2 idle in transaction \(oldest /);
    // In the warning colour, on a card marked as a warning; "active" leaves the two out, so the parts add up to the total.
    expect(await line.evaluate((el) => getComputedStyle(el).color)).toBe(
      await page.evaluate(() => {
        const probe = document.createElement('span');
        probe.style.color = 'var(--warn)';
        document.body.append(probe);
        const c = getComputedStyle(probe).color;
        probe.remove();
        return c;
      }),
    );
    expect(await page.getByTestId('overview-clients').getAttribute('class')).toBe('card warn');
    const detail = await page.getByTestId('overview-clients').locator('.detail').textContent();
    const [active, idle, waiting] = [...detail!.matchAll(/(\d+) (active|idle|waiting)(?! in transaction)/g)].map((m) =>
      Number(m[1]),
    );
    const total = Number(await page.getByTestId('overview-clients').locator('.value').textContent());
    expect(active! + idle! + waiting! + 2).toBe(total);
    // The servers-by-state chart has the series.
    expect(await page.getByTestId('chart-servers').textContent()).toContain('idle in transaction');

    const pool = await env.open('admin', '/pools/app/md5user');
    await expect
      .poll(
        () =>
          pool
            .getByTestId('pool-clients-idle-xact')
            .textContent()
            .catch(() => null),
        { timeout: 20_000 },
      )
      .toMatch(/^2 idle in transaction \(oldest /);
    expect(await pool.getByTestId('pool-chart-clients').textContent()).toContain('idle in transaction');

    await a.query('commit');
    await b.query('commit');
    await expect.poll(() => line.count(), { timeout: 20_000 }).toBe(0);
    expect(await page.getByTestId('overview-clients').getAttribute('class')).toBe('card');
    await expect.poll(() => pool.getByTestId('pool-clients-idle-xact').count(), { timeout: 20_000 }).toBe(0);
    await page.context().close();
    await pool.context().close();
  });
});
