// auth_query: a user created during the test logs in through its own pool, its password changed, then dropped; a burst of 1 000 unknown users stays bounded.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import net from 'node:net';
import { startTestPostgres, type TestPostgres } from '../../helpers/postgres.js';
import { poolerToml, startTestPooler, type TestPooler } from '../../helpers/pooler.js';
import { buildWebApp } from '../../../src/pooler/web/app.js';
import { writeStartupMessage } from '../../../src/protocol/writer.js';
import { ADMIN_PASSWORD } from '../../helpers/pooler.js';

let db: TestPostgres;
let tp: TestPooler;

beforeAll(async () => {
  db = await startTestPostgres();
  db.sql("SET password_encryption = 'md5'; CREATE ROLE authuser LOGIN SUPERUSER PASSWORD 'authpass'");
  // PgBouncer's recommended shape: a SECURITY DEFINER function; track_functions counts each call PostgreSQL runs.
  db.sql(
    `CREATE FUNCTION public.auth_lookup(u text, OUT usename name, OUT passwd text) RETURNS record LANGUAGE sql SECURITY DEFINER
    AS $$ SELECT usename, passwd FROM pg_catalog.pg_shadow WHERE usename = u $$`,
    'app',
  );
  db.sql("ALTER SYSTEM SET track_functions = 'all'");
  db.sql('SELECT pg_reload_conf()');
  tp = await startTestPooler(
    poolerToml(db, {
      general: `auth_user = "authuser"
auth_password = "authpass"
auth_query = "SELECT * FROM public.auth_lookup($1)"
auth_query_cache_ttl = "1s"
auth_query_rate = 20
auth_query_pool_size = 3`,
      extra: '[web]\nui = true',
    }),
  );
});

afterAll(async () => {
  await tp?.stop();
  await db?.cleanup();
});

async function login(user: string, password: string): Promise<string> {
  const c = new pg.Client({ host: '127.0.0.1', port: tp.port, user, password, database: 'app' });
  try {
    await c.connect();
    return String((await c.query('select current_user as u')).rows[0].u);
  } catch (err) {
    const e = err as { code?: string; message: string };
    return `error ${e.code}: ${e.message}`;
  } finally {
    await c.end().catch(() => undefined);
  }
}

function authQueryRow(): Record<string, unknown> {
  const t = tp.pooler.show('AUTH_QUERY');
  const row = t.rows.find((r) => r[0] === 'app')!;
  return Object.fromEntries(t.columns.map((c, i) => [c, row[i]]));
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('auth_query', () => {
  it('a user created in PostgreSQL during the test logs in with a pool of its own', async () => {
    db.sql("CREATE ROLE dyn1 LOGIN PASSWORD 'first-pass'");
    expect(await login('dyn1', 'first-pass')).toBe('dyn1');
    expect(await login('dyn1', 'wrong')).toMatch(/^error 28P01: password authentication failed for user "dyn1"/);
    const pools = tp.pooler.show('POOLS');
    expect(pools.rows.some((r) => r[0] === 'app' && r[1] === 'dyn1')).toBe(true);
    expect(authQueryRow()).toMatchObject({ database: 'app', dynamic_pools_current: 1, dynamic_pools_created: 1 });
    // auth_password is a secret: SHOW CONFIG masks it like admin_password.
    expect(tp.pooler.show('CONFIG').rows.find((r) => r[0] === 'general.auth_password')![1]).toBe('********');
    expect(Number(authQueryRow()['auth_success'])).toBeGreaterThanOrEqual(1);
    expect(Number(authQueryRow()['auth_failure'])).toBeGreaterThanOrEqual(1);
    // /api/auth_query: the same columns as JSON.
    const app = await buildWebApp(tp.pooler);
    try {
      const res = await app.inject({
        method: 'GET',
        url: '/api/auth_query',
        headers: {
          authorization: `Basic ${Buffer.from(`admin:${ADMIN_PASSWORD}`).toString('base64')}`,
          accept: 'application/json',
        },
      });
      expect(res.statusCode).toBe(200);
      expect(Object.keys((res.json() as Record<string, unknown>[])[0]!)).toEqual([
        'database',
        'cache_entries',
        'cache_hits',
        'cache_misses',
        'cache_refetches',
        'cache_rate_limited',
        'auth_success',
        'auth_failure',
        'executor_queries',
        'executor_errors',
        'dynamic_pools_current',
        'dynamic_pools_created',
        'dynamic_pools_destroyed',
      ]);
    } finally {
      await app.close();
    }
  });

  it('a password changed in PostgreSQL takes effect once the cached secret expires; a dropped user is refused', async () => {
    db.sql("ALTER ROLE dyn1 PASSWORD 'second-pass'");
    await sleep(1200);
    expect(await login('dyn1', 'second-pass')).toBe('dyn1');
    expect(await login('dyn1', 'first-pass')).toMatch(/^error 28P01/);
    db.sql('DROP ROLE dyn1');
    await sleep(1200);
    expect(await login('dyn1', 'second-pass')).toBe('error 28P01: password authentication failed for user "dyn1"');
  });

  it('1 000 logins of unknown users in a burst leave PostgreSQL with a bounded number of auth queries', async () => {
    const calls = async () =>
      Number(
        db.sql("SELECT coalesce(sum(calls), 0) FROM pg_stat_user_functions WHERE funcname = 'auth_lookup'", 'app') || 0,
      );
    await sleep(1200);
    const before = await calls();
    const t0 = Date.now();
    const answers = await Promise.all(
      Array.from(
        { length: 1000 },
        (_, i) =>
          new Promise<string>((resolve) => {
            const s = net.connect(tp.port, '127.0.0.1', () =>
              s.write(writeStartupMessage({ user: `ghost${i}`, database: 'app' })),
            );
            s.once('data', (d: Buffer) => {
              s.destroy();
              resolve(/C(\w{5})\0/.exec(d.toString('latin1'))?.[1] ?? String.fromCharCode(d[0]!));
            });
            s.once('error', (e) => resolve(`socket ${e.message}`));
          }),
      ),
    );
    const seconds = (Date.now() - t0) / 1000;
    const by = new Map<string, number>();
    for (const a of answers) by.set(a, (by.get(a) ?? 0) + 1);
    // Each unknown user is refused: 28P01 after its lookup, or 53300 at once when over auth_query_rate.
    for (const answer of by.keys()) expect(['28P01', '53300']).toContain(answer);
    const row = authQueryRow();
    // The burst allowance (20) plus 20 a second while it lasted, plus a little slack for the clock.
    const bound = 20 + Math.ceil(seconds * 20) + 5;
    expect(Number(row['executor_queries'])).toBeLessThanOrEqual(bound + 10);
    expect(Number(row['cache_rate_limited'])).toBeGreaterThanOrEqual(1000 - bound);
    // PostgreSQL's own count of the function's calls (statistics reach the view within a second or so).
    let ran = 0;
    for (let i = 0; i < 40; i++) {
      ran = (await calls()) - before;
      if (ran >= (by.get('28P01') ?? 0)) break;
      await sleep(250);
    }
    expect(ran).toBe(by.get('28P01') ?? 0);
    expect(ran).toBeLessThanOrEqual(bound);
    // Everyone else is still served.
    expect(await login('md5user', 'md5pass')).toBe('md5user');
  });
});
