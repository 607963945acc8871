// Prepared statements through the pooler in transaction mode with pool_size 2: real drivers (postgres.js, node-postgres, pgbench) and the patterns of pgjdbc and psycopg.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import pg from 'pg';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_PASSWORD, poolerToml, startTestPooler, type TestPooler } from '../../helpers/pooler.js';
import { startItemsPostgres, type TestPostgres } from '../../helpers/postgres.js';
import { describeMessage, msg, RawConnection } from '../../helpers/raw-pg.js';
import { nativeLoaded } from '../../../src/native/index.js';

const run = promisify(execFile);
let db: TestPostgres;
let tp: TestPooler;
const raws: RawConnection[] = [];

beforeAll(async () => {
  db = await startItemsPostgres(100);
  // md5 so that the protocol-level test client (test/helpers/raw-pg.ts) can log in.
  tp = await startTestPooler(poolerToml(db, { general: 'auth_type = "md5"\nprepared_statements = true' }));
});
afterAll(async () => {
  for (const r of raws) r.close();
  await tp?.stop();
  await db?.cleanup();
});

const connOpts = () => ({ host: '127.0.0.1', port: tp.port, user: 'md5user', password: 'md5pass', database: 'app' });

async function raw(): Promise<RawConnection> {
  const r = await RawConnection.connect(connOpts());
  raws.push(r);
  return r;
}

/** Sends the messages and returns the replies through the `count`-th ReadyForQuery, in short form. */
async function roundTrip(r: RawConnection, messages: Buffer[], count = 1): Promise<string[]> {
  r.send(...messages);
  return (await r.readUntilReady(count)).map(describeMessage);
}

