// Query, transaction and wait percentiles against latencies the test makes itself (pg_sleep of known lengths), in SHOW
// POOLS_EXTENDED, SHOW STATS averages, /api/pools_extended, /api/overview and the Prometheus histograms.
//
// The bounds hold however loaded the machine is: the pooler's time for a query lies between the sleep it asked for and
// the round trip the client measured, so each reported quantile lies between the same quantile of the sleeps and of
// the round trips, widened by the histogram's 6.25%.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type pg from 'pg';
import { startTestPostgres, type TestPostgres } from '../../helpers/postgres.js';
import { operatorToml, poolToml, startOperator, until, type OperatorHarness } from '../../helpers/operator.js';

let db: TestPostgres;
let h: OperatorHarness;

beforeAll(async () => {
  db = await startTestPostgres();
  // No stats period ends during these tests: the percentile windows hold everything since the start.
  h = await startOperator(
    operatorToml({
      general: 'stats_period = "1h"',
      pools:
        poolToml(db, 'lat', '', [{ username: 'md5user', password: 'md5pass', extra: 'pool_size = 1' }]) +
        poolToml(db, 'xact', '', [{ username: 'md5user', password: 'md5pass', extra: 'pool_size = 2' }]) +
        poolToml(db, 'idle_sess', 'pool_mode = "session"', [
          { username: 'md5user', password: 'md5pass', extra: 'pool_size = 1' },
        ]) +
        poolToml(db, 'idle_tx', '', [{ username: 'md5user', password: 'md5pass', extra: 'pool_size = 1' }]),
    }),
  );
});
afterAll(async () => {
  await h?.stop();
  await db?.cleanup();
});

const us = (v: string | number | null | undefined) => Number(v);
const row = async (x: OperatorHarness, what: string, database: string) =>
  (await x.show(what)).find((r) => r['database'] === database)!;
const ERR = 0.0625;

/** The value at the rank the pooler reads a q-quantile at (the ceil(q n)-th smallest). */
function quantile(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(1, Math.ceil(q * sorted.length)) - 1]!;
}

/** Runs `sql` on `c` and returns the round trip in microseconds. */
async function timed(c: pg.Client, sql: string): Promise<number> {
  const t0 = performance.now();
  await c.query(sql);
  return (performance.now() - t0) * 1000;
}

function expectBetween(reported: number, sleeps: number[], trips: number[], q: number, what: string): void {
  expect(reported, `${what} low`).toBeGreaterThanOrEqual(quantile(sleeps, q) * (1 - ERR));
  expect(reported, `${what} high`).toBeLessThanOrEqual(quantile(trips, q) * (1 + ERR) + 1);
}

