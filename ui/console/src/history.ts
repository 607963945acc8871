// The last 15 minutes of the pooler as the console polled it (overview, pools, stats), kept across page changes.
import { useSyncExternalStore } from 'react';
import { api, ApiError, type Row } from './api';
import { everyWhileVisible } from './visibility';
import { POLL_MS } from './use-polling';
import type { DatabaseOutage } from './components/outage';

export const HISTORY_SECONDS = 15 * 60;

/** /api/overview: today's fields, plus those the statistics work adds (read when present). */
export interface Overview {
  clients: Record<string, number>;
  servers: Record<string, number>;
  tps: number;
  qps: number;
  errors: number;
  pools: number;
  pools_paused: number;
  query_p50_us?: number;
  query_p95_us?: number;
  query_p99_us?: number;
  cl_waiting?: number;
  errors_per_sec?: number;
  sv_active?: number;
  sv_idle?: number;
  sv_used?: number;
  sv_login?: number;
  connect_failures_per_sec?: number;
  /** Age of the oldest transaction a client holds open idle (ms); `clients`/`servers` carry `idle_in_transaction`. */
  max_idle_xact_age_ms?: number;
  pools_unreachable?: number;
  databases_unreachable?: DatabaseOutage[];
}

export interface Sample {
  /** Unix seconds of the poll. */
  t: number;
  overview: Overview | null;
  pools: Row[] | null;
  stats: Row[] | null;
  /** SHOW POOLS_EXTENDED (per-pool percentiles), null when the pooler does not serve it. */
  extended: Row[] | null;
}

export interface HistoryState {
  samples: readonly Sample[];
  /** Set when the last round of polls failed; the charts keep what they had. */
  error: string | null;
}

let state: HistoryState = { samples: [], error: null };
const listeners = new Set<() => void>();
let users = 0;
let stopPolling: (() => void) | null = null;

function publish(next: HistoryState): void {
  state = next;
  for (const l of listeners) l();
}

/** Set once /api/pools_extended answered 404 (a pooler without it): not asked again in this page's life. */
let noExtended = false;

async function poll(): Promise<void> {
  const [overview, pools, stats, extended] = await Promise.allSettled([
    api<Overview>('/api/overview'),
    api<Row[]>('/api/pools'),
    api<Row[]>('/api/stats'),
    noExtended ? Promise.resolve(null) : api<Row[]>('/api/pools_extended'),
  ]);
  if (extended.status === 'rejected' && extended.reason instanceof ApiError && extended.reason.status === 404)
    noExtended = true;
  const value = <T>(r: PromiseSettledResult<T>) => (r.status === 'fulfilled' ? r.value : null);
  const failed = [overview, pools, stats].find((r) => r.status === 'rejected') as PromiseRejectedResult | undefined;
  const t = Date.now() / 1000;
  if (overview.status === 'rejected' && pools.status === 'rejected') {
    publish({ samples: state.samples, error: (failed!.reason as Error).message });
    return;
  }
  const samples = state.samples.filter((s) => s.t > t - HISTORY_SECONDS);
  samples.push({ t, overview: value(overview), pools: value(pools), stats: value(stats), extended: value(extended) });
  publish({ samples, error: failed ? (failed.reason as Error).message : null });
}

/** Set once the pooler's own history was read (or is being read): a page load asks once. */
let seeded = false;

/** The overview's last 15 minutes as the pooler kept them (/api/overview/history), put before the samples this page
 * polled itself, so a reload keeps the charts. Those samples carry no pools or stats (gaps in the per-pool charts). */
async function seed(): Promise<void> {
  seeded = true;
  let kept: { t: number; overview: Overview }[];
  try {
    kept = (await api<{ samples: { t: number; overview: Overview }[] }>('/api/overview/history')).samples;
  } catch (err) {
    // A pooler without the endpoint, or not signed in yet: the charts fill from the polls; ask again at the next hold.
    seeded = !(err instanceof ApiError && err.status === 401);
    return;
  }
  const t = Date.now() / 1000;
  const firstOwn = state.samples[0]?.t ?? Infinity;
  const older = kept
    .filter((s) => s.t < firstOwn && s.t > t - HISTORY_SECONDS)
    .map((s): Sample => ({ t: s.t, overview: s.overview, pools: null, stats: null, extended: null }));
  if (older.length > 0) publish({ samples: [...older, ...state.samples], error: state.error });
}

/** Starts the shared poller while at least one caller holds it (the shell holds it while signed in). */
export function holdHistory(): () => void {
  users++;
  if (users === 1 && !seeded) void seed();
  if (users === 1) stopPolling = everyWhileVisible(() => void poll(), POLL_MS);
  return () => {
    users--;
    if (users === 0) {
      stopPolling?.();
      stopPolling = null;
    }
  };
}

/** Polls at once (after an admin action, so the pages show its effect without waiting for the next round). */
export function refreshHistory(): void {
  if (users > 0) void poll();
}

export function useHistory(): HistoryState {
  return useSyncExternalStore(
    (l) => {
      listeners.add(l);
      return () => listeners.delete(l);
    },
    () => state,
  );
}

export function latest(h: HistoryState): Sample | null {
  return h.samples.at(-1) ?? null;
}

/** x values and one series per key, null where a sample lacks the value (a gap, not a zero). */
export function series(
  samples: readonly Sample[],
  pick: (s: Sample, prev: Sample | null) => number | null | undefined,
): (number | null)[] {
  return samples.map((s, i) => {
    const v = pick(s, i > 0 ? samples[i - 1]! : null);
    return v === undefined || v === null || !Number.isFinite(v) ? null : v;
  });
}

/** Errors per second: the pooler's own rate when it reports one, else the change of the error total between polls. */
export function errorsPerSec(s: Sample, prev: Sample | null): number | null {
  if (s.overview?.errors_per_sec !== undefined) return s.overview.errors_per_sec;
  if (!prev?.overview || !s.overview) return null;
  const dt = s.t - prev.t;
  return dt > 0 ? Math.max(0, (s.overview.errors - prev.overview.errors) / dt) : null;
}

/** A pool's p95 query time in µs (SHOW POOLS_EXTENDED query_0.95), null when the pooler does not report it. */
export function poolP95(s: Sample | null, key: string): number | null {
  const v = poolRow(s?.extended ?? null, key)?.['query_0.95'];
  return typeof v === 'number' ? v : null;
}

export const poolKey = (r: Row) => `${String(r['database'])}/${String(r['user'])}`;

export function poolRow(rows: Row[] | null, key: string): Row | null {
  return rows?.find((r) => poolKey(r) === key) ?? null;
}
