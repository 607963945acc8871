// The operator's view of the pooler, counted once: SHOW (admin/show.ts), /api/*, /metrics and the overview format it.
import type { PoolMode } from '../config/pooler.js';
import { LOG_BUCKETS, percentilesOf, type Percentiles } from './log-histogram.js';
import type { PoolerEvent } from './events.js';
import type { ScalingCounters } from './pool.js';
import type { HealthSnapshot } from './pool-health.js';
import type { HeldClient, SnapshotSource } from './hosts.js';
import type { ClientSession, ClientState } from './client-session.js';
import { sqlStateCounts, totalsOf, type Averages, type TotalsRecord } from './stats.js';
import { isSql } from './prepared/sql-commands.js';
import { TxStatus } from '../protocol/codes.js';
import { simpleQueryRows, type SimpleQueryRow } from './query-stats/stats.js';
import { NativeRelay } from './relay/native.js';
import type { ListedServer, ServerLists } from './server-lists.js';

/** Duration histogram of one kind (seconds): `counts[i]` observations fell in (bounds[i-1], bounds[i]]. */
export interface DurationBuckets {
  readonly bounds: readonly number[];
  readonly counts: readonly number[];
  /** All observations, including those above the last bound. */
  readonly count: number;
  readonly sum: number;
}

export interface PoolSnapshot {
  readonly database: string;
  readonly user: string;
  readonly mode: PoolMode;
  readonly paused: boolean;
  /** The last server connect failed and none has logged in since (SHOW POOLS `fallback_active`). */
  readonly fallbackActive: boolean;
  readonly poolSize: number;
  /** pinned: transaction-mode clients kept on their server by session state that cannot move (counted in active too).
   * idleInTransaction: clients inside a transaction with nothing in flight (ClientSnapshot.idleInTransaction), counted in
   * active too; maxIdleXactAgeMs: the age of the oldest of their transactions (0 when none). */
  readonly clients: {
    readonly idle: number;
    readonly active: number;
    readonly waiting: number;
    readonly cancelReq: number;
    readonly pinned: number;
    readonly idleInTransaction: number;
    readonly maxIdleXactAgeMs: number;
  };
  /** used: released by a client, server_reset_query still running (PgBouncer's sv_used); login: connecting.
   * idleInTransaction: servers whose client is idle in transaction (counted in active too). */
  readonly servers: {
    readonly active: number;
    readonly idle: number;
    readonly used: number;
    readonly login: number;
    readonly idleInTransaction: number;
  };
  readonly maxWaitMs: number;
  readonly oldestActiveMs: number;
  readonly totals: TotalsRecord;
  readonly averages: Averages;
  /** Percentiles (us) over the last complete stats period plus the current one. */
  readonly query: Percentiles;
  readonly transaction: Percentiles;
  readonly wait: Percentiles;
  /** The log-histogram counts behind them, to merge across pools. */
  readonly windows: { readonly query: Float64Array; readonly transaction: Float64Array; readonly wait: Float64Array };
  /** Cumulative histograms for /metrics. */
  readonly histograms: {
    readonly query: DurationBuckets;
    readonly transaction: DurationBuckets;
    readonly wait: DurationBuckets;
  };
  readonly scaling: ScalingCounters & { readonly inflight: number };
  /** Last server connect error, connect failures per second, PostgreSQL unreachable since (pool-health.ts). */
  readonly health: HealthSnapshot;
  /** Errors sent to the pool's clients per SQLSTATE since start, most first: PostgreSQL's and the pooler's own. */
  readonly errorsBySqlState: readonly { readonly sqlstate: string; readonly count: number }[];
}

