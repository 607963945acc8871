// A pool's server lists: every move keeps each server in one list with its state in step, and after a sequence of
// moves the counts SHOW POOLS prints (sv_*) and the pooler_servers gauges of /metrics are the lists' lengths.
import { describe, expect, it } from 'vitest';
import { showPools } from '../../../src/pooler/admin/show-state.js';
import type { PoolerControl } from '../../../src/pooler/control.js';
import type { ServerState } from '../../../src/pooler/server-connection.js';
import { ServerLists, type ServerList } from '../../../src/pooler/server-lists.js';
import { poolServerCounts, type PoolerSnapshot, type PoolSnapshot } from '../../../src/pooler/snapshot.js';
import { renderPoolerMetrics } from '../../../src/pooler/web/pooler-metrics.js';

interface FakeServer {
  id: number;
  state: ServerState;
  lent: boolean;
}

const server = (id: number): FakeServer => ({ id, state: 'login', lent: false });

const percentiles = { p50: 0, p95: 0, p99: 0 };
const buckets = { bounds: [1], counts: [0], count: 0, sum: 0 };

/** A pool's snapshot with everything but its server counts at zero. */
function poolSnapshot(servers: PoolSnapshot['servers']): PoolSnapshot {
  const zero = { xactCount: 0, queryCount: 0, received: 0, sent: 0, xactTimeUs: 0, queryTimeUs: 0, waitTimeUs: 0 };
  return {
    database: 'app',
    user: 'u',
    mode: 'transaction',
    paused: false,
    fallbackActive: false,
    poolSize: 10,
    clients: { idle: 0, active: 0, waiting: 0, cancelReq: 0, pinned: 0, idleInTransaction: 0, maxIdleXactAgeMs: 0 },
    servers,
    maxWaitMs: 0,
    oldestActiveMs: 0,
    totals: { ...zero, errors: 0 },
    averages: {
      xactCount: 0,
      queryCount: 0,
      recv: 0,
      sent: 0,
      errors: 0,
      xactTime: 0,
      queryTime: 0,
      waitTime: 0,
      exact: { xactCount: 0, queryCount: 0, errors: 0 },
    },
    query: percentiles,
    transaction: percentiles,
    wait: percentiles,
    windows: { query: new Float64Array(1), transaction: new Float64Array(1), wait: new Float64Array(1) },
    histograms: { query: buckets, transaction: buckets, wait: buckets },
    scaling: {
      creates: 0,
      gateWaits: 0,
      gateBudgetEx: 0,
      anticNotify: 0,
      anticTimeout: 0,
      createFallback: 0,
      replenishDef: 0,
      inflight: 0,
    },
    health: { unreachableSince: null, lastError: null, connectFailures: 0, connectFailuresPerSec: 0 },
    errorsBySqlState: [],
  };
}

function snapshotOf(pool: PoolSnapshot): PoolerSnapshot {
  return {
    takenAt: Date.now(),
    pools: [pool],
    clients: [],
    servers: [],
    coordinators: [],
    apps: [],
    counters: {
      connections: 0,
      errors: 0,
      cancel: 0,
      tls: 0,
      nativeLogins: 0,
      jsLogins: 0,
      loggingIn: 0,
      loginTimeouts: 0,
      refusedMaxConnections: 0,
      refusedDescriptors: 0,
      movedIn: 0,
      movedOut: 0,
      serversMovedIn: 0,
      serversMovedOut: 0,
    },
    events: [],
    statements: null,
    queries: null,
  };
}

const control = { startedAt: new Date() } as PoolerControl;

/** The value of `pooler_servers{database="app",user="u",state=...}`. */
function gauge(text: string, state: string): number {
  const prefix = `pooler_servers{database="app",user="u",state="${state}"} `;
  const line = text.split('\n').find((l) => l.startsWith(prefix));
  expect(line, prefix).toBeDefined();
  return Number(line!.slice(prefix.length));
}

