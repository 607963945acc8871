// A takeover moves clients linked to their server (session mode, or pinned by session state in transaction mode:
// LISTEN, advisory locks, temporary tables) together with that server, between transactions (takeover-clients.ts
// "linked"): the same backend, its session state and its notifications follow the client to the new process. And the
// issue's test: pgbench -c 50, postgres.js clients with prepared statements, a LISTEN client fed a steady stream of
// notifications and a cancel after each takeover, across two takeovers in a row. Both relays (vitest projects).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync, writeFileSync } from 'node:fs';
import type net from 'node:net';
import pg from 'pg';
import postgres from 'postgres';
import { freePort } from '../../../src/launcher/embedded-postgres.js';
import {
  TakeoverBed,
  adminShow,
  keyOf,
  localPort,
  pgClient,
  sendCancel,
  showClients,
  waitFor,
  type PoolerProc,
} from '../../helpers/takeover.js';

const bed = new TakeoverBed('takeover-linked');

beforeAll(() => bed.start());
afterAll(() => bed.stop());

/** A connection straight to PostgreSQL (not through the pooler). */
function direct(): pg.Client {
  return new pg.Client({
    host: bed.db.host,
    port: bed.db.port,
    user: 'md5user',
    password: 'md5pass',
    database: 'app',
  });
}

/** The first process exits once every client moved (it would wait shutdown_timeout for one that stayed). */
async function movedAll(old: PoolerProc): Promise<void> {
  expect(await old.exited, old.output()).toBe(0);
  expect(old.output()).not.toMatch(/"level":(50|60)/);
  expect(old.output()).not.toMatch(/client stays on this process/);
}

