// /api/clients rates: qps and tps over windows of at least a second, null for new clients, sortable with nulls last.
import { describe, expect, it } from 'vitest';
import { ClientRates, CLIENT_RATE_MIN_WINDOW_MS } from '../../../../src/pooler/web/client-rates.js';
import { queryClients } from '../../../../src/pooler/web/clients-query.js';
import type { Row } from '../../../../src/pooler/web/show-rows.js';

const row = (client_id: number, query_count: number, transaction_count: number): Row => ({
  client_id,
  query_count,
  transaction_count,
  state: 'idle',
});

describe('ClientRates', () => {
  it('gives null until a client has been seen in two windows, then the change over the window', () => {
    const r = new ClientRates();
    const first = r.annotate([row(1, 10, 5)], 0);
    expect(first[0]).toMatchObject({ qps: null, tps: null });
    const second = r.annotate([row(1, 30, 9), row(2, 7, 7)], 2000);
    expect(second[0]).toMatchObject({ client_id: 1, qps: 10, tps: 2 });
    expect(second[1]).toMatchObject({ client_id: 2, qps: null, tps: null });
  });

  it('reads closer together than the minimum window reuse the last rates (two consoles do not shrink the window)', () => {
    const r = new ClientRates();
    r.annotate([row(1, 0, 0)], 0);
    expect(r.annotate([row(1, 100, 50)], 1000)[0]).toMatchObject({ qps: 100, tps: 50 });
    // 10 ms later, counters moved: the window is not re-opened, the rates stay those of the last window.
    expect(r.annotate([row(1, 101, 51)], 1010)[0]).toMatchObject({ qps: 100, tps: 50 });
    // The next window is measured from the read that opened the last one (t = 1000, counters 100/50).
    expect(r.annotate([row(1, 300, 50)], 1000 + 2 * CLIENT_RATE_MIN_WINDOW_MS)[0]).toMatchObject({ qps: 100, tps: 0 });
  });

  it('forgets clients that left; a reused id after a window starts from null; counters that went back give 0, not negative', () => {
    const r = new ClientRates();
    r.annotate([row(1, 50, 50), row(2, 0, 0)], 0);
    r.annotate([row(2, 1, 1)], 1000);
    expect(r.annotate([row(1, 60, 60), row(2, 0, 0)], 2000)).toEqual([
      { client_id: 1, query_count: 60, transaction_count: 60, state: 'idle', qps: null, tps: null },
      { client_id: 2, query_count: 0, transaction_count: 0, state: 'idle', qps: 0, tps: 0 },
    ]);
  });

  it('annotated rows sort by qps on the server, descending or ascending, clients without a rate last', () => {
    const r = new ClientRates();
    r.annotate([row(1, 0, 0), row(2, 0, 0), row(3, 0, 0)], 0);
    const rows = r.annotate([row(1, 5, 1), row(2, 50, 1), row(3, 20, 1), row(4, 0, 0)], 1000);
    expect(queryClients(rows, { sort: 'qps', order: 'desc' }).rows.map((x) => x['client_id'])).toEqual([2, 3, 1, 4]);
    expect(queryClients(rows, { sort: 'qps', order: 'asc' }).rows.map((x) => x['client_id'])).toEqual([1, 3, 2, 4]);
  });
});
