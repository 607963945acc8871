// Logins on the connection the native relay accepted itself (no Node socket): many short logins with pgbench -C and
// real drivers, bad passwords, clients that leave mid-login, garbage startup packets, max_connections, SSLRequest.
// On the JavaScript relay project the same checks run through net.Server's accepts.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_PASSWORD, poolerToml, startTestPooler, type TestPooler } from '../../helpers/pooler.js';
import { startTestPostgres, type TestPostgres } from '../../helpers/postgres.js';
import { makeTestCerts, type TestCerts } from '../../helpers/tls-certs.js';
import { errorText, type Message } from '../../helpers/raw-pg.js';
import { writeStartupMessage } from '../../../src/protocol/writer.js';
import { nativeLoaded } from '../../../src/native/index.js';
import { toRows } from '../../../src/pooler/web/show-rows.js';
import { NativeRelay } from '../../../src/pooler/relay/native.js';

const run = promisify(execFile);
const nativeRelay = nativeLoaded && process.env.TIDEPOOL_NATIVE_RELAY !== '0';
let db: TestPostgres;
let tp: TestPooler;
let certs: TestCerts;

beforeAll(async () => {
  db = await startTestPostgres();
  certs = makeTestCerts();
  tp = await startTestPooler(poolerToml(db, { general: 'max_connections = 12' }));
});

afterAll(async () => {
  await tp?.stop();
  await db?.cleanup();
  certs?.cleanup();
});

const admin = () =>
  new pg.Client({ host: '127.0.0.1', port: tp.port, user: 'admin', password: ADMIN_PASSWORD, database: 'tidepool' });

async function show(what: string, p = tp): Promise<Record<string, unknown>[]> {
  return toRows(p.pooler.show(what));
}

/** Clients in login (SHOW LISTS login_clients) and logged-in clients. */
async function counts(p = tp): Promise<{ login: number; clients: number }> {
  const lists = await show('LISTS', p);
  const login = Number(lists.find((r) => r['list'] === 'login_clients')?.['items'] ?? -1);
  return { login, clients: (await show('CLIENTS', p)).length };
}

