// SHOW tables of the admin console and the web API, with the column names of reference/pooler.md.
import { readFileSync, readdirSync, readlinkSync } from 'node:fs';
import { describeShape } from '../../config/schema.js';
import { generalShape, logsShape, webShape } from '../../config/pooler.js';
import { packageVersion } from '../../shared/package-root.js';
import type { Cell, ShowTable } from '../control.js';
import type { Pooler } from '../pooler.js';
import { interner, preparedStatements } from './show-prepared.js';

const table = (columns: string[], rows: Cell[][]): ShowTable => ({ columns, rows });

function pools(p: Pooler): ShowTable {
  const now = Date.now();
  const rows: Cell[][] = [];
  for (const pool of p.pools.values()) {
    const cl = { idle: 0, active: 0, waiting: 0, cancel: 0 };
    let oldestActive = 0;
    for (const c of p.clients) {
      if (c.pool !== pool) continue;
      if (c.state === 'waiting') cl.waiting++;
      else if (c.state === 'active') cl.active++;
      else cl.idle++;
      cl.cancel += c.cancelRequested;
    }
    for (const s of pool.servers) if (s.state === 'active') oldestActive = Math.max(oldestActive, now - s.lastUsed);
    const maxWait = pool.maxWaitMs(now);
    const a = pool.stats.averages();
    rows.push([
      pool.settings.database, pool.settings.user, pool.settings.mode, cl.idle, cl.active, cl.waiting, cl.cancel,
      pool.activeCount, pool.idleCount, 0, pool.connecting, pool.settings.poolSize, Math.floor(maxWait / 1000), (maxWait % 1000) * 1000,
      a.xactTime, pool.paused, false, oldestActive,
    ]);
  }
  return table(['database', 'user', 'pool_mode', 'cl_idle', 'cl_active', 'cl_waiting', 'cl_cancel_req', 'sv_active', 'sv_idle', 'sv_used', 'sv_login', 'pool_size', 'maxwait', 'maxwait_us', 'avg_xact_time', 'paused', 'fallback_active', 'oldest_active_age_ms'], rows);
}

function poolsExtended(p: Pooler): ShowTable {
  const now = Date.now();
  const rows: Cell[][] = [];
  for (const pool of p.pools.values()) {
    let active = 0;
    let waiting = 0;
    for (const c of p.clients) {
      if (c.pool !== pool) continue;
      if (c.state === 'waiting') waiting++;
      else if (c.state === 'active') active++;
    }
    const maxWait = pool.maxWaitMs(now);
    const t = pool.stats.totals;
    const q = (r: typeof pool.stats.queryTimes, x: number) => Math.round(r.quantile(x));
    rows.push([
      pool.settings.database, pool.settings.user, active, waiting, pool.activeCount, pool.idleCount, 0, pool.connecting, pool.settings.poolSize,
      Math.floor(maxWait / 1000), (maxWait % 1000) * 1000, pool.settings.mode, t.received, t.sent,
      q(pool.stats.queryTimes, 0.99), q(pool.stats.xactTimes, 0.99), q(pool.stats.queryTimes, 0.95), q(pool.stats.xactTimes, 0.95),
      q(pool.stats.queryTimes, 0.5), q(pool.stats.xactTimes, 0.5),
    ]);
  }
  return table(['database', 'user', 'cl_active', 'cl_waiting', 'sv_active', 'sv_idle', 'sv_used', 'sv_login', 'pool_size', 'maxwait', 'maxwait_us', 'pool_mode', 'bytes_received', 'bytes_sent', 'query_0.99', 'transaction_0.99', 'query_0.95', 'transaction_0.95', 'query_0.5', 'transaction_0.5'], rows);
}

function stats(p: Pooler): ShowTable {
  const rows: Cell[][] = [];
  for (const pool of p.pools.values()) {
    const t = pool.stats.totals;
    const a = pool.stats.averages();
    rows.push([
      pool.settings.database, pool.settings.user, t.xactCount, t.queryCount, t.received, t.sent, Math.round(t.xactTimeUs), Math.round(t.queryTimeUs),
      Math.round(t.waitTimeUs), t.errors, a.xactCount, a.queryCount, a.recv, a.sent, a.errors, a.xactTime, a.queryTime, a.waitTime,
    ]);
  }
  return table(['database', 'user', 'total_xact_count', 'total_query_count', 'total_received', 'total_sent', 'total_xact_time', 'total_query_time', 'total_wait_time', 'total_errors', 'avg_xact_count', 'avg_query_count', 'avg_recv', 'avg_sent', 'avg_errors', 'avg_xact_time', 'avg_query_time', 'avg_wait_time'], rows);
}

