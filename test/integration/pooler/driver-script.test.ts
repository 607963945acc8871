// One fixed script of driver-level operations through node-postgres and postgres.js, on a direct connection and through tidepool in both modes: the same results and the same errors.
import pg from 'pg';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { poolToml, poolerToml, startTestPooler, type TestPooler } from '../../helpers/pooler.js';
import { startTestPostgres, type TestPostgres } from '../../helpers/postgres.js';

let db: TestPostgres;
let tp: TestPooler;

beforeAll(async () => {
  db = await startTestPostgres();
  db.sql('CREATE SCHEMA drv', 'app');
  const pools = [
    poolToml(db, 'drvtx', 'pool_mode = "transaction"', [
      { username: 'md5user', password: 'md5pass', extra: 'pool_size = 2' },
    ]),
    poolToml(db, 'drvsess', 'pool_mode = "session"', [
      { username: 'md5user', password: 'md5pass', extra: 'pool_size = 4' },
    ]),
  ].join('\n');
  tp = await startTestPooler(poolerToml(db, { general: 'prepared_statements = true', pools }));
});

afterAll(async () => {
  await tp?.stop();
  await db?.cleanup();
});

type Target = 'direct' | 'drvtx' | 'drvsess';
const TARGETS: Target[] = ['direct', 'drvtx', 'drvsess'];

function where(t: Target): { host: string; port: number; database: string } {
  return t === 'direct'
    ? { host: db.host, port: db.port, database: 'app' }
    : { host: '127.0.0.1', port: tp.port, database: t };
}

const STARTUP = { application_name: 'driver-script', options: '-c search_path=drv,public -c statement_timeout=5s' };

/** What an error tells a driver user: its SQLSTATE and message. */
function failure(err: unknown): string {
  const e = err as { code?: string; message?: string };
  return `error ${e.code ?? '?'} ${e.message ?? ''}`;
}

