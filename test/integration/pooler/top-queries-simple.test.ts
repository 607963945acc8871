// Simple-protocol queries on /api/top/queries: fingerprints with literals replaced, counts and times per pool, the bound of query_stats_size (RELOAD), and bad texts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type pg from 'pg';
import { startTestPostgres, type TestPostgres } from '../../helpers/postgres.js';
import { operatorToml, poolToml, startOperator, until, type OperatorHarness } from '../../helpers/operator.js';

type TopRow = {
  hash: string;
  preview: string;
  count: number;
  total_time_us: number;
  avg_time_us: number;
  pool: string;
  kind: string;
  count_used: number;
};

let db: TestPostgres;
let h: OperatorHarness;
const clients: pg.Client[] = [];

const toml = (general = '') =>
  operatorToml({
    general,
    pools: poolToml(db, 'qs', '', [{ username: 'md5user', password: 'md5pass', extra: 'pool_size = 2' }]),
  });
const SECRET = 'tenant-secret-4711';
const LONG = `SELECT '${SECRET}' AS a, ${Array.from({ length: 60 }, (_, i) => `${i * 7919} AS c${i}`).join(', ')}`;

beforeAll(async () => {
  db = await startTestPostgres();
  h = await startOperator(toml());
});
afterAll(async () => {
  for (const c of clients) await c.end().catch(() => undefined);
  await h?.stop();
  await db?.cleanup();
});

async function client(): Promise<pg.Client> {
  const c = h.client('qs', 'md5user', 'md5pass', 'top-queries');
  await c.connect();
  clients.push(c);
  return c;
}

async function top(by = 'count'): Promise<TopRow[]> {
  const r = await h.api(`/api/top/queries?by=${by}&limit=1000`);
  expect(r.status).toBe(200);
  return (r.body as TopRow[]).filter((row) => row.kind === 'simple');
}

const byPreview = (rows: TopRow[], preview: string) => rows.find((r) => r.preview === preview);

