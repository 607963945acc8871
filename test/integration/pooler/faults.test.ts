// Bad input and failures: malformed or oversize messages, limits and timeouts, PostgreSQL going away; each answered with its documented SQLSTATE.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import net from 'node:net';
import { startTestPostgres, type TestPostgres } from '../../helpers/postgres.js';
import { ADMIN_PASSWORD, poolerToml, startTestPooler, type TestPooler } from '../../helpers/pooler.js';

let db: TestPostgres;
let tp: TestPooler;

beforeAll(async () => {
  db = await startTestPostgres();
  tp = await startTestPooler(
    poolerToml(db, { general: 'query_wait_timeout = "700ms"\nmax_message_size = "1MB"\nmax_connections = 30' }),
  );
});

afterAll(async () => {
  await tp?.stop();
  await db?.cleanup();
});

function client(database = 'app'): pg.Client {
  return new pg.Client({ host: '127.0.0.1', port: tp.port, user: 'md5user', password: 'md5pass', database });
}

/** Reads what the pooler sends until it closes the socket. */
function rawExchange(bytes: Buffer[], firstReplyOnly = false): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const s = net.connect(tp.port, '127.0.0.1', () => {
      for (const b of bytes) s.write(b);
    });
    s.on('data', (d) => {
      chunks.push(d);
      if (firstReplyOnly) s.destroy();
    });
    s.on('error', reject);
    s.on('close', () => resolve(Buffer.concat(chunks)));
    setTimeout(() => s.destroy(), 5000);
  });
}

function startup(params: Record<string, string>, minor = 0): Buffer {
  const body = Buffer.concat([
    Buffer.from([0, 3, 0, minor]),
    ...Object.entries(params).map(([k, v]) => Buffer.from(`${k}\0${v}\0`)),
    Buffer.from([0]),
  ]);
  const len = Buffer.alloc(4);
  len.writeInt32BE(body.length + 4);
  return Buffer.concat([len, body]);
}

/** Severity, SQLSTATE and message of each ErrorResponse in `reply`, a stream of whole backend messages. */
function errorsIn(reply: Buffer): { S: string; C: string; M: string }[] {
  const out: { S: string; C: string; M: string }[] = [];
  for (let pos = 0; pos + 5 <= reply.length;) {
    const len = reply.readInt32BE(pos + 1);
    if (len < 4) throw new Error(`bad length ${len} at ${pos} in the reply`);
    if (reply[pos] === 0x45) {
      const f: Record<string, string> = {};
      for (let i = pos + 5; i < pos + 1 + len && reply[i] !== 0;) {
        const end = reply.indexOf(0, i + 1);
        f[String.fromCharCode(reply[i]!)] = reply.toString('utf8', i + 1, end);
        i = end + 1;
      }
      out.push({ S: f['S'] ?? '', C: f['C'] ?? '', M: f['M'] ?? '' });
    }
    pos += 1 + len;
  }
  return out;
}

/** The one ErrorResponse the pooler sent before closing: FATAL with `code`, its message matching `message`. */
function expectFatal(reply: Buffer, code: string, message: RegExp): void {
  expect(errorsIn(reply)).toEqual([{ S: 'FATAL', C: code, M: expect.stringMatching(message) }]);
}

/** Logs in with node-postgres (or uses `connected`), writes raw bytes on its socket, returns what arrives until
 * the pooler closes it. */
async function afterLogin(bytes: Buffer, connected?: pg.Client): Promise<Buffer> {
  const c = connected ?? client();
  if (!connected) await c.connect();
  const sock = (c as unknown as { connection: { stream: net.Socket } }).connection.stream;
  const got: Buffer[] = [];
  sock.on('data', (d: Buffer) => got.push(d));
  c.on('error', () => undefined);
  const closed = new Promise<void>((r) => sock.once('close', () => r()));
  sock.write(bytes);
  await closed;
  return Buffer.concat(got);
}

/** Records what arrives on a logged-in client's socket from now on, until the pooler closes it. */
function received(c: pg.Client): { bytes(): Buffer; closed: Promise<void> } {
  const sock = (c as unknown as { connection: { stream: net.Socket } }).connection.stream;
  const got: Buffer[] = [];
  sock.on('data', (d: Buffer) => got.push(d));
  return { bytes: () => Buffer.concat(got), closed: new Promise<void>((r) => sock.once('close', () => r())) };
}

