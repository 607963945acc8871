// pg_terminate_backend on the server of a client: PostgreSQL's FATAL 57P01 reaches the client and the connection
// closes, with no second error of the pooler's own (node-postgres would take that for a new, uncaught error). Compared
// byte for byte with a direct connection, in transaction and session mode; a transaction-mode client that holds no
// server hears nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { startTestPostgres, type TestPostgres } from '../../helpers/postgres.js';
import { poolerToml, startTestPooler, type TestPooler } from '../../helpers/pooler.js';
import { RawConnection, describeMessage, msg } from '../../helpers/raw-pg.js';

let db: TestPostgres;
let tp: TestPooler;
let watch: pg.Client;

beforeAll(async () => {
  db = await startTestPostgres();
  tp = await startTestPooler(poolerToml(db, { general: 'auth_type = "md5"' }));
  watch = new pg.Client({ host: db.host, port: db.port, user: 'md5user', password: 'md5pass', database: 'app' });
  await watch.connect();
});

afterAll(async () => {
  await watch?.end();
  await tp?.stop();
  await db?.cleanup();
});

/** Where a client connects: PostgreSQL itself, or a pool of the pooler (app: transaction mode, appsession: session). */
type Target = 'direct' | 'app' | 'appsession';
const TARGETS: Target[] = ['direct', 'app', 'appsession'];
const at = (t: Target) =>
  t === 'direct'
    ? { host: db.host, port: db.port, database: 'app' }
    : { host: '127.0.0.1', port: tp.port, database: t };

let marks = 0;
/** A comment that tells one client's statement apart in pg_stat_activity. */
const mark = () => `/* terminated-${process.pid}-${++marks} */`;

/** Terminates the backend whose last statement carries `tag` once it is in `state`: from a direct connection, as an
 * operator (or a failover script) would. */