function clients(p: Pooler): ShowTable {
  const now = Date.now();
  const rows: Cell[][] = [];
  for (const c of p.clients) {
    const wait = c.state === 'waiting' ? Math.round((now - c.waitingSince) / 1000) : 0;
    rows.push([c.id, c.database, c.user, c.applicationName, c.addr, false, c.state, wait, c.transactionCount, c.queryCount, c.errorCount, Math.round((now - c.connectedAt) / 1000)]);
  }
  return table(['client_id', 'database', 'user', 'application_name', 'addr', 'tls', 'state', 'wait', 'transaction_count', 'query_count', 'error_count', 'age_seconds'], rows);
}

function servers(p: Pooler): ShowTable {
  const now = Date.now();
  const rows: Cell[][] = [];
  for (const pool of p.pools.values()) {
    for (const s of pool.servers) {
      const wait = s.state === 'idle' ? Math.round((now - s.lastUsed) / 1000) : 0;
      const cache = s.statements;
      rows.push([s.id, s.backendPid, pool.settings.database, pool.settings.user, s.applicationName, false, s.state, wait, s.transactionCount, s.queryCount, s.bytesSent, s.bytesReceived, Math.round((now - s.createdAt) / 1000), cache?.hits ?? 0, cache?.misses ?? 0, cache?.size ?? 0]);
    }
  }
  return table(['server_id', 'server_process_id', 'database_name', 'user', 'application_name', 'tls', 'state', 'wait', 'transaction_count', 'query_count', 'bytes_sent', 'bytes_received', 'age_seconds', 'prepare_cache_hit', 'prepare_cache_miss', 'prepare_cache_size'], rows);
}

function databases(p: Pooler): ShowTable {
  const rows: Cell[][] = [];
  for (const [name, pc] of Object.entries(p.config.pools)) {
    let current = 0;
    for (const pool of p.pools.values()) if (pool.settings.database === name) current += pool.servers.size;
    const size = pc.users.reduce((n, u) => n + u.pool_size, 0);
    const min = pc.users.reduce((n, u) => n + u.min_pool_size, 0);
    const mode = pc.pool_mode ?? p.config.general.pool_mode;
    rows.push([name, pc.server_host, pc.server_port, pc.server_database ?? name, pc.users.length === 1 ? pc.users[0]!.server_username ?? null : null, size, min, 0, mode, size, current]);
  }
  return table(['name', 'host', 'port', 'database', 'force_user', 'pool_size', 'min_pool_size', 'reserve_pool', 'pool_mode', 'max_connections', 'current_connections'], rows);
}

function users(p: Pooler): ShowTable {
  const seen = new Map<string, string>();
  for (const pool of p.pools.values()) if (!seen.has(pool.settings.user)) seen.set(pool.settings.user, pool.settings.mode);
  return table(['name', 'pool_mode'], [...seen].map(([n, m]) => [n, m]));
}

function fmt(v: unknown): string {
  if (v === null || v === undefined) return '';
  if (Array.isArray(v)) return v.join(',');
  return String(v);
}

const RESTART_ONLY = new Set(['general.host', 'general.port', 'web.enabled', 'web.host', 'web.port', 'general.prepared_statements', 'general.prepared_statements_cache_size', 'general.server_prepared_statements_cache_size']);
const SECRET = new Set(['general.admin_password']);

function config(p: Pooler): ShowTable {
  const rows: Cell[][] = [];
  for (const [section, shape, values] of [['general', generalShape, p.config.general], ['web', webShape, p.config.web], ['logs', logsShape, p.config.logs]] as const) {
    for (const d of describeShape(shape, section)) {
      const key = d.key.slice(section.length + 1);
      const value = (values as Record<string, unknown>)[key];
      rows.push([d.key, SECRET.has(d.key) ? (value ? '********' : '') : fmt(value), fmt(d.default), RESTART_ONLY.has(d.key) ? 'no' : 'yes']);
    }
  }
  return table(['key', 'value', 'default', 'changeable'], rows);
}