async function stillServes(): Promise<void> {
  const c = client();
  await c.connect();
  try {
    expect((await c.query('select 7 as seven')).rows[0].seven).toBe(7);
  } finally {
    await c.end();
  }
}

describe('malformed input', () => {
  it('a startup packet with a bad length gets 08P01', async () => {
    const reply = await rawExchange([Buffer.from([0, 0, 0, 2, 0, 0])]);
    expectFatal(reply, '08P01', /^invalid startup packet length 2$/);
    await stillServes();
  });

  it('a message with length < 4 after login gets 08P01 and a closed connection', async () => {
    expectFatal(await afterLogin(Buffer.from([0x51, 0, 0, 0, 2])), '08P01', /^invalid message length 2 /);
    await stillServes();
  });

  it('a bad length right after a transaction gets 08P01; the server it used goes back healthy', async () => {
    const c = client();
    await c.connect();
    const pid = (await c.query('select pg_backend_pid() as pid')).rows[0].pid as number;
    expectFatal(await afterLogin(Buffer.from([0x51, 0, 0, 0, 1]), c), '08P01', /^invalid message length 1 /);
    // On the native relay that server was still linked to the client (parked); either way it is reusable now.
    const servers = tp.pooler.show('SERVERS').rows;
    expect(servers.some((r) => r[1] === pid && r[6] === 'idle')).toBe(true);
    await stillServes();
  });

  it('a bad length inside an open transaction gets 08P01 and the server is not reused', async () => {
    const c = client();
    await c.connect();
    await c.query('BEGIN');
    const pid = (await c.query('select pg_backend_pid() as pid')).rows[0].pid as number;
    expectFatal(await afterLogin(Buffer.from([0x51, 0, 0, 0, 1]), c), '08P01', /^invalid message length 1 /);
    for (let i = 0; i < 100 && tp.pooler.show('SERVERS').rows.some((r) => r[1] === pid); i++)
      await new Promise((r) => setTimeout(r, 20));
    expect(tp.pooler.show('SERVERS').rows.some((r) => r[1] === pid)).toBe(false);
    await stillServes();
  });

  it('a message past max_message_size gets 08P01', async () => {
    const big = Buffer.alloc(5);
    big[0] = 0x51;
    big.writeInt32BE(2 * 1024 * 1024, 1);
    expectFatal(await afterLogin(big), '08P01', /^invalid message length 2097152 \(max_message_size 1048576\)$/);
    await stillServes();
  });

  it('an admin console Query without its terminating NUL gets 08P01', async () => {
    const admin = new pg.Client({
      host: '127.0.0.1',
      port: tp.port,
      user: 'admin',
      password: ADMIN_PASSWORD,
      database: 'tidepool',
    });
    admin.on('error', () => undefined);
    await admin.connect();
    const q = Buffer.from('QxxxxSHOW POOLS');
    q.writeInt32BE(q.length - 1, 1);
    expectFatal(await afterLogin(q, admin), '08P01', /^malformed Query message: /);
    await stillServes();
  });

  it('garbage instead of a password gets 08P01', async () => {
    const reply = await rawExchange([
      startup({ user: 'md5user', database: 'app' }),
      Buffer.from([0x51, 0, 0, 0, 5, 0]),
    ]);
    // The pooler's own authentication request comes first (R), then the error.
    expect(reply[0]).toBe(0x52);
    expectFatal(reply.subarray(1 + reply.readInt32BE(1)), '08P01', /^expected a password message, got "Q"$/);
  });

  it('protocol 3.2 startup is accepted; a newer minor gets NegotiateProtocolVersion', async () => {
    const c32 = await rawExchange([startup({ user: 'md5user', database: 'app' }, 2)], true);
    expect(c32[0]).toBe(0x52); // Authentication request, no negotiation
    const c39 = await rawExchange([startup({ user: 'md5user', database: 'app', _pq_hypothetical: 'x' }, 9)], true);
    expect(c39[0]).toBe(0x76); // NegotiateProtocolVersion
    expect(c39.readInt32BE(5)).toBe((3 << 16) | 2);
  });

  it('an SSLRequest and a GSSENCRequest are answered N', async () => {
    const ssl = Buffer.from([0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f]);
    const gss = Buffer.from([0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x30]);
    const reply = await rawExchange([ssl, gss, startup({ user: 'md5user', database: 'nosuch' })]);
    expect(reply.subarray(0, 2).toString()).toBe('NN');
    expectFatal(reply.subarray(2), '3D000', /nosuch/);
  });
});

