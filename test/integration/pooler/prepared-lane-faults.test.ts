// Faults while the native relay's lane answers a client's cache hits: the client leaving mid-group, its server dying mid-group, RECONNECT and PAUSE during a group, a group cut into single bytes and reads larger than the relay's buffer; each must leave the pool serving everyone else correctly (on the JavaScript relay too).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { nativeLoaded } from '../../../src/native/index.js';
import { NativeRelay } from '../../../src/pooler/relay/native.js';
import { ADMIN_PASSWORD, appPoolToml, poolerToml, startTestPooler, type TestPooler } from '../../helpers/pooler.js';
import { startTestPostgres, type TestPostgres } from '../../helpers/postgres.js';
import { describeMessage, errorText, msg, RawConnection, type Message } from '../../helpers/raw-pg.js';

let db: TestPostgres;
let tp: TestPooler;
let admin: pg.Client;
let direct: pg.Client;
const open: RawConnection[] = [];
const native = nativeLoaded && process.env['TIDEPOOL_NATIVE_RELAY'] !== '0';

beforeAll(async () => {
  db = await startTestPostgres();
  // One server: whatever a fault leaves behind is what the next client gets.
  tp = await startTestPooler(
    poolerToml(db, { general: 'auth_type = "md5"\nprepared_statements = true', pools: appPoolToml(db, 1) }),
  );
  admin = new pg.Client({
    host: '127.0.0.1',
    port: tp.port,
    user: 'admin',
    password: ADMIN_PASSWORD,
    database: 'tidepool',
  });
  await admin.connect();
  direct = new pg.Client({ host: db.host, port: db.port, user: 'trustuser', database: 'app' });
  await direct.connect();
});
afterAll(async () => {
  for (const c of open) c.close();
  await admin?.end().catch(() => undefined);
  await direct?.end().catch(() => undefined);
  await tp?.stop();
  await db?.cleanup();
});

async function connect(viaPooler = true): Promise<RawConnection> {
  const c = viaPooler
    ? await RawConnection.connect({
        host: '127.0.0.1',
        port: tp.port,
        user: 'md5user',
        password: 'md5pass',
        database: 'app',
      })
    : await RawConnection.connect({ host: db.host, port: db.port, user: 'trustuser', database: 'app' });
  open.push(c);
  return c;
}

const SLEEPER = 'SELECT $1::int AS n, pg_backend_pid() AS pid FROM pg_sleep($2::float8)';
const laneAnswered = () => NativeRelay.get()?.laneAnswered ?? 0;
const hit = (n: number, sleep = 0) => [
  msg.bind('S1', [String(n), String(sleep)]),
  msg.describePortal(),
  msg.execute(),
  msg.sync(),
];

/** The text columns of a DataRow. */
function columns(m: Message): (string | null)[] {
  const out: (string | null)[] = [];
  let pos = 7;
  for (let i = m.raw.readInt16BE(5); i > 0; i--) {
    const len = m.raw.readInt32BE(pos);
    pos += 4;
    out.push(len < 0 ? null : m.raw.toString('utf8', pos, pos + len));
    if (len > 0) pos += len;
  }
  return out;
}

/** Runs one hit of S1 and returns [n, backend pid]; the replies must be exactly BindComplete, RowDescription, one row, CommandComplete, ReadyForQuery. */
async function runHit(c: RawConnection, n: number, sleep = 0): Promise<[number, number]> {
  c.send(...hit(n, sleep));
  const replies = await c.readUntilReady();
  expect(replies.map((m) => m.type)).toEqual(['2', 'T', 'D', 'C', 'Z']);
  const [got, pid] = columns(replies[2]!);
  expect(Number(got)).toBe(n);
  return [Number(got), Number(pid)];
}

async function prepareS1(c: RawConnection): Promise<void> {
  c.send(msg.parse('S1', SLEEPER, []), msg.sync());
  expect((await c.readUntilReady()).map((m) => m.type)).toEqual(['1', 'Z']);
}