/** Waits for `test`, polling. */
async function until(what: string, test: () => boolean, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!test()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function nodePostgresScript(t: Target): Promise<unknown[]> {
  const table = `np_${t}`;
  const out: unknown[] = [];
  const c = new pg.Client({ ...where(t), user: 'md5user', password: 'md5pass', ...STARTUP });
  const errors: string[] = [];
  c.on('error', (e) => errors.push(failure(e)));
  await c.connect();
  const step = async (text: string | pg.QueryConfig, values?: unknown[]) => {
    try {
      out.push((await c.query(text as string, values)).rows);
    } catch (err) {
      out.push(failure(err));
    }
  };
  await step(
    "SELECT current_setting('application_name') AS app, current_setting('search_path') AS sp, current_setting('statement_timeout') AS st",
  );
  await step(`DROP TABLE IF EXISTS ${table}`);
  await step(`CREATE TABLE ${table} (id int, v integer)`);
  await step(`INSERT INTO ${table} VALUES ($1, $2)`, [1, 10]);
  await step({ name: `ins_${t}`, text: `INSERT INTO ${table} VALUES ($1, $2) RETURNING v`, values: [2, 20] });
  await step(`ALTER TABLE ${table} ALTER COLUMN v TYPE bigint`);
  await step(`INSERT INTO ${table} VALUES ($1, $2)`, [3, '9000000000']);
  await step(`SELECT id, v::text FROM ${table} ORDER BY id`);
  await step('SELECT 1 / $1::int AS x', [0]);
  await step('SELECT $1::int AS x', ['not a number']);
  // LISTEN/NOTIFY: a second client's notification reaches this one.
  const got: string[] = [];
  c.on('notification', (n) => got.push(`${n.channel}:${n.payload}`));
  await step(`LISTEN ch_${t}`);
  const n = new pg.Client({ ...where(t), user: 'md5user', password: 'md5pass' });
  await n.connect();
  await n.query(`NOTIFY ch_${t}, 'hello'`);
  await n.end();
  await until('the notification', () => got.length > 0);
  out.push(got);
  await step(`UNLISTEN ch_${t}`);
  // Its own backend terminated: one error, then the connection is gone.
  await step('SELECT pg_terminate_backend(pg_backend_pid())');
  await until('the connection error', () => errors.length > 0).catch(() => undefined);
  out.push(errors);
  await c.end().catch(() => undefined);
  return out;
}

async function postgresJsScript(t: Target): Promise<unknown[]> {
  const table = `pj_${t}`;
  const out: unknown[] = [];
  const sql = postgres({
    ...where(t),
    username: 'md5user',
    password: 'md5pass',
    max: 1,
    onnotice: () => undefined,
    connection: STARTUP,
  });
  const step = async (run: () => Promise<unknown>) => {
    try {
      out.push(await run());
    } catch (err) {
      out.push(failure(err));
    }
  };
  try {
    await step(async () => [
      ...(await sql`SELECT current_setting('application_name') AS app, current_setting('search_path') AS sp`),
    ]);
    await step(async () => [...(await sql.unsafe(`DROP TABLE IF EXISTS ${table}`))]);
    await step(async () => [...(await sql.unsafe(`CREATE TABLE ${table} (id int, v integer)`))]);
    await step(async () => [...(await sql.unsafe(`INSERT INTO ${table} VALUES ($1, $2) RETURNING v`, [1, 10]))]);
    await step(async () => [...(await sql.unsafe(`ALTER TABLE ${table} ALTER COLUMN v TYPE bigint`))]);
    await step(async () => [
      ...(await sql.unsafe(`INSERT INTO ${table} VALUES ($1, $2) RETURNING v::text`, [2, '9000000000'])),
    ]);
    await step(async () => [...(await sql.unsafe(`SELECT id, v::text FROM ${table} ORDER BY id`))]);
    await step(async () => [...(await sql`SELECT 1 / ${0}::int AS x`)]);
    await step(async () => [...(await sql`SELECT ${'x'}::int AS x`)]);
    // A pipeline: three statements sent before the first answer.
    await step(async () =>
      (
        await Promise.all([
          sql`SELECT 1 AS a`,
          sql`SELECT ${2}::int AS b`,
          sql.unsafe(`SELECT count(*)::int AS n FROM ${table}`),
        ])
      ).map((r) => [...r]),
    );
  } finally {
    await sql.end();
  }
  return out;
}

describe('a fixed driver script gives what a direct connection gives', () => {
  it('node-postgres: startup parameters, DDL between executions, named statements, errors, LISTEN/NOTIFY, a terminated backend', async () => {
    const results: unknown[][] = [];
    for (const t of TARGETS) results.push(await nodePostgresScript(t));
    const norm = (r: unknown[]) => JSON.parse(JSON.stringify(r).replace(/(np|ch)_(direct|drvtx|drvsess)/g, '$1_T'));
    const [direct, ...pooled] = results.map(norm);
    expect(direct[0]).toEqual([{ app: 'driver-script', sp: 'drv,public', st: '5s' }]);
    expect(direct.at(-2)).toBe('error 57P01 terminating connection due to administrator command');
    for (const [i, r] of pooled.entries()) expect(r, TARGETS[i + 1]).toEqual(direct);
  });

  it('postgres.js: startup parameters, DDL between prepared executions, errors and a pipeline', async () => {
    const results: unknown[][] = [];
    for (const t of TARGETS) results.push(await postgresJsScript(t));
    const norm = (r: unknown[]) => JSON.parse(JSON.stringify(r).replace(/pj_(direct|drvtx|drvsess)/g, 'pj_T'));
    const [direct, ...pooled] = results.map(norm);
    expect(direct[0]).toEqual([{ app: 'driver-script', sp: 'drv,public' }]);
    for (const [i, r] of pooled.entries()) expect(r, TARGETS[i + 1]).toEqual(direct);
  });
});
