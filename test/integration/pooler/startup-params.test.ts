// Startup parameters reach the server as on a direct connection, in session and transaction mode: values, the greeting's ParameterStatus, refusals and the reset at check-in.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { poolToml, poolerToml, startTestPooler, type TestPooler } from '../../helpers/pooler.js';
import { startTestPostgres, type TestPostgres } from '../../helpers/postgres.js';
import { describeMessage, msg, RawConnection } from '../../helpers/raw-pg.js';

const run = promisify(execFile);
let db: TestPostgres;
let tp: TestPooler;
/** A pooler whose server_reset_query is empty: RESET ALL is still run after a client that had startup parameters. */
let noReset: TestPooler;

// One server per pool: a second client gets the server the first one left, so what the first asked for must be gone.
beforeAll(async () => {
  db = await startTestPostgres();
  db.sql('CREATE SCHEMA foo', 'app');
  const pools = [
    poolToml(db, 'sess', 'pool_mode = "session"', [
      { username: 'md5user', password: 'md5pass', extra: 'pool_size = 1' },
    ]),
    poolToml(db, 'tx', 'pool_mode = "transaction"', [
      { username: 'md5user', password: 'md5pass', extra: 'pool_size = 1' },
    ]),
  ].join('\n');
  // md5, so that the protocol-level client (raw-pg.ts) can log in.
  tp = await startTestPooler(poolerToml(db, { general: 'auth_type = "md5"', pools }));
  const sessOnly = poolToml(db, 'sessnoreset', 'pool_mode = "session"', [
    { username: 'md5user', password: 'md5pass', extra: 'pool_size = 1' },
  ]);
  noReset = await startTestPooler(
    poolerToml(db, { general: 'auth_type = "md5"\nserver_reset_query = ""', pools: sessOnly }),
  );
});

afterAll(async () => {
  await tp?.stop();
  await noReset?.stop();
  await db?.cleanup();
});

type Target = 'direct' | 'sess' | 'sessnoreset' | 'tx';
const POOLED: Target[] = ['sess', 'sessnoreset', 'tx'];

type Told = pg.Client & { told: Map<string, string> };

async function connect(target: Target, extra: pg.ClientConfig = {}): Promise<Told> {
  const direct = target === 'direct';
  const c = new pg.Client({
    host: direct ? db.host : '127.0.0.1',
    port: direct ? db.port : target === 'sessnoreset' ? noReset.port : tp.port,
    user: 'md5user',
    password: 'md5pass',
    database: direct ? 'app' : target,
    ...extra,
  }) as Told;
  c.told = new Map();
  (
    c as unknown as {
      connection: { on(e: string, f: (m: { parameterName: string; parameterValue: string }) => void): void };
    }
  ).connection.on('parameterStatus', (m) => {
    c.told.set(m.parameterName, m.parameterValue);
  });
  await c.connect();
  return c;
}

const NAMES = [
  'application_name',
  'search_path',
  'statement_timeout',
  'idle_in_transaction_session_timeout',
  'default_transaction_isolation',
  'lock_timeout',
  'client_encoding',
  'DateStyle',
  'TimeZone',
  'extra_float_digits',
  'myapp.tenant',
];

async function settings(c: pg.Client): Promise<Record<string, string | null>> {
  // A custom placeholder once set stays in a server's session, empty (README's limit): compared as apps read it.
  const col = (n: string, i: number) =>
    n.includes('.') ? `nullif(current_setting('${n}', true), '') AS c${i}` : `current_setting('${n}', true) AS c${i}`;
  const r = await c.query(`SELECT ${NAMES.map(col).join(', ')}`);
  return Object.fromEntries(NAMES.map((n, i) => [n, r.rows[0][`c${i}`] as string | null]));
}

/** What a fresh client of `target` shows and was told, after connecting with `extra`; or its login error. */
async function seen(
  target: Target,
  extra: pg.ClientConfig,
): Promise<{ settings: Record<string, string | null>; told: Record<string, string>; isolation: string } | string> {
  let c: Told;
  try {
    c = await connect(target, extra);
  } catch (err) {
    const e = err as { code?: string; message: string; severity?: string };
    return `${e.severity} ${e.code} ${e.message}`;
  }
  try {
    const s = await settings(c);
    const iso = await c
      .query('BEGIN; SHOW transaction_isolation')
      .then((r) => (r as unknown as pg.QueryResult[])[1]!.rows[0].transaction_isolation as string);
    await c.query('COMMIT');
    return { settings: s, told: Object.fromEntries(c.told), isolation: iso };
  } finally {
    await c.end();
  }
}

const ASKED: pg.ClientConfig = {
  application_name: 'myapp',
  options:
    '-c search_path=foo -c statement_timeout=3s -c default_transaction_isolation=serializable --lock-timeout=2s -c myapp.tenant=t1',
  idle_in_transaction_session_timeout: 60_000,
};