describe('prepared statements in transaction mode (pool_size 2)', () => {
  it('keeps clients on the native relay (when built and on) until they send what the rewriter must see', async () => {
    const native = nativeLoaded && process.env['TIDEPOOL_NATIVE_RELAY'] !== '0';
    const t = new pg.Client(connOpts());
    await t.connect();
    try {
      await t.query('select 1');
      await t.query('select $1::int AS v', [1]);
      const kinds = [...tp.pooler.clients].filter((c) => !c.isAdmin).map((c) => c.relayKind);
      expect(kinds).toEqual([native ? 'native' : 'js']);
    } finally {
      await t.end();
    }
  });

  it('postgres.js, which prepares every statement, from 50 concurrent clients', async () => {
    const sqls = Array.from({ length: 50 }, () =>
      postgres({ ...connOpts(), username: 'md5user', max: 1, onnotice: () => undefined }),
    );
    try {
      const rows = await Promise.all(
        sqls.map(async (sql, i) => {
          const out: number[] = [];
          for (let k = 0; k < 10; k++) {
            const [row] = await sql`SELECT id, name FROM items WHERE id = ${((i * 10 + k) % 100) + 1}`;
            out.push(row!['id'] as number);
          }
          return out;
        }),
      );
      rows.forEach((ids, i) => expect(ids).toEqual(Array.from({ length: 10 }, (_, k) => ((i * 10 + k) % 100) + 1)));
    } finally {
      await Promise.all(sqls.map((sql) => sql.end()));
    }
  });

  it('node-postgres named and unnamed parameterized queries from 50 concurrent clients', async () => {
    const clients = Array.from({ length: 50 }, () => new pg.Client(connOpts()));
    await Promise.all(clients.map((c) => c.connect()));
    try {
      await Promise.all(
        clients.map(async (c, i) => {
          for (let k = 0; k < 6; k++) {
            const id = ((i + k) % 100) + 1;
            const named = await c.query({
              name: k % 2 ? 'by-id' : 'name-by-id',
              text: k % 2 ? 'SELECT id FROM items WHERE id = $1' : 'SELECT name FROM items WHERE id = $1',
              values: [id],
            });
            expect(named.rows[0]).toEqual(k % 2 ? { id } : { name: `item ${id}` });
            const unnamed = await c.query('SELECT $1::int * 2 AS twice', [id]);
            expect(unnamed.rows[0]).toEqual({ twice: id * 2 });
          }
        }),
      );
    } finally {
      await Promise.all(clients.map((c) => c.end()));
    }
  });

  it('pgbench -M prepared and -M extended with 50 clients: every transaction, none failed, no error line', async () => {
    const env = { ...process.env, PGPASSWORD: 'md5pass' };
    await run('pgbench', ['-i', '-s', '1', '-h', db.host, '-p', String(db.port), '-U', 'md5user', 'app'], { env });
    for (const mode of ['prepared', 'extended']) {
      const r = await run(
        'pgbench',
        [
          '-S',
          '-M',
          mode,
          '-c',
          '50',
          '-j',
          '2',
          '-t',
          '40',
          '-h',
          '127.0.0.1',
          '-p',
          String(tp.port),
          '-U',
          'md5user',
          'app',
        ],
        { env },
      );
      const verdict = r.stdout + r.stderr;
      expect(verdict, mode).toContain('number of transactions actually processed: 2000/2000');
      expect(verdict, mode).toMatch(/number of failed transactions: 0/);
      expect(verdict, mode).not.toMatch(/\berror\b|aborted/i);
    }
  });

  it("pgjdbc's pattern: S_n statements (prepareThreshold) used on a server they were never prepared on, closed on deallocation", async () => {
    const [a, b, c] = [await raw(), await raw(), await raw()];
    // a and b each hold one of the two servers in a transaction; a prepares S_1 on its server (X) and commits.
    expect(await roundTrip(a, [msg.query('BEGIN')])).toEqual(['C BEGIN', 'Z T']);
    expect(await roundTrip(b, [msg.query('BEGIN')])).toEqual(['C BEGIN', 'Z T']);
    const aPid = await roundTrip(a, [msg.query('SELECT pg_backend_pid()')]);
    expect(
      await roundTrip(a, [
        msg.parse('S_1', 'SELECT name FROM items WHERE id = $1', [23]),
        msg.bind('S_1', ['1']),
        msg.describePortal(),
        msg.execute(),
        msg.sync(),
      ]),
    ).toEqual(['1', '2', 'T', `D ${row('item 1')}`, 'C SELECT 1', 'Z T']);
    expect(await roundTrip(a, [msg.query('COMMIT')])).toEqual(['C COMMIT', 'Z I']);
    // c takes X; a's next Bind waits until b commits, then runs on Y, which never saw S_1.
    expect(await roundTrip(c, [msg.query('BEGIN')])).toEqual(['C BEGIN', 'Z T']);
    expect((await roundTrip(c, [msg.query('SELECT pg_backend_pid()')]))[1]).toBe(aPid[1]);
    a.send(msg.bind('S_1', ['2']), msg.execute(), msg.sync());
    expect(await roundTrip(b, [msg.query('COMMIT')])).toEqual(['C COMMIT', 'Z I']);
    expect((await a.readUntilReady()).map(describeMessage)).toEqual(['2', `D ${row('item 2')}`, 'C SELECT 1', 'Z I']);
    expect(await roundTrip(c, [msg.query('COMMIT')])).toEqual(['C COMMIT', 'Z I']);
    // Deallocation on close, then the name again with other text; PostgreSQL's errors for a taken and an unknown name.
    expect(
      await roundTrip(a, [
        msg.closeStatement('S_1'),
        msg.parse('S_1', 'SELECT count(*) FROM items'),
        msg.bind('S_1'),
        msg.execute(),
        msg.sync(),
      ]),
    ).toEqual(['3', '1', '2', `D ${row('100')}`, 'C SELECT 1', 'Z I']);
    expect(await roundTrip(a, [msg.parse('S_1', 'SELECT 1'), msg.sync()])).toEqual([
      'E 42P05 prepared statement "S_1" already exists',
      'Z I',
    ]);
    expect(await roundTrip(a, [msg.bind('S_9'), msg.execute(), msg.sync()])).toEqual([
      'E 26000 prepared statement "S_9" does not exist',
      'Z I',
    ]);
  });

  it('a column added between executions: no 0A000 reaches node-postgres, whose unnamed statements the pooler cached', async () => {
    db.sql('DROP TABLE IF EXISTS ddl_t; CREATE TABLE ddl_t (a int); INSERT INTO ddl_t VALUES (1)', 'app');
    const clients = [new pg.Client(connOpts()), new pg.Client(connOpts())];
    await Promise.all(clients.map((c) => c.connect()));
    try {
      // Both servers get the statement cached (two clients at once, pool_size 2).
      for (let i = 0; i < 3; i++) {
        for (const r of await Promise.all(clients.map((c) => c.query('SELECT * FROM ddl_t WHERE a = $1', [1]))))
          expect(r.rows).toEqual([{ a: 1 }]);
      }
      db.sql('ALTER TABLE ddl_t ADD COLUMN b int DEFAULT 7', 'app');
      for (let i = 0; i < 3; i++) {
        for (const r of await Promise.all(clients.map((c) => c.query('SELECT * FROM ddl_t WHERE a = $1', [1]))))
          expect(r.rows).toEqual([{ a: 1, b: 7 }]);
      }
    } finally {
      await Promise.all(clients.map((c) => c.end()));
    }
  });

  it("psycopg's pattern: _pg3_n statements in a pipeline with a syntax error in the middle", async () => {
    const c = await raw();
    const replies = await roundTrip(
      c,
      [
        msg.parse('_pg3_0', 'SELECT name FROM items WHERE id = $1', [23]),
        msg.bind('_pg3_0', ['3']),
        msg.execute(),
        msg.sync(),
        msg.parse('_pg3_1', 'SELEC broken'),
        msg.bind('_pg3_1'),
        msg.execute(),
        msg.sync(),
        msg.bind('_pg3_0', ['4']),
        msg.execute(),
        msg.sync(),
      ],
      3,
    );
    expect(replies).toEqual([
      '1',
      '2',
      `D ${row('item 3')}`,
      'C SELECT 1',
      'Z I',
      'E 42601 syntax error at or near "SELEC"',
      'Z I',
      '2',
      `D ${row('item 4')}`,
      'C SELECT 1',
      'Z I',
    ]);
  });

  it('SQL PREPARE / EXECUTE / DEALLOCATE, DISCARD ALL and DEALLOCATE ALL mid-session', async () => {
    const c = await raw();
    expect(await roundTrip(c, [msg.query('PREPARE q(int) AS SELECT name FROM items WHERE id = $1')])).toEqual([
      'C PREPARE',
      'Z I',
    ]);
    for (let i = 0; i < 4; i++)
      expect(await roundTrip(c, [msg.query(`EXECUTE q(${10 + i})`)])).toEqual([
        'T',
        `D ${row(`item ${10 + i}`)}`,
        'C SELECT 1',
        'Z I',
      ]);
    expect(await roundTrip(c, [msg.parse('S_1', 'SELECT 1'), msg.sync()])).toEqual(['1', 'Z I']);
    expect(await roundTrip(c, [msg.query('DEALLOCATE S_1')])).toEqual([
      'E 26000 prepared statement "s_1" does not exist',
      'Z I',
    ]);
    expect(await roundTrip(c, [msg.query('DEALLOCATE "S_1"')])).toEqual(['C DEALLOCATE', 'Z I']);
    expect(await roundTrip(c, [msg.query('DISCARD ALL')])).toEqual(['C DISCARD ALL', 'Z I']);
    expect(await roundTrip(c, [msg.query('EXECUTE q(1)')])).toEqual([
      'E 26000 prepared statement "q" does not exist',
      'Z I',
    ]);
    expect(
      await roundTrip(
        c,
        [msg.parse('S_2', 'SELECT 2'), msg.query('DEALLOCATE ALL'), msg.bind('S_2'), msg.execute(), msg.sync()],
        2,
      ),
    ).toEqual(['1', 'C DEALLOCATE ALL', 'Z I', 'E 26000 prepared statement "S_2" does not exist', 'Z I']);
  });
});

