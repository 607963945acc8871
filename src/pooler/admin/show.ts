// SHOW tables of the admin console and the web API, with the column names of reference/pooler.md.
import { readFileSync, readdirSync, readlinkSync } from 'node:fs';
import { describeShape } from '../../config/schema.js';
import { generalShape, logsShape, nativeShape, webShape } from '../../config/pooler.js';
import { packageVersion } from '../../shared/package-root.js';
import type { Cell, ShowTable } from '../control.js';
import type { ClientSession } from '../client-session.js';
import type { SnapshotSource } from '../hosts.js';
import { interner, preparedStatements } from './show-prepared.js';
import { takeSnapshot, type PoolerSnapshot, type SnapshotParts } from '../snapshot.js';
import {
  showApps,
  showClients,
  showErrors,
  showEvents,
  showLists,
  showPoolCoordinator,
  showPools,
  showPoolScaling,
  showPoolsExtended,
  showServers,
  showStats,
} from './show-state.js';

const table = (columns: string[], rows: Cell[][]): ShowTable => ({ columns, rows });

/** `current_connections`: the database's connections as its coordinator counts them (POOL_COORDINATOR `current`: open,
 * connecting and being evicted), from the same snapshot. */
function databases(s: PoolerSnapshot, p: SnapshotSource<ClientSession>): ShowTable {
  const current = new Map(s.coordinators.map((c) => [c.database, c.current]));
  const rows: Cell[][] = [];
  for (const [name, pc] of Object.entries(p.config.pools)) {
    const size = pc.users.reduce((n, u) => n + u.pool_size, 0);
    const min = pc.users.reduce((n, u) => n + u.min_pool_size, 0);
    const mode = pc.pool_mode ?? p.config.general.pool_mode;
    rows.push([
      name,
      pc.server_host,
      pc.server_port,
      pc.server_database ?? name,
      pc.users.length === 1 ? (pc.users[0]!.server_username ?? null) : null,
      size,
      min,
      pc.reserve_pool_size,
      mode,
      pc.max_db_connections || size,
      current.get(name) ?? 0,
    ]);
  }
  return table(
    [
      'name',
      'host',
      'port',
      'database',
      'force_user',
      'pool_size',
      'min_pool_size',
      'reserve_pool',
      'pool_mode',
      'max_connections',
      'current_connections',
    ],
    rows,
  );
}

function users(p: SnapshotSource<ClientSession>): ShowTable {
  const seen = new Map<string, string>();
  for (const pool of p.pools.values())
    if (!seen.has(pool.settings.user)) seen.set(pool.settings.user, pool.settings.mode);
  return table(
    ['name', 'pool_mode'],
    [...seen].map(([n, m]) => [n, m]),
  );
}

function fmt(v: unknown): string {
  if (v === null || v === undefined) return '';
  if (Array.isArray(v)) return v.join(',');
  return String(v);
}

const SECRET = new Set(['general.admin_password', 'general.auth_password']);

function config(p: SnapshotSource<ClientSession>): ShowTable {
  const rows: Cell[][] = [];
  for (const [section, shape, values] of [
    ['general', generalShape, p.config.general],
    ['web', webShape, p.config.web],
    ['logs', logsShape, p.config.logs],
    ['native', nativeShape, p.config.native],
  ] as const) {
    for (const d of describeShape(shape, section)) {
      const key = d.key.slice(section.length + 1);
      const value = (values as Record<string, unknown>)[key];
      rows.push([
        d.key,
        SECRET.has(d.key) ? (value ? '********' : '') : fmt(value),
        fmt(d.default),
        d.restart ? 'no' : 'yes',
      ]);
    }
  }
  return table(['key', 'value', 'default', 'changeable'], rows);
}

const TCP_STATES = [
  '',
  'tcp_established',
  'tcp_syn_sent',
  'tcp_syn_recv',
  'tcp_fin_wait1',
  'tcp_fin_wait2',
  'tcp_time_wait',
  'tcp_close',
  'tcp_close_wait',
  'tcp_last_ack',
  'tcp_listen',
  'tcp_closing',
];

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
  'SHOW POOL_COORDINATOR|POOL_SCALING|APPS|EVENTS|ERRORS',
  "SET log_level = 'trace|debug|info|warn|error'",
  'RELOAD',
  'PAUSE [<db>]',
  'RESUME [<db>]',
  'RECONNECT [<db>]',
  'KILL <db>',
  'SHUTDOWN',
  'RESET INTERNER',
];

/** SHOW names answered from the pooler's snapshot (one snapshot per call: every number counted once). */
const SNAPSHOT_SHOWS: Record<string, (s: PoolerSnapshot, p: SnapshotSource<ClientSession>) => ShowTable> = {
  POOLS: showPools,
  DATABASES: databases,
  POOLS_EXTENDED: showPoolsExtended,
  STATS: showStats,
  CLIENTS: showClients,
  SERVERS: showServers,
  LISTS: (s, p) => showLists(s, Object.keys(p.config.pools).length),
  POOL_COORDINATOR: showPoolCoordinator,
  POOL_SCALING: showPoolScaling,
  EVENTS: showEvents,
  ERRORS: showErrors,
  APPS: showApps,
  PREPARED_STATEMENTS: preparedStatements,
  INTERNER: (s) => interner(s),
  INTERNER_TOP: (s) => interner(s, 20),
  CONNECTIONS: (s) =>
    table(
      ['total', 'errors', 'tls', 'plain', 'cancel'],
      [
        [
          s.counters.connections,
          s.counters.errors,
          s.counters.tls,
          s.counters.connections - s.counters.tls,
          s.counters.cancel,
        ],
      ],
    ),
};

/** What a SHOW needs in its snapshot beyond the pools, clients and servers. */
export function snapshotPartsOf(name: string): SnapshotParts {
  return name === 'PREPARED_STATEMENTS' || name === 'INTERNER' || name === 'INTERNER_TOP' ? { statements: true } : {};
}

/** `snapshot`: format this one instead of taking a new one (taken with snapshotPartsOf(name)). */
export function showTable(p: SnapshotSource<ClientSession>, name: string, snapshot?: PoolerSnapshot): ShowTable {
  const fromSnapshot = SNAPSHOT_SHOWS[name];
  if (fromSnapshot) return fromSnapshot(snapshot ?? takeSnapshot(p, snapshotPartsOf(name)), p);
  switch (name) {
    case 'USERS':
      return users(p);
    case 'CONFIG':
      return config(p);
    case 'VERSION':
      return table(['version'], [[`tidepool ${packageVersion}`]]);
    case 'LOG_LEVEL':
      return table(['log_level'], [[p.logs.level]]);
    case 'SOCKETS':
      return sockets();
    case 'HELP':
      return table(
        ['command'],
        HELP_LINES.map((l) => [l]),
      );
    case 'AUTH_QUERY':
      if (p.authQuery.configured) return p.authQuery.show();
      throw new NotConfiguredError(
        'AUTH_QUERY',
        'auth_query is not configured (no auth_user): this pooler authenticates clients against the passwords in its config file ([[pools.<db>.users]]), so there is no auth_query cache to show',
      );
    default:
      throw new UnknownShowError(name);
  }
}

/** A SHOW of a feature that this configuration does not use (AUTH_QUERY without auth_query). */
export class NotConfiguredError extends Error {
  constructor(
    readonly what: string,
    message: string,
  ) {
    super(message);
    this.name = 'NotConfiguredError';
  }
}

export class UnknownShowError extends Error {
  constructor(readonly what: string) {
    super(`unknown SHOW item "${what}"; try SHOW HELP`);
    this.name = 'UnknownShowError';
  }
}
