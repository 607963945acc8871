// The pooler's own Prometheus series (pooler_*), rendered at scrape time from the snapshot SHOW and /api format too.
import type { DurationHistogram, PoolerControl } from '../control.js';
import type { CoordinatorSnapshot, PoolerSnapshot, PoolSnapshot } from '../snapshot.js';
import type { LogShipStats } from '../log-ship/log-shipper.js';

type Labels = Record<string, string>;

function escapeLabel(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
}

function labelText(labels: Labels): string {
  const parts = Object.entries(labels).map(([k, v]) => `${k}="${escapeLabel(v)}"`);
  return parts.length ? `{${parts.join(',')}}` : '';
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

  family(
    name: string,
    type: 'gauge' | 'counter' | 'histogram',
    help: string,
    samples: { suffix?: string; labels: Labels; value: number }[],
  ): void {
    if (samples.length === 0) return;
    this.out.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`);
    for (const s of samples) this.out.push(`${name}${s.suffix ?? ''}${labelText(s.labels)} ${formatValue(s.value)}`);
  }

  text(): string {
    return this.out.length ? this.out.join('\n') + '\n' : '';
  }
}

function histogramSamples(
  hists: readonly DurationHistogram[],
  pick: (h: DurationHistogram) => DurationHistogram['query'],
) {
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

/** pooler_query_duration_seconds, pooler_transaction_duration_seconds and pooler_wait_duration_seconds, one histogram
 * per pool. */
export function addDurationHistograms(ex: Exposition, hists: readonly DurationHistogram[]): void {
  ex.family(
    'pooler_query_duration_seconds',
    'histogram',
    'Query duration: from a sync point (Query, Sync) to its ReadyForQuery.',
    histogramSamples(hists, (h) => h.query),
  );
  ex.family(
    'pooler_transaction_duration_seconds',
    'histogram',
    'Transaction duration: from the first query to the ReadyForQuery that ends it.',
    histogramSamples(hists, (h) => h.transaction),
  );
  ex.family(
    'pooler_wait_duration_seconds',
    'histogram',
    'Time a client waited for a server (0 when one was idle).',
    histogramSamples(hists, (h) => h.wait),
  );
}

/** pooler_log_ship_*: what [logs] shipping sent, dropped (by reason) and holds; nothing when shipping is off. */
export function addLogShipMetrics(ex: Exposition, s: LogShipStats | null): void {
  if (!s) return;
  ex.family('pooler_log_ship_sent_total', 'counter', 'Log records the log store stored.', [
    { labels: {}, value: s.sent },
  ]);
  ex.family(
    'pooler_log_ship_dropped_total',
    'counter',
    'Log records never stored: queue full (oldest dropped), rejected by the store per item, or still queued at shutdown.',
    (['queue_full', 'rejected', 'shutdown'] as const).map((reason) => ({
      labels: { reason },
      value: s.dropped[reason],
    })),
  );
  ex.family(
    'pooler_log_ship_failed_requests_total',
    'counter',
    'Bulk requests that failed (unreachable, timeout, 429, 5xx) and were retried.',
    [{ labels: {}, value: s.failedRequests }],
  );
  ex.family('pooler_log_ship_queue_length', 'gauge', 'Log records waiting to be shipped.', [
    { labels: {}, value: s.queueLength },
  ]);
  ex.family('pooler_log_ship_queue_capacity', 'gauge', 'Records the queue holds at most (logs.ship_queue_size).', [
    { labels: {}, value: s.queueCapacity },
  ]);
}

/** pooler_* series, from one snapshot: clients and servers by state, pool sizes, totals of SHOW STATS, duration
 * histograms, the pool coordinator. */
export function renderPoolerMetrics(control: PoolerControl, snapshot: PoolerSnapshot = control.snapshot()): string {
  const ex = new Exposition();
  const pools = snapshot.pools;
  const labels = (p: PoolSnapshot): Labels => ({ database: p.database, user: p.user });
  const byState = (pick: (p: PoolSnapshot) => Record<string, number>) =>
    pools.flatMap((p) => Object.entries(pick(p)).map(([state, value]) => ({ labels: { ...labels(p), state }, value })));
  ex.family(
    'pooler_clients',
    'gauge',
    'Client connections per pool by state.',
    byState((p) => ({
      active: p.clients.active,
      idle: p.clients.idle,
      waiting: p.clients.waiting,
      cancel_req: p.clients.cancelReq,
    })),
  );
  ex.family(
    'pooler_servers',
    'gauge',
    'Server connections per pool by state (used: released, server_reset_query running; login: connecting).',
    byState((p) => ({ active: p.servers.active, idle: p.servers.idle, used: p.servers.used, login: p.servers.login })),
  );
  const gauge = (name: string, help: string, pick: (p: PoolSnapshot) => number) =>
    ex.family(
      name,
      'gauge',
      help,
      pools.map((p) => ({ labels: labels(p), value: pick(p) })),
    );
  gauge('pooler_pool_size', 'Configured pool size.', (p) => p.poolSize);
  gauge(
    'pooler_clients_pinned',
    'Transaction-mode clients kept on their server by session state that cannot move (LISTEN, advisory locks, temporary tables, WITH HOLD cursors, SQL PREPARE, LOAD).',
    (p) => p.clients.pinned,
  );
  gauge(
    'pooler_clients_idle_in_transaction',
    'Clients inside a transaction with nothing in flight, holding their server (counted in pooler_clients{state="active"} too).',
    (p) => p.clients.idleInTransaction,
  );
  gauge(
    'pooler_servers_idle_in_transaction',
    'Servers whose client is idle in transaction (counted in pooler_servers{state="active"} too).',
    (p) => p.servers.idleInTransaction,
  );
  gauge(
    'pooler_pool_max_idle_xact_age_seconds',
    'Age of the oldest transaction a client of the pool holds open while running nothing (0 when none).',
    (p) => p.clients.maxIdleXactAgeMs / 1000,
  );
  gauge('pooler_pool_paused', '1 when the pool is paused.', (p) => (p.paused ? 1 : 0));
  gauge('pooler_pool_fallback_active', "1 while the pool's server connects fail (SHOW POOLS fallback_active).", (p) =>
    p.fallbackActive ? 1 : 0,
  );
  gauge(
    'pooler_pool_backend_unreachable',
    "1 while no server login to the pool's PostgreSQL succeeded for connect_timeout while clients needed one; 0 from the next login that succeeds.",
    (p) => (p.health.unreachableSince !== null ? 1 : 0),
  );
  gauge('pooler_pool_max_wait_seconds', 'Wait time of the oldest waiting client.', (p) => p.maxWaitMs / 1000);
  const total = (name: string, help: string, pick: (p: PoolSnapshot) => number) =>
    ex.family(
      name,
      'counter',
      help,
      pools.map((p) => ({ labels: labels(p), value: pick(p) })),
    );
  total('pooler_transactions_total', 'Transactions completed.', (p) => p.totals.xactCount);
  total('pooler_queries_total', 'Queries completed.', (p) => p.totals.queryCount);
  total('pooler_received_bytes_total', 'Bytes received from clients.', (p) => p.totals.received);
  total('pooler_sent_bytes_total', 'Bytes sent to clients.', (p) => p.totals.sent);
  total('pooler_errors_total', 'Errors sent to clients.', (p) => p.totals.errors);
  total(
    'pooler_wait_seconds_total',
    'Time clients spent waiting for a server.',
    (p) => Math.round(p.totals.waitTimeUs) / 1e6,
  );
  total(
    'pooler_transaction_seconds_total',
    'Time spent in transactions.',
    (p) => Math.round(p.totals.xactTimeUs) / 1e6,
  );
  total('pooler_query_seconds_total', 'Time spent in queries.', (p) => Math.round(p.totals.queryTimeUs) / 1e6);
  total(
    'pooler_server_connects_total',
    'Server connects started (SHOW POOL_SCALING creates).',
    (p) => p.scaling.creates,
  );
  total(
    'pooler_server_connect_failures_total',
    'Server connects that failed (SHOW POOL_SCALING create_fallback).',
    (p) => p.scaling.createFallback,
  );
  addDurationHistograms(
    ex,
    pools.map((p) => ({ database: p.database, user: p.user, ...p.histograms })),
  );
  addCoordinatorMetrics(ex, snapshot.coordinators);
  addLogShipMetrics(ex, control.logShipping?.() ?? null);
  const c = snapshot.counters;
  ex.family(
    'pooler_clients_logging_in',
    'gauge',
    'Client connections accepted and not logged in yet (they count against max_connections).',
    [{ labels: {}, value: c.loggingIn }],
  );
  ex.family(
    'pooler_client_login_timeouts_total',
    'counter',
    'Client connections closed by client_login_timeout before their login completed.',
    [{ labels: {}, value: c.loginTimeouts }],
  );
  ex.family(
    'pooler_clients_refused_total',
    'counter',
    'Client connections closed at accept: max_connections reached (53300), or no file descriptor left (EMFILE, ENFILE).',
    [
      { labels: { reason: 'max_connections' }, value: c.refusedMaxConnections },
      { labels: { reason: 'descriptors' }, value: c.refusedDescriptors },
    ],
  );
  ex.family(
    'pooler_takeover_clients_moved_total',
    'counter',
    'Client connections a takeover moved: "in" from the process this one took over from, "out" to the one that took over from this one.',
    [
      { labels: { direction: 'in' }, value: c.movedIn },
      { labels: { direction: 'out' }, value: c.movedOut },
    ],
  );
  ex.family(
    'pooler_takeover_servers_moved_total',
    'counter',
    'Server connections a takeover moved with their PostgreSQL session: "in" from the process this one took over from, "out" to the one that took over from this one.',
    [
      { labels: { direction: 'in' }, value: c.serversMovedIn },
      { labels: { direction: 'out' }, value: c.serversMovedOut },
    ],
  );
  ex.family('pooler_uptime_seconds', 'gauge', 'Seconds since the pooler started.', [
    { labels: {}, value: Math.round((Date.now() - control.startedAt.getTime()) / 1000) },
  ]);
  return ex.text();
}

/** pooler_db_*: the pool coordinator of each database (SHOW POOL_COORDINATOR). */
function addCoordinatorMetrics(ex: Exposition, cs: readonly CoordinatorSnapshot[]): void {
  const one = (name: string, type: 'gauge' | 'counter', help: string, pick: (c: CoordinatorSnapshot) => number) =>
    ex.family(
      name,
      type,
      help,
      cs.map((c) => ({ labels: { database: c.database }, value: pick(c) })),
    );
  one(
    'pooler_db_connections',
    'gauge',
    'Server connections of all users of the database (connecting and closing included).',
    (c) => c.current,
  );
  one('pooler_db_max_connections', 'gauge', 'max_db_connections (0: no cap).', (c) => c.maxDbConnections);
  one('pooler_db_reserve_in_use', 'gauge', 'Connections taken from the reserve.', (c) => c.reserveUsed);
  one(
    'pooler_db_evictions_total',
    'counter',
    'Idle connections closed to make room for another user of the database.',
    (c) => c.evictions,
  );
  one(
    'pooler_db_reserve_acquisitions_total',
    'counter',
    'Connections opened from the reserve.',
    (c) => c.reserveAcquisitions,
  );
  one(
    'pooler_db_exhaustions_total',
    'counter',
    'Clients that waited past query_wait_timeout while the database was at its cap.',
    (c) => c.exhaustions,
  );
}
