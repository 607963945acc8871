// SHOW tables of the pooler's live state, formatted from one snapshot (snapshot.ts), columns as in reference/pooler.md.
import type { Cell, ShowTable } from '../control.js';
import type { PoolerSnapshot, PoolSnapshot } from '../snapshot.js';

const table = (columns: string[], rows: Cell[][]): ShowTable => ({ columns, rows });

export function showPools(s: PoolerSnapshot): ShowTable {
  return table(
    [
      'database',
      'user',
      'pool_mode',
      'cl_idle',
      'cl_active',
      'cl_waiting',
      'cl_cancel_req',
      'sv_active',
      'sv_idle',
      'sv_used',
      'sv_login',
      'pool_size',
      'maxwait',
      'maxwait_us',
      'avg_xact_time',
      'paused',
      'fallback_active',
      'oldest_active_age_ms',
      'cl_pinned',
      'backend_unreachable',
      'unreachable_since',
      'last_connect_error',
      'last_connect_error_code',
      'last_connect_error_at',
      'connect_failures_per_sec',
      'cl_idle_in_transaction',
      'sv_idle_in_transaction',
      'max_idle_xact_age_ms',
    ],
    s.pools.map((p) => [
      p.database,
      p.user,
      p.mode,
      p.clients.idle,
      p.clients.active,
      p.clients.waiting,
      p.clients.cancelReq,
      p.servers.active,
      p.servers.idle,
      p.servers.used,
      p.servers.login,
      p.poolSize,
      Math.floor(p.maxWaitMs / 1000),
      (p.maxWaitMs % 1000) * 1000,
      p.averages.xactTime,
      p.paused,
      p.fallbackActive,
      p.oldestActiveMs,
      p.clients.pinned,
      ...healthCells(p),
      p.clients.idleInTransaction,
      p.servers.idleInTransaction,
      p.clients.maxIdleXactAgeMs,
    ]),
  );
}

/** SHOW POOLS' health columns: times as ISO strings, null when there is none; the rate to 3 decimals. */
function healthCells(p: PoolSnapshot): Cell[] {
  const h = p.health;
  const iso = (t: number | null | undefined) => (t === null || t === undefined ? null : new Date(t).toISOString());
  return [
    h.unreachableSince !== null,
    iso(h.unreachableSince),
    h.lastError?.message ?? null,
    h.lastError?.code ?? null,
    iso(h.lastError?.time),
    Math.round(h.connectFailuresPerSec * 1000) / 1000,
  ];
}

/** Errors sent to clients per pool and SQLSTATE (PostgreSQL's and the pooler's own), most first within a pool. */
export function showErrors(s: PoolerSnapshot): ShowTable {
  return table(
    ['database', 'user', 'sqlstate', 'count'],
    s.pools.flatMap((p) => p.errorsBySqlState.map((e) => [p.database, p.user, e.sqlstate, e.count])),
  );
}

/** Percentiles in microseconds; wait percentiles and errors follow the reference columns. */
export function showPoolsExtended(s: PoolerSnapshot): ShowTable {
  return table(
    [
      'database',
      'user',
      'cl_active',
      'cl_waiting',
      'sv_active',
      'sv_idle',
      'sv_used',
      'sv_login',
      'pool_size',
      'maxwait',
      'maxwait_us',
      'pool_mode',
      'bytes_received',
      'bytes_sent',
      'query_0.99',
      'transaction_0.99',
      'query_0.95',
      'transaction_0.95',
      'query_0.5',
      'transaction_0.5',
      'wait_0.99',
      'wait_0.95',
      'wait_0.5',
      'errors',
    ],
    s.pools.map((p) => [
      p.database,
      p.user,
      p.clients.active,
      p.clients.waiting,
      p.servers.active,
      p.servers.idle,
      p.servers.used,
      p.servers.login,
      p.poolSize,
      Math.floor(p.maxWaitMs / 1000),
      (p.maxWaitMs % 1000) * 1000,
      p.mode,
      p.totals.received,
      p.totals.sent,
      p.query.p99,
      p.transaction.p99,
      p.query.p95,
      p.transaction.p95,
      p.query.p50,
      p.transaction.p50,
      p.wait.p99,
      p.wait.p95,
      p.wait.p50,
      p.totals.errors,
    ]),
  );
}

export function showStats(s: PoolerSnapshot): ShowTable {
  return table(
    [
      'database',
      'user',
      'total_xact_count',
      'total_query_count',
      'total_received',
      'total_sent',
      'total_xact_time',
      'total_query_time',
      'total_wait_time',
      'total_errors',
      'avg_xact_count',
      'avg_query_count',
      'avg_recv',
      'avg_sent',
      'avg_errors',
      'avg_xact_time',
      'avg_query_time',
      'avg_wait_time',
    ],
    s.pools.map((p) => {
      const t = p.totals;
      const a = p.averages;
      return [
        p.database,
        p.user,
        t.xactCount,
        t.queryCount,
        t.received,
        t.sent,
        Math.round(t.xactTimeUs),
        Math.round(t.queryTimeUs),
        Math.round(t.waitTimeUs),
        t.errors,
        a.xactCount,
        a.queryCount,
        a.recv,
        a.sent,
        a.errors,
        a.xactTime,
        a.queryTime,
        a.waitTime,
      ];
    }),
  );
}