describe('prepared statements: the admin console and bounds', () => {
  const admin = () =>
    new pg.Client({ host: '127.0.0.1', port: tp.port, user: 'admin', password: ADMIN_PASSWORD, database: 'tidepool' });

  it('SHOW PREPARED_STATEMENTS, SHOW INTERNER [n], SHOW SERVERS prepare_cache_*, RECONNECT and RESET INTERNER', async () => {
    const c = new pg.Client(connOpts());
    await c.connect();
    await c.query({
      name: 'admin-check',
      text: 'SELECT id FROM items WHERE id = $1 AND name IS NOT NULL',
      values: [5],
    });
    await c.query('PREPARE sqlcheck AS SELECT 42');
    // The same unnamed statement six times: prepared once per server it lands on (at most the pool's two), then spared.
    for (let i = 0; i < 6; i++) await c.query('SELECT id FROM items WHERE id = $1 AND name IS NULL', [i]);
    const a = admin();
    await a.connect();
    try {
      const prepared = (await a.query('SHOW PREPARED_STATEMENTS')).rows;
      expect(prepared).toContainEqual({
        pool: 'md5user@app',
        hash: expect.stringMatching(/^[0-9a-f]{16}$/),
        name: expect.stringMatching(/^tp_/),
        query: 'SELECT id FROM items WHERE id = $1 AND name IS NOT NULL',
        count_used: '2',
        kind: 'protocol',
        executions: '1',
        total_time_us: expect.stringMatching(/^[1-9]\d*$/),
        cache_hits: '1',
        cache_misses: '1',
      });
      const unnamed = prepared.find((r) => r.query === 'SELECT id FROM items WHERE id = $1 AND name IS NULL')!;
      // Six Parses and six Binds, every one a hit or a miss, whoever answered it (the native lane's uses reach the
      // statement when SHOW settles the parked pair); only a Parse on a server without it misses.
      expect(Number(unnamed.count_used)).toBe(12);
      expect(Number(unnamed.cache_hits) + Number(unnamed.cache_misses)).toBe(12);
      expect(Number(unnamed.cache_misses)).toBeGreaterThanOrEqual(1);
      expect(Number(unnamed.cache_misses)).toBeLessThanOrEqual(2);
      expect(prepared).toContainEqual(expect.objectContaining({ query: 'SELECT 42', kind: 'sql' }));
      const byKind = Object.fromEntries((await a.query('SHOW INTERNER')).rows.map((r) => [r.kind, Number(r.entries)]));
      expect(byKind['protocol']).toBeGreaterThan(0);
      expect(byKind['sql']).toBeGreaterThan(0);
      const top = await a.query('SHOW INTERNER 2');
      expect(top.fields.map((f) => f.name)).toEqual(['hash', 'kind', 'bytes', 'idle_ms', 'query']);
      expect(top.rows).toHaveLength(2);
      await expect(a.query('SHOW INTERNER none')).rejects.toMatchObject({ code: '42601' });
      const sizes = (await a.query('SHOW SERVERS')).rows
        .filter((r) => r.database_name === 'app')
        .map((r) => Number(r.prepare_cache_size));
      expect(Math.max(...sizes)).toBeGreaterThan(0);
      await c.end();
      await a.query('RECONNECT app');
      await expect
        .poll(
          async () =>
            (await a.query('SHOW SERVERS')).rows.filter(
              (r) => r.database_name === 'app' && Number(r.prepare_cache_size) > 0,
            ).length,
        )
        .toBe(0);
      expect((await a.query('RESET INTERNER')).command).toBe('RESET');
    } finally {
      await a.end();
    }
  });

  it('10 000 distinct statements from 20 clients keep the caches within their bounds and memory bounded', async () => {
    const rssBefore = process.memoryUsage().rss;
    const clients = Array.from({ length: 20 }, () => new pg.Client(connOpts()));
    await Promise.all(clients.map((c) => c.connect()));
    try {
      await Promise.all(
        clients.map(async (c, i) => {
          for (let k = 0; k < 500; k++) {
            const n = i * 500 + k;
            const r = await c.query(`SELECT $1::int + ${n} AS v /* statement ${n} */`, [1]);
            expect(r.rows[0].v).toBe(n + 1);
          }
        }),
      );
    } finally {
      await Promise.all(clients.map((c) => c.end()));
    }
    const a = admin();
    await a.connect();
    try {
      const sizes = (await a.query('SHOW SERVERS')).rows.map((r) => Number(r.prepare_cache_size));
      expect(Math.max(...sizes)).toBeLessThanOrEqual(256);
      const entries = (await a.query('SHOW INTERNER')).rows.reduce((n, r) => n + Number(r.entries), 0);
      // Unused texts kept: prepared_statements_cache_size (8192), plus what the servers still hold.
      expect(entries).toBeLessThanOrEqual(8192 + 2 * 2 * 256);
    } finally {
      await a.end();
    }
    // Generous: the texts are ~40 bytes; this catches a leak of the statements, not a number of bytes.
    expect(process.memoryUsage().rss - rssBefore).toBeLessThan(300 * 1024 * 1024);
  });
});

