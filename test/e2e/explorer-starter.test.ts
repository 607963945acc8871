// The log explorer in Chromium over records shaped as the pooler ships them (mixed-case values, repeated warnings):
// the query editor's keys (Enter runs, Tab and click accept, no doubled field however fast), values as written;
// rows with the level in colour and the message in view.
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bulk, ndjson, startLogstore, type LogstoreProcess } from '../helpers/logstore.js';
import { startUi, type UiProcess } from '../helpers/logstore-ui.js';
import { launchChromium } from '../helpers/web-browser.js';
import { DESKTOP, idle, params, searched, total } from './explorer-harness.js';

const T0 = Date.UTC(2026, 2, 2, 10, 0, 0);
const N = 400;
const RANGE = `from=${encodeURIComponent(new Date(T0 - 60_000).toISOString())}&to=${encodeURIComponent(new Date(T0 + N * 1000).toISOString())}`;

type Rec = Record<string, unknown> & { time: string; level: string; target: string; msg: string };
const DOCS: Rec[] = Array.from({ length: N }, (_, i) => {
  const time = new Date(T0 + i * 1000).toISOString();
  switch (i % 4) {
    case 0:
      return {
        time,
        level: 'warn',
        target: 'pooler::pool',
        pool: 'app',
        msg: `server login failed: connection to 10.0.${i % 7}.${i % 13}:5432 refused after ${i % 50} ms`,
        server_id: i,
      };
    case 1:
      return {
        time,
        level: 'info',
        target: 'pooler::web::access',
        msg: 'GET /api/pools',
        method: 'GET',
        path: '/api/pools',
        status: i % 40 === 1 ? 404 : 200,
        latency_ms: i % 30,
      };
    case 2:
      return {
        time,
        level: 'error',
        target: 'pooler::pool',
        pool: 'Billing',
        msg: `client ${i} closed: "query_wait_timeout"`,
        client_id: i,
      };
    default:
      return {
        time,
        level: 'info',
        target: 'pooler',
        service: i % 8 === 3 ? 'Billing-API' : 'Auth',
        msg: 'RELOAD done; changed: nothing',
      };
  }
});

let store: LogstoreProcess;
let ui: UiProcess;
let browser: Browser;
const contexts = new Set<BrowserContext>();

beforeAll(async () => {
  store = await startLogstore();
  const r = await bulk(store.url, ndjson(DOCS));
  expect(r.body.errors).toBe(false);
  ui = await startUi({ logstoreAddrs: [store.grpcAddr] });
  browser = await launchChromium();
}, 120_000);

afterAll(async () => {
  for (const c of contexts) await c.close();
  await browser?.close();
  await ui?.cleanup();
  await store?.cleanup();
});

async function open(url: string): Promise<Page> {
  const context = await browser.newContext({ viewport: DESKTOP });
  contexts.add(context);
  const page = await context.newPage();
  await page.goto(ui.url + url);
  await idle(page);
  return page;
}

/** Holds every value-completion request until the returned function is called (a slow log store, made certain). */
async function holdValueRequests(page: Page): Promise<() => void> {
  const held: (() => Promise<void>)[] = [];
  let open = false;
  await page.route('**/api/v1/aggregation', async (route) => {
    if (open) return route.continue();
    held.push(() => route.continue());
  });
  return () => {
    open = true;
    for (const h of held.splice(0)) void h();
  };
}

describe('query editor keys', () => {
  it('never doubles a field: ":" typed while the field list is open drops that list, so Tab cannot add the field again', async () => {
    const page = await open(`/?${RANGE}`);
    const input = page.getByTestId('query-input');
    const list = page.getByTestId('completions');
    const release = await holdValueRequests(page);
    await input.pressSequentially('lev');
    await list.locator('.c-label', { hasText: 'level' }).waitFor();
    // The rest of the field, its colon and Tab, before any value list can arrive.
    await input.pressSequentially('el:');
    await input.press('Tab');
    expect(await input.inputValue()).toBe('level:');
    // (Tab with no list open moved the focus on; back to the end of the query and ask for values.)
    release();
    await input.focus();
    await input.press('End');
    await input.press('Control+Space');
    await list.locator('.c-label', { hasText: 'warn' }).waitFor();
    await input.press('Tab');
    expect(await input.inputValue()).toMatch(/^level:(info|warn|error) $/);
    await page.context().close();
  });

  it("Enter runs the query with the suggestion list open, and the results are the new query's", async () => {
    const page = await open(`/?${RANGE}`);
    expect(await total(page)).toBe(N);
    const input = page.getByTestId('query-input');
    const list = page.getByTestId('completions');
    await input.pressSequentially('target:pooler::pool and lev');
    await list.locator('.c-label', { hasText: 'level' }).waitFor();
    // `lev` alone is free text: no record holds it.
    await searched(page, () => input.press('Enter'));
    expect(params(page).get('q')).toBe('target:pooler::pool and lev');
    expect(await list.count()).toBe(0);
    expect(await page.getByTestId('no-results').count()).toBe(1);
    await input.fill('');
    await input.pressSequentially('level:war');
    await list.locator('.c-label', { hasText: 'warn' }).waitFor();
    await searched(page, () => input.press('Enter'));
    expect(params(page).get('q')).toBe('level:war');
    expect(await total(page)).toBe(0);
    await page.context().close();
  });

  it('Tab and a click accept a suggestion; values are offered and inserted as written, not lowercased', async () => {
    const page = await open(`/?${RANGE}`);
    const input = page.getByTestId('query-input');
    const list = page.getByTestId('completions');
    await input.pressSequentially('servi');
    await list.locator('.c-label', { hasText: 'service' }).waitFor();
    await input.press('Tab');
    expect(await input.inputValue()).toBe('service:');
    await list.locator('.c-label', { hasText: 'Billing-API' }).waitFor();
    const count = (v: string) => String(DOCS.filter((d) => d.service === v).length);
    expect(
      await list
        .locator('li[role="option"]')
        .evaluateAll((lis) =>
          lis.map((li) => [li.querySelector('.c-label')!.textContent, li.querySelector('.c-detail')!.textContent]),
        ),
    ).toEqual([
      ['Auth', count('Auth')],
      ['Billing-API', count('Billing-API')],
    ]);
    await list.locator('li', { hasText: 'Billing-API' }).click();
    expect(await input.inputValue()).toBe('service:Billing-API ');
    await searched(page, () => input.press('Enter'));
    expect(await total(page)).toBe(Number(count('Billing-API')));
    await input.fill('');
    await input.pressSequentially('pool:');
    await list.locator('.c-label', { hasText: 'Billing' }).waitFor();
    expect((await list.locator('.c-label').allTextContents()).sort()).toEqual(['Billing', 'app']);
    await page.context().close();
  });
});