export interface ClientSnapshot {
  readonly id: number;
  readonly database: string;
  readonly user: string;
  readonly applicationName: string;
  readonly addr: string;
  /** TLS protocol/cipher, '' for plaintext. */
  readonly tls: string;
  readonly state: ClientState;
  /** Why it waits for a server (`pool paused`, `all servers busy`, `max_db_connections 3`, `connecting`), else ''. */
  readonly waitReason: string;
  /** Time waited so far (us), 0 when not waiting. */
  readonly waitUs: number;
  readonly transactions: number;
  readonly queries: number;
  readonly errors: number;
  readonly bytesReceived: number;
  readonly bytesSent: number;
  readonly xactTimeUs: number;
  /** Age of the query in flight (ms), 0 when none. */
  readonly queryAgeMs: number;
  /** Inside a transaction with nothing in flight: its server's last ReadyForQuery said 'T' or 'E'. */
  readonly idleInTransaction: boolean;
  /** Age of the transaction under way (ms), 0 when none. */
  readonly xactAgeMs: number;
  readonly ageSeconds: number;
  readonly admin: boolean;
}

export interface ServerSnapshot {
  readonly id: number;
  readonly pid: number;
  readonly database: string;
  readonly user: string;
  readonly applicationName: string;
  /** TLS protocol/cipher toward PostgreSQL, '' for plaintext. */
  readonly tls: string;
  readonly state: string;
  /** Seconds idle, for an idle server. */
  readonly idleSeconds: number;
  /** Age of the query in flight of the client it serves (ms), 0 when none. */
  readonly queryAgeMs: number;
  /** Its last ReadyForQuery said 'T' or 'E' and its client has nothing in flight. */
  readonly idleInTransaction: boolean;
  /** Age of the transaction under way of the client it serves (ms), 0 when none. */
  readonly xactAgeMs: number;
  readonly transactions: number;
  readonly queries: number;
  readonly bytesSent: number;
  readonly bytesReceived: number;
  readonly ageSeconds: number;
  readonly prepareHits: number;
  readonly prepareMisses: number;
  readonly prepareSize: number;
  readonly reserve: boolean;
}

export interface CoordinatorSnapshot {
  readonly database: string;
  readonly maxDbConnections: number;
  readonly current: number;
  readonly reserveSize: number;
  readonly reserveUsed: number;
  readonly evictions: number;
  readonly reserveAcquisitions: number;
  readonly exhaustions: number;
}

export interface AppSnapshot {
  readonly applicationName: string;
  readonly clients: number;
  readonly active: number;
  readonly waiting: number;
  readonly totals: TotalsRecord;
  readonly averages: Averages;
}

/** One statement of a pool's prepared-statement cache (prepared/interner.ts). */
export interface StatementSnapshot {
  readonly pool: string;
  readonly hash: string;
  /** The pooler's name for it on servers. */
  readonly name: string;
  readonly query: string;
  readonly kind: 'protocol' | 'sql';
  /** Bytes of text and parameter types the interner keeps. */
  readonly bytes: number;
  /** Parse and Bind uses. */
  readonly countUsed: number;
  /** Completed executions and their total time (us). */
  readonly executions: number;
  readonly execTimeUs: number;
  readonly cacheHits: number;
  readonly cacheMisses: number;
  /** Milliseconds since its last use (0: never used). */
  readonly idleMs: number;
}

/** Parts of the snapshot only some readers need (they cost a pass over every statement or fingerprint). */
export interface SnapshotParts {
  /** Every pool's prepared statements (SHOW PREPARED_STATEMENTS, INTERNER, /api/prepared, /api/top/*). */
  readonly statements?: boolean;
  /** Simple-protocol query fingerprints (/api/top/queries). */
  readonly queries?: boolean;
}

export interface PoolerSnapshot {
  readonly takenAt: number;
  readonly pools: readonly PoolSnapshot[];
  /** Every logged-in client, admin console sessions and held logins included (SHOW CLIENTS lists them; counts per pool
   * do not count admin sessions). Held logins' rows are made when this is first read: read it in the snapshot's turn. */
  readonly clients: readonly ClientSnapshot[];
  readonly servers: readonly ServerSnapshot[];
  readonly coordinators: readonly CoordinatorSnapshot[];
  readonly apps: readonly AppSnapshot[];
  readonly counters: {
    readonly connections: number;
    readonly errors: number;
    readonly cancel: number;
    readonly tls: number;
    readonly nativeLogins: number;
    readonly jsLogins: number;
    readonly loggingIn: number;
    readonly loginTimeouts: number;
    readonly refusedMaxConnections: number;
    readonly refusedDescriptors: number;
    readonly movedIn: number;
    readonly movedOut: number;
    readonly serversMovedIn: number;
    readonly serversMovedOut: number;
  };
  readonly events: readonly PoolerEvent[];
  /** Null unless asked for (SnapshotParts). */
  readonly statements: readonly StatementSnapshot[] | null;
  readonly queries: readonly SimpleQueryRow[] | null;
}