describe('startup parameters, as on a direct connection', () => {
  it('application_name, options (-c and --name=value), and parameters given as startup keys', async () => {
    const direct = await seen('direct', ASKED);
    expect(direct).toMatchObject({
      settings: {
        application_name: 'myapp',
        search_path: 'foo',
        statement_timeout: '3s',
        lock_timeout: '2s',
        'myapp.tenant': 't1',
        idle_in_transaction_session_timeout: '1min',
      },
      isolation: 'serializable',
    });
    for (const t of POOLED) expect(await seen(t, ASKED), t).toEqual(direct);
  });

  it('after such a client leaves, the next client of the same server sees the defaults again', async () => {
    const plain = await seen('direct', {});
    for (const t of POOLED) {
      await seen(t, ASKED);
      const after = await seen(t, {});
      expect(after, t).toEqual(plain);
    }
  });

  it("client_encoding as a startup key and in options: PostgreSQL's spelling in the greeting and in current_setting", async () => {
    const port = (t: Target) => (t === 'direct' ? db.port : t === 'sessnoreset' ? noReset.port : tp.port);
    for (const enc of ['eucjp', 'utf8', 'Latin1', 'UTF8']) {
      const results: unknown[] = [];
      for (const t of ['direct', ...POOLED] as Target[]) {
        const r = await RawConnection.connect({
          host: t === 'direct' ? db.host : '127.0.0.1',
          port: port(t),
          user: 'md5user',
          password: 'md5pass',
          database: t === 'direct' ? 'app' : t,
          params: { client_encoding: enc },
        });
        try {
          r.send(msg.query("SELECT current_setting('client_encoding')"));
          const rows = (await r.readUntilReady()).filter((m) => m.type === 'D').map(describeMessage);
          results.push({ told: r.told.get('client_encoding'), rows });
        } finally {
          r.close();
        }
        const o = await seen(t, { options: `-c client_encoding=${enc}` });
        results.push(
          typeof o === 'object' ? { told: o.told['client_encoding'], setting: o.settings['client_encoding'] } : o,
        );
      }
      expect(results[0], enc).toMatchObject({ told: enc === 'eucjp' ? 'EUC_JP' : enc.toUpperCase() });
      for (let i = 2; i < results.length; i += 2) {
        expect(results[i], `${enc} ${i}`).toEqual(results[0]);
        expect(results[i + 1], `${enc} ${i} options`).toEqual(results[1]);
      }
    }
  });

  it('a startup statement_timeout applies in transaction mode (the query is cancelled with 57014)', async () => {
    for (const t of ['direct', ...POOLED] as Target[]) {
      const c = await connect(t, { statement_timeout: 200 });
      try {
        const err = await c.query('SELECT pg_sleep(5)').then(
          () => null,
          (e: { code: string }) => e.code,
        );
        expect(err, t).toBe('57014');
      } finally {
        await c.end();
      }
    }
  });

  it('RESET returns to the startup value, as on a direct connection', async () => {
    for (const t of ['direct', ...POOLED] as Target[]) {
      const c = await connect(t, { options: '-c search_path=foo' });
      try {
        await c.query('SET search_path = public');
        await c.query('RESET search_path');
        expect((await c.query("SELECT current_setting('search_path') AS v")).rows[0].v, t).toBe(
          t === 'sess' || t === 'sessnoreset' ? '"$user", public' : 'foo',
        );
      } finally {
        await c.end();
      }
    }
  });

  it("an unknown parameter or a bad value is refused at login with PostgreSQL's error, and the pool goes on", async () => {
    for (const extra of [
      { options: '-c no_such_setting=1' },
      { statement_timeout: 'abc' as unknown as number },
      { options: '-c DateStyle=nonsense' },
    ]) {
      const direct = await seen('direct', extra);
      expect(direct).toMatch(/^FATAL (42704|22023) /);
      for (const t of POOLED) expect(await seen(t, extra), `${t} ${JSON.stringify(extra)}`).toBe(direct);
    }
    for (const t of POOLED) expect(typeof (await seen(t, {}))).toBe('object');
  });

  it('a parameter only a new backend can take is refused with a clear error, never dropped', async () => {
    // PostgreSQL takes it at startup (the pool's user is a superuser); a pooled server cannot be given it.
    expect(typeof (await seen('direct', { options: '-c ignore_system_indexes=on' }))).toBe('object');
    for (const t of POOLED)
      expect(await seen(t, { options: '-c ignore_system_indexes=on' }), t).toMatch(
        /^FATAL 55P02 parameter "ignore_system_indexes" cannot be set after connection start/,
      );
  });

  it('a replication connection is refused, not served as a plain session', async () => {
    for (const t of POOLED)
      expect(await seen(t, { replication: 'database' } as pg.ClientConfig), t).toMatch(
        /^FATAL 0A000 replication connections are not supported/,
      );
  });

  it("psql: PGAPPNAME, PGOPTIONS and PGCLIENTENCODING, and psql's own fallback_application_name", async () => {
    const query =
      "select current_setting('application_name'), current_setting('search_path'), current_setting('statement_timeout'), current_setting('client_encoding')";
    const psql = async (port: number, db0: string, env: Record<string, string>) =>
      (
        await run('psql', ['-h', '127.0.0.1', '-p', String(port), '-U', 'md5user', '-d', db0, '-XAtc', query], {
          env: { ...process.env, PGPASSWORD: 'md5pass', ...env },
        })
      ).stdout.trim();
    const envs: Record<string, string>[] = [
      { PGAPPNAME: 'myapp', PGOPTIONS: '-c search_path=foo -c statement_timeout=3s', PGCLIENTENCODING: 'eucjp' },
      {},
    ];
    for (const env of envs) {
      const direct = await psql(db.port, 'app', env);
      for (const t of POOLED)
        expect(await psql(t === 'sessnoreset' ? noReset.port : tp.port, t, env), `${t} ${JSON.stringify(env)}`).toBe(
          direct,
        );
    }
  });
});
