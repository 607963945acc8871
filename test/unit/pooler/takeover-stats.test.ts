// StatsCarry: a new process adds the old one's counters, snapshot after snapshot, without counting anything twice,
// without the carried counts showing in the period averages, and for a pool made after the takeover when it is made.
import { describe, expect, it } from 'vitest';
import { AppRegistry } from '../../../src/pooler/apps.js';
import { poolKey } from '../../../src/pooler/pool-settings.js';
import { PoolStats, STATS_LAYOUT, countSqlState, sqlStateCounts } from '../../../src/pooler/stats.js';
import { StatsCarry, collectStats } from '../../../src/pooler/takeover-stats.js';

interface TestPool {
  settings: { database: string; user: string };
  stats: PoolStats;
  scaling: { creates: number; createFallback: number };
}

interface TestHost {
  pools: Map<string, TestPool>;
  apps: AppRegistry;
  counters: { connections: number; cancel: number };
  coordinators: Map<string, { evictions: number; reserveAcquisitions: number; exhaustions: number }>;
}

function host(pools: [string, string][]): TestHost {
  const map = new Map<string, TestPool>();
  for (const [database, user] of pools)
    map.set(poolKey(database, user), {
      settings: { database, user },
      stats: new PoolStats(),
      scaling: { creates: 0, createFallback: 0 },
    });
  return {
    pools: map,
    apps: new AppRegistry(),
    counters: { connections: 0, cancel: 0 },
    coordinators: new Map([['app', { evictions: 0, reserveAcquisitions: 0, exhaustions: 0 }]]),
  };
}

describe('StatsCarry', () => {
  it('adds each snapshot once: the new counters are the old process latest plus its own', () => {
    const old = host([['app', 'u']]);
    const neu = host([['app', 'u']]);
    const o = old.pools.get(poolKey('app', 'u'))!;
    for (let i = 0; i < 5; i++) o.stats.observeTransaction(1000);
    o.stats.observeQuery(2000);
    o.stats.observeWait(300);
    countSqlState(o.stats.block, '22012');
    o.scaling.creates = 3;
    old.counters.connections = 7;
    old.coordinators.get('app')!.evictions = 2;
    old.apps.get('psql').block[0] = 4;

    const carry = new StatsCarry(neu, 42);
    expect(carry.apply(collectStats(old))).toBe(true);
    const n = neu.pools.get(poolKey('app', 'u'))!;
    n.stats.observeTransaction(1000);
    expect(n.stats.totals.xactCount).toBe(6);
    expect(n.stats.xactHistogram.count).toBe(6);
    expect(n.stats.block[STATS_LAYOUT.waitCount]).toBe(1);
    expect(sqlStateCounts(n.stats.block)).toEqual([{ sqlstate: '22012', count: 1 }]);
    expect(n.scaling.creates).toBe(3);
    expect(neu.counters.connections).toBe(7);
    expect(neu.coordinators.get('app')!.evictions).toBe(2);
    expect(neu.apps.get('psql').block[0]).toBe(4);

    // The old process counts on while it drains: the next snapshot adds only the difference.
    o.stats.observeTransaction(1000);
    countSqlState(o.stats.block, '22012');
    old.counters.connections = 8;
    carry.apply(collectStats(old));
    carry.apply(collectStats(old));
    expect(n.stats.totals.xactCount).toBe(7);
    expect(sqlStateCounts(n.stats.block)).toEqual([{ sqlstate: '22012', count: 2 }]);
    expect(neu.counters.connections).toBe(8);
  });

  it('carried counts do not show in the period averages', () => {
    const old = host([['app', 'u']]);
    const neu = host([['app', 'u']]);
    for (let i = 0; i < 1000; i++) old.pools.get(poolKey('app', 'u'))!.stats.observeTransaction(10);
    const n = neu.pools.get(poolKey('app', 'u'))!;
    n.stats.roll(1000);
    new StatsCarry(neu, 1).apply(collectStats(old));
    for (let i = 0; i < 3; i++) n.stats.observeTransaction(10);
    n.stats.roll(1000);
    expect(n.stats.averages().xactCount).toBe(3);
    expect(n.stats.totals.xactCount).toBe(1003);
  });

  it('a pool the new process makes later starts from the old one counters', () => {
    const old = host([['app', 'dyn']]);
    const neu = host([]);
    old.pools.get(poolKey('app', 'dyn'))!.stats.observeTransaction(10);
    const carry = new StatsCarry(neu, 1);
    carry.apply(collectStats(old));
    const made = {
      settings: { database: 'app', user: 'dyn' },
      stats: new PoolStats(),
      scaling: { creates: 0, createFallback: 0 },
    };
    neu.pools.set(poolKey('app', 'dyn'), made);
    carry.poolCreated('app', 'dyn');
    expect(made.stats.totals.xactCount).toBe(1);
    carry.poolCreated('app', 'dyn');
    expect(made.stats.totals.xactCount).toBe(1);
  });

  it('ignores what is not a snapshot', () => {
    const carry = new StatsCarry(host([]), 1);
    expect(carry.apply(undefined)).toBe(false);
    expect(carry.apply({ v: 2 })).toBe(false);
  });
});