describe('percentiles from a mergeable histogram', () => {
  it('query percentiles: 19 queries of 20 ms and one of 300 ms', async () => {
    const c = h.client('lat', 'md5user', 'md5pass');
    await c.connect();
    const sleeps: number[] = [];
    const trips: number[] = [];
    try {
      for (let i = 0; i < 20; i++) {
        const s = i === 19 ? 0.3 : 0.02;
        sleeps.push(s * 1e6);
        trips.push(await timed(c, `SELECT pg_sleep(${s})`));
      }
    } finally {
      await c.end();
    }
    const r = await row(h, 'POOLS_EXTENDED', 'lat');
    for (const [q, col] of [
      [0.5, '0.5'],
      [0.95, '0.95'],
      [0.99, '0.99'],
    ] as const) {
      // One query per transaction: the transaction percentiles tell the same story.
      expectBetween(us(r[`query_${col}`]), sleeps, trips, q, `query_${col}`);
      expectBetween(us(r[`transaction_${col}`]), sleeps, trips, q, `transaction_${col}`);
    }
    expect(us(r['query_0.99'])).toBeGreaterThanOrEqual(300_000 * (1 - ERR));
    const api = (await h.api('/api/pools_extended')).body as Record<string, number | string>[];
    const a = api.find((x) => x['database'] === 'lat')!;
    for (const col of ['query_0.5', 'query_0.95', 'query_0.99', 'transaction_0.5', 'wait_0.99'])
      expect(a[col], col).toBe(Number(r[col]));
  });

  it('transaction percentiles: BEGIN, two 50 ms queries, COMMIT', async () => {
    const c = h.client('xact', 'md5user', 'md5pass');
    await c.connect();
    const trips: number[] = [];
    try {
      for (let i = 0; i < 5; i++) {
        const t0 = performance.now();
        await c.query('BEGIN');
        await c.query('SELECT pg_sleep(0.05)');
        await c.query('SELECT pg_sleep(0.05)');
        await c.query('COMMIT');
        trips.push((performance.now() - t0) * 1000);
      }
    } finally {
      await c.end();
    }
    const r = await row(h, 'POOLS_EXTENDED', 'xact');
    expectBetween(us(r['transaction_0.5']), [100_000], trips, 0.5, 'transaction_0.5');
    // Half the queries are BEGIN and COMMIT, the other half 50 ms; the longest query is part of the longest transaction.
    expect(us(r['query_0.99'])).toBeGreaterThanOrEqual(50_000 * (1 - ERR));
    expect(us(r['query_0.99'])).toBeLessThanOrEqual(us(r['transaction_0.99']));
  });

  it('the idle time between transactions is not transaction time (session mode, and a pair kept linked in transaction mode)', async () => {
    for (const pool of ['idle_sess', 'idle_tx']) {
      const c = h.client(pool, 'md5user', 'md5pass');
      await c.connect();
      const trips: number[] = [];
      try {
        for (let i = 0; i < 4; i++) {
          // The client idles 250 ms on the same server (session mode; in transaction mode nobody else wants it).
          await new Promise((r) => setTimeout(r, 250));
          trips.push(await timed(c, 'SELECT 1'));
        }
      } finally {
        await c.end();
      }
      const r = await row(h, 'POOLS_EXTENDED', pool);
      // Each transaction lies inside its client's round trip; with the idle time counted it would be past 250 ms.
      expect(us(r['transaction_0.99']), pool).toBeLessThanOrEqual(Math.max(...trips) * (1 + ERR) + 1);
      expect(us(r['transaction_0.99']), pool).toBeLessThan(250_000);
    }
  });

  it('wait percentiles: a client waits while another holds the only server for 300 ms', async () => {
    const holder = h.client('lat', 'md5user', 'md5pass');
    const waiter = h.client('lat', 'md5user', 'md5pass');
    await holder.connect();
    await waiter.connect();
    let waited = 0;
    try {
      await holder.query('BEGIN');
      const release = (async () => {
        await new Promise((r) => setTimeout(r, 300));
        await holder.query('COMMIT');
      })();
      waited = await timed(waiter, 'SELECT 1');
      await release;
    } finally {
      await holder.end();
      await waiter.end();
    }
    const r = await row(h, 'POOLS_EXTENDED', 'lat');
    expect(us(r['wait_0.99'])).toBeGreaterThanOrEqual(300_000 * (1 - ERR));
    expect(us(r['wait_0.99'])).toBeLessThanOrEqual(waited * (1 + ERR));
    // Every other checkout found the server idle: no wait at all.
    expect(us(r['wait_0.5'])).toBeLessThan(300_000 * (1 - ERR));
    // The waiter's query time starts when it got the server: its wait is not counted twice.
    const stats = await row(h, 'STATS', 'lat');
    expect(us(stats['total_wait_time'])).toBeGreaterThanOrEqual(300_000 * (1 - ERR));
  });

  it('/metrics has the three duration histograms per pool, with counts that match SHOW STATS', async () => {
    const text = await h.metrics();
    for (const family of [
      'pooler_query_duration_seconds',
      'pooler_transaction_duration_seconds',
      'pooler_wait_duration_seconds',
    ]) {
      expect(text).toContain(`# TYPE ${family} histogram`);
      expect(text).toMatch(new RegExp(`^${family}_bucket\\{database="lat",user="md5user",le="\\+Inf"\\} \\d+$`, 'm'));
    }
    const stats = await row(h, 'STATS', 'lat');
    const count = Number(
      /^pooler_transaction_duration_seconds_count\{database="lat",user="md5user"\} (\d+)$/m.exec(text)![1],
    );
    expect(count).toBe(Number(stats['total_xact_count']));
    const fast = Number(
      /^pooler_query_duration_seconds_bucket\{database="lat",user="md5user",le="0.25"\} (\d+)$/m.exec(text)![1],
    );
    const all = Number(/^pooler_query_duration_seconds_count\{database="lat",user="md5user"\} (\d+)$/m.exec(text)![1]);
    // The 300 ms query at least is above 0.25 s.
    expect(all - fast).toBeGreaterThanOrEqual(1);
    expect(all).toBeGreaterThanOrEqual(Number(stats['total_query_count']));
  });
});

describe('averages over stats_period', () => {
  it("SHOW STATS avg_* in microseconds over the last period; /api/overview merges the pools' histograms", async () => {
    const x = await startOperator(
      operatorToml({
        general: 'stats_period = "1s"',
        pools: poolToml(db, 'avg', '', [{ username: 'md5user', password: 'md5pass', extra: 'pool_size = 1' }]),
      }),
    );
    const c = x.client('avg', 'md5user', 'md5pass');
    try {
      await c.connect();
      // Queries of 40 ms until a complete stats period has them, and for at least 2.5 s so that the percentile windows
      // (two periods at most) hold nothing else.
      let stats: Record<string, string | null> | undefined;
      const t0 = Date.now();
      await until(
        'a stats period with 40 ms queries',
        async () => {
          await c.query('SELECT pg_sleep(0.04)');
          stats = await row(x, 'STATS', 'avg');
          return Date.now() - t0 >= 2500 && Number(stats['avg_query_count']) > 0;
        },
        60_000,
      );
      expect(Number(stats!['avg_xact_count'])).toBeGreaterThan(0);
      expect(us(stats!['avg_query_time'])).toBeGreaterThanOrEqual(40_000);
      expect(us(stats!['avg_xact_time'])).toBeGreaterThanOrEqual(40_000);
      expect(Number(stats!['total_query_time'])).toBeGreaterThanOrEqual(Number(stats!['total_query_count']) * 40_000);
      const o = (await x.api('/api/overview')).body as Record<string, number>;
      expect(o['query_p50_us']).toBeGreaterThanOrEqual(40_000 * (1 - ERR));
      expect(o['query_p99_us']).toBeGreaterThanOrEqual(o['query_p95_us']!);
      expect(o['query_p95_us']).toBeGreaterThanOrEqual(o['query_p50_us']!);
      expect(o['qps']).toBeGreaterThan(0);
    } finally {
      await c.end().catch(() => undefined);
      await x.stop();
    }
  });
});