async function terminate(tag: string, state: 'active' | 'idle' | 'idle in transaction'): Promise<void> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const r = await watch.query<{ pid: number }>(
      `select pid from pg_stat_activity where state = $1 and query like '%' || $2 || '%' and pid <> pg_backend_pid()`,
      [state, tag],
    );
    if (r.rows.length === 1) {
      await watch.query('select pg_terminate_backend($1)', [r.rows[0]!.pid]);
      return;
    }
    if (Date.now() > deadline) throw new Error(`no backend ${state} with ${tag}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** A raw connection logged in (PostgreSQL's md5user takes SCRAM, which the raw client does not speak: trustuser there). */
const raw = (t: Target) =>
  RawConnection.connect({
    ...at(t),
    ...(t === 'direct' ? { user: 'trustuser' } : { user: 'md5user', password: 'md5pass' }),
  });

/** What a raw connection gets after its backend was terminated: messages to the close, then bytes past them. */
async function after(c: RawConnection): Promise<string[]> {
  const { messages, trailing } = await c.rest();
  return [...messages.map(describeMessage), ...(trailing ? [`${trailing} trailing bytes`] : [])];
}

const FATAL_57P01 = 'E 57P01 terminating connection due to administrator command';

describe('a terminated backend, byte for byte', () => {
  it('mid-query: one FATAL 57P01, then the close (as on a direct connection)', async () => {
    const got: Record<string, string[]> = {};
    for (const t of TARGETS) {
      const c = await raw(t);
      const tag = mark();
      c.send(msg.query(`select pg_sleep(30) ${tag}`));
      await terminate(tag, 'active');
      got[t] = await after(c);
    }
    // pg_sleep's RowDescription came before it slept.
    expect(got).toEqual({ direct: ['T', FATAL_57P01], app: ['T', FATAL_57P01], appsession: ['T', FATAL_57P01] });
  });

  it('idle in a transaction: one FATAL 57P01, then the close (as on a direct connection)', async () => {
    const got: Record<string, string[]> = {};
    for (const t of TARGETS) {
      const c = await raw(t);
      const tag = mark();
      c.send(msg.query(`begin; select 1 ${tag}`));
      expect((await c.readUntilReady()).map(describeMessage).at(-1)).toBe('Z T');
      await terminate(tag, 'idle in transaction');
      got[t] = await after(c);
    }
    expect(got).toEqual({ direct: [FATAL_57P01], app: [FATAL_57P01], appsession: [FATAL_57P01] });
  });

  it('session mode, idle: one FATAL 57P01, then the close (as on a direct connection)', async () => {
    const got: Record<string, string[]> = {};
    for (const t of ['direct', 'appsession'] as const) {
      const c = await raw(t);
      const tag = mark();
      c.send(msg.query(`select 1 ${tag}`));
      await c.readUntilReady();
      await terminate(tag, 'idle');
      got[t] = await after(c);
    }
    expect(got).toEqual({ direct: [FATAL_57P01], appsession: [FATAL_57P01] });
  });

  it('transaction mode, between transactions: the client holds no server, hears nothing and carries on', async () => {
    const c = await raw('app');
    const tag = mark();
    c.send(msg.query(`select 1 ${tag}`));
    await c.readUntilReady();
    // The server that ran it: pooled, or (native relay) parked with this client.
    await terminate(tag, 'idle');
    await expect(c.read(300)).rejects.toThrow(/no message within/);
    c.send(msg.query('select 2'));
    expect((await c.readUntilReady()).map(describeMessage)).toEqual(['T', 'D 00010000000132', 'C SELECT 1', 'Z I']);
    c.close();
  });
});

/** What node-postgres reports when its backend is terminated under `run`: the query's outcome, then every 'error'
 * event until the connection ended. */
async function pgOutcome(
  t: Target,
  run: (c: pg.Client, tag: string) => Promise<unknown>,
  state: 'active' | 'idle in transaction',
): Promise<string[]> {
  const c = new pg.Client({ ...at(t), user: 'md5user', password: 'md5pass' });
  const events: string[] = [];
  c.on('error', (e: Error & { code?: string }) => events.push(`error event: ${e.code ?? e.message}`));
  const ended = new Promise<void>((r) => c.once('end', () => r()));
  await c.connect();
  const tag = mark();
  const outcome = run(c, tag).then(
    () => 'query: ok',
    (e: Error & { code?: string }) => `query: ${e.code ?? e.message}`,
  );
  await terminate(tag, state);
  const out = [await outcome];
  await ended;
  // An error written after the FATAL would be read before the close: a turn of the loop lets any late one show.
  await new Promise((r) => setTimeout(r, 50));
  return [...out, ...events];
}

describe('a terminated backend through node-postgres', () => {
  it('mid-query: the query fails with 57P01 and the error events are those of a direct connection', async () => {
    const got: Record<string, string[]> = {};
    for (const t of TARGETS) got[t] = await pgOutcome(t, (c, tag) => c.query(`select pg_sleep(30) ${tag}`), 'active');
    expect(got['direct']![0]).toBe('query: 57P01');
    expect(got).toEqual({ direct: got['direct'], app: got['direct'], appsession: got['direct'] });
  });

  it('mid-query, extended protocol (through the prepared-statement rewriter): as on a direct connection', async () => {
    const got: Record<string, string[]> = {};
    for (const t of TARGETS)
      got[t] = await pgOutcome(
        t,
        (c, tag) => c.query({ text: `select pg_sleep($1) ${tag}`, values: [30], name: `sleep${tag.length}` }),
        'active',
      );
    expect(got['direct']![0]).toBe('query: 57P01');
    expect(got).toEqual({ direct: got['direct'], app: got['direct'], appsession: got['direct'] });
  });

  it('idle in a transaction: the error events are those of a direct connection', async () => {
    const got: Record<string, string[]> = {};
    for (const t of TARGETS) {
      got[t] = await pgOutcome(
        t,
        async (c, tag) => {
          await c.query('begin');
          await c.query(`select 1 ${tag}`);
        },
        'idle in transaction',
      );
    }
    expect(got['direct']).toContain('error event: 57P01');
    expect(got).toEqual({ direct: got['direct'], app: got['direct'], appsession: got['direct'] });
  });
});
