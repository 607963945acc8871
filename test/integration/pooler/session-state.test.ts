// Session state that cannot move between servers in transaction mode (LISTEN, session advisory locks, temporary tables, WITH HOLD cursors, LOAD): each case gives what a direct connection gives, with pool_size 1 and 2.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import postgres from 'postgres';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { startTestPostgres, type TestPostgres } from '../../helpers/postgres.js';
import { poolerToml, startTestPooler, type TestPooler } from '../../helpers/pooler.js';
import { toRows } from '../../../src/pooler/web/show-rows.js';
import { renderPoolerMetrics } from '../../../src/pooler/web/pooler-metrics.js';

let db: TestPostgres;
let tp: TestPooler;

const pool = (name: string, size: number) => `
[pools.${name}]
server_host = "127.0.0.1"
server_port = PORT
server_database = "app"

[[pools.${name}.users]]
username = "md5user"
password = "md5pass"
pool_size = ${size}
`;

beforeAll(async () => {
  // 100 listeners each keep a server: room for them and the pools.
  db = await startTestPostgres({ max_connections: 200 });
  const pools = [pool('tx1', 1), pool('tx2', 2)].join('').replaceAll('PORT', String(db.port));
  tp = await startTestPooler(poolerToml(db, { pools }));
});

afterAll(async () => {
  await tp?.stop();
  await db?.cleanup();
});

type Target = 'direct' | 'tx1' | 'tx2';

function client(target: Target, port = tp.port): pg.Client {
  return target === 'direct'
    ? new pg.Client({ host: db.host, port: db.port, user: 'md5user', password: 'md5pass', database: 'app' })
    : new pg.Client({ host: '127.0.0.1', port, user: 'md5user', password: 'md5pass', database: target });
}

async function connected(target: Target, port = tp.port): Promise<pg.Client> {
  const c = client(target, port);
  await c.connect();
  return c;
}

function poolRow(database: string, p = tp): Record<string, unknown> {
  return toRows(p.pooler.show('POOLS')).find((r) => r['database'] === database)!;
}

function events(kind: string): string[] {
  return toRows(tp.pooler.show('EVENTS'))
    .filter((r) => r['kind'] === kind)
    .map((r) => String(r['message']));
}

/** Direct connection: no advisory lock, temporary table or cursor of any session is left on `app`. */
async function leftovers(): Promise<{ locks: number; temps: number }> {
  const c = await connected('direct');
  try {
    const r =
      await c.query(`select (select count(*)::int from pg_locks where locktype = 'advisory' and pid <> pg_backend_pid()) as locks,
      (select count(*)::int from pg_class where relpersistence = 't' and relname like 'st_%') as temps`);
    return r.rows[0];
  } finally {
    await c.end();
  }
}

