// The pid of a transaction-mode (or admin console) client's BackendKeyData is one no backend can have (past Linux's
// pid_max, 2^22), so a pg_terminate_backend or pg_cancel_backend run with it reaches nothing; logins JavaScript runs
// and logins the native relay runs (md5, SCRAM, relay-only) get such pids, all different, and CancelRequests with them
// still cancel. Session mode keeps its server's real pid.
import pg from 'pg';
import postgres from 'postgres';
import { describe, expect, it } from 'vitest';
import { ADMIN_PASSWORD } from '../../helpers/pooler.js';
import { client, expectPath, logins, nativeRelay, until, useNativeLoginPooler } from './native-login-harness.js';

const env = useNativeLoginPooler();
const lending = nativeRelay && process.env.TIDEPOOL_NATIVE_LEND !== '0';

const PID_MAX_LIMIT = 4_194_304;
const processID = (c: pg.Client) => (c as unknown as { processID: number }).processID;
/** node-postgres's own cancel: a new connection carrying CancelRequest with `c`'s key. */
const cancelFrom = (canceller: pg.Client, c: pg.Client) =>
  (canceller as unknown as { cancel(target: pg.Client, q: unknown): void }).cancel(
    c,
    (c as unknown as { activeQuery: unknown }).activeQuery,
  );

let marks = 0;
const mark = () => `/* cancel-pid-${++marks} */`;
const sleeping = (tag: string) =>
  until(
    `the sleep ${tag} runs`,
    () =>
      env.db
        .sql(
          `select count(*) from pg_stat_activity where state = 'active' and query like '%${tag}%' and pid <> pg_backend_pid()`,
        )
        .trim() === '1',
  );

/** Transaction-mode clients of each login path: the relay's (on the native relay project; JavaScript's on the other)
 * for md5 and SCRAM, and JavaScript's (a startup parameter the relay does not take: `options`). */
const PATHS = [
  { name: 'md5, relay login', user: 'md5user', extra: {}, native: nativeRelay },
  { name: 'SCRAM, relay login', user: 'scramuser', extra: {}, native: nativeRelay },
  { name: 'md5, JavaScript login', user: 'md5user', extra: { options: '-c search_path=public' }, native: false },
  { name: 'SCRAM, JavaScript login', user: 'scramuser', extra: { options: '-c search_path=public' }, native: false },
] as const;

async function connected(p: (typeof PATHS)[number]): Promise<pg.Client> {
  const c = client(p.user, p.extra);
  expectPath(
    await logins(async () => {
      await c.connect();
    }),
    1,
    p.native,
  );
  return c;
}

describe('BackendKeyData pids no backend has', () => {
  it('transaction mode: past pid_max on every login path, all different, and pg_terminate_backend with one reaches nothing', async () => {
    const clients: pg.Client[] = [];
    for (let i = 0; i < 3; i++) for (const p of PATHS) clients.push(await connected(p));
    const pids = clients.map(processID);
    for (const pid of pids) {
      expect(pid).toBeGreaterThan(PID_MAX_LIMIT);
      expect(pid).toBeLessThanOrEqual(0x7fffffff);
    }
    expect(new Set(pids).size).toBe(pids.length);
    // What a client that takes its BackendKeyData pid for its backend's would do: nothing is terminated.
    const c = clients[0]!;
    const notices: string[] = [];
    c.on('notice', (n) => notices.push(n.message ?? ''));
    expect((await c.query('select pg_terminate_backend($1) as killed', [pids[1]])).rows[0]).toEqual({ killed: false });
    expect(notices.join('\n')).toMatch(/is not a PostgreSQL (backend|server) process/);
    for (const k of clients) expect((await k.query('select 1 as one')).rows[0]).toEqual({ one: 1 });
    await Promise.all(clients.map((k) => k.end()));
  });

  it('a relay-only login (on a lent server) gets one too', async () => {
    // Logins like it until one takes a lent server (the first ones leave servers holding its parameters).
    const deadline = Date.now() + 10_000;
    for (;;) {
      const c = client('md5user', { application_name: 'cancel-pid-lent' });
      await c.connect();
      const relayOnly = env.tp.pooler.nativeLogins.relayOnly === 1;
      expect(processID(c)).toBeGreaterThan(PID_MAX_LIMIT);
      if (!lending || relayOnly) {
        const tag = mark();
        const slow = c.query(`select pg_sleep(30) ${tag}`).then(
          () => 'finished',
          (e: { code?: string }) => e.code,
        );
        await sleeping(tag);
        cancelFrom(client('md5user'), c);
        expect(await slow).toBe('57014');
        await c.end();
        return;
      }
      await c.query('select 1');
      await c.end();
      if (Date.now() > deadline) throw new Error('no relay-only login');
    }
  });

  it('the admin console: past pid_max', async () => {
    const a = new pg.Client({
      host: '127.0.0.1',
      port: env.tp.port,
      user: 'admin',
      password: ADMIN_PASSWORD,
      database: 'tidepool',
    });
    await a.connect();
    expect(processID(a)).toBeGreaterThan(PID_MAX_LIMIT);
    await a.end();
  });

  it("session mode keeps its server's real pid", async () => {
    const s = client('md5user', { database: 'appsession' });
    await s.connect();
    expect(processID(s)).toBeLessThanOrEqual(PID_MAX_LIMIT);
    expect((await s.query('select pg_backend_pid() as pid')).rows[0].pid).toBe(processID(s));
    await s.end();
  });
});

describe('CancelRequests with those pids', () => {
  it('node-postgres: a long pg_sleep is cancelled (57014) on every login path, and the client goes on', async () => {
    for (const p of PATHS) {
      const c = await connected(p);
      const tag = mark();
      const slow = c.query(`select pg_sleep(30) ${tag}`).then(
        () => 'finished',
        (e: { code?: string }) => e.code,
      );
      await sleeping(tag);
      const canceller = client(p.user);
      cancelFrom(canceller, c);
      expect(await slow, p.name).toBe('57014');
      expect((await c.query('select 2 as two')).rows[0]).toEqual({ two: 2 });
      await c.end();
    }
  });

  it('postgres.js query.cancel(): 57014, md5 and SCRAM', async () => {
    for (const user of ['md5user', 'scramuser']) {
      const sql = postgres({
        host: '127.0.0.1',
        port: env.tp.port,
        user,
        password: user === 'md5user' ? 'md5pass' : 'scrampass',
        database: 'app',
        max: 1,
        onnotice: () => undefined,
      });
      try {
        const tag = mark();
        const q = sql.unsafe(`select pg_sleep(30) ${tag}`);
        const outcome = q.then(
          () => 'finished',
          (e: { code?: string }) => e.code,
        );
        await sleeping(tag);
        await q.cancel();
        expect(await outcome, user).toBe('57014');
        expect((await sql`select 3 as three`)[0]).toEqual({ three: 3 });
      } finally {
        await sql.end();
      }
    }
  });
});
