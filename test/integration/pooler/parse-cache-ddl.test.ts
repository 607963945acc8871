// The Parse cache under schema change: a statement cached on a server is never used where a fresh Parse on a direct connection would infer other types.
import pg from 'pg';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { poolToml, poolerToml, startTestPooler, type TestPooler } from '../../helpers/pooler.js';
import { startTestPostgres, type TestPostgres } from '../../helpers/postgres.js';

let db: TestPostgres;
let tp: TestPooler;

// One server per pool, so every client's statements meet the same server cache; and a pool of two servers.
beforeAll(async () => {
  db = await startTestPostgres();
  const pools = ['ddl1', 'ddl2']
    .map((name, i) =>
      poolToml(db, name, 'pool_mode = "transaction"', [
        { username: 'md5user', password: 'md5pass', extra: `pool_size = ${i + 1}` },
      ]),
    )
    .join('\n');
  tp = await startTestPooler(poolerToml(db, { general: 'prepared_statements = true', pools }));
});

afterAll(async () => {
  await tp?.stop();
  await db?.cleanup();
});

type Target = 'direct' | 'ddl1' | 'ddl2';
const TARGETS: Target[] = ['direct', 'ddl1', 'ddl2'];

function client(target: Target): pg.Client {
  const direct = target === 'direct';
  return new pg.Client({
    host: direct ? db.host : '127.0.0.1',
    port: direct ? db.port : tp.port,
    user: 'md5user',
    password: 'md5pass',
    database: direct ? 'app' : target,
  });
}

/** Runs `steps` (text, values) on one client and returns each step's rows or its error's SQLSTATE and message. */
async function script(target: Target, steps: [string, unknown[]?][]): Promise<unknown[]> {
  const c = client(target);
  await c.connect();
  try {
    const out: unknown[] = [];
    for (const [text, values] of steps) {
      try {
        const r = await c.query(text, values);
        out.push(r.rows);
      } catch (err) {
        const e = err as { code?: string; message: string };
        out.push(`${e.code} ${e.message}`);
      }
    }
    return out;
  } finally {
    await c.end();
  }
}

/** The same steps on every target, each target on its own table name (`T` is replaced), compared with direct. */
async function sameAsDirect(table: string, steps: [string, unknown[]?][]): Promise<unknown[]> {
  const results: unknown[][] = [];
  for (const t of TARGETS)
    results.push(
      await script(
        t,
        steps.map(([s, v]) => [s.replace(/\bT\b/g, `${table}_${t}`), v]),
      ),
    );
  const [direct, ...pooled] = results;
  for (const r of pooled) expect(r).toEqual(direct);
  return direct!;
}

const BIG = '9223372036854775807';