async function until(what: string, check: () => boolean | Promise<boolean>, ms = 15_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Runs `body` on a direct connection and through each pool, returning each outcome. */
async function outcomes<T>(body: (t: Target) => Promise<T>): Promise<Record<Target, T>> {
  const out = {} as Record<Target, T>;
  for (const t of ['direct', 'tx1', 'tx2'] as const) {
    out[t] = await body(t);
    if (t !== 'direct') await until(`${t} has no pinned client`, () => poolRow(t)['cl_pinned'] === 0);
  }
  return out;
}

describe('session advisory locks', () => {
  it('a lock taken by one client holds against every other client until its holder disconnects, then is gone', async () => {
    const seen = await outcomes(async (t) => {
      const a = await connected(t);
      const b = await connected(t);
      const got: unknown[] = [];
      got.push((await a.query('select pg_advisory_lock(4242)')).rowCount);
      for (let i = 0; i < 5; i++) got.push((await b.query('select pg_try_advisory_lock(4242) as ok')).rows[0].ok);
      // Re-entrant for its holder, as in any PostgreSQL session.
      got.push((await a.query('select pg_try_advisory_lock(4242) as ok')).rows[0].ok);
      if (t !== 'direct') got.push(poolRow(t)['cl_pinned']);
      await a.end();
      await until('the lock is released', async () => (await leftovers()).locks === 0);
      got.push((await b.query('select pg_try_advisory_lock(4242) as ok')).rows[0].ok);
      got.push((await b.query('select pg_advisory_unlock(4242) as ok')).rows[0].ok);
      await b.end();
      return got;
    });
    expect(seen.direct).toEqual([1, false, false, false, false, false, true, true, true]);
    expect(seen.tx1).toEqual([1, false, false, false, false, false, true, 2, true, true]);
    expect(seen.tx2).toEqual(seen.tx1);
    expect(events('client_pinned').some((m) => m.includes('advisory lock'))).toBe(true);
    expect(events('client_unpinned').some((m) => m.includes('pg_advisory_unlock_all()'))).toBe(true);
    expect(await leftovers()).toEqual({ locks: 0, temps: 0 });
  });

  it('transaction-level advisory locks pin nobody', async () => {
    const a = await connected('tx1');
    await a.query('begin');
    await a.query('select pg_advisory_xact_lock(77)');
    await a.query('commit');
    expect(poolRow('tx1')['cl_pinned']).toBe(0);
    await a.end();
  });

  it('psql: a lock left by a psql run is free for the next run, as on a direct connection', async () => {
    const run = (db: string, port: number, sql: string) =>
      promisify(execFile)('psql', ['-h', '127.0.0.1', '-p', String(port), '-U', 'md5user', '-d', db, '-Atc', sql], {
        env: { ...process.env, PGPASSWORD: 'md5pass' },
      }).then((r) => r.stdout.trim());
    for (const [name, port] of [
      ['app', db.port],
      ['tx1', tp.port],
      ['tx2', tp.port],
    ] as const) {
      expect(await run(name, port, 'select pg_advisory_lock(99)')).toBe('');
      // A direct backend ends after psql has gone, as the pooler's clean-up does: neither is waited for by psql.
      await until('no lock is left', async () => (await leftovers()).locks === 0);
      expect(await run(name, port, 'select pg_try_advisory_lock(99)')).toBe('t');
      await until('no lock is left', async () => (await leftovers()).locks === 0);
    }
  });
});

describe('temporary tables and WITH HOLD cursors', () => {
  it('a client keeps its temporary table across transactions; no other client sees it; it is dropped when the client leaves', async () => {
    const seen = await outcomes(async (t) => {
      const a = await connected(t);
      const b = await connected(t);
      const got: unknown[] = [];
      await a.query('create temp table st_a (x int)');
      for (let i = 0; i < 5; i++) {
        await a.query('insert into st_a values ($1)', [i]);
        got.push(
          (
            await b.query(
              `select count(*)::int as n from pg_class where relname = 'st_a' and relnamespace = pg_my_temp_schema()`,
            )
          ).rows[0].n,
        );
      }
      got.push((await a.query('select sum(x)::int as s from st_a')).rows[0].s);
      got.push(
        await b.query('select * from st_a').then(
          () => 'no error',
          (e: { code: string }) => e.code,
        ),
      );
      await a.end();
      await until('the table is dropped', async () => (await leftovers()).temps === 0);
      await b.end();
      return got;
    });
    expect(seen.direct).toEqual([0, 0, 0, 0, 0, 10, '42P01']);
    expect(seen.tx1).toEqual(seen.direct);
    expect(seen.tx2).toEqual(seen.direct);
  });

  it('postgres.js: a WITH HOLD cursor goes on where it stopped, in its client only', async () => {
    const seen = await outcomes(async (t) => {
      const opts =
        t === 'direct'
          ? { host: db.host, port: db.port, database: 'app' }
          : { host: '127.0.0.1', port: tp.port, database: t };
      const a = postgres({ ...opts, username: 'md5user', password: 'md5pass', max: 1, onnotice: () => undefined });
      const b = postgres({ ...opts, username: 'md5user', password: 'md5pass', max: 1, onnotice: () => undefined });
      const got: unknown[] = [];
      await a.unsafe('declare st_c cursor with hold for select generate_series(1, 10) as n');
      for (let i = 0; i < 3; i++) {
        got.push((await a.unsafe('fetch 2 from st_c')).map((r) => r['n']));
        got.push(
          await b.unsafe('fetch 1 from st_c').then(
            () => 'no error',
            (e: { code: string }) => e.code,
          ),
        );
      }
      await a.end();
      await b.end();
      return got;
    });
    expect(seen.direct).toEqual([[1, 2], '34000', [3, 4], '34000', [5, 6], '34000']);
    expect(seen.tx1).toEqual(seen.direct);
    expect(seen.tx2).toEqual(seen.direct);
    expect(events('client_unpinned').some((m) => m.includes('CLOSE ALL') && m.includes('WITH HOLD cursor'))).toBe(true);
  });

  it('LOAD: the server is closed when its client leaves (a library cannot be unloaded)', async () => {
    const a = await connected('tx1');
    const pid = (await a.query('select pg_backend_pid() as p')).rows[0].p;
    await a.query(`load 'plpgsql'`);
    expect((await a.query('select pg_backend_pid() as p')).rows[0].p).toBe(pid);
    await a.end();
    await until('the server is closed', async () => {
      const c = await connected('direct');
      try {
        return (await c.query('select count(*)::int as n from pg_stat_activity where pid = $1', [pid])).rows[0].n === 0;
      } finally {
        await c.end();
      }
    });
    expect(events('client_unpinned').some((m) => m.includes('LOAD'))).toBe(true);
  });

  it('SQL PREPARE pins where the rewriter does not own it (prepared_statements = false), and is deallocated at check-in', async () => {
    const other = await startTestPooler(
      poolerToml(db, {
        general: 'prepared_statements = false',
        pools: pool('tx1', 1).replaceAll('PORT', String(db.port)),
      }),
    );
    try {
      const a = await connected('tx1', other.port);
      await a.query('prepare st_p as select 7 as seven');
      for (let i = 0; i < 3; i++) expect((await a.query('execute st_p')).rows[0].seven).toBe(7);
      expect(poolRow('tx1', other)['cl_pinned']).toBe(1);
      await a.end();
      await until('unpinned', () => poolRow('tx1', other)['cl_pinned'] === 0);
      const b = await connected('tx1', other.port);
      expect(
        await b.query('execute st_p').then(
          () => 'no error',
          (e: { code: string }) => e.code,
        ),
      ).toBe('26000');
      await b.end();
    } finally {
      await other.stop();
    }
  });
});

describe('clearing state', () => {
  for (const target of ['tx1', 'tx2'] as const) {
    it(`${target}: a client that drops everything it held (UNLISTEN *, pg_advisory_unlock_all(), DISCARD ALL) is unpinned, and keeps what it still holds until then`, async () => {
      const a = await connected(target);
      const notes: string[] = [];
      a.on('notification', (m) => notes.push(m.payload ?? ''));
      const notifier = await connected(target);
      await a.query('listen st_clear');
      await a.query('select pg_advisory_lock(5150)');
      expect(poolRow(target)['cl_pinned']).toBe(1);
      // Only the lock is dropped: still listening, still pinned.
      await a.query('select pg_advisory_unlock_all()');
      expect(poolRow(target)['cl_pinned']).toBe(1);
      await notifier.query(`notify st_clear, 'one'`);
      await until('the notification arrived', () => notes.length === 1);
      await a.query('unlisten *');
      await until('unpinned', () => poolRow(target)['cl_pinned'] === 0);
      expect(events('client_unpinned').some((m) => m.includes('cleared its session state'))).toBe(true);
      await notifier.query(`notify st_clear, 'two'`);
      for (let i = 0; i < 5; i++) await a.query('select 1');
      // Pinned again by a temporary table, then unpinned by DISCARD ALL, which drops it as on a direct connection.
      await a.query('create temp table st_d (x int)');
      expect(poolRow(target)['cl_pinned']).toBe(1);
      await a.query('discard all');
      await until('unpinned', () => poolRow(target)['cl_pinned'] === 0);
      expect(
        await a.query('select * from st_d').then(
          () => 'no error',
          (e: { code: string }) => e.code,
        ),
      ).toBe('42P01');
      expect(notes).toEqual(['one']);
      await a.end();
      await notifier.end();
      expect(await leftovers()).toEqual({ locks: 0, temps: 0 });
    });
  }
});

describe('LISTEN', () => {
  for (const target of ['tx1', 'tx2'] as const) {
    it(`${target}: 100 listening clients each get every notification of their channels and no other (as on a direct connection)`, async () => {
      const listeners: pg.Client[] = [];
      const got = new Map<number, string[]>();
      const n = 100;
      for (let i = 0; i < n; i++) {
        const c = await connected(target);
        const mine: string[] = [];
        got.set(i, mine);
        c.on('notification', (m) => mine.push(`${m.channel}:${m.payload ?? ''}`));
        await c.query(`listen st_ch${i}`);
        if (i % 10 === 0) await c.query('listen st_shared');
        listeners.push(c);
      }
      expect(poolRow(target)['cl_pinned']).toBe(n);
      expect(renderPoolerMetrics(tp.pooler)).toMatch(
        new RegExp(`pooler_clients_pinned\\{database="${target}",user="md5user"\\} ${n}`),
      );
      // Bystanders in the same pool never see a notification.
      const bystanders = await Promise.all([connected(target), connected(target)]);
      const stray: string[] = [];
      for (const b of bystanders) b.on('notification', (m) => stray.push(m.channel));
      const notifier = await connected(target);
      for (let round = 0; round < 3; round++) {
        for (let i = 0; i < n; i++) await notifier.query(`notify st_ch${i}, 'r${round}'`);
        await notifier.query(`notify st_shared, 'all${round}'`);
        for (const b of bystanders) await b.query('select 1');
      }
      await until(
        'every notification arrived',
        () => [...got.values()].every((m, i) => m.length === 3 + (i % 10 === 0 ? 3 : 0)),
        30_000,
      );
      for (let i = 0; i < n; i++) {
        const want = [0, 1, 2].flatMap((r) => [`st_ch${i}:r${r}`, ...(i % 10 === 0 ? [`st_shared:all${r}`] : [])]);
        expect(got.get(i)).toEqual(want);
      }
      // A listener that left: its channel's notifications reach nobody, whoever gets its cleaned server.
      await listeners[0]!.end();
      for (let i = 0; i < 5; i++) {
        await notifier.query(`notify st_ch0, 'gone${i}'`);
        for (const b of bystanders) await b.query('select 1');
      }
      await Promise.all(listeners.slice(1).map((c) => c.end()));
      await until('unpinned', () => poolRow(target)['cl_pinned'] === 0);
      const late = await Promise.all([connected(target), connected(target)]);
      for (const c of late) c.on('notification', (m) => stray.push(m.channel));
      for (let i = 0; i < 20; i++) {
        await notifier.query(`notify st_ch${i % n}, 'after'`);
        for (const c of late) await c.query('select 1');
      }
      await new Promise((r) => setTimeout(r, 200));
      for (const c of [...late, ...bystanders]) await c.query('select 1');
      expect(stray).toEqual([]);
      expect(got.get(0)!.filter((m) => m.includes('gone'))).toEqual([]);
      await Promise.all([...late, ...bystanders, notifier].map((c) => c.end()));
    });
  }

  it('a client notifying its own channel gets the notification with the pid of its server, as a direct connection does', async () => {
    const seen = await outcomes(async (t) => {
      const c = await connected(t);
      const note = new Promise<pg.Notification>((resolve) => c.once('notification', resolve));
      await c.query('listen st_self');
      const pid = (await c.query('select pg_backend_pid() as p')).rows[0].p;
      await c.query(`notify st_self, 'me'`);
      const m = await note;
      await c.end();
      return [m.payload, m.processId === pid];
    });
    expect(seen.direct).toEqual(['me', true]);
    expect(seen.tx1).toEqual(seen.direct);
    expect(seen.tx2).toEqual(seen.direct);
  });
});