describe('rows people can read', () => {
  it('show the level in its colour and the message in full view, the other fields after it', async () => {
    const page = await open(`/?${RANGE}`);
    const rows = page.getByTestId('result-row');
    const newest = [...DOCS].reverse();
    const shown = await rows.evaluateAll((els) =>
      els.map((el) => {
        const cell = el.querySelector('.r-doc')!.getBoundingClientRect();
        const msg = el.querySelector('[data-testid="row-message"]');
        const lvl = el.querySelector('[data-testid="row-level"]')!;
        return {
          index: Number(el.getAttribute('data-index')),
          level: lvl.textContent,
          tone: lvl.getAttribute('data-tone'),
          colour: getComputedStyle(lvl).color,
          message: msg?.textContent ?? null,
          inView: msg ? msg.getBoundingClientRect().right <= cell.right + 0.5 : false,
          rest: el.querySelector('.r-rest')!.textContent,
        };
      }),
    );
    expect(shown.length).toBeGreaterThan(8);
    const colours = new Map<string, string>();
    for (const r of shown) {
      const d = newest[r.index]!;
      expect(r.message).toBe(d.msg);
      expect(r.inView, d.msg).toBe(true);
      expect(r.level).toBe(d.level);
      expect(r.tone).toBe(d.level);
      expect(r.rest).toContain(`target=${d.target}`);
      expect(r.rest).not.toContain('msg=');
      colours.set(r.tone!, r.colour);
    }
    // Three levels, three colours.
    expect(new Set(colours.values()).size).toBe(3);
    expect(colours.size).toBe(3);
    await page.context().close();
  });
});

describe('patterns view', () => {
  const templateOf = (d: Rec) =>
    d.msg.startsWith('server login failed')
      ? 'server login failed: connection to <ip> refused after <num> ms'
      : d.msg.startsWith('client ')
        ? 'client <num> closed: <str>'
        : d.msg;

  it('groups the matches by message template, counted, largest first; a query narrows it; the tab is in the URL', async () => {
    const page = await open(`/?${RANGE}`);
    await page.getByTestId('tab-patterns').click();
    await page.getByTestId('patterns').waitFor();
    expect(params(page).get('tab')).toBe('patterns');
    const counts = new Map<string, number>();
    for (const d of DOCS) counts.set(templateOf(d), (counts.get(templateOf(d)) ?? 0) + 1);
    const rows = async () =>
      page
        .getByTestId('pattern-row')
        .evaluateAll((trs) =>
          trs.map((tr) => [
            tr.querySelector('[data-testid="pattern-text"]')!.textContent,
            Number(tr.querySelector('[data-testid="pattern-count"]')!.textContent!.replace(/,/g, '')),
          ]),
        );
    expect((await rows()).sort()).toEqual([...counts].sort());
    expect(await page.getByTestId('patterns-note').textContent()).toContain(`4 patterns in ${N} matches`);
    // One warning repeated 100 times with other numbers and addresses: one row, not 100.
    await page.getByTestId('query-input').fill('level:warn');
    await page.getByTestId('query-input').press('Enter');
    await page.getByTestId('patterns-note').filter({ hasText: '1 pattern in' }).waitFor();
    expect(await rows()).toEqual([
      ['server login failed: connection to <ip> refused after <num> ms', DOCS.filter((d) => d.level === 'warn').length],
    ]);
    expect(await page.locator('.pt-example').first().textContent()).toBe(
      [...DOCS].reverse().find((d) => d.level === 'warn')!.msg,
    );
    await page.context().close();
  });

  it('reads at most `sample` newest matches and says so; past max_search_total_limit is refused with the limit', async () => {
    const post = async (body: unknown) => {
      const r = await fetch(`${ui.url}/api/v1/patterns`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      return { status: r.status, body: (await r.json()) as Record<string, any> };
    };
    const r = await post({ query: '', sample: 40 });
    expect(r.status).toBe(200);
    expect([r.body.total, r.body.sampled]).toEqual([N, 40]);
    const newest = [...DOCS].reverse().slice(0, 40);
    expect(r.body.patterns.reduce((a: number, p: { count: number }) => a + p.count, 0)).toBe(40);
    expect(r.body.patterns.find((p: { pattern: string }) => p.pattern.startsWith('server login'))?.count).toBe(
      newest.filter((d) => d.level === 'warn').length,
    );
    const big = await post({ sample: 1_000_000 });
    expect(big.status).toBe(400);
    expect(big.body.error).toMatchObject({ code: 'limit_exceeded', limit: 'max_search_total_limit' });
  });
});