/** Servers by their own `state` field, lent ones as idle (what SHOW SERVERS lists, server by server). */
function recount(lists: ServerLists<FakeServer>): Record<'active' | 'idle' | 'used', number> {
  const n = { active: 0, idle: 0, used: 0 };
  for (const s of lists) if (s.state === 'active' || s.state === 'idle' || s.state === 'used') n[s.state]++;
  return n;
}

describe('server lists', () => {
  it('keeps each server in one list, its state and lent flag in step, the idle list a stack', () => {
    const lists = new ServerLists<FakeServer>();
    const [a, b, c] = [server(1), server(2), server(3)];
    for (const s of [a, b, c]) lists.move(s, 'idle');
    expect(lists.idle()).toEqual([a, b, c]);
    expect(lists.topIdle()).toBe(c);
    lists.move(c, 'active');
    expect(c.state).toBe('active');
    expect(lists.topIdle()).toBe(b);
    lists.move(a, 'lent');
    expect(a).toMatchObject({ state: 'idle', lent: true });
    expect(lists.idle()).toEqual([b]);
    expect(lists.counts()).toEqual({ active: 1, idle: 2, used: 0 });
    lists.move(a, 'idle');
    expect(a.lent).toBe(false);
    expect(lists.idle()).toEqual([b, a]);
    // Idle again from idle: back on top, counted once.
    lists.move(b, 'idle');
    expect(lists.idle()).toEqual([a, b]);
    expect(lists.count('idle')).toBe(2);
    lists.move(b, null);
    expect(lists.has(b)).toBe(false);
    expect(lists.size).toBe(2);
    expect(lists.idle()).toEqual([a]);
    lists.clear();
    expect([lists.size, lists.count('idle'), lists.count('active'), lists.idle().length]).toEqual([0, 0, 0, 0]);
  });

  it('after a sequence of moves, SHOW POOLS and the pooler_servers gauges count the same lists', () => {
    const lists = new ServerLists<FakeServer>();
    const servers = Array.from({ length: 8 }, (_, i) => server(i + 1));
    // A fixed pseudo-random walk: connects come in, servers are handed out, released, reset, lent, taken back, closed.
    const moves: (ServerList | null)[] = ['used', 'idle', 'active', 'idle', 'lent', 'idle', 'active', 'used', null];
    let seed = 7;
    const next = () => (seed = (seed * 1103515245 + 12345) % 2147483648);
    let connecting = 0;
    for (let step = 0; step < 400; step++) {
      const s = servers[next() % servers.length]!;
      const to = moves[next() % moves.length]!;
      // A server joins the pool as its connect ends (release then places it), and lent servers are idle ones.
      if (!lists.has(s) && to !== 'used') continue;
      if (to === 'lent' && lists.listOf(s) !== 'idle') continue;
      lists.move(s, to);
      if (to === null) s.state = 'closed';
      connecting = next() % 3;

      const counts = poolServerCounts(lists, connecting);
      expect({ active: counts.active, idle: counts.idle, used: counts.used }).toEqual(recount(lists));
      expect(lists.idle().every((x) => x.state === 'idle' && !x.lent)).toBe(true);
      expect(lists.count('idle') + lists.count('lent') + lists.count('active') + lists.count('used')).toBe(lists.size);

      const snapshot = snapshotOf(poolSnapshot(counts));
      const show = showPools(snapshot);
      const row = Object.fromEntries(show.columns.map((col, i) => [col, show.rows[0]![i]]));
      const metrics = renderPoolerMetrics(control, snapshot);
      for (const [col, state, n] of [
        ['sv_active', 'active', counts.active],
        ['sv_idle', 'idle', counts.idle],
        ['sv_used', 'used', counts.used],
        ['sv_login', 'login', connecting],
      ] as const) {
        expect(Number(row[col]), col).toBe(n);
        expect(gauge(metrics, state), state).toBe(n);
      }
    }
    expect(lists.size).toBeGreaterThan(0);
  });
});
