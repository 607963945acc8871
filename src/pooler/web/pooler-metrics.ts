// The pooler's own Prometheus series (pooler_*), rendered at scrape time from the same state as SHOW POOLS / STATS.
import type { Cell, DurationHistogram, PoolerControl, ShowTable } from '../control.js';
import type { LogShipStats } from '../log-ship/log-shipper.js';

type Labels = Record<string, string>;

function escapeLabel(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
}

function labelText(labels: Labels): string {
  const parts = Object.entries(labels).map(([k, v]) => `${k}="${escapeLabel(v)}"`);
  return parts.length ? `{${parts.join(',')}}` : '';
}

function num(v: Cell | undefined): number {
  if (typeof v === 'number') return v;
  if (typeof v === 'bigint') return Number(v);
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (typeof v === 'string' && v.trim() !== '' && !Number.isNaN(Number(v))) return Number(v);
  return 0;
}

function formatValue(v: number): string {
  if (Number.isNaN(v)) return 'NaN';
  if (v === Infinity) return '+Inf';
  if (v === -Infinity) return '-Inf';
  return String(v);
}

/** Text exposition of metric families; each family is written once with HELP and TYPE, then its samples. */
export class Exposition {
  private readonly out: string[] = [];

  family(name: string, type: 'gauge' | 'counter' | 'histogram', help: string, samples: { suffix?: string; labels: Labels; value: number }[]): void {
    if (samples.length === 0) return;
    this.out.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`);
    for (const s of samples) this.out.push(`${name}${s.suffix ?? ''}${labelText(s.labels)} ${formatValue(s.value)}`);
  }

  text(): string {
    return this.out.length ? this.out.join('\n') + '\n' : '';
  }
}

function rowsOf(table: ShowTable): Record<string, Cell>[] {
  return table.rows.map((r) => Object.fromEntries(table.columns.map((c, i) => [c, r[i] ?? null])));
}

function poolLabels(row: Record<string, Cell>): Labels {
  return { database: String(row['database'] ?? ''), user: String(row['user'] ?? '') };
}

function histogramSamples(hists: readonly DurationHistogram[], pick: (h: DurationHistogram) => DurationHistogram['query']) {
  const samples: { suffix: string; labels: Labels; value: number }[] = [];
  for (const h of hists) {
    const d = pick(h);
    const labels = { database: h.database, user: h.user };
    let cumulative = 0;
    d.bounds.forEach((le, i) => {
      cumulative += d.counts[i] ?? 0;
      samples.push({ suffix: '_bucket', labels: { ...labels, le: formatValue(le) }, value: cumulative });
    });
    samples.push({ suffix: '_bucket', labels: { ...labels, le: '+Inf' }, value: d.count });
    samples.push({ suffix: '_sum', labels, value: d.sum });
    samples.push({ suffix: '_count', labels, value: d.count });
  }
  return samples;
}

/** pooler_query_duration_seconds and pooler_transaction_duration_seconds, one histogram per pool. */
export function addDurationHistograms(ex: Exposition, hists: readonly DurationHistogram[]): void {
  ex.family('pooler_query_duration_seconds', 'histogram', 'Query duration.', histogramSamples(hists, (h) => h.query));
  ex.family('pooler_transaction_duration_seconds', 'histogram', 'Transaction duration.', histogramSamples(hists, (h) => h.transaction));
}

/** pooler_log_ship_*: what [logs] shipping sent, dropped (by reason) and holds; nothing when shipping is off. */
export function addLogShipMetrics(ex: Exposition, s: LogShipStats | null): void {
  if (!s) return;
  ex.family('pooler_log_ship_sent_total', 'counter', 'Log records the log store stored.', [{ labels: {}, value: s.sent }]);
  ex.family('pooler_log_ship_dropped_total', 'counter', 'Log records never stored: queue full (oldest dropped), rejected by the store per item, or still queued at shutdown.',
    (['queue_full', 'rejected', 'shutdown'] as const).map((reason) => ({ labels: { reason }, value: s.dropped[reason] })));
  ex.family('pooler_log_ship_failed_requests_total', 'counter', 'Bulk requests that failed (unreachable, timeout, 429, 5xx) and were retried.', [{ labels: {}, value: s.failedRequests }]);
  ex.family('pooler_log_ship_queue_length', 'gauge', 'Log records waiting to be shipped.', [{ labels: {}, value: s.queueLength }]);
  ex.family('pooler_log_ship_queue_capacity', 'gauge', 'Records the queue holds at most (logs.ship_queue_size).', [{ labels: {}, value: s.queueCapacity }]);
}

/** pooler_* series: clients and servers by state, pool sizes, totals from STATS, duration histograms. */
export function renderPoolerMetrics(control: PoolerControl): string {
  const ex = new Exposition();
  const pools = rowsOf(control.show('POOLS'));
  const stats = rowsOf(control.show('STATS'));
  const byState = (states: [string, string][]) =>
    pools.flatMap((row) => states.map(([state, col]) => ({ labels: { ...poolLabels(row), state }, value: num(row[col]) })));
  ex.family('pooler_clients', 'gauge', 'Client connections per pool by state.',
    byState([['active', 'cl_active'], ['idle', 'cl_idle'], ['waiting', 'cl_waiting'], ['cancel_req', 'cl_cancel_req']]));
  ex.family('pooler_servers', 'gauge', 'Server connections per pool by state.',
    byState([['active', 'sv_active'], ['idle', 'sv_idle'], ['used', 'sv_used'], ['login', 'sv_login']]));
  ex.family('pooler_pool_size', 'gauge', 'Configured pool size.', pools.map((r) => ({ labels: poolLabels(r), value: num(r['pool_size']) })));
  ex.family('pooler_pool_paused', 'gauge', '1 when the pool is paused.', pools.map((r) => ({ labels: poolLabels(r), value: num(r['paused']) })));
  ex.family('pooler_pool_max_wait_seconds', 'gauge', 'Wait time of the oldest waiting client.',
    pools.map((r) => ({ labels: poolLabels(r), value: num(r['maxwait']) + num(r['maxwait_us']) / 1e6 })));
  const total = (name: string, help: string, col: string, scale = 1) =>
    ex.family(name, 'counter', help, stats.map((r) => ({ labels: poolLabels(r), value: num(r[col]) * scale })));
  total('pooler_transactions_total', 'Transactions completed.', 'total_xact_count');
  total('pooler_queries_total', 'Queries completed.', 'total_query_count');
  total('pooler_received_bytes_total', 'Bytes received from clients.', 'total_received');
  total('pooler_sent_bytes_total', 'Bytes sent to clients.', 'total_sent');
  total('pooler_errors_total', 'Errors sent to clients.', 'total_errors');
  total('pooler_wait_seconds_total', 'Time clients spent waiting for a server.', 'total_wait_time', 1e-6);
  total('pooler_transaction_seconds_total', 'Time spent in transactions.', 'total_xact_time', 1e-6);
  total('pooler_query_seconds_total', 'Time spent in queries.', 'total_query_time', 1e-6);
  addDurationHistograms(ex, control.durationHistograms?.() ?? []);
  addLogShipMetrics(ex, control.logShipping?.() ?? null);
  ex.family('pooler_uptime_seconds', 'gauge', 'Seconds since the pooler started.',
    [{ labels: {}, value: Math.round((Date.now() - control.startedAt.getTime()) / 1000) }]);
  return ex.text();
}