describe('prepared statements: RELOAD', () => {
  it('a change of the prepared_statements keys needs a restart: RELOAD says so, and statements keep working', async () => {
    tp.writeConfig(poolerToml(db, { general: 'auth_type = "md5"\nprepared_statements = false' }));
    const a = new pg.Client({
      host: '127.0.0.1',
      port: tp.port,
      user: 'admin',
      password: ADMIN_PASSWORD,
      database: 'tidepool',
    });
    const notices: string[] = [];
    a.on('notice', (n) => notices.push(n.message ?? ''));
    await a.connect();
    try {
      await a.query('RELOAD');
      expect(notices.join('\n')).toContain('needs a restart to apply: general.prepared_statements*');
      const config = (await a.query('SHOW CONFIG')).rows.find((r) => r.key === 'general.prepared_statements');
      expect(config).toMatchObject({ value: 'false', changeable: 'no' });
    } finally {
      await a.end();
    }
    const c = new pg.Client(connOpts());
    await c.connect();
    try {
      for (let i = 1; i <= 3; i++)
        expect((await c.query({ name: 'after-reload', text: 'SELECT $1::int AS v', values: [i] })).rows).toEqual([
          { v: i },
        ]);
    } finally {
      await c.end();
    }
  });
});

/** A DataRow's hex in describeMessage form for one text column. */
function row(value: string): string {
  const b = Buffer.from(value);
  const out = Buffer.alloc(6 + b.length);
  out.writeInt16BE(1, 0);
  out.writeInt32BE(b.length, 2);
  b.copy(out, 6);
  return out.toString('hex');
}
