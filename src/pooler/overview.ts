// The console's overview totals, formatted from one snapshot (snapshot.ts).
import type { DatabaseOutage, Overview } from './control.js';
import { mergedPercentiles, type PoolerSnapshot, type PoolSnapshot } from './snapshot.js';

export function overviewOf(s: PoolerSnapshot): Overview {
  const o: Overview = {
    clients: { active: 0, idle: 0, waiting: 0, total: 0, idle_in_transaction: 0 },
    servers: { active: 0, idle: 0, used: 0, login: 0, total: 0, idle_in_transaction: 0 },
    tps: 0,
    qps: 0,
    errors: 0,
    pools: 0,
    pools_paused: 0,
    query_p50_us: 0,
    query_p95_us: 0,
    query_p99_us: 0,
    transaction_p95_us: 0,
    wait_p95_us: 0,
    cl_waiting: 0,
    errors_per_sec: 0,
    sv_active: 0,
    sv_idle: 0,
    sv_used: 0,
    sv_login: 0,
    max_wait_ms: 0,
    evictions: 0,
    exhaustions: 0,
    max_idle_xact_age_ms: 0,
    connect_failures_per_sec: 0,
    pools_unreachable: 0,
    databases_unreachable: [],
  };
  const outages = new Map<string, { since: number; pools: string[]; error: PoolSnapshot['health']['lastError'] }>();
  for (const p of s.pools) {
    o.pools++;
    if (p.paused) o.pools_paused++;
    o.clients.active += p.clients.active;
    o.clients.idle += p.clients.idle;
    o.clients.waiting += p.clients.waiting;
    o.servers.active += p.servers.active;
    o.servers.idle += p.servers.idle;
    o.servers.used += p.servers.used;
    o.servers.login += p.servers.login;
    o.clients.idle_in_transaction += p.clients.idleInTransaction;
    o.servers.idle_in_transaction += p.servers.idleInTransaction;
    o.max_idle_xact_age_ms = Math.max(o.max_idle_xact_age_ms, p.clients.maxIdleXactAgeMs);
    // Fractions, as errors/s: SHOW STATS' whole avg_xact_count reads 0 for a pool doing 0.4 transactions a second.
    o.tps += p.averages.exact.xactCount;
    o.qps += p.averages.exact.queryCount;
    o.errors += p.totals.errors;
    // A fraction: the integer avg_errors of SHOW STATS reads 0 for 0.3 errors a second.
    o.errors_per_sec += p.averages.exact.errors;
    o.max_wait_ms = Math.max(o.max_wait_ms, p.maxWaitMs);
    o.connect_failures_per_sec += p.health.connectFailuresPerSec;
    const since = p.health.unreachableSince;
    if (since !== null) {
      o.pools_unreachable++;
      const d = outages.get(p.database) ?? { since, pools: [], error: null };
      d.since = Math.min(d.since, since);
      d.pools.push(`${p.database}/${p.user}`);
      const e = p.health.lastError;
      if (e && (!d.error || e.time > d.error.time)) d.error = e;
      outages.set(p.database, d);
    }
  }
  o.errors_per_sec = Math.round(o.errors_per_sec * 1000) / 1000;
  o.tps = Math.round(o.tps * 1000) / 1000;
  o.qps = Math.round(o.qps * 1000) / 1000;
  o.connect_failures_per_sec = Math.round(o.connect_failures_per_sec * 1000) / 1000;
  o.databases_unreachable = [...outages].map(([database, d]): DatabaseOutage => ({
    database,
    since: new Date(d.since).toISOString(),
    pools: d.pools,
    last_error: d.error?.message ?? null,
    last_error_code: d.error?.code ?? null,
    last_error_at: d.error ? new Date(d.error.time).toISOString() : null,
  }));
  o.clients.total = o.clients.active + o.clients.idle + o.clients.waiting;
  o.servers.total = o.servers.active + o.servers.idle + o.servers.used + o.servers.login;
  o.cl_waiting = o.clients.waiting;
  o.sv_active = o.servers.active;
  o.sv_idle = o.servers.idle;
  o.sv_used = o.servers.used;
  o.sv_login = o.servers.login;
  const q = mergedPercentiles(s.pools, 'query');
  o.query_p50_us = q.p50;
  o.query_p95_us = q.p95;
  o.query_p99_us = q.p99;
  o.transaction_p95_us = mergedPercentiles(s.pools, 'transaction').p95;
  o.wait_p95_us = mergedPercentiles(s.pools, 'wait').p95;
  for (const c of s.coordinators) {
    o.evictions += c.evictions;
    o.exhaustions += c.exhaustions;
  }
  return o;
}