export const CLIENT_COLUMNS = [
  'client_id',
  'database',
  'user',
  'application_name',
  'addr',
  'tls',
  'state',
  'wait',
  'transaction_count',
  'query_count',
  'error_count',
  'age_seconds',
  'wait_us',
  'query_age_ms',
  'bytes_received',
  'bytes_sent',
  'xact_time_us',
  'wait_reason',
] as const;

/** `wait`: whole seconds waited, as PgBouncer; `wait_us`: the whole wait in microseconds (PgBouncer's is only the
 * microseconds beyond `wait`); `wait_reason` says why. */
export function showClients(s: PoolerSnapshot): ShowTable {
  return table(
    [...CLIENT_COLUMNS],
    s.clients.map((c) => [
      c.id,
      c.database,
      c.user,
      c.applicationName,
      c.addr,
      c.tls,
      c.state,
      Math.floor(c.waitUs / 1e6),
      c.transactions,
      c.queries,
      c.errors,
      c.ageSeconds,
      c.waitUs,
      c.queryAgeMs,
      c.bytesReceived,
      c.bytesSent,
      c.xactTimeUs,
      c.waitReason,
    ]),
  );
}

export function showServers(s: PoolerSnapshot): ShowTable {
  return table(
    [
      'server_id',
      'server_process_id',
      'database_name',
      'user',
      'application_name',
      'tls',
      'state',
      'wait',
      'transaction_count',
      'query_count',
      'bytes_sent',
      'bytes_received',
      'age_seconds',
      'prepare_cache_hit',
      'prepare_cache_miss',
      'prepare_cache_size',
      'reserve',
      'query_age_ms',
    ],
    s.servers.map((v) => [
      v.id,
      v.pid,
      v.database,
      v.user,
      v.applicationName,
      v.tls,
      v.state,
      v.idleSeconds,
      v.transactions,
      v.queries,
      v.bytesSent,
      v.bytesReceived,
      v.ageSeconds,
      v.prepareHits,
      v.prepareMisses,
      v.prepareSize,
      v.reserve,
      v.queryAgeMs,
    ]),
  );
}

export function showLists(s: PoolerSnapshot, databases: number): ShowTable {
  let free = 0;
  let used = 0;
  let login = 0;
  for (const p of s.pools) {
    free += p.servers.idle;
    used += p.servers.active + p.servers.used;
    login += p.servers.login;
  }
  const users = new Set(s.pools.map((p) => p.user)).size;
  return table(
    ['list', 'items'],
    [
      ['databases', databases],
      ['users', users],
      ['pools', s.pools.length],
      ['used_clients', s.clients.length],
      ['login_clients', s.counters.loggingIn],
      ['free_servers', free],
      ['used_servers', used],
      ['login_servers', login],
    ],
  );
}

export function showPoolCoordinator(s: PoolerSnapshot): ShowTable {
  return table(
    ['database', 'max_db_conn', 'current', 'reserve_size', 'reserve_used', 'evictions', 'reserve_acq', 'exhaustions'],
    s.coordinators.map((c) => [
      c.database,
      c.maxDbConnections,
      c.current,
      c.reserveSize,
      c.reserveUsed,
      c.evictions,
      c.reserveAcquisitions,
      c.exhaustions,
    ]),
  );
}

export function showPoolScaling(s: PoolerSnapshot): ShowTable {
  return table(
    [
      'user',
      'database',
      'inflight',
      'creates',
      'gate_waits',
      'gate_budget_ex',
      'antic_notify',
      'antic_timeout',
      'create_fallback',
      'replenish_def',
    ],
    s.pools.map((p) => {
      const c = p.scaling;
      return [
        p.user,
        p.database,
        c.inflight,
        c.creates,
        c.gateWaits,
        c.gateBudgetEx,
        c.anticNotify,
        c.anticTimeout,
        c.createFallback,
        c.replenishDef,
      ];
    }),
  );
}

export function showEvents(s: PoolerSnapshot): ShowTable {
  return table(
    ['time', 'kind', 'pool', 'message'],
    s.events.map((e) => [new Date(e.time).toISOString(), e.kind, e.pool, e.message]),
  );
}

/** Load per application_name: totals since start; rates over the last stats period (tps, qps, and bytes and errors per
 * second as STATS `avg_recv`, `avg_sent`, `avg_errors`). */
export function showApps(s: PoolerSnapshot): ShowTable {
  return table(
    [
      'application_name',
      'clients',
      'cl_active',
      'cl_waiting',
      'xact_count',
      'query_count',
      'error_count',
      'bytes_received',
      'bytes_sent',
      'xact_time_us',
      'query_time_us',
      'tps',
      'qps',
      'errors_per_1000',
      'avg_recv',
      'avg_sent',
      'avg_errors',
    ],
    [...s.apps]
      .sort((a, b) => b.totals.queryCount - a.totals.queryCount || b.clients - a.clients)
      .map((a) => {
        const t = a.totals;
        return [
          a.applicationName,
          a.clients,
          a.active,
          a.waiting,
          t.xactCount,
          t.queryCount,
          t.errors,
          t.received,
          t.sent,
          Math.round(t.xactTimeUs),
          Math.round(t.queryTimeUs),
          a.averages.xactCount,
          a.averages.queryCount,
          t.queryCount > 0 ? Math.round((t.errors * 1000 * 100) / t.queryCount) / 100 : 0,
          a.averages.recv,
          a.averages.sent,
          a.averages.errors,
        ];
      }),
  );
}