function buckets(h: { snapshot(): DurationBuckets }): DurationBuckets {
  return h.snapshot();
}

function statementsOf(p: SnapshotSource<ClientSession>, now: number): StatementSnapshot[] {
  const out: StatementSnapshot[] = [];
  for (const pool of p.pools.values()) {
    if (!pool.interner) continue;
    for (const s of pool.interner.statements()) {
      out.push({
        pool: pool.name,
        hash: s.hash,
        name: s.name,
        query: s.query.toString('utf8'),
        kind: isSql(s) ? 'sql' : 'protocol',
        bytes: s.query.length + s.types.length,
        countUsed: s.countUsed,
        executions: s.executions,
        execTimeUs: Math.round(s.execTimeUs),
        cacheHits: s.cacheHits,
        cacheMisses: s.cacheMisses,
        idleMs: s.lastUsed ? now - s.lastUsed : 0,
      });
    }
  }
  return out;
}

/** A pool's server counts as SHOW POOLS, /api and /metrics report them: the lengths of its server lists
 * (server-lists.ts), and the connects in flight as `login`; `idleInTransaction` is added as the clients are read. */
export function poolServerCounts(
  lists: ServerLists<ListedServer>,
  connecting: number,
): { active: number; idle: number; used: number; login: number; idleInTransaction: number } {
  return { ...lists.counts(), login: connecting, idleInTransaction: 0 };
}

function noClients(): { -readonly [K in keyof PoolSnapshot['clients']]: number } {
  return { idle: 0, active: 0, waiting: 0, cancelReq: 0, pinned: 0, idleInTransaction: 0, maxIdleXactAgeMs: 0 };
}

/** A held login (native/relay-lend.cc Hold) as its session's row would read: it has sent nothing since its login (its
 * first byte makes it a session), so it is idle with no counts, and plaintext (a TLS login is never the relay's). */
function heldClientRow(h: HeldClient): ClientSnapshot {
  return {
    id: h.clientId,
    database: h.pool.settings.database,
    user: h.pool.settings.user,
    applicationName: h.applicationName,
    addr: h.addr,
    tls: '',
    state: 'idle',
    waitReason: '',
    waitUs: 0,
    transactions: 0,
    queries: 0,
    errors: 0,
    bytesReceived: 0,
    bytesSent: 0,
    xactTimeUs: 0,
    queryAgeMs: 0,
    idleInTransaction: false,
    xactAgeMs: 0,
    ageSeconds: Math.round(h.ageMs / 1000),
    admin: false,
  };
}