async function until(what: string, check: () => boolean | Promise<boolean>, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Reads whole messages from a raw socket. */
function reader(socket: net.Socket): {
  next(ms?: number): Promise<Message | 'closed'>;
  byte(ms?: number): Promise<string | 'closed'>;
} {
  let buf = Buffer.alloc(0);
  let closed = false;
  let wake: (() => void) | null = null;
  socket.on('data', (d: Buffer) => {
    buf = Buffer.concat([buf, d]);
    wake?.();
  });
  socket.on('close', () => {
    closed = true;
    wake?.();
  });
  socket.on('error', () => undefined);
  const wait = async (ready: () => boolean, ms: number) => {
    const deadline = Date.now() + ms;
    while (!ready() && !closed) {
      if (Date.now() > deadline) throw new Error('no answer in time');
      await new Promise<void>((r) => {
        const t = setTimeout(r, 50);
        wake = () => {
          clearTimeout(t);
          wake = null;
          r();
        };
      });
    }
  };
  return {
    async next(ms = 10_000) {
      await wait(() => buf.length >= 5 && buf.length >= 1 + buf.readInt32BE(1), ms);
      if (!(buf.length >= 5 && buf.length >= 1 + buf.readInt32BE(1))) return 'closed';
      const raw = buf.subarray(0, 1 + buf.readInt32BE(1));
      buf = buf.subarray(raw.length);
      return { type: String.fromCharCode(raw[0]!), raw };
    },
    async byte(ms = 10_000) {
      await wait(() => buf.length >= 1, ms);
      if (buf.length === 0) return 'closed';
      const b = String.fromCharCode(buf[0]!);
      buf = buf.subarray(1);
      return b;
    },
  };
}

async function rawSocket(port = tp.port): Promise<net.Socket> {
  const s = net.connect(port, '127.0.0.1');
  await new Promise<void>((resolve, reject) => s.once('connect', resolve).once('error', reject));
  return s;
}

const SSL_REQUEST = Buffer.from([0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f]);

describe('logins on connections the relay accepted', () => {
  it('the native relay accepts the clients itself when it carries every pool', () => {
    expect(tp.pooler.acceptsNatively).toBe(nativeRelay);
  });

  it('every accepted client has TCP keepalive on (the relay sets it once, on the listening socket, where Linux lets it)', async () => {
    const sockets = await Promise.all(
      [0, 1, 2].map(
        () =>
          new Promise<net.Socket>((resolve, reject) => {
            const s = net.connect(tp.port, '127.0.0.1', () => resolve(s)).once('error', reject);
          }),
      ),
    );
    // The first bytes of a startup packet: tcp_defer_accept (the default) keeps a client that has said nothing in the
    // kernel, unaccepted.
    for (const s of sockets) s.write(Buffer.from([0, 0, 0, 8]));
    try {
      // The pooler's side of each connection: its keepalive timer shows in ss's -o column.
      await until('three accepted sockets', async () => {
        const { stdout } = await run('ss', ['-tno', 'state', 'established', `( sport = :${tp.port} )`]);
        const lines = stdout.split('\n').filter((l) => l.includes(`:${tp.port} `));
        return lines.length === 3 && lines.every((l) => l.includes('timer:(keepalive,'));
      });
    } finally {
      for (const s of sockets) s.destroy();
    }
  });

  it('pgbench -C: 1 000 SCRAM logins from 10 clients, every transaction, no error line, nobody left in login', async () => {
    const script = path.join(mkdtempSync(path.join(os.tmpdir(), 'tidepool-accept-')), 'select.sql');
    writeFileSync(script, 'select 1;\n');
    const env = { ...process.env, PGPASSWORD: 'scrampass' };
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
        '100',
        '-f',
        script,
        '-h',
        '127.0.0.1',
        '-p',
        String(tp.port),
        '-U',
        'scramuser',
        'app',
      ],
      { env },
    ).catch((e: { stdout: string; stderr: string }) => e);
    const verdict = r.stdout + r.stderr;
    expect(verdict).toContain('number of transactions actually processed: 1000/1000');
    expect(verdict).toMatch(/number of failed transactions: 0/);
    expect(verdict).not.toMatch(/\berror\b|aborted/i);
    await until('every login gone', async () => (await counts()).login === 0 && (await counts()).clients === 0);
    rmSync(path.dirname(script), { recursive: true, force: true });
  }, 120_000);

  it('200 logins one after another: each on a recycled descriptor number, with its poll handle reused', async () => {
    const before = NativeRelay.get()?.pollHandles ?? 0;
    for (let i = 0; i < 200; i++) {
      const c = new pg.Client({
        host: '127.0.0.1',
        port: tp.port,
        user: 'md5user',
        password: 'md5pass',
        database: 'app',
      });
      await c.connect();
      expect((await c.query('select $1::int * 3 as n', [i])).rows[0]).toEqual({ n: i * 3 });
      await c.end();
    }
    await until('every login gone', async () => (await counts()).clients === 0);
    // Without the reuse every login makes a handle (200); with it, only descriptor numbers never seen before do.
    if (nativeRelay) expect((NativeRelay.get()?.pollHandles ?? 0) - before).toBeLessThan(20);
  });

  it('node-postgres and postgres.js: 200 short logins each (md5 and SCRAM), with the right addresses in SHOW CLIENTS', async () => {
    for (let i = 0; i < 100; i++) {
      const user = i % 2 === 0 ? 'md5user' : 'scramuser';
      const c = new pg.Client({
        host: '127.0.0.1',
        port: tp.port,
        user,
        password: user === 'md5user' ? 'md5pass' : 'scrampass',
        database: 'app',
      });
      await c.connect();
      expect((await c.query('select $1::int + 1 as n', [i])).rows[0]).toEqual({ n: i + 1 });
      if (i === 0) {
        const local = (c as unknown as { connection: { stream: net.Socket } }).connection.stream.localPort;
        const rows = await show('CLIENTS');
        expect(
          rows.some((r) => r['addr'] === `127.0.0.1:${local}`),
          JSON.stringify(rows),
        ).toBe(true);
      }
      await c.end();
    }
    for (let i = 0; i < 100; i++) {
      const user = i % 2 === 0 ? 'scramuser' : 'md5user';
      const sql = postgres({
        host: '127.0.0.1',
        port: tp.port,
        user,
        password: user === 'md5user' ? 'md5pass' : 'scrampass',
        database: 'app',
        max: 1,
        onnotice: () => undefined,
      });
      expect((await sql`select ${i}::int as n`)[0]).toEqual({ n: i });
      await sql.end();
    }
    await until('every login gone', async () => (await counts()).clients === 0);
  });

  it('a wrong password gets 28P01 (md5 and SCRAM), and the pooler serves the next login', async () => {
    for (const user of ['md5user', 'scramuser']) {
      const c = new pg.Client({ host: '127.0.0.1', port: tp.port, user, password: 'wrong', database: 'app' });
      const err = await c.connect().then(
        () => null,
        (e: { code?: string; message: string }) => e,
      );
      expect(err?.code, user).toBe('28P01');
      expect(err?.message).toContain(`password authentication failed for user "${user}"`);
    }
    const ok = new pg.Client({
      host: '127.0.0.1',
      port: tp.port,
      user: 'scramuser',
      password: 'scrampass',
      database: 'app',
    });
    await ok.connect();
    expect((await ok.query('select 2 as n')).rows[0]).toEqual({ n: 2 });
    await ok.end();
    await until('nobody in login', async () => (await counts()).login === 0);
  });

  it('clients that leave mid-login (after part of the startup packet, after the password request, mid-SCRAM) leave nothing behind', async () => {
    const a = await rawSocket();
    a.write(writeStartupMessage({ user: 'md5user', database: 'app' }).subarray(0, 7));
    const b = await rawSocket();
    const rb = reader(b);
    b.write(writeStartupMessage({ user: 'md5user', database: 'app' }));
    const request = await rb.next();
    expect(request !== 'closed' && request.type).toBe('R');
    const c = await rawSocket();
    const rc = reader(c);
    c.write(writeStartupMessage({ user: 'scramuser', database: 'app' }));
    const sasl = await rc.next();
    expect(sasl !== 'closed' && sasl.raw.readInt32BE(5)).toBe(10);
    await until('three clients in login', async () => (await counts()).login === 3);
    a.destroy();
    b.destroy();
    c.destroy();
    await until('nobody in login', async () => (await counts()).login === 0);
    const ok = new pg.Client({
      host: '127.0.0.1',
      port: tp.port,
      user: 'md5user',
      password: 'md5pass',
      database: 'app',
    });
    await ok.connect();
    await ok.end();
  });

  it('garbage startup packets get 08P01 and a close; everyone else is served', async () => {
    const cases: [string, Buffer, string][] = [
      ['a length of 3', Buffer.from([0, 0, 0, 3, 1, 2, 3, 4]), 'invalid startup packet length 3'],
      ['a length past 10 000', Buffer.from([0, 1, 0, 0, 0, 3, 0, 0]), 'invalid startup packet length 65536'],
      ['an unknown protocol', Buffer.from([0, 0, 0, 9, 0, 9, 0, 0, 0]), ''],
      ['random bytes', Buffer.from('GET / HTTP/1.1\r\nHost: x\r\n\r\n'), ''],
    ];
    const keep = new pg.Client({
      host: '127.0.0.1',
      port: tp.port,
      user: 'md5user',
      password: 'md5pass',
      database: 'app',
    });
    await keep.connect();
    for (const [what, bytes, text] of cases) {
      const s = await rawSocket();
      const r = reader(s);
      s.write(bytes);
      const m = await r.next();
      expect(m !== 'closed' && m.type, what).toBe('E');
      if (m !== 'closed') {
        expect(errorText(m), what).toMatch(/^08P01 /);
        if (text) expect(errorText(m), what).toContain(text);
      }
      expect(await r.next(), what).toBe('closed');
    }
    expect((await keep.query('select 7 as n')).rows[0]).toEqual({ n: 7 });
    await keep.end();
    await until('nobody in login', async () => (await counts()).login === 0);
  });

  it('max_connections reached: the next login gets 53300, and a place freed is taken again', async () => {
    await until('no clients', async () => (await counts()).clients === 0);
    const held: pg.Client[] = [];
    try {
      for (let i = 0; i < 12; i++) {
        const c = new pg.Client({
          host: '127.0.0.1',
          port: tp.port,
          user: 'md5user',
          password: 'md5pass',
          database: 'app',
        });
        await c.connect();
        held.push(c);
      }
      const over = new pg.Client({
        host: '127.0.0.1',
        port: tp.port,
        user: 'md5user',
        password: 'md5pass',
        database: 'app',
      });
      const err = await over.connect().then(
        () => null,
        (e: { code?: string; message: string }) => e,
      );
      expect(err?.code).toBe('53300');
      expect(err?.message).toContain('max_connections = 12');
      await held.pop()!.end();
      await until('a place free', async () => (await counts()).clients === 11);
      const again = new pg.Client({
        host: '127.0.0.1',
        port: tp.port,
        user: 'md5user',
        password: 'md5pass',
        database: 'app',
      });
      await again.connect();
      held.push(again);
    } finally {
      await Promise.all(held.map((c) => c.end()));
    }
  });

  it('client_tls_sslmode disable: an SSLRequest is answered N and the login goes on in plaintext', async () => {
    const s = await rawSocket();
    const r = reader(s);
    s.write(SSL_REQUEST);
    expect(await r.byte()).toBe('N');
    s.write(writeStartupMessage({ user: 'md5user', database: 'app' }));
    const m = await r.next();
    expect(m !== 'closed' && m.type).toBe('R');
    s.destroy();
    const env = { ...process.env, PGPASSWORD: 'md5pass', PGSSLMODE: 'prefer' };
    const out = await run(
      'psql',
      ['-h', '127.0.0.1', '-p', String(tp.port), '-U', 'md5user', '-d', 'app', '-Atc', 'select 41 + 1'],
      { env },
    );
    expect(out.stdout.trim()).toBe('42');
    const refused = await run(
      'psql',
      ['-h', '127.0.0.1', '-p', String(tp.port), '-U', 'md5user', '-d', 'app', '-Atc', 'select 1'],
      { env: { ...env, PGSSLMODE: 'require' } },
    ).then(
      () => 'connected',
      (e: { stderr: string }) => e.stderr,
    );
    expect(refused).toMatch(/does not support SSL|server does not support SSL/i);
  });

  it('client_tls_sslmode require: TLS logins go through (psql, node-postgres), plaintext ones get 28000', async () => {
    const tls = await startTestPooler(
      poolerToml(db, {
        general: `client_tls_sslmode = "require"\nclient_tls_key_file = "${certs.serverKey}"\nclient_tls_cert_file = "${certs.serverCert}"`,
      }),
    );
    try {
      expect(tls.pooler.acceptsNatively).toBe(nativeRelay);
      const env = { ...process.env, PGPASSWORD: 'scrampass', PGSSLMODE: 'require' };
      for (let i = 0; i < 20; i++) {
        const out = await run(
          'psql',
          ['-h', '127.0.0.1', '-p', String(tls.port), '-U', 'scramuser', '-d', 'app', '-Atc', `select ${i} * 2`],
          { env },
        );
        expect(out.stdout.trim()).toBe(String(i * 2));
      }
      const c = new pg.Client({
        host: '127.0.0.1',
        port: tls.port,
        user: 'md5user',
        password: 'md5pass',
        database: 'app',
        ssl: { rejectUnauthorized: false },
      });
      await c.connect();
      expect((await c.query('select 1 as one')).rows[0]).toEqual({ one: 1 });
      const rows = await show('CLIENTS', tls);
      expect(rows.some((r) => String(r['tls']).startsWith('TLSv1.'))).toBe(true);
      await c.end();
      const plain = new pg.Client({
        host: '127.0.0.1',
        port: tls.port,
        user: 'md5user',
        password: 'md5pass',
        database: 'app',
      });
      const err = await plain.connect().then(
        () => null,
        (e: { code?: string; message: string }) => e,
      );
      expect(err?.code).toBe('28000');
      expect(err?.message).toContain('SSL required');
      // Bytes after the SSLRequest and before the S are refused.
      const s = await rawSocket(tls.port);
      const r = reader(s);
      s.write(Buffer.concat([SSL_REQUEST, writeStartupMessage({ user: 'md5user', database: 'app' })]));
      const m = await r.next();
      expect(m !== 'closed' && errorText(m)).toContain('08P01 received unencrypted data after SSL request');
      await until('nobody in login', async () => (await counts(tls)).login === 0);
    } finally {
      await tls.stop();
    }
  });

  it('the admin console and a cancel work on natively accepted connections', async () => {
    const a = admin();
    await a.connect();
    expect((await a.query('SHOW LISTS')).rows.length).toBeGreaterThan(0);
    const c = new pg.Client({
      host: '127.0.0.1',
      port: tp.port,
      user: 'md5user',
      password: 'md5pass',
      database: 'app',
    });
    await c.connect();
    const slow = c.query('select pg_sleep(30)').then(
      () => 'finished',
      (e: { code?: string }) => e.code,
    );
    // On PostgreSQL itself: a client is active in SHOW CLIENTS from its checkout, before a session-parameter sync
    // query ahead of its own (the pooler forwards a cancel only while the client's query is in flight).
    await until(
      'the sleep runs',
      async () =>
        db
          .sql(`select count(*) from pg_stat_activity where state = 'active' and query = 'select pg_sleep(30)'`)
          .trim() === '1',
    );
    const canceller = new pg.Client({
      host: '127.0.0.1',
      port: tp.port,
      user: 'md5user',
      password: 'md5pass',
      database: 'app',
    });
    // node-postgres sends a CancelRequest on a new connection with the key from BackendKeyData.
    (canceller as unknown as { cancel(target: pg.Client, q: unknown): void }).cancel(
      c,
      (c as unknown as { activeQuery: unknown }).activeQuery,
    );
    expect(await slow).toBe('57014');
    await c.end();
    await a.end();
  });
});