describe('limits and timeouts', () => {
  it('query_wait_timeout: a client waiting longer for a server gets an error', async () => {
    const holders = [client(), client()];
    await Promise.all(holders.map((h) => h.connect()));
    await Promise.all(holders.map((h) => h.query('BEGIN')));
    const waiter = client();
    await waiter.connect();
    waiter.on('error', () => undefined);
    try {
      await expect(waiter.query('select 1')).rejects.toMatchObject({
        severity: 'FATAL',
        code: '57014',
        message: expect.stringContaining('query_wait_timeout'),
      });
    } finally {
      await Promise.all(holders.map((h) => h.query('COMMIT').then(() => h.end())));
      await waiter.end().catch(() => undefined);
    }
    await stillServes();
  });

  it('max_connections: 53300 with a clear message', async () => {
    const many = Array.from({ length: 30 }, () => client());
    await Promise.all(many.map((c) => c.connect()));
    try {
      const extra = client();
      await expect(extra.connect()).rejects.toMatchObject({
        code: '53300',
        message: expect.stringContaining('max_connections'),
      });
    } finally {
      await Promise.all(many.map((c) => c.end()));
    }
  });
});

describe('backend failures', () => {
  it('a backend terminated mid-query gives its client an error and leaves the pool healthy', async () => {
    const c = client();
    await c.connect();
    c.on('error', () => undefined);
    const pid = (await c.query('select pg_backend_pid() as pid')).rows[0].pid as number;
    const seen = received(c);
    const q = c.query('select pg_sleep(30)');
    for (let i = 0; i < 200 && !tp.pooler.show('SERVERS').rows.some((r) => r[1] === pid && r[6] === 'active'); i++)
      await new Promise((r) => setTimeout(r, 10));
    db.sql(`select pg_terminate_backend(${pid})`);
    // PostgreSQL's own FATAL reaches the query, then the close: no second error of the pooler's (backend-terminated.test.ts).
    await expect(q).rejects.toMatchObject({ code: '57P01' });
    await seen.closed;
    expect(errorsIn(seen.bytes())).toEqual([
      { S: 'FATAL', C: '57P01', M: 'terminating connection due to administrator command' },
    ]);
    await c.end().catch(() => undefined);
    await stillServes();
  });

  it('a client that vanishes mid-query takes its server out of the pool; the others carry on', async () => {
    const c = client();
    await c.connect();
    c.on('error', () => undefined);
    const pid = (await c.query('select pg_backend_pid() as pid')).rows[0].pid as number;
    void c.query('select pg_sleep(30)').catch(() => undefined);
    for (let i = 0; i < 200 && !tp.pooler.show('SERVERS').rows.some((r) => r[1] === pid && r[6] === 'active'); i++)
      await new Promise((r) => setTimeout(r, 10));
    (c as unknown as { connection: { stream: net.Socket } }).connection.stream.destroy();
    // The server is mid-query: it must not go back to the pool.
    for (let i = 0; i < 200 && tp.pooler.show('SERVERS').rows.some((r) => r[1] === pid); i++)
      await new Promise((r) => setTimeout(r, 10));
    expect(tp.pooler.show('SERVERS').rows.some((r) => r[1] === pid)).toBe(false);
    await stillServes();
  });

  it('PostgreSQL down: clients get an error; back up: the pool recovers by itself', async () => {
    await db.stop();
    const c = client();
    c.on('error', () => undefined);
    const failed = await c
      .connect()
      .then(() => c.query('select 1'))
      .then(
        () => null,
        (e: unknown) => e,
      );
    expect(failed).toMatchObject({
      severity: 'FATAL',
      code: '08006',
      message: expect.stringMatching(/^could not connect to server .*ECONNREFUSED/),
    });
    await c.end().catch(() => undefined);
    await db.restart();
    // Within server_login_retry of the failure clients get the cached error at once; then the pool connects again.
    const deadline = Date.now() + 20_000;
    for (;;) {
      const err = await stillServes().then(
        () => null,
        (e: Error) => e,
      );
      if (!err) break;
      expect(err.message).toMatch(/server login has been failing, cached error: .*\(server_login_retry\)/);
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 100));
    }
  });
});