export function takeSnapshot(p: SnapshotSource<ClientSession>, parts: SnapshotParts = {}): PoolerSnapshot {
  // Parked and lent servers come back (lent servers' relay-only clients become sessions: a few per pool). Held logins
  // stay held: they are counted here and listed when `clients` is read, from the relay, never made sessions.
  for (const pool of p.pools.values()) pool.settle();
  const now = Date.now();
  const clients: ClientSnapshot[] = [];
  const linked = new Map<unknown, { queryAgeMs: number; idleInTransaction: boolean; xactAgeMs: number }>();
  const perPool = new Map<unknown, ReturnType<typeof noClients>>();
  const perApp = new Map<string, { clients: number; active: number; waiting: number }>();
  for (const c of p.clients) {
    const counts = c.relayCounts();
    const waitUs = c.state === 'waiting' ? Math.max(0, now - c.waitingSince) * 1000 : 0;
    const waitReason = c.waitReason();
    const txStatus = c.server ? (c.server.end.counts()?.txStatus ?? TxStatus.Idle) : TxStatus.Idle;
    const idleInTransaction = counts !== null && txStatus !== TxStatus.Idle && counts.syncs === 0 && !counts.unsynced;
    const xactAgeMs = Math.round((counts?.xactAgeUs ?? 0) / 1000);
    clients.push({
      id: c.id,
      database: c.database,
      user: c.user,
      applicationName: c.applicationName,
      addr: c.addr,
      tls: c.tls,
      state: c.state,
      waitReason,
      waitUs,
      transactions: counts?.transactions ?? 0,
      queries: counts?.queries ?? 0,
      errors: counts?.errors ?? 0,
      bytesReceived: counts?.bytesReceived ?? 0,
      bytesSent: counts?.bytesSent ?? 0,
      xactTimeUs: Math.round(counts?.xactTimeUs ?? 0),
      queryAgeMs: Math.round((counts?.queryAgeUs ?? 0) / 1000),
      idleInTransaction,
      xactAgeMs,
      ageSeconds: Math.round((now - c.connectedAt) / 1000),
      admin: c.isAdmin,
    });
    if (c.server) linked.set(c, { queryAgeMs: clients[clients.length - 1]!.queryAgeMs, idleInTransaction, xactAgeMs });
    if (c.isAdmin || !c.pool) continue;
    let cl = perPool.get(c.pool);
    if (!cl) perPool.set(c.pool, (cl = noClients()));
    let app = perApp.get(c.applicationName);
    if (!app) perApp.set(c.applicationName, (app = { clients: 0, active: 0, waiting: 0 }));
    app.clients++;
    if (c.state === 'waiting') {
      cl.waiting++;
      app.waiting++;
    } else if (c.state === 'active') {
      cl.active++;
      app.active++;
    } else cl.idle++;
    cl.cancelReq += c.cancelRequested;
    if (c.pinnedKinds !== 0) cl.pinned++;
    if (idleInTransaction) {
      cl.idleInTransaction++;
      cl.maxIdleXactAgeMs = Math.max(cl.maxIdleXactAgeMs, xactAgeMs);
    }
  }
  for (const h of p.nativeLogins.heldCounts()) {
    let cl = perPool.get(h.pool);
    if (!cl) perPool.set(h.pool, (cl = noClients()));
    cl.idle += h.count;
    // The registry entry its session would make at its login (an application's clients are listed by SHOW APPS).
    p.apps.get(h.applicationName);
    let app = perApp.get(h.applicationName);
    if (!app) perApp.set(h.applicationName, (app = { clients: 0, active: 0, waiting: 0 }));
    app.clients += h.count;
  }
  // Held logins' rows are made only when read (SHOW CLIENTS, /api/clients, SHOW LISTS), in the same turn: /metrics and
  // the overview count them above and never build ten thousand rows. Then in login order, as before the registry
  // became a SlotSet (whose order changes as clients leave).
  let listed: ClientSnapshot[] | null = null;
  const listClients = (): ClientSnapshot[] => {
    if (listed) return listed;
    listed = clients;
    for (const h of p.nativeLogins.heldRows()) listed.push(heldClientRow(h));
    listed.sort((a, b) => a.id - b.id);
    return listed;
  };

  const pools: PoolSnapshot[] = [];
  const servers: ServerSnapshot[] = [];
  for (const pool of p.pools.values()) {
    const sv = poolServerCounts(pool.servers, pool.connecting);
    let oldestActiveMs = 0;
    for (const s of pool.servers) {
      if (s.state === 'active') oldestActiveMs = Math.max(oldestActiveMs, now - s.lastUsed);
      const cache = s.statements;
      // One call into the relay per server (the native relay answers from C++).
      const counts = s.end.counts();
      const owner = s.owner ? linked.get(s.owner) : undefined;
      if (owner?.idleInTransaction) sv.idleInTransaction++;
      servers.push({
        id: s.id,
        pid: s.backendPid,
        database: pool.settings.database,
        user: pool.settings.user,
        applicationName: s.applicationName,
        tls: s.tls,
        state: s.state,
        idleSeconds: s.state === 'idle' ? Math.round((now - s.lastUsed) / 1000) : 0,
        queryAgeMs: owner?.queryAgeMs ?? 0,
        idleInTransaction: owner !== undefined && owner.idleInTransaction,
        xactAgeMs: owner?.xactAgeMs ?? 0,
        transactions: counts?.transactions ?? 0,
        queries: counts?.queries ?? 0,
        bytesSent: counts?.bytesSent ?? 0,
        bytesReceived: counts?.bytesReceived ?? 0,
        ageSeconds: Math.round((now - s.createdAt) / 1000),
        prepareHits: cache?.hits ?? 0,
        prepareMisses: cache?.misses ?? 0,
        prepareSize: cache?.size ?? 0,
        reserve: s.reserve,
      });
    }
    const st = pool.stats;
    const windows = { query: st.queryTimes.window(), transaction: st.xactTimes.window(), wait: st.waitTimes.window() };
    pools.push({
      database: pool.settings.database,
      user: pool.settings.user,
      mode: pool.settings.mode,
      paused: pool.paused,
      fallbackActive: pool.connectFailing,
      poolSize: pool.settings.poolSize,
      clients: perPool.get(pool) ?? noClients(),
      servers: sv,
      maxWaitMs: pool.maxWaitMs(now),
      oldestActiveMs,
      totals: st.totals.snapshot(),
      averages: st.averages(),
      query: percentilesOf(windows.query),
      transaction: percentilesOf(windows.transaction),
      wait: percentilesOf(windows.wait),
      windows,
      histograms: {
        query: buckets(st.queryHistogram),
        transaction: buckets(st.xactHistogram),
        wait: buckets(st.waitHistogram),
      },
      scaling: { ...pool.scaling, inflight: pool.connecting },
      health: pool.health.snapshot(),
      errorsBySqlState: sqlStateCounts(st.block),
    });
  }

  const coordinators: CoordinatorSnapshot[] = [];
  for (const c of p.coordinators.values()) {
    coordinators.push({
      database: c.database,
      maxDbConnections: c.settings.maxDbConnections,
      current: c.current(),
      reserveSize: c.settings.reserveSize,
      reserveUsed: c.reserveUsed(),
      evictions: c.evictions,
      reserveAcquisitions: c.reserveAcquisitions,
      exhaustions: c.exhaustions,
    });
  }

  const apps: AppSnapshot[] = [];
  for (const e of p.apps.entries()) {
    const live = perApp.get(e.name) ?? { clients: 0, active: 0, waiting: 0 };
    apps.push({
      applicationName: e.name,
      clients: live.clients,
      active: live.active,
      waiting: live.waiting,
      totals: totalsOf(e.block),
      averages: e.period.averages(),
    });
  }

  return {
    takenAt: now,
    pools,
    get clients() {
      return listClients();
    },
    servers,
    coordinators,
    apps,
    counters: {
      ...p.counters,
      loggingIn: p.loggingIn + p.nativeLogins.underWay,
      // Relay-only logins that left unreported (native/relay-lend.cc) were connections and native logins all the same.
      connections: p.counters.connections + p.nativeLogins.unreported,
      nativeLogins: p.counters.nativeLogins + p.nativeLogins.unreported,
    },
    events: p.events.list(),
    // After settle() above: the uses the native relay's lane answered are counted into the statements.
    statements: parts.statements ? statementsOf(p, now) : null,
    queries: parts.queries ? simpleQueryRows(NativeRelay.get()) : null,
  };
}

/** Percentiles over every pool's window: the histograms add up. */
export function mergedPercentiles(pools: readonly PoolSnapshot[], kind: 'query' | 'transaction' | 'wait'): Percentiles {
  const sum = new Float64Array(LOG_BUCKETS);
  for (const p of pools) {
    const w = p.windows[kind];
    for (let i = 0; i < LOG_BUCKETS; i++) sum[i]! += w[i]!;
  }
  return percentilesOf(sum);
}