describe('takeover moves a client with its linked server', () => {
  it('session mode and pinned clients keep their backend, temp table, advisory lock and LISTEN across two takeovers', async () => {
    const { file, port } = await bed.writeConfig('state');
    const first = await bed.startFirst(file);
    const errors: string[] = [];

    // Session mode: the client keeps one server for its whole session.
    const session = pgClient(port, 'appsession');
    session.on('error', (e) => errors.push(`session: ${e.message}`));
    await session.connect();
    await session.query('create temp table t (v int)');
    await session.query('insert into t values (1), (2)');
    await session.query('select pg_advisory_lock(4242)');
    const sessionPid = (await session.query('select pg_backend_pid() as pid')).rows[0].pid as number;
    expect(keyOf(session).pid).toBe(sessionPid);

    // Transaction mode, pinned: a temp table and a session advisory lock keep it on its server.
    const pinned = pgClient(port);
    pinned.on('error', (e) => errors.push(`pinned: ${e.message}`));
    await pinned.connect();
    await pinned.query('create temp table p (v int)');
    await pinned.query('insert into p values (7)');
    await pinned.query('select pg_advisory_lock(4343)');
    const pinnedPid = (await pinned.query('select pg_backend_pid() as pid')).rows[0].pid as number;
    // A protocol-level prepared statement: Bound again after the takeovers without a Parse (node-postgres parses a
    // named statement once per connection).
    expect((await pinned.query({ name: 'twice', text: 'select $1::int * 2 as v', values: [4] })).rows[0].v).toBe(8);

    // LISTEN: its notifications come from its server, through whichever process holds the pair.
    const listener = pgClient(port);
    listener.on('error', (e) => errors.push(`listener: ${e.message}`));
    const heard: string[] = [];
    listener.on('notification', (n) => heard.push(n.payload ?? ''));
    await listener.connect();
    await listener.query('LISTEN linked_ch');
    const notifier = direct();
    await notifier.connect();
    await notifier.query("NOTIFY linked_ch, 'before'");
    await waitFor('the first notification', () => heard.length === 1);

    const second = await bed.takeOver(file);
    await movedAll(first);
    await notifier.query("NOTIFY linked_ch, 'after-1'");
    const third = await bed.takeOver(file);
    await movedAll(second);
    await notifier.query("NOTIFY linked_ch, 'after-2'");
    await waitFor('the notifications after the takeovers', () => heard.length === 3);
    expect(heard).toEqual(['before', 'after-1', 'after-2']);

    // The same connections and backends, answered by the third process.
    expect((await session.query('select pg_backend_pid() as pid')).rows[0].pid).toBe(sessionPid);
    expect((await session.query('select sum(v)::int as s from t')).rows[0].s).toBe(3);
    expect((await pinned.query('select pg_backend_pid() as pid')).rows[0].pid).toBe(pinnedPid);
    expect((await pinned.query('select v from p')).rows[0].v).toBe(7);
    expect((await pinned.query({ name: 'twice', text: 'select $1::int * 2 as v', values: [21] })).rows[0].v).toBe(42);
    const locks = bed.db
      .sql("select pid || ':' || objid from pg_locks where locktype = 'advisory' and granted order by objid", 'app')
      .trim()
      .split('\n')
      .map((l) => l.trim());
    expect(locks).toEqual([`${sessionPid}:4242`, `${pinnedPid}:4343`]);
    const listed = (await showClients(port)).map((r) => r.addr);
    for (const c of [session, pinned, listener]) expect(listed).toContain(`127.0.0.1:${localPort(c)}`);

    // A cancel with the session-mode client's key (its backend's pid) after the takeovers still cancels.
    const sleeping = session.query('select pg_sleep(30)').then(
      () => 'finished',
      (e: Error & { code?: string }) => e.code ?? e.message,
    );
    await bed.running('select pg_sleep(30)');
    await sendCancel(port, keyOf(session).pid, keyOf(session).secret);
    expect(await sleeping).toBe('57014');

    // Both transaction-mode clients are pinned on the third process, as they were on the first.
    const pinnedNow = async () =>
      Number((await adminShow(port, 'POOLS')).find((r) => r.database === 'app' && r.user === 'md5user')!.cl_pinned);
    expect(await pinnedNow()).toBe(2);
    // They let go of what pinned them: the relay splits each from its server again (it knew their pins), and they are
    // transaction-mode clients again there.
    await pinned.query('select pg_advisory_unlock_all()');
    await pinned.query('discard temp');
    expect((await pinned.query('select 1 as one')).rows[0].one).toBe(1);
    await listener.query('UNLISTEN *');
    expect((await listener.query('select 2 as two')).rows[0].two).toBe(2);
    expect(await pinnedNow()).toBe(0);

    expect(errors).toEqual([]);
    expect(third.output()).toMatch(/the old process is done handing over clients" took=3 refused=0/);
    for (const c of [session, pinned, listener, notifier]) await c.end();
    third.child.kill('SIGTERM');
    expect(await third.exited).toBe(0);
  });

  it('a LISTEN client that stops reading while notifications pile up moves with them: each once, in order', async () => {
    const { file, port } = await bed.writeConfig('pile-up');
    const first = await bed.startFirst(file);
    const listener = pgClient(port);
    const errors: string[] = [];
    listener.on('error', (e) => errors.push(e.message));
    const heard: number[] = [];
    listener.on('notification', (n) => heard.push(Number((n.payload ?? '').split(':')[0])));
    await listener.connect();
    await listener.query('LISTEN pile');
    // The client reads nothing for now: notifications fill its socket buffers, then the pooler's output queue.
    const stream = (listener as unknown as { connection: { stream: net.Socket } }).connection.stream;
    stream.pause();
    const notifier = direct();
    await notifier.connect();
    // NotificationResponses of 4 096 bytes each ('A', length, pid, "pile", the payload): PostgreSQL sends 8 KiB at a
    // time, so the pooler's reads tend to end between messages, and the native relay can hand over the pair with the
    // bytes queued for the client (the pair waits otherwise, until the client reads again).
    const total = 4000;
    const pad = 'x'.repeat(4075);
    for (let i = 1; i <= total; i += 100)
      await notifier.query(
        Array.from({ length: 100 }, (_, k) => `NOTIFY pile, '${String(i + k).padStart(5, '0')}:${pad}'`).join('; '),
      );
    const second = await bed.takeOver(file);
    stream.resume();
    await waitFor(`all ${total} notifications`, () => heard.length >= total);
    expect(heard).toEqual(Array.from({ length: total }, (_, i) => i + 1));
    await movedAll(first);
    expect((await listener.query('select 1 as one')).rows[0].one).toBe(1);
    expect(errors).toEqual([]);
    await listener.end();
    await notifier.end();
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);
  });

  it('a pair the new process refuses (pool not in the same mode there) stays on the old process, linked', async () => {
    const { file, port } = await bed.writeConfig('refused-pair');
    const first = await bed.startFirst(file);
    const session = pgClient(port, 'appsession');
    const errors: string[] = [];
    session.on('error', (e) => errors.push(e.message));
    await session.connect();
    await session.query('create temp table r (v int)');
    const pid = (await session.query('select pg_backend_pid() as pid')).rows[0].pid as number;
    // The new process runs appsession in transaction mode: it takes no session-mode pair of it.
    writeFileSync(file, readFileSync(file, 'utf8').replace('pool_mode = "session"', 'pool_mode = "transaction"'));
    const second = await bed.takeOver(file);
    await waitFor('the refusal', () => /client stays on this process/.test(first.output()));
    expect(first.output()).toMatch(/not in session mode here/);
    // Still on the old process, with its server and temp table.
    expect((await session.query('select pg_backend_pid() as pid')).rows[0].pid).toBe(pid);
    expect((await session.query('select count(*)::int as n from r')).rows[0].n).toBe(0);
    await session.end();
    expect(await first.exited, first.output()).toBe(0);
    expect(errors).toEqual([]);
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);
  });
});