/** Until `predicate` or a generous deadline. */
async function until(predicate: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!(await predicate())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Until PostgreSQL shows backend `pid` running the sleeping statement. */
async function sleeping(pid: number): Promise<void> {
  await until(async () => {
    const r = await direct.query(`SELECT 1 FROM pg_stat_activity WHERE state = 'active' AND query = $2 AND pid = $1`, [
      pid,
      SLEEPER,
    ]);
    return r.rows.length > 0;
  }, `backend ${pid} running the sleeping statement`);
}

describe('faults while the lane answers cache hits', () => {
  it('a client that leaves while its group runs: its server is not handed on mid-group, the next client gets only its own replies', async () => {
    const a = await connect();
    await prepareS1(a);
    const before = laneAnswered();
    await runHit(a, 1);
    const [, pidA] = await runHit(a, 2);
    if (native) {
      // The lane's counts reach JavaScript when the pair splits: the hits above were answered without the rewriter.
      a.send(msg.query('SELECT 1'));
      await a.readUntilReady();
      expect(laneAnswered() - before).toBeGreaterThan(0);
    }
    a.send(...hit(3, 0.5));
    await sleeping(pidA);
    a.close();
    const b = await connect();
    await prepareS1(b);
    for (let n = 10; n < 14; n++) {
      const [, pidB] = await runHit(b, n);
      expect(pidB).not.toBe(pidA);
    }
    b.close();
  });

  it('a server that dies mid-group: the client gets the error and is closed; the pool serves the next client', async () => {
    const a = await connect();
    await prepareS1(a);
    await runHit(a, 1);
    const [, pidA] = await runHit(a, 2);
    a.send(...hit(3, 30));
    await sleeping(pidA);
    await direct.query('SELECT pg_terminate_backend($1)', [pidA]);
    const got: Message[] = [];
    await expect(
      (async () => {
        for (;;) got.push(await a.read(20_000));
      })(),
    ).rejects.toThrow('connection closed');
    // Whatever came before the error was this group's (BindComplete, RowDescription); then errors only, nothing renamed wrong.
    const types = got.map((m) => m.type).join('');
    expect(types).toMatch(/^2?T?E+$/);
    expect(
      got
        .filter((m) => m.type === 'E')
        .map(errorText)
        .join('\n'),
    ).toMatch(/57P01|08006/);
    const b = await connect();
    await prepareS1(b);
    for (let n = 20; n < 23; n++) expect((await runHit(b, n))[1]).not.toBe(pidA);
    b.close();
  });

  it('RECONNECT during a group: the group completes on its server, the next hits run on a new one with the statement prepared again', async () => {
    const a = await connect();
    await prepareS1(a);
    const [, pid1] = await runHit(a, 1);
    expect((await runHit(a, 2))[1]).toBe(pid1);
    await admin.query('RECONNECT app');
    const [, pid2] = await runHit(a, 3);
    expect(pid2).not.toBe(pid1);
    expect((await runHit(a, 4))[1]).toBe(pid2);
    // RECONNECT while the lane's group runs on the server.
    a.send(...hit(5, 0.4));
    await sleeping(pid2);
    await admin.query('RECONNECT app');
    const replies = await a.readUntilReady();
    expect(replies.map(describeMessage).filter((d) => d.startsWith('E'))).toEqual([]);
    expect(Number(columns(replies.find((m) => m.type === 'D')!)[1])).toBe(pid2);
    const [, pid3] = await runHit(a, 6);
    expect(pid3).not.toBe(pid2);
    a.close();
  });

  it('PAUSE during a group waits for it; a hit sent while paused waits for RESUME and gets its own answer', async () => {
    const a = await connect();
    await prepareS1(a);
    await runHit(a, 1);
    const [, pid] = await runHit(a, 2);
    a.send(...hit(3, 0.4));
    await sleeping(pid);
    const events: string[] = [];
    const paused = admin.query('PAUSE app').then(() => events.push('paused'));
    const replies = await a.readUntilReady();
    events.push('answered');
    await paused;
    expect(events).toEqual(['answered', 'paused']);
    expect(Number(columns(replies.find((m) => m.type === 'D')!)[0])).toBe(3);
    a.send(...hit(4));
    const early = await Promise.race([
      a.read(60_000).then(() => 'answered while paused'),
      new Promise((r) => setTimeout(() => r('waiting'), 300)),
    ]);
    expect(early).toBe('waiting');
    await admin.query('RESUME app');
    const rest = await a.readUntilReady();
    expect(rest.map((m) => m.type)).toEqual(['2', 'T', 'D', 'C', 'Z']);
    expect(Number(columns(rest[2]!)[0])).toBe(4);
    await runHit(a, 5);
    a.close();
  });

  it('groups cut into single bytes, reads larger than the relay buffer and a pipeline of 300 groups give what a direct connection gives', async () => {
    const big = 'x'.repeat(300_000);
    const script = async (c: RawConnection): Promise<string[]> => {
      const out: string[] = [];
      c.send(
        msg.parse('S1', SLEEPER, []),
        msg.parse('L', 'SELECT length($1::text) AS len, md5($1::text) AS sum', []),
        msg.sync(),
      );
      out.push(...(await c.readUntilReady()).map(describeMessage));
      for (let round = 0; round < 3; round++) {
        // One byte per write: the relay sees partial headers and partial bodies.
        const bytes = Buffer.concat(hit(round, 0));
        for (const b of bytes) {
          c.socket.write(Buffer.from([b]));
          await new Promise((r) => setTimeout(r, 1));
        }
        out.push(...(await c.readUntilReady()).map(describeMessage).map((d) => d.replace(/^D .*/, 'D')));
        c.send(msg.bind('L', [big]), msg.execute(), msg.sync());
        out.push(...(await c.readUntilReady()).map(describeMessage));
      }
      const pipeline: Buffer[] = [];
      for (let i = 0; i < 300; i++) pipeline.push(msg.bind('L', [`${i}-${'y'.repeat(i)}`]), msg.execute(), msg.sync());
      c.send(...pipeline);
      out.push(...(await c.readUntilReady(300)).map(describeMessage));
      return out;
    };
    const want = await script(await connect(false));
    const got = await script(await connect());
    expect(got).toEqual(want);
    expect(want.filter((d) => d.startsWith('E'))).toEqual([]);
  });
});
