// Per-client queries and transactions per second from the change of its counters between two polls.
import type { Row } from './api';

interface Seen {
  t: number;
  queries: number;
  xacts: number;
}

export interface Rates {
  qps: number | null;
  tps: number | null;
}

/** Remembers each client's counters at the last poll; a client seen for the first time has no rate yet. */
export class ClientRates {
  private seen = new Map<string, Seen>();
  private rates = new Map<string, Rates>();

  /** Takes the rows of one poll made at `t` (ms) and returns the rates of every row by client_id. */
  update(rows: Row[], t: number): Map<string, Rates> {
    const next = new Map<string, Seen>();
    const rates = new Map<string, Rates>();
    for (const r of rows) {
      const id = String(r['client_id']);
      const now: Seen = { t, queries: Number(r['query_count']) || 0, xacts: Number(r['transaction_count']) || 0 };
      const before = this.seen.get(id);
      const dt = before ? (t - before.t) / 1000 : 0;
      if (before && dt > 0.2) rates.set(id, { qps: Math.max(0, (now.queries - before.queries) / dt), tps: Math.max(0, (now.xacts - before.xacts) / dt) });
      else rates.set(id, this.rates.get(id) ?? { qps: null, tps: null });
      next.set(id, before && dt <= 0.2 ? before : now);
    }
    this.seen = next;
    this.rates = rates;
    return rates;
  }
}