function lists(p: Pooler): ShowTable {
  let freeServers = 0;
  let usedServers = 0;
  let loginServers = 0;
  for (const pool of p.pools.values()) {
    freeServers += pool.idleCount;
    usedServers += pool.servers.size - pool.idleCount;
    loginServers += pool.connecting;
  }
  const dbs = Object.keys(p.config.pools).length;
  const userCount = new Set([...p.pools.values()].map((x) => x.settings.user)).size;
  let active = 0;
  let waiting = 0;
  for (const c of p.clients) {
    if (c.state === 'waiting') waiting++;
    else active++;
  }
  return table(['list', 'items'], [
    ['databases', dbs], ['users', userCount], ['pools', p.pools.size], ['free_clients', 0], ['used_clients', active + waiting],
    ['login_clients', 0], ['free_servers', freeServers], ['used_servers', usedServers], ['login_servers', loginServers],
  ]);
}

const TCP_STATES = ['', 'tcp_established', 'tcp_syn_sent', 'tcp_syn_recv', 'tcp_fin_wait1', 'tcp_fin_wait2', 'tcp_time_wait', 'tcp_close', 'tcp_close_wait', 'tcp_last_ack', 'tcp_listen', 'tcp_closing'];

/** TCP sockets of this process per state (from /proc), plus unix sockets. */
function sockets(): ShowTable {
  const inodes = new Set<string>();
  try {
    for (const fd of readdirSync('/proc/self/fd')) {
      try {
        const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/self/fd/${fd}`));
        if (m) inodes.add(m[1]!);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      }
    }
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  const counts = new Map<string, number>(TCP_STATES.slice(1).map((s) => [s, 0]));
  for (const file of ['/proc/self/net/tcp', '/proc/self/net/tcp6']) {
    let text = '';
    try {
      text = readFileSync(file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
    for (const line of text.split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length < 10 || !inodes.has(f[9]!)) continue;
      const state = TCP_STATES[parseInt(f[3]!, 16)];
      if (state) counts.set(state, counts.get(state)! + 1);
    }
  }
  let unix = 0;
  try {
    for (const line of readFileSync('/proc/self/net/unix', 'utf8').split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length >= 7 && inodes.has(f[6]!)) unix++;
    }
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  const cols = [...counts.keys(), 'unix'];
  return table(cols, [[...counts.values(), unix]]);
}

export const HELP_LINES = [
  'SHOW HELP|CONFIG|DATABASES|POOLS|POOLS_EXTENDED|CLIENTS|SERVERS|USERS|VERSION',
  'SHOW STATS|LISTS|LOG_LEVEL|CONNECTIONS|SOCKETS|PREPARED_STATEMENTS|INTERNER [<n>]',
  'SET log_level = \'trace|debug|info|warn|error\'',
  'RELOAD', 'PAUSE [<db>]', 'RESUME [<db>]', 'RECONNECT [<db>]', 'KILL <db>', 'SHUTDOWN', 'RESET INTERNER',
];

export function showTable(p: Pooler, name: string): ShowTable {
  switch (name) {
    case 'POOLS': return pools(p);
    case 'POOLS_EXTENDED': return poolsExtended(p);
    case 'STATS': return stats(p);
    case 'CLIENTS': return clients(p);
    case 'SERVERS': return servers(p);
    case 'DATABASES': return databases(p);
    case 'USERS': return users(p);
    case 'CONFIG': return config(p);
    case 'VERSION': return table(['version'], [[`tidepool ${packageVersion}`]]);
    case 'LOG_LEVEL': return table(['log_level'], [[p.logs.level]]);
    case 'LISTS': return lists(p);
    case 'CONNECTIONS': return table(['total', 'errors', 'tls', 'plain', 'cancel'], [[p.counters.connections, p.counters.errors, 0, p.counters.connections, p.counters.cancel]]);
    case 'SOCKETS': return sockets();
    case 'PREPARED_STATEMENTS': return preparedStatements(p.pools.values());
    case 'INTERNER': return interner(p.pools.values());
    case 'INTERNER_TOP': return interner(p.pools.values(), 20);
    case 'HELP': return table(['command'], HELP_LINES.map((l) => [l]));
    default: throw new UnknownShowError(name);
  }
}

export class UnknownShowError extends Error {
  constructor(readonly what: string) {
    super(`unknown SHOW item "${what}"; try SHOW HELP`);
    this.name = 'UnknownShowError';
  }
}
