// Logins the native relay runs itself (native/relay-auth.cc) through real clients: md5 and SCRAM from node-postgres,
// postgres.js and psql, the same greeting as the JavaScript login, pgbench -C, SHOW CLIENTS and cancel (the exchanges
// that fail are in native-login-errors.test.ts). Pooler.counters says who ran each login, so a test fails when the
// relay's exchange is silently bypassed. On the JavaScript relay project every login runs in JavaScript and the same
// behaviour is checked there.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import postgres from 'postgres';
import { describe, expect, it } from 'vitest';
import { ADMIN_PASSWORD, startTestPooler } from '../../helpers/pooler.js';
import { type Message } from '../../helpers/raw-pg.js';
import { writeStartupMessage } from '../../../src/protocol/writer.js';
import {
  client,
  expectPath,
  loginClients,
  logins,
  nativeRelay,
  PASSWORDS,
  rawMd5Login,
  run,
  show,
  toml,
  until,
  useNativeLoginPooler,
} from './native-login-harness.js';

const env = useNativeLoginPooler();

describe('logins run by the native relay', () => {
  it('md5 and SCRAM through node-postgres, postgres.js and psql run in the relay, and their sessions work', async () => {
    const got = await logins(async () => {
      for (let i = 0; i < 20; i++) {
        const c = client(i % 2 ? 'md5user' : 'scramuser', { application_name: `app-${i % 3}` });
        await c.connect();
        expect(
          (await c.query('select $1::int * 2 as n, current_setting($2) as app', [i, 'application_name'])).rows[0],
        ).toEqual({ n: i * 2, app: `app-${i % 3}` });
        await c.end();
      }
      for (const user of ['md5user', 'scramuser']) {
        const sql = postgres({
          host: '127.0.0.1',
          port: env.tp.port,
          user,
          password: PASSWORDS[user],
          database: 'app',
          max: 1,
          onnotice: () => undefined,
        });
        expect((await sql`select 5 as n`)[0]).toEqual({ n: 5 });
        await sql.end();
      }
    });
    expectPath(got, 22);
    // psql sends client_encoding in its startup packet: that login is JavaScript's, with the same outcome.
    const psql = await logins(async () => {
      const out = await run(
        'psql',
        ['-h', '127.0.0.1', '-p', String(env.tp.port), '-U', 'scramuser', '-d', 'app', '-Atc', 'select 6 * 7'],
        { env: { ...process.env, PGPASSWORD: 'scrampass' } },
      );
      expect(out.stdout.trim()).toBe('42');
    });
    expect(psql.native + psql.js).toBe(1);
  });

  it('the greeting is byte for byte the one JavaScript sends (but the cancel key)', async () => {
    const prev = process.env.TIDEPOOL_NATIVE_LOGIN;
    process.env.TIDEPOOL_NATIVE_LOGIN = '0';
    const off = await startTestPooler(toml()).finally(() => {
      if (prev === undefined) delete process.env.TIDEPOOL_NATIVE_LOGIN;
      else process.env.TIDEPOOL_NATIVE_LOGIN = prev;
    });
    try {
      await rawMd5Login(off.port);
      let js: Message[] = [];
      expectPath(
        await logins(async () => {
          js = await rawMd5Login(off.port);
        }, off),
        1,
        false,
      );
      let native: Message[] = [];
      expectPath(
        await logins(async () => {
          native = await rawMd5Login(env.tp.port);
        }),
        1,
      );
      const shape = (ms: Message[]) => ms.map((m) => (m.type === 'K' ? `K${m.raw.length}` : m.raw.toString('hex')));
      expect(shape(native)).toEqual(shape(js));
      expect(native.map((m) => m.type).join('')).toMatch(/^RS+KZ$/);
    } finally {
      await off.stop();
    }
  });

  it('pgbench -C with SCRAM: every transaction, no error line, each login in the relay, SHOW STATS counts them', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'tidepool-native-login-'));
    const script = path.join(dir, 'select.sql');
    writeFileSync(script, 'select 1;\n');
    const statsBefore = Number(
      (await show('STATS')).find((r) => r['database'] === 'app' && r['user'] === 'scramuser')?.['total_xact_count'] ??
        0,
    );
    try {
      const got = await logins(async () => {
        const r = await run(
          'pgbench',
          [
            '-n',
            '-C',
            '-c',
            '10',
            '-j',
            '2',
            '-t',
            '50',
            '-f',
            script,
            '-h',
            '127.0.0.1',
            '-p',
            String(env.tp.port),
            '-U',
            'scramuser',
            'app',
          ],
          { env: { ...process.env, PGPASSWORD: 'scrampass' } },
        ).catch((e: { stdout: string; stderr: string }) => e);
        const verdict = r.stdout + r.stderr;
        expect(verdict).toContain('number of transactions actually processed: 500/500');
        expect(verdict).toMatch(/number of failed transactions: 0/);
        expect(verdict).not.toMatch(/\berror\b|aborted/i);
      });
      // pgbench logs in once more before its run (501 logins).
      expect(nativeRelay ? got.js : got.native).toBe(0);
      expect(nativeRelay ? got.native : got.js).toBeGreaterThanOrEqual(500);
      await until(
        'the transactions counted',
        async () =>
          Number(
            (await show('STATS')).find((r) => r['database'] === 'app' && r['user'] === 'scramuser')?.[
              'total_xact_count'
            ] ?? 0,
          ) -
            statsBefore >=
          500,
      );
      await until('nobody left', async () => (await loginClients()) === 0 && (await show('CLIENTS')).length === 0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);

  it("SHOW CLIENTS lists a natively logged-in client, a cancel reaches its query, and the admin console is JavaScript's", async () => {
    const c = client('md5user', { application_name: 'cancel-me' });
    const got = await logins(async () => {
      await c.connect();
    });
    expectPath(got, 1);
    const local = (c as unknown as { connection: { stream: net.Socket } }).connection.stream.localPort;
    const row = (await show('CLIENTS')).find((r) => r['addr'] === `127.0.0.1:${local}`);
    expect(row?.['user']).toBe('md5user');
    expect(row?.['database']).toBe('app');
    expect(row?.['application_name']).toBe('cancel-me');
    const slow = c.query('select pg_sleep(30)').then(
      () => 'finished',
      (e: { code?: string }) => e.code,
    );
    // On PostgreSQL itself: SHOW CLIENTS says active from the checkout, before the backend has read the query, and a
    // cancel that reaches a backend still reading its command is ignored by PostgreSQL.
    await until(
      'the sleep runs',
      async () =>
        env.db
          .sql(`select count(*) from pg_stat_activity where state = 'active' and query = 'select pg_sleep(30)'`)
          .trim() === '1',
    );
    const canceller = client('md5user');
    (canceller as unknown as { cancel(target: pg.Client, q: unknown): void }).cancel(
      c,
      (c as unknown as { activeQuery: unknown }).activeQuery,
    );
    expect(await slow).toBe('57014');
    await c.end();
    const admin = await logins(async () => {
      const a = new pg.Client({
        host: '127.0.0.1',
        port: env.tp.port,
        user: 'admin',
        password: ADMIN_PASSWORD,
        database: 'tidepool',
      });
      await a.connect();
      await a.end();
    });
    expect(admin).toEqual({ native: 0, js: 1 });
    // A session-mode pool and startup parameters other than application_name stay with JavaScript too.
    const other = await logins(async () => {
      const s = client('md5user', { database: 'appsession' });
      await s.connect();
      await s.end();
      const o = client('md5user', { options: '-c search_path=public' });
      await o.connect();
      expect((await o.query('show search_path')).rows[0]).toEqual({ search_path: 'public' });
      await o.end();
    });
    expect(other).toEqual({ native: 0, js: 2 });
  });

  it('tcp_defer_accept: a client that connects and says nothing is not accepted until its first bytes; off, it is at once', async () => {
    const connect = async (port: number) => {
      const s = net.connect(port, '127.0.0.1');
      await new Promise<void>((resolve, reject) => s.once('connect', resolve).once('error', reject));
      return s;
    };
    // The kernel keeps the connection until the startup packet arrives (only the native relay's accept sets the option:
    // on the JavaScript relay net.Server accepts, and the silent client is in login at once).
    const silent = await connect(env.tp.port);
    try {
      if (env.tp.pooler.acceptsNatively) {
        await new Promise((r) => setTimeout(r, 300));
        expect(await loginClients()).toBe(0);
      }
      silent.write(writeStartupMessage({ user: 'md5user', database: 'app' }));
      await until('its login under way', async () => (await loginClients()) === 1);
    } finally {
      silent.destroy();
    }
    await until('nobody in login', async () => (await loginClients()) === 0);
    const off = await startTestPooler(toml('tcp_defer_accept = false'));
    try {
      const s = await connect(off.port);
      await until('the silent client accepted', async () => (await loginClients(off)) === 1);
      s.destroy();
      await until('nobody in login there', async () => (await loginClients(off)) === 0);
    } finally {
      await off.stop();
    }
  });
});
