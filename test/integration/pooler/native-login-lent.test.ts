// Relay-only logins (native/relay-lend.cc): the pool lends the native relay its idle servers, a native login whose
// session parameters match one takes it parked and is not reported to JavaScript; a client that runs its transactions
// and leaves costs JavaScript nothing, and anything else about it (SHOW, a cancel, its server's death, KILL, a
// statement that may change a parameter) reports it first, as a session holding that server.
import net from 'node:net';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { ADMIN_PASSWORD, appPoolToml, poolerToml, startTestPooler, type TestPooler } from '../../helpers/pooler.js';
import { client, nativeRelay, show, toml, until, useNativeLoginPooler } from './native-login-harness.js';

const env = useNativeLoginPooler();
const lending = nativeRelay && process.env.TIDEPOOL_NATIVE_LEND !== '0';

/** Connects `user` with `app`, runs one simple-protocol query and leaves: the backend pid that answered. */
async function once(user: string, app: string, p?: TestPooler): Promise<number> {
  const c = client(user, { application_name: app }, p);
  await c.connect();
  const r = await c.query<{ pid: number }>('select pg_backend_pid() as pid');
  await c.end();
  return r.rows[0]!.pid;
}

const relayOnly = () => env.tp.pooler.nativeLogins.relayOnly;
const unreported = () => env.tp.pooler.nativeLogins.unreported;
const stat = async (user: string, column: string) =>
  Number((await show('STATS')).find((r) => r['database'] === 'app' && r['user'] === user)?.[column]);

/** Logins of kind `app` until one is relay-only (the first ones leave servers holding that kind's parameters). */
async function warm(user: string, app: string, p = env.tp): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const before = p.pooler.nativeLogins.unreported;
    await once(user, app, p);
    if (!lending || p.pooler.nativeLogins.unreported > before) return;
    if (Date.now() > deadline) throw new Error(`no relay-only login for ${user} (${app})`);
  }
}

/** A client of kind `app` logged in relay-only (its login took a lent server, JavaScript has not heard of it). */
async function relayOnlyClient(user: string, app: string): Promise<pg.Client> {
  await warm(user, app);
  const c = client(user, { application_name: app });
  await c.connect();
  expect(relayOnly()).toBe(1);
  return c;
}

/** Runs `body` with a connection to the admin console, closed after. */
async function asAdmin(body: (admin: pg.Client) => Promise<void>): Promise<void> {
  const admin = new pg.Client({
    host: '127.0.0.1',
    port: env.tp.port,
    user: 'admin',
    password: ADMIN_PASSWORD,
    database: 'tidepool',
  });
  await admin.connect();
  try {
    await body(admin);
  } finally {
    await admin.end();
  }
}