describe('/api/top/queries: simple-protocol queries', () => {
  it('groups literal variants, counts completed queries and their time, and keeps literals out', async () => {
    const c = await client();
    for (let i = 0; i < 3; i++) await c.query('SELECT pg_sleep(0.05)');
    // A prepared statement hands the client to the rewriter (prepared_statements): its simple queries still count.
    await c.query({ name: 'p1', text: 'SELECT $1::int AS v', values: [1] });
    await c.query('SELECT 1');
    await c.query('SELECT 2');
    await c.query("SELECT 'a'");
    await c.query("SELECT 'b'");
    await c.query(`SELECT 7 AS /* ${SECRET} */ c -- trailing ${SECRET}`);
    await c.query(`SELECT 1; SELECT 'x''y', $$${SECRET}$$`);
    await c.query(LONG);
    await expect(c.query(`SELECT 1/0 AS "${'q'.repeat(3)}"`)).rejects.toMatchObject({ code: '22012' });
    await until('the last query is counted', async () => (await top()).some((r) => r.preview.startsWith('SELECT ?/?')));

    const rows = await top('count');
    expect(byPreview(rows, 'SELECT pg_sleep(?)')).toMatchObject({
      count: 3,
      pool: 'md5user@qs',
      kind: 'simple',
      count_used: 3,
    });
    expect(byPreview(rows, 'SELECT ?')).toMatchObject({ count: 4 });
    expect(byPreview(rows, 'SELECT ? AS c')).toMatchObject({ count: 1 });
    expect(byPreview(rows, 'SELECT ?; SELECT ?, ?')).toMatchObject({ count: 1 });
    expect(byPreview(rows, 'SELECT ?/? AS "qqq"')).toMatchObject({ count: 1 });
    expect(byPreview(rows, 'SELECT $?::int AS v')).toBeUndefined();
    expect((await h.api('/api/top/queries?limit=1000')).body).toContainEqual(
      expect.objectContaining({ kind: 'protocol', preview: 'SELECT $1::int AS v', count: 1 }),
    );
    // By count: the most counted first.
    expect(rows[0]).toMatchObject({ preview: 'SELECT ?', count: 4 });
    for (let i = 1; i < rows.length; i++) expect(rows[i - 1]!.count).toBeGreaterThanOrEqual(rows[i]!.count);

    const sleep = byPreview(rows, 'SELECT pg_sleep(?)')!;
    expect(sleep.total_time_us).toBeGreaterThanOrEqual(150_000);
    expect(sleep.avg_time_us).toBe(Math.round(sleep.total_time_us / 3));
    expect(sleep.total_time_us).toBeLessThan(5_000_000);
    const byTime = await top('time');
    expect(byTime[0]).toMatchObject({ preview: 'SELECT pg_sleep(?)' });
    for (let i = 1; i < byTime.length; i++)
      expect(byTime[i - 1]!.total_time_us).toBeGreaterThanOrEqual(byTime[i]!.total_time_us);

    const long = rows.find((r) => r.preview.startsWith('SELECT ? AS a, ? AS c0'))!;
    expect(long.preview.length).toBe(121);
    expect(long.preview.endsWith('…')).toBe(true);
    for (const r of rows) {
      expect(r.preview.length).toBeLessThanOrEqual(121);
      for (const literal of [SECRET, "'a'", "'b'", '7919', "x''y", '0.05'])
        expect(r.preview, r.preview).not.toContain(literal);
    }
    // The whole normalized text stays server-side, behind the personal-data route; it holds no literal either.
    const full = await h.api(`/api/prepared/text/${long.hash}`);
    expect(full.status).toBe(200);
    const text = (full.body as { query: string }).query;
    expect(text.startsWith(long.preview.slice(0, 120))).toBe(true);
    expect(text.length).toBeGreaterThan(120);
    expect(text).not.toContain(SECRET);
    expect(text).not.toContain('7919');
  });

  it('a bad UTF-8 text and a huge text are recorded within the bound, and the pooler carries on', async () => {
    const c = await client();
    // Bytes that are no UTF-8, written under node-postgres: PostgreSQL refuses them (22021), the relay still counts the Query.
    const raw = await client();
    const rawStream = (raw as unknown as { connection: { stream: import('node:net').Socket } }).connection.stream;
    const text = Buffer.concat([
      Buffer.from('SELECT '),
      Buffer.from([0xff, 0xfe, 0xc3]),
      Buffer.from(" AS bad_utf8, 'x'\0"),
    ]);
    const msg = Buffer.alloc(5);
    msg[0] = 0x51;
    msg.writeUInt32BE(4 + text.length, 1);
    raw.removeAllListeners('error');
    raw.on('error', () => undefined);
    rawStream.write(Buffer.concat([msg, text]));
    // A Query cut by reads (its header, then its text), and two Queries in one read.
    const query = (sql: string) => {
      const body = Buffer.from(`${sql}\0`);
      const head = Buffer.alloc(5);
      head[0] = 0x51;
      head.writeUInt32BE(4 + body.length, 1);
      return Buffer.concat([head, body]);
    };
    const split = query("SELECT 'cut' AS split_read");
    for (const [from, to] of [
      [0, 3],
      [3, 12],
      [12, 20],
      [20, split.length],
    ]) {
      rawStream.write(split.subarray(from, to));
      await new Promise((r) => setTimeout(r, 30));
    }
    rawStream.write(Buffer.concat([query('SELECT 1 AS piped_a'), query("SELECT 'p' AS piped_b")]));
    await until('the bad text is counted', async () => (await top()).some((r) => r.preview.includes('AS bad_utf8')));
    const bad = (await top()).find((r) => r.preview.includes('AS bad_utf8'))!;
    expect(bad).toMatchObject({ count: 1 });
    expect(bad.preview.endsWith(', ?')).toBe(true);
    await until(
      'the cut and pipelined texts are counted',
      async () => (await top()).filter((r) => /split_read|piped_/.test(r.preview)).length === 3,
    );
    const pieces = await top();
    for (const p of ['SELECT ? AS split_read', 'SELECT ? AS piped_a', 'SELECT ? AS piped_b'])
      expect(byPreview(pieces, p), p).toMatchObject({ count: 1 });

    const huge = `SELECT cardinality(ARRAY[${Array.from({ length: 20_000 }, (_, i) => String(i)).join(', ')}]) AS huge`;
    const r = await c.query(huge);
    expect(r.rows).toEqual([{ huge: 20_000 }]);
    const row = (await top()).find((x) => x.preview.startsWith('SELECT cardinality(ARRAY[?, ?, ?'))!;
    expect(row).toMatchObject({ count: 1 });
    const full = (await h.api(`/api/prepared/text/${row.hash}`)).body as { query: string };
    expect(Buffer.byteLength(full.query)).toBeLessThanOrEqual(2048);
    expect(full.query.length).toBeGreaterThan(2000);
    expect((await c.query('SELECT 42 AS v')).rows).toEqual([{ v: 42 }]);
  });

  it('query_stats_size = 0 records nothing; a table of 2 keeps at most 2 fingerprints (RELOAD)', async () => {
    h.tp.writeConfig(toml('query_stats_size = 0'));
    await h.admin('RELOAD');
    expect(await top()).toEqual([]);
    const off = await client();
    for (let i = 0; i < 3; i++) await off.query(`SELECT ${i} AS off_${i}`);
    expect(await top()).toEqual([]);

    h.tp.writeConfig(toml('query_stats_size = 2'));
    await h.admin('RELOAD');
    const c = await client();
    for (let round = 0; round < 3; round++) {
      await c.query('SELECT 1 AS one');
      await c.query('SELECT 1 AS one');
      await c.query('SELECT 2 AS two');
      await c.query(`SELECT ${round} AS other_${round}`);
    }
    await until('the table has rows', async () => (await top()).length > 0);
    const rows = await top();
    expect(rows.length).toBeLessThanOrEqual(2);
    expect(rows[0]).toMatchObject({ preview: 'SELECT ? AS one', count: 6 });
    const shown = await h.show('CONFIG');
    expect(shown.find((r) => r['key'] === 'general.query_stats_size')).toMatchObject({
      value: '2',
      default: '1000',
      changeable: 'yes',
    });
  });
});
