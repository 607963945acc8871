// CancelRequest routing: forwarded only while its client has a query in flight, never reaching a server lent to another client since; session-mode clients get their server's real pid.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import net from 'node:net';
import { startTestPostgres, type TestPostgres } from '../../helpers/postgres.js';
import { poolerToml, poolToml, startTestPooler, type TestPooler } from '../../helpers/pooler.js';

let db: TestPostgres;
let tp: TestPooler;

beforeAll(async () => {
  db = await startTestPostgres();
  tp = await startTestPooler(
    poolerToml(db, {
      extra: poolToml(db, 'tx1', '', [{ username: 'md5user', password: 'md5pass', extra: 'pool_size = 1' }]),
    }),
  );
});

afterAll(async () => {
  await tp?.stop();
  await db?.cleanup();
});

async function connected(database: string, direct = false): Promise<pg.Client> {
  const c = direct
    ? new pg.Client({ host: db.host, port: db.port, user: 'md5user', password: 'md5pass', database: 'app' })
    : new pg.Client({ host: '127.0.0.1', port: tp.port, user: 'md5user', password: 'md5pass', database });
  await c.connect();
  return c;
}

/** Sends a CancelRequest with `c`'s key to `port`; resolves when the receiver closed the connection (it has acted). */
function cancel(c: pg.Client, port: number): Promise<void> {
  const key = c as unknown as { processID: number; secretKey: number };
  const packet = Buffer.alloc(16);
  packet.writeInt32BE(16, 0);
  packet.writeInt32BE(80877102, 4);
  packet.writeInt32BE(key.processID, 8);
  packet.writeInt32BE(key.secretKey, 12);
  return new Promise((resolve, reject) => {
    const sock = net.connect(port, '127.0.0.1', () => sock.write(packet));
    sock.on('error', reject);
    sock.on('close', () => resolve());
  });
}

const outcome = (p: Promise<unknown>) =>
  p.then(
    () => 'ok',
    (e: { code?: string }) => e.code ?? String(e),
  );

describe('cancel requests', () => {
  it('cancels the query in flight, as on a direct connection', async () => {
    for (const [db_, direct, port] of [
      ['app', true, db.port],
      ['tx1', false, tp.port],
      ['appsession', false, tp.port],
    ] as const) {
      const c = await connected(db_, direct);
      const q = outcome(c.query('select pg_sleep(30)'));
      // The query is running once PostgreSQL shows it active.
      const watch = await connected('app', true);
      await expectEventually(
        async () =>
          (
            await watch.query(
              `select count(*)::int as n from pg_stat_activity where query = 'select pg_sleep(30)' and state = 'active'`,
            )
          ).rows[0].n === 1,
      );
      await watch.end();
      await cancel(c, port);
      expect(await q).toBe('57014');
      expect((await c.query('select 1 as one')).rows[0].one).toBe(1);
      await c.end();
    }
  });

  it('a cancel that arrives after its query finished is dropped: the next query of the client runs (as on a direct connection)', async () => {
    for (const [db_, direct, port] of [
      ['app', true, db.port],
      ['tx1', false, tp.port],
    ] as const) {
      const c = await connected(db_, direct);
      const got: string[] = [];
      for (let i = 0; i < 20; i++) {
        got.push(await outcome(c.query('select 1')));
        await cancel(c, port);
        got.push(await outcome(c.query('select pg_sleep(0.02)')));
      }
      expect(got.every((g) => g === 'ok')).toBe(true);
      await c.end();
    }
  });

  it("1000 cancels racing the end of their query never cancel another client's query (pool_size 1: both share one server)", async () => {
    const a = await connected('tx1');
    const b = await connected('tx1');
    let stop = false;
    const bErrors: string[] = [];
    let bQueries = 0;
    const victim = (async () => {
      while (!stop) {
        const r = await outcome(b.query('select pg_sleep(0.0005)'));
        bQueries++;
        if (r !== 'ok') bErrors.push(r);
      }
    })();
    const aOutcomes = new Map<string, number>();
    for (let i = 0; i < 1000; i++) {
      const q = outcome(a.query('select 1'));
      // From before the query's end to after it: the cancel is sent after 0 to 3 turns of the event loop.
      for (let k = 0; k < i % 4; k++) await new Promise((r) => setImmediate(r));
      const sent = cancel(a, tp.port);
      const r = await q;
      aOutcomes.set(r, (aOutcomes.get(r) ?? 0) + 1);
      await sent;
    }
    stop = true;
    await victim;
    expect(bQueries).toBeGreaterThan(0);
    expect(bErrors).toEqual([]);
    // Only its own query could be cancelled.
    expect([...aOutcomes.keys()].every((k) => k === 'ok' || k === '57014')).toBe(true);
    expect((await a.query('select 2 as two')).rows[0].two).toBe(2);
    await a.end();
    await b.end();
  });

  it('a cancel with a wrong key or for an idle client does nothing', async () => {
    const c = await connected('tx1');
    const forged = {
      processID: (c as unknown as { processID: number }).processID,
      secretKey: 12345,
    } as unknown as pg.Client;
    const q = outcome(c.query('select pg_sleep(0.3)'));
    await cancel(forged, tp.port);
    expect(await q).toBe('ok');
    await c.end();
  });
});

describe('session mode BackendKeyData', () => {
  it('carries the real backend pid, which pg_backend_pid() and notification pids match (as on a direct connection)', async () => {
    for (const [db_, direct] of [
      ['app', true],
      ['appsession', false],
    ] as const) {
      const c = await connected(db_, direct);
      const pid = (c as unknown as { processID: number }).processID;
      expect((await c.query('select pg_backend_pid() as p')).rows[0].p).toBe(pid);
      const note = new Promise<pg.Notification>((resolve) => c.once('notification', resolve));
      await c.query('listen sess_self');
      await c.query(`notify sess_self, 'x'`);
      expect((await note).processId).toBe(pid);
      await c.end();
    }
  });

  it("a second session client waits for a server before its greeting and gets that server's pid", async () => {
    const clients = await Promise.all([connected('appsession'), connected('appsession')]);
    const pids = clients.map((c) => (c as unknown as { processID: number }).processID);
    expect(new Set(pids).size).toBe(2);
    for (const [i, c] of clients.entries())
      expect((await c.query('select pg_backend_pid() as p')).rows[0].p).toBe(pids[i]);
    await Promise.all(clients.map((c) => c.end()));
  });
});

async function expectEventually(check: () => Promise<boolean>, ms = 15_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}