// The JavaScript relay project (TIDEPOOL_NATIVE_RELAY=0) has no relay-only logins: it checks that none happen.
if (lending)
  describe('relay-only logins on lent servers', () => {
    it('connect, one query, leave: relay-only for md5 and SCRAM, counted as connections, logins and transactions', async () => {
      for (const user of ['md5user', 'scramuser']) {
        await warm(user, 'lent-a');
        const reportedBefore = env.tp.pooler.counters.nativeLogins;
        const unreportedBefore = unreported();
        const connections = Number((await show('CONNECTIONS'))[0]!['total']);
        const xacts = await stat(user, 'total_xact_count');
        const pids = new Set<number>();
        for (let i = 0; i < 30; i++) pids.add(await once(user, 'lent-a'));
        const quiet = unreported() - unreportedBefore;
        const reported = env.tp.pooler.counters.nativeLogins - reportedBefore;
        // Some may be reported (the pooler's tick takes lent servers back once a second); none is lost.
        expect(quiet + reported, user).toBe(30);
        expect(quiet, user).toBeGreaterThan(15);
        expect(Number((await show('CONNECTIONS'))[0]!['total']) - connections, user).toBe(30);
        expect((await stat(user, 'total_xact_count')) - xacts, user).toBeGreaterThanOrEqual(30);
        expect(pids.size, user).toBeLessThanOrEqual(2);
      }
    });

    it('SHOW CLIENTS reports a relay-only client, which then goes on as a session', async () => {
      const c = await relayOnlyClient('md5user', 'lent-show');
      const pid = (await c.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]!.pid;
      expect(relayOnly()).toBe(1);
      const local = (c as unknown as { connection: { stream: net.Socket } }).connection.stream.localPort;
      const row = (await show('CLIENTS')).find((r) => r['addr'] === `127.0.0.1:${local}`);
      expect(row?.['application_name']).toBe('lent-show');
      expect(row?.['user']).toBe('md5user');
      expect(relayOnly()).toBe(0);
      expect((await c.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]!.pid).toBeGreaterThan(0);
      await c.end();
      expect(pid).toBeGreaterThan(0);
    });

    it('a cancel reaches the query of a relay-only client', async () => {
      const c = await relayOnlyClient('md5user', 'lent-cancel');
      const slow = c.query('select pg_sleep(30)').then(
        () => 'finished',
        (e: { code?: string }) => e.code,
      );
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
      expect((await c.query('select 1 as one')).rows[0]).toEqual({ one: 1 });
      await c.end();
    });

    it('its server dies between transactions: the client goes on with another', async () => {
      const c = await relayOnlyClient('scramuser', 'lent-death');
      const pid = (await c.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]!.pid;
      expect(relayOnly()).toBe(1);
      env.db.sql(`select pg_terminate_backend(${pid})`);
      await until('the pooler hears of it', () => relayOnly() === 0);
      const next = (await c.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]!.pid;
      expect(next).not.toBe(pid);
      await c.end();
    });

    it('a statement that may change a parameter: the next client of that kind gets its own value back', async () => {
      const c = await relayOnlyClient('md5user', 'lent-set');
      await c.query(`set application_name = 'changed-by-client'`);
      await c.query(`set datestyle = 'SQL, DMY'`);
      await c.end();
      for (let i = 0; i < 5; i++) {
        const d = client('md5user', { application_name: 'lent-set' });
        await d.connect();
        const r = await d.query<{ application_name: string; datestyle: string }>(
          `select current_setting('application_name') as application_name, current_setting('datestyle') as datestyle`,
        );
        expect(r.rows[0]).toEqual({ application_name: 'lent-set', datestyle: 'ISO, MDY' });
        await d.end();
      }
    });

    it('max_connections counts relay-only clients: the one past it gets 53300', async () => {
      const tp = await startTestPooler(toml('max_connections = 3'));
      const cs: pg.Client[] = [];
      try {
        await once('md5user', 'lent-max', tp);
        await warm('md5user', 'lent-max', tp);
        // Logged in, no query yet: the first takes the lent server, the others (no idle server left) are held in the
        // relay with none (native/relay-lend.cc Hold): all three relay-only, JavaScript has no session yet.
        for (let i = 0; i < 3; i++) {
          const c = client('md5user', { application_name: 'lent-max' }, tp);
          await c.connect();
          cs.push(c);
        }
        expect(tp.pooler.nativeLogins.relayOnly).toBe(3);
        expect(tp.pooler.clients.size).toBe(0);
        const extra = client('md5user', { application_name: 'lent-max' }, tp);
        await expect(extra.connect()).rejects.toMatchObject({ code: '53300' });
        await cs.pop()!.end();
        await until('a slot free', () => tp.pooler.nativeLogins.relayOnly + tp.pooler.clients.size < 3);
        expect(await once('md5user', 'lent-max', tp)).toBeGreaterThan(0);
      } finally {
        await Promise.all(cs.map((c) => c.end()));
        await tp.stop();
      }
    });

    it('RELOAD reports relay-only clients first; they go on, and later logins are relay-only again', async () => {
      const c = await relayOnlyClient('scramuser', 'lent-reload');
      await c.query('select 1');
      expect(relayOnly()).toBe(1);
      await asAdmin(async (admin) => {
        await admin.query('RELOAD');
      });
      expect(relayOnly()).toBe(0);
      expect((await c.query('select 2 as two')).rows[0]).toEqual({ two: 2 });
      await c.end();
      await warm('scramuser', 'lent-reload');
    });

    it("pool_size 1: a relay-only client holding the only server idle gives it up to another client's query", async () => {
      const tp = await startTestPooler(poolerToml(env.db, { pools: appPoolToml(env.db, 1) }));
      const a = client('md5user', { application_name: 'lent-one' }, tp);
      const b = client('md5user', { application_name: 'lent-one' }, tp);
      try {
        await once('md5user', 'lent-one', tp);
        await warm('md5user', 'lent-one', tp);
        await a.connect();
        const pidA = (await a.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]!.pid;
        expect(tp.pooler.nativeLogins.relayOnly).toBe(1);
        await b.connect();
        // b has no server: its query takes a's (the pool cannot grow), reporting a first.
        expect((await b.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]!.pid).toBe(pidA);
        expect(tp.pooler.nativeLogins.relayOnly).toBe(0);
        expect((await a.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]!.pid).toBe(pidA);
      } finally {
        await Promise.all([a.end(), b.end()]);
        await tp.stop();
      }
    });

    it('TIDEPOOL_NATIVE_LEND=0: no login is relay-only', async () => {
      const was = process.env.TIDEPOOL_NATIVE_LEND;
      process.env.TIDEPOOL_NATIVE_LEND = '0';
      let tp: TestPooler;
      try {
        tp = await startTestPooler(toml());
      } finally {
        if (was === undefined) delete process.env.TIDEPOOL_NATIVE_LEND;
        else process.env.TIDEPOOL_NATIVE_LEND = was;
      }
      try {
        for (let i = 0; i < 10; i++) await once('md5user', 'lent-off', tp);
        expect(tp.pooler.nativeLogins.unreported).toBe(0);
        expect(tp.pooler.counters.nativeLogins).toBeGreaterThanOrEqual(8);
      } finally {
        await tp.stop();
      }
    });

    it('KILL and PAUSE see relay-only clients', async () => {
      const c = await relayOnlyClient('md5user', 'lent-kill');
      c.on('error', () => undefined);
      await c.query('select 1');
      expect(relayOnly()).toBe(1);
      await asAdmin(async (admin) => {
        await admin.query('PAUSE app');
        expect(relayOnly()).toBe(0);
        await admin.query('RESUME app');
        await admin.query('KILL app');
        const after = await c.query('select 1').then(
          () => 'answered',
          (e: Error) => e.message,
        );
        expect(after).not.toBe('answered');
        await admin.query('RESUME app');
      });
      await c.end().catch(() => undefined);
      // The pool serves again, relay-only or not.
      expect(await once('md5user', 'lent-kill')).toBeGreaterThan(0);
    });
  });
else
  describe('relay-only logins', () => {
    it('are off without the native relay or with TIDEPOOL_NATIVE_LEND=0', () => {
      expect(env.tp.pooler.nativeLogins.unreported).toBe(0);
    });
  });