describe("the issue's test: two takeovers under load", () => {
  for (const mode of ['simple', 'extended', 'prepared']) {
    it(`pgbench -c 50 -M ${mode}, postgres.js prepared statements, a LISTEN stream and a cancel: nothing lost`, async () => {
      const webPort = await freePort();
      const { file, port } = await bed.writeConfig(`load-${mode}`, {
        webPort,
        general: 'shutdown_timeout = "30s"',
      });
      const first = await bed.startFirst(file);
      const errors: string[] = [];

      // The LISTEN client, and a steady stream of notifications sent straight to PostgreSQL.
      const listener = pgClient(port);
      listener.on('error', (e) => errors.push(`listener: ${e.message}`));
      const heard: number[] = [];
      listener.on('notification', (n) => heard.push(Number(n.payload)));
      await listener.connect();
      await listener.query('LISTEN stream');
      const notifier = direct();
      await notifier.connect();
      let sent = 0;
      let streaming = true;
      const stream = (async () => {
        while (streaming) {
          await notifier.query(`NOTIFY stream, '${++sent}'`);
          await new Promise((r) => setTimeout(r, 10));
        }
      })();

      // postgres.js clients with prepared statements: parsed once, bound again after each takeover without a Parse.
      const closes: number[] = [];
      const sqls = Array.from({ length: 3 }, () =>
        postgres({
          host: '127.0.0.1',
          port,
          user: 'md5user',
          password: 'md5pass',
          database: 'app',
          max: 1,
          prepare: true,
          onclose: (id) => closes.push(id),
        }),
      );
      const prepared = async (k: number) => {
        for (const [i, sql] of sqls.entries()) expect((await sql`select ${k + i}::int + 1 as v`)[0]!.v).toBe(k + i + 1);
      };
      await prepared(10);

      // A client whose long query is cancelled after each takeover, with the key the first process gave it.
      const sleeper = pgClient(port);
      sleeper.on('error', (e) => errors.push(`sleeper: ${e.message}`));
      await sleeper.connect();
      await sleeper.query('select 1');
      const key = keyOf(sleeper);
      const cancelled = async () => {
        const sleeping = sleeper.query('select pg_sleep(30)').then(
          () => 'finished',
          (e: Error & { code?: string }) => e.code ?? e.message,
        );
        await bed.running('select pg_sleep(30)');
        await sendCancel(port, key.pid, key.secret);
        expect(await sleeping).toBe('57014');
      };

      const bench = bed.pgbench(port, { mode, clients: 50, seconds: 12 });
      // pgbench's fifty clients are connected to the process about to be taken over.
      const connected = async () => {
        const deadline = Date.now() + 30_000;
        while ((await showClients(port)).filter((c) => c.state !== 'closed').length < 50 + 1 + 3 + 2) {
          if (Date.now() > deadline) throw new Error('pgbench is not connected');
          await new Promise((r) => setTimeout(r, 50));
        }
      };
      await connected();

      const second = await bed.takeOver(file);
      await cancelled();
      await prepared(20);
      expect(await first.exited, first.output()).toBe(0);
      const third = await bed.takeOver(file);
      await cancelled();
      await prepared(30);
      expect(await second.exited, second.output()).toBe(0);

      const r = await bench;
      streaming = false;
      await stream;
      await waitFor(`all ${sent} notifications`, () => heard.length >= sent, 20_000);
      expect(heard.length).toBe(sent);
      expect(heard).toEqual(Array.from({ length: sent }, (_, i) => i + 1));

      expect(r.out, r.out).toMatch(/number of failed transactions: 0/);
      expect(
        r.out,
        `${r.out}\n--- first process:\n${first.output()}\n--- second process:\n${second.output()}`,
      ).not.toMatch(/\berror\b|aborted/i);
      expect(r.code, r.out).toBe(0);
      expect(errors).toEqual([]);
      expect(closes).toEqual([]);
      expect(first.output()).not.toMatch(/client stays on this process/);
      expect(second.output()).not.toMatch(/client stays on this process/);
      // The third process took every client of the second (pgbench's while it still ran, postgres.js's, the sleeper
      // and the listener) and refused none.
      const took = /the old process is done handing over clients" took=(\d+) refused=0/.exec(third.output());
      expect(took, third.output()).not.toBeNull();
      expect(Number(took![1])).toBeGreaterThanOrEqual(5);

      for (const sql of sqls) await sql.end();
      for (const c of [listener, notifier, sleeper]) await c.end();
      third.child.kill('SIGTERM');
      expect(await third.exited).toBe(0);
    });
  }
});
