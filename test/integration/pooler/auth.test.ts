// Client authentication through the pooler: trust, cleartext, md5 and SCRAM secrets, wrong passwords and unknown users, with real drivers.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import postgres from 'postgres';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { startTestPostgres, type TestPostgres } from '../../helpers/postgres.js';
import { ADMIN_PASSWORD, poolerToml, poolToml, startTestPooler, type TestPooler } from '../../helpers/pooler.js';

let db: TestPostgres;
let tp: TestPooler;

function scramSecretOf(role: string): string {
  return db.sql(`select rolpassword from pg_authid where rolname = '${role}'`);
}

beforeAll(async () => {
  db = await startTestPostgres();
  const scramSecret = scramSecretOf('scramuser');
  const md5Secret = db.sql(`select rolpassword from pg_authid where rolname = 'md5user'`);
  tp = await startTestPooler(
    poolerToml(db, {
      extra:
        poolToml(db, 'secrets', '', [
          { username: 'scramuser', password: scramSecret },
          { username: 'md5user', password: md5Secret },
        ]) + poolToml(db, 'trusted', '', [{ username: 'trustuser', password: '' }]),
    }),
  );
});

afterAll(async () => {
  await tp?.stop();
  await db?.cleanup();
});

async function query(
  user: string,
  password: string | undefined,
  database: string,
  sql = 'select current_user as u',
): Promise<unknown[]> {
  const c = new pg.Client({ host: '127.0.0.1', port: tp.port, user, password, database });
  await c.connect();
  try {
    return (await c.query(sql)).rows;
  } finally {
    await c.end();
  }
}

async function loginError(
  user: string,
  password: string | undefined,
  database: string,
): Promise<{ code?: string; message: string }> {
  const c = new pg.Client({ host: '127.0.0.1', port: tp.port, user, password, database });
  try {
    await c.connect();
    await c.end();
    throw new Error('login succeeded');
  } catch (err) {
    return err as { code?: string; message: string };
  }
}

describe('client authentication', () => {
  it('plaintext password, SCRAM to the client, md5 to the server', async () => {
    expect(await query('md5user', 'md5pass', 'app')).toEqual([{ u: 'md5user' }]);
  });

  it('plaintext password, SCRAM on both sides', async () => {
    expect(await query('scramuser', 'scrampass', 'app')).toEqual([{ u: 'scramuser' }]);
  });

  it('SCRAM secret only: the client key proven by the client logs in to PostgreSQL', async () => {
    expect(await query('scramuser', 'scrampass', 'secrets')).toEqual([{ u: 'scramuser' }]);
  });

  it('md5 secret: md5 toward the client and the server', async () => {
    expect(await query('md5user', 'md5pass', 'secrets')).toEqual([{ u: 'md5user' }]);
  });

  it('empty password: trust', async () => {
    expect(await query('trustuser', undefined, 'trusted')).toEqual([{ u: 'trustuser' }]);
  });

  it('postgres.js logs in with SCRAM', async () => {
    const sql = postgres({
      host: '127.0.0.1',
      port: tp.port,
      user: 'scramuser',
      password: 'scrampass',
      database: 'app',
      max: 1,
    });
    try {
      const rows = await sql`select 1 + 1 as two`;
      expect(rows[0]!.two).toBe(2);
    } finally {
      await sql.end();
    }
  });

  it('psql logs in after an SSLRequest answered N', async () => {
    const r = await promisify(execFile)(
      'psql',
      ['-h', '127.0.0.1', '-p', String(tp.port), '-U', 'md5user', '-d', 'app', '-Atc', 'select 42'],
      { env: { ...process.env, PGPASSWORD: 'md5pass', PGSSLMODE: 'prefer' } },
    );
    expect(r.stdout.trim()).toBe('42');
  });

  it('wrong password: 28P01 for each method', async () => {
    expect((await loginError('md5user', 'nope', 'app')).code).toBe('28P01');
    expect((await loginError('scramuser', 'nope', 'secrets')).code).toBe('28P01');
    expect((await loginError('md5user', 'nope', 'secrets')).code).toBe('28P01');
  });

  it('unknown database: 3D000; unknown user: 28000', async () => {
    expect((await loginError('md5user', 'md5pass', 'nosuchdb')).code).toBe('3D000');
    expect((await loginError('nobody', 'x', 'app')).code).toBe('28000');
  });

  it('admin console accepts the admin and refuses others', async () => {
    expect(await query('admin', ADMIN_PASSWORD, 'tidepool', 'SHOW VERSION')).toEqual([
      { version: expect.stringMatching(/^tidepool /) },
    ]);
    expect((await loginError('admin', 'wrong', 'pgbouncer')).code).toBe('28P01');
    expect((await loginError('md5user', 'md5pass', 'tidepool')).code).toBe('28000');
  });
});
