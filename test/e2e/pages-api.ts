// Small helpers the page tests share: admin reads of the JSON API, chart summaries, table cells.
import type { Page } from 'playwright-core';
import { basicHeader } from '../helpers/web.js';

export async function apiGet<T>(base: string, path: string): Promise<{ body: T; status: number; headers: Headers }> {
  const r = await fetch(base + path, { headers: { authorization: basicHeader(), accept: 'application/json' } });
  return { body: (await r.json()) as T, status: r.status, headers: r.headers };
}

export async function apiPost(base: string, path: string, body?: unknown): Promise<number> {
  const r = await fetch(base + path, {
    method: 'POST',
    headers: {
      authorization: basicHeader(),
      accept: 'application/json',
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  await r.text();
  return r.status;
}

const MICROS_PER: Record<string, number> = { µs: 1, ms: 1e3, s: 1e6 };

/** The largest value a chart's summary reports for one series ("tps now 3.5, max 12; qps ..."), null without data;
 * a duration ("p95 now 8.70 ms, max 19.6 ms") in microseconds, whatever unit the summary wrote it in. */
export async function chartMax(page: Page, testId: string, label: string): Promise<number | null> {
  const summary = (await page.getByTestId(testId).getAttribute('data-summary')) ?? '';
  const m = new RegExp(`(?:^|; )${label.replace(/[/]/g, '\\/')} now [^,]+, max ([0-9.]+)(?: (µs|ms|s)\\b)?`).exec(
    summary,
  );
  return m ? Number(m[1]) * (m[2] ? MICROS_PER[m[2]]! : 1) : null;
}

export const rowsOf = (page: Page, testId: string) => page.getByTestId(testId).locator('tbody tr');

/** Text of one column (by header text) of a table, row by row. */
export async function column(page: Page, testId: string, header: string): Promise<string[]> {
  return page.getByTestId(testId).evaluate((table, h) => {
    const heads = [...(table as HTMLTableElement).tHead!.rows[0]!.cells].map((c) =>
      ((c.querySelector('button.sort') ?? c).childNodes[0]?.textContent ?? '').trim(),
    );
    const i = heads.indexOf(h);
    if (i < 0) throw new Error(`no column ${h} in ${heads.join(', ')}`);
    return [...(table as HTMLTableElement).tBodies[0]!.rows].map((r) => (r.cells[i]!.textContent ?? '').trim());
  }, header);
}

/** Several columns read at one instant (one poll's rows), row by row. */
export async function columns(page: Page, testId: string, headers: string[]): Promise<string[][]> {
  return page.getByTestId(testId).evaluate((table, hs) => {
    const heads = [...(table as HTMLTableElement).tHead!.rows[0]!.cells].map((c) =>
      ((c.querySelector('button.sort') ?? c).childNodes[0]?.textContent ?? '').trim(),
    );
    const idx = hs.map((h) => {
      const i = heads.indexOf(h);
      if (i < 0) throw new Error(`no column ${h} in ${heads.join(', ')}`);
      return i;
    });
    return [...(table as HTMLTableElement).tBodies[0]!.rows].map((r) =>
      idx.map((i) => (r.cells[i]!.textContent ?? '').trim()),
    );
  }, headers);
}

export const searchOf = (page: Page) => new URL(page.url()).searchParams;
