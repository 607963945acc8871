// Per-client queries and transactions per second for /api/clients, from the change of each client's counters between reads.
import { numberOf, type Row } from './show-rows.js';

/** Reads closer together than this reuse the last rates (two consoles polling at once must not shrink the window). */
export const CLIENT_RATE_MIN_WINDOW_MS = 1000;

interface Sample {
  queries: number;
  xacts: number;
}

export interface ClientRate {
  qps: number | null;
  tps: number | null;
}

const NO_RATE: ClientRate = { qps: null, tps: null };

/**
 * Remembers every client's query_count and transaction_count at the last read that opened a window (at least
 * CLIENT_RATE_MIN_WINDOW_MS after the previous one) and gives each row `qps` and `tps` over that window: numbers on
 * the server, so /api/clients can sort and page by them. A client seen for the first time has null rates until the
 * next window; clients that left are forgotten at the next window.
 */
export class ClientRates {
  private baseAt = -Infinity;
  private base = new Map<string, Sample>();
  private rates = new Map<string, ClientRate>();

  /** Sets `qps` and `tps` on every row (fresh rows of SHOW CLIENTS, keyed by client_id, changed in place), read at `nowMs`. */
  annotate(rows: Row[], nowMs: number): Row[] {
    const dt = (nowMs - this.baseAt) / 1000;
    if (dt * 1000 >= CLIENT_RATE_MIN_WINDOW_MS) {
      const base = new Map<string, Sample>();
      const rates = new Map<string, ClientRate>();
      for (const r of rows) {
        const id = String(r['client_id']);
        const now: Sample = { queries: numberOf(r['query_count']), xacts: numberOf(r['transaction_count']) };
        const before = this.base.get(id);
        if (before && Number.isFinite(dt)) {
          rates.set(id, {
            qps: round(Math.max(0, now.queries - before.queries) / dt),
            tps: round(Math.max(0, now.xacts - before.xacts) / dt),
          });
        }
        base.set(id, now);
      }
      this.baseAt = nowMs;
      this.base = base;
      this.rates = rates;
    }
    // The rows are the caller's fresh copies (toRows): filled in place, 10 000 of them at a time.
    for (const r of rows) {
      const rate = this.rates.get(String(r['client_id'])) ?? NO_RATE;
      r['qps'] = rate.qps;
      r['tps'] = rate.tps;
    }
    return rows;
  }
}

/** Two decimals: rates are shown to at most one. */
function round(v: number): number {
  return Math.round(v * 100) / 100;
}
