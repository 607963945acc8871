// Query, transaction and wait percentiles against latencies the test makes itself (pg_sleep of known lengths), in SHOW
// POOLS_EXTENDED, SHOW STATS averages, /api/pools_extended, /api/overview and the Prometheus histograms.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestPostgres, type TestPostgres } from '../../helpers/postgres.js';
import { operatorToml, poolToml, startOperator, until, type OperatorHarness } from '../../helpers/operator.js';

let db: TestPostgres;
let h: OperatorHarness;

beforeAll(async () => {
  db = await startTestPostgres();
  h = await startOperator(operatorToml({
    general: 'stats_period = "2s"',
    pools: poolToml(db, 'lat', '', [{ username: 'md5user', password: 'md5pass', extra: 'pool_size = 1' }])
      + poolToml(db, 'xact', '', [{ username: 'md5user', password: 'md5pass', extra: 'pool_size = 2' }]),
  }));
});
afterAll(async () => {
  await h?.stop();
  await db?.cleanup();
});

const ms = (us: string | number | null | undefined) => Number(us) / 1000;
const row = async (what: string, database: string) => (await h.show(what)).find((r) => r['database'] === database)!;

describe('percentiles from a mergeable histogram', () => {
  it('query percentiles: 19 queries of 20 ms and one of 300 ms', async () => {
    const c = h.client('lat', 'md5user', 'md5pass');
    await c.connect();
    try {
      for (let i = 0; i < 19; i++) await c.query('SELECT pg_sleep(0.02)');
      await c.query('SELECT pg_sleep(0.3)');
    } finally {
      await c.end();
    }
    const r = await row('POOLS_EXTENDED', 'lat');
    // A bucket is at most 12.5% wide and read at its middle: within 6.25% of the true value, plus the round trip.
    expect(ms(r['query_0.5'])).toBeGreaterThanOrEqual(20 * 0.93);
    // Below the slow query's bucket, however loaded the machine.
    expect(ms(r['query_0.5'])).toBeLessThan(250);
    expect(ms(r['query_0.95'])).toBeLessThan(250);
    expect(ms(r['query_0.99'])).toBeGreaterThanOrEqual(300 * 0.93);
    expect(ms(r['query_0.99'])).toBeLessThan(1500);
    // One query per transaction: the transaction percentiles tell the same story.
    expect(ms(r['transaction_0.5'])).toBeGreaterThanOrEqual(20 * 0.93);
    expect(ms(r['transaction_0.99'])).toBeGreaterThanOrEqual(300 * 0.93);
    const api = (await h.api('/api/pools_extended')).body as Record<string, number>[];
    const a = api.find((x) => x['database'] === 'lat')!;
    expect(a['query_0.99']).toBe(Number(r['query_0.99']));
    expect(a['query_0.5']).toBe(Number(r['query_0.5']));
  });

  it('transaction percentiles: BEGIN, two 50 ms queries, COMMIT', async () => {
    const c = h.client('xact', 'md5user', 'md5pass');
    await c.connect();
    try {
      for (let i = 0; i < 5; i++) {
        await c.query('BEGIN');
        await c.query('SELECT pg_sleep(0.05)');
        await c.query('SELECT pg_sleep(0.05)');
        await c.query('COMMIT');
      }
    } finally {
      await c.end();
    }
    const r = await row('POOLS_EXTENDED', 'xact');
    expect(ms(r['transaction_0.5'])).toBeGreaterThanOrEqual(100 * 0.93);
    expect(ms(r['transaction_0.5'])).toBeLessThan(1000);
    // Four queries a transaction: half of them are BEGIN and COMMIT, the other half 50 ms.
    expect(ms(r['query_0.99'])).toBeGreaterThanOrEqual(50 * 0.93);
    expect(ms(r['query_0.99'])).toBeLessThan(ms(r['transaction_0.99']));
  });

  it('wait percentiles: a client waits while another holds the only server for 300 ms', async () => {
    const holder = h.client('lat', 'md5user', 'md5pass');
    const waiter = h.client('lat', 'md5user', 'md5pass');
    await holder.connect();
    await waiter.connect();
    try {
      await holder.query('BEGIN');
      const release = (async () => {
        await new Promise((r) => setTimeout(r, 300));
        await holder.query('COMMIT');
      })();
      await waiter.query('SELECT 1');
      await release;
    } finally {
      await holder.end();
      await waiter.end();
    }
    const r = await row('POOLS_EXTENDED', 'lat');
    expect(ms(r['wait_0.99'])).toBeGreaterThanOrEqual(250 * 0.93);
    expect(ms(r['wait_0.99'])).toBeLessThan(5000);
    // Most checkouts found the server idle.
    expect(ms(r['wait_0.5'])).toBeLessThan(250);
  });

  it('SHOW STATS averages over stats_period, in microseconds; /api/overview merges the pools\' histograms', async () => {
    const c = h.client('lat', 'md5user', 'md5pass');
    await c.connect();
    try {
      // Keep queries of 40 ms running until a complete stats period (2 s) holds only them, and for at least 4.5 s so
      // that the percentile windows (two periods at most) hold nothing of the tests before.
      let stats: Record<string, string | null> | undefined;
      const t0 = Date.now();
      await until('a stats period with only 40 ms queries', async () => {
        await c.query('SELECT pg_sleep(0.04)');
        stats = await row('STATS', 'lat');
        const avg = ms(stats['avg_query_time']);
        return Date.now() - t0 >= 4500 && Number(stats['avg_query_count']) > 0 && avg >= 40 && avg < 45 + 40;
      }, 30_000);
      expect(Number(stats!['avg_xact_count'])).toBeGreaterThan(0);
      expect(ms(stats!['avg_xact_time'])).toBeGreaterThanOrEqual(40);
      expect(Number(stats!['total_query_time'])).toBeGreaterThan(19 * 20_000 + 300_000);
    } finally {
      await c.end();
    }
    const o = (await h.api('/api/overview')).body as Record<string, number>;
    expect(o['query_p50_us']).toBeGreaterThanOrEqual(40_000 * 0.93);
    expect(o['query_p99_us']).toBeGreaterThanOrEqual(o['query_p95_us']!);
    expect(o['query_p95_us']).toBeGreaterThanOrEqual(o['query_p50_us']!);
    expect(o['qps']).toBeGreaterThan(0);
  });

  it('/metrics has the three duration histograms per pool, with counts that match SHOW STATS', async () => {
    const text = await h.metrics();
    for (const family of ['pooler_query_duration_seconds', 'pooler_transaction_duration_seconds', 'pooler_wait_duration_seconds']) {
      expect(text).toContain(`# TYPE ${family} histogram`);
      expect(text).toMatch(new RegExp(`^${family}_bucket\\{database="lat",user="md5user",le="\\+Inf"\\} \\d+$`, 'm'));
    }
    const stats = await row('STATS', 'lat');
    const count = Number(/^pooler_transaction_duration_seconds_count\{database="lat",user="md5user"\} (\d+)$/m.exec(text)![1]);
    expect(count).toBe(Number(stats['total_xact_count']));
    const slow = Number(/^pooler_query_duration_seconds_bucket\{database="lat",user="md5user",le="0.25"\} (\d+)$/m.exec(text)![1]);
    const all = Number(/^pooler_query_duration_seconds_count\{database="lat",user="md5user"\} (\d+)$/m.exec(text)![1]);
    // The 300 ms query (and nothing else of this pool) is above 0.25 s.
    expect(all - slow).toBe(1);
  });
});