describe('the Parse cache after DDL (transaction mode)', () => {
  it('a table dropped and created again with another column type: the parameter is inferred anew', async () => {
    // Each pooled target uses its own table name, so the texts differ per target but repeat within one.
    const direct = await sameAsDirect('t1', [
      ['DROP TABLE IF EXISTS T'],
      ['CREATE TABLE T (col integer)'],
      ['INSERT INTO T VALUES ($1)', [1]],
      ['DROP TABLE T'],
      ['CREATE TABLE T (col bigint)'],
      ['INSERT INTO T VALUES ($1)', [BIG]],
      ['SELECT col::text FROM T ORDER BY col'],
    ]);
    expect(direct.at(-1)).toEqual([{ col: BIG }]);
  });

  it('ALTER TABLE ... TYPE: the parameter type and the result type are the new ones', async () => {
    const direct = await sameAsDirect('t2', [
      ['DROP TABLE IF EXISTS T'],
      ['CREATE TABLE T (id int, col integer)'],
      ['INSERT INTO T VALUES (1, $1)', [5]],
      ['SELECT col FROM T WHERE col = $1', [5]],
      ['ALTER TABLE T ALTER COLUMN col TYPE numeric'],
      ['INSERT INTO T VALUES (1, $1)', ['1.5']],
      ['SELECT col FROM T WHERE col = $1', ['1.5']],
    ]);
    expect(direct.at(-1)).toEqual([{ col: '1.5' }]);
  });

  it('a table recreated by another client: the next Parse of the same text on the first client infers anew', async () => {
    const results: unknown[][] = [];
    for (const t of TARGETS) {
      const table = `t3_${t}`;
      const a = client(t);
      const b = client(t);
      await a.connect();
      await b.connect();
      try {
        await a.query(`DROP TABLE IF EXISTS ${table}`);
        await a.query(`CREATE TABLE ${table} (col integer)`);
        await a.query(`INSERT INTO ${table} VALUES ($1)`, [1]);
        await b.query(`DROP TABLE ${table}`);
        await b.query(`CREATE TABLE ${table} (col bigint)`);
        const r = await a.query(`INSERT INTO ${table} VALUES ($1) RETURNING col::text`, [BIG]).then(
          (x) => x.rows,
          (e: { code: string }) => e.code,
        );
        const again = await a.query(`INSERT INTO ${table} VALUES ($1)`, [BIG]).then(
          () => 'ok',
          (e: { code: string }) => e.code,
        );
        results.push([r, again]);
      } finally {
        await a.end();
        await b.end();
      }
    }
    expect(results[0]).toEqual([[{ col: BIG }], 'ok']);
    for (const r of results.slice(1)) expect(r).toEqual(results[0]);
  });

  it('DDL through another pool of the database reaches a client whose pair stayed linked (the native lane)', async () => {
    // ddl2 has room to keep a's server parked with it between transactions, its lane answering the repeated Parse;
    // the DROP and CREATE go through ddl1, another pool of the same database.
    const a = client('ddl2');
    const b = client('ddl1');
    await a.connect();
    await b.connect();
    try {
      await a.query('DROP TABLE IF EXISTS t4');
      await a.query('CREATE TABLE t4 (col integer)');
      for (let i = 0; i < 3; i++) await a.query('INSERT INTO t4 VALUES ($1)', [i]);
      await b.query('DROP TABLE t4');
      await b.query('CREATE TABLE t4 (col bigint)');
      await a.query('INSERT INTO t4 VALUES ($1)', [BIG]);
      expect((await a.query('SELECT col::text FROM t4')).rows).toEqual([{ col: BIG }]);
    } finally {
      await a.end();
      await b.end();
    }
  });

  it('a search_path change: the same text is parsed for the schema it now names', async () => {
    for (const t of TARGETS) {
      const c = client(t);
      await c.connect();
      try {
        await c.query(`DROP SCHEMA IF EXISTS sa_${t} CASCADE; DROP SCHEMA IF EXISTS sb_${t} CASCADE`);
        await c.query(`CREATE SCHEMA sa_${t}; CREATE SCHEMA sb_${t}`);
        await c.query(`CREATE TABLE sa_${t}.tp (col integer); CREATE TABLE sb_${t}.tp (col bigint)`);
      } finally {
        await c.end();
      }
    }
    const results: unknown[][] = [];
    for (const t of TARGETS) {
      const r = await script(t, [
        [`SET search_path = sa_${t}`],
        ['INSERT INTO tp VALUES ($1)', [1]],
        [`SET search_path = sb_${t}`],
        ['INSERT INTO tp VALUES ($1)', [BIG]],
        ['SELECT col::text FROM tp'],
      ]);
      results.push(r);
    }
    expect(results[0]!.at(-1)).toEqual([{ col: BIG }]);
    for (const r of results.slice(1)) expect(r).toEqual(results[0]);
  });

  it('postgres.js (every statement prepared, pipelined) sees the new types after DDL in the same pipeline burst', async () => {
    const results: unknown[] = [];
    for (const t of TARGETS) {
      const direct = t === 'direct';
      const sql = postgres({
        host: direct ? db.host : '127.0.0.1',
        port: direct ? db.port : tp.port,
        username: 'md5user',
        password: 'md5pass',
        database: direct ? 'app' : t,
        max: 1,
        onnotice: () => undefined,
      });
      const table = `t5_${t}`;
      try {
        await sql.unsafe(`DROP TABLE IF EXISTS ${table}`);
        await sql.unsafe(`CREATE TABLE ${table} (col integer)`);
        await sql.unsafe(`INSERT INTO ${table} VALUES ($1)`, [1]);
        await sql.unsafe(`ALTER TABLE ${table} ALTER COLUMN col TYPE bigint`);
        await sql.unsafe(`INSERT INTO ${table} VALUES ($1)`, [BIG]);
        results.push((await sql.unsafe(`SELECT col::text AS col FROM ${table} ORDER BY 1`)).map((r) => r['col']));
      } catch (err) {
        results.push(`${(err as { code?: string }).code}`);
      } finally {
        await sql.end();
      }
    }
    expect(results[0]).toEqual(['1', BIG]);
    for (const r of results.slice(1)) expect(r).toEqual(results[0]);
  });
});
