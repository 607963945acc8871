// Logins the native relay runs itself (native/relay-auth.cc): md5 and SCRAM-SHA-256 through real clients, the same
// greeting and errors as the JavaScript login, malformed and abandoned exchanges, RELOAD, pgbench -C, cancel.
// Pooler.counters says who ran each login, so a test fails when the relay's exchange is silently bypassed. On the
// JavaScript relay project every login runs in JavaScript and the same behaviour is checked there.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_PASSWORD, poolToml, poolerToml, startTestPooler, type TestPooler } from '../../helpers/pooler.js';
import { startTestPostgres, type TestPostgres } from '../../helpers/postgres.js';
import { errorText, type Message } from '../../helpers/raw-pg.js';
import { wireMessage } from '../../helpers/wire.js';
import { writePasswordMessage, writeSASLInitialResponse, writeSASLResponse, writeStartupMessage } from '../../../src/protocol/writer.js';
import { ScramClient } from '../../../src/pooler/auth/scram.js';
import { nativeLoaded } from '../../../src/native/index.js';
import { toRows } from '../../../src/pooler/web/show-rows.js';

const run = promisify(execFile);
const nativeRelay = nativeLoaded && process.env.TIDEPOOL_NATIVE_RELAY !== '0';
let db: TestPostgres;
let tp: TestPooler;

/** Pool app (transaction mode): md5user with its md5 secret (the md5 exchange), scramuser with a plaintext password
 * (SCRAM, auth_type's default); appsession (session mode): md5user. */
function toml(): string {
  const md5Secret = db.sql(`select rolpassword from pg_authid where rolname = 'md5user'`).trim();
  return poolerToml(db, {
    pools: `${poolToml(db, 'app', '', [{ username: 'md5user', password: md5Secret }, { username: 'scramuser', password: 'scrampass' }])}
${poolToml(db, 'appsession', 'pool_mode = "session"', [{ username: 'md5user', password: md5Secret }])}`,
  });
}

beforeAll(async () => {
  db = await startTestPostgres();
  tp = await startTestPooler(toml());
  // The first login of each pool runs in JavaScript: it waits for a server, whose parameters make the greeting.
  for (const user of ['md5user', 'scramuser']) {
    const c = client(user);
    await c.connect();
    await c.end();
  }
});

afterAll(async () => {
  await tp?.stop();
  await db?.cleanup();
});

const PASSWORDS: Record<string, string> = { md5user: 'md5pass', scramuser: 'scrampass' };

function client(user: string, extra: Partial<pg.ClientConfig> = {}, p = tp): pg.Client {
  return new pg.Client({ host: '127.0.0.1', port: p.port, user, password: PASSWORDS[user], database: 'app', ...extra });
}

async function show(what: string, p = tp): Promise<Record<string, unknown>[]> {
  return toRows(p.pooler.show(what));
}

async function until(what: string, check: () => boolean | Promise<boolean>, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const loginClients = async (p = tp) => Number((await show('LISTS', p)).find((r) => r['list'] === 'login_clients')?.['items'] ?? -1);

/** Runs `body` and returns how many logins the native relay and JavaScript ran meanwhile. */
async function logins(body: () => Promise<void>, p = tp): Promise<{ native: number; js: number }> {
  const before = { ...p.pooler.counters };
  await body();
  return { native: p.pooler.counters.nativeLogins - before.nativeLogins, js: p.pooler.counters.jsLogins - before.jsLogins };
}

/** `n` logins on the native relay's path when it carries this pooler, else on JavaScript's. */
function expectPath(got: { native: number; js: number }, n: number, native = nativeRelay): void {
  expect(got).toEqual(native ? { native: n, js: 0 } : { native: 0, js: n });
}

/** A raw connection reading whole messages. */
async function raw(port = tp.port): Promise<{ socket: net.Socket; next(ms?: number): Promise<Message | 'closed'> }> {
  const socket = net.connect(port, '127.0.0.1');
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  let buf = Buffer.alloc(0);
  let closed = false;
  let wake: (() => void) | null = null;
  socket.on('data', (d: Buffer) => { buf = Buffer.concat([buf, d]); wake?.(); });
  socket.on('close', () => { closed = true; wake?.(); });
  socket.on('error', () => undefined);
  const whole = () => buf.length >= 5 && buf.length >= 1 + buf.readInt32BE(1);
  return {
    socket,
    async next(ms = 10_000) {
      const deadline = Date.now() + ms;
      while (!whole() && !closed) {
        if (Date.now() > deadline) throw new Error('no answer in time');
        await new Promise<void>((r) => { const t = setTimeout(r, 50); wake = () => { clearTimeout(t); wake = null; r(); }; });
      }
      if (!whole()) return 'closed';
      const m = buf.subarray(0, 1 + buf.readInt32BE(1));
      buf = buf.subarray(m.length);
      return { type: String.fromCharCode(m[0]!), raw: m };
    },
  };
}

const md5hex = (s: string | Buffer) => createHash('md5').update(s).digest('hex');

/** A raw md5 login: every message of the pooler's answer up to ReadyForQuery. */
async function rawMd5Login(port: number, password = 'md5pass'): Promise<Message[]> {
  const c = await raw(port);
  c.socket.write(writeStartupMessage({ user: 'md5user', database: 'app', application_name: 'raw-md5' }));
  const request = await c.next();
  if (request === 'closed' || request.type !== 'R' || request.raw.readInt32BE(5) !== 5) throw new Error('no md5 request');
  const salt = request.raw.subarray(9, 13);
  c.socket.write(writePasswordMessage('md5' + md5hex(Buffer.concat([Buffer.from(md5hex(password + 'md5user')), salt]))));
  const out: Message[] = [];
  for (;;) {
    const m = await c.next();
    if (m === 'closed') break;
    out.push(m);
    if (m.type === 'Z' || m.type === 'E') break;
  }
  c.socket.destroy();
  return out;
}

/** A SCRAM login by hand up to the server-first-message: the connection, the client and the server's message. */
async function scramStarted(): Promise<{ c: Awaited<ReturnType<typeof raw>>; scram: ScramClient; serverFirst: string }> {
  const c = await raw();
  c.socket.write(writeStartupMessage({ user: 'scramuser', database: 'app' }));
  const sasl = await c.next();
  expect(sasl !== 'closed' && sasl.raw.readInt32BE(5)).toBe(10);
  const scram = new ScramClient({ password: 'scrampass' });
  c.socket.write(writeSASLInitialResponse('SCRAM-SHA-256', scram.first()));
  const cont = await c.next();
  if (cont === 'closed' || cont.raw.readInt32BE(5) !== 11) throw new Error('no SASLContinue');
  return { c, scram, serverFirst: cont.raw.subarray(9).toString('utf8') };
}

/** The error a raw connection gets, then its close. */
async function fatal(c: Awaited<ReturnType<typeof raw>>): Promise<string> {
  const m = await c.next();
  expect(m !== 'closed' && m.type).toBe('E');
  expect(await c.next()).toBe('closed');
  return m === 'closed' ? '' : errorText(m);
}

describe('logins run by the native relay', () => {
  it('md5 and SCRAM through node-postgres, postgres.js and psql run in the relay, and their sessions work', async () => {
    const got = await logins(async () => {
      for (let i = 0; i < 20; i++) {
        const c = client(i % 2 ? 'md5user' : 'scramuser', { application_name: `app-${i % 3}` });
        await c.connect();
        expect((await c.query('select $1::int * 2 as n, current_setting($2) as app', [i, 'application_name'])).rows[0]).toEqual({ n: i * 2, app: `app-${i % 3}` });
        await c.end();
      }
      for (const user of ['md5user', 'scramuser']) {
        const sql = postgres({ host: '127.0.0.1', port: tp.port, user, password: PASSWORDS[user], database: 'app', max: 1, onnotice: () => undefined });
        expect((await sql`select 5 as n`)[0]).toEqual({ n: 5 });
        await sql.end();
      }
    });
    expectPath(got, 22);
    // psql sends client_encoding in its startup packet: that login is JavaScript's, with the same outcome.
    const psql = await logins(async () => {
      const out = await run('psql', ['-h', '127.0.0.1', '-p', String(tp.port), '-U', 'scramuser', '-d', 'app', '-Atc', 'select 6 * 7'], { env: { ...process.env, PGPASSWORD: 'scrampass' } });
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
      expectPath(await logins(async () => { js = await rawMd5Login(off.port); }, off), 1, false);
      let native: Message[] = [];
      expectPath(await logins(async () => { native = await rawMd5Login(tp.port); }), 1);
      const shape = (ms: Message[]) => ms.map((m) => (m.type === 'K' ? `K${m.raw.length}` : m.raw.toString('hex')));
      expect(shape(native)).toEqual(shape(js));
      expect(native.map((m) => m.type).join('')).toMatch(/^RS+KZ$/);
    } finally {
      await off.stop();
    }
  });

  it('a wrong password gets 28P01 for md5 and SCRAM; an unknown user and database get JavaScript\'s errors', async () => {
    for (const user of ['md5user', 'scramuser']) {
      const err = await client(user, { password: 'wrong' }).connect().then(() => null, (e: { code?: string; message: string }) => e);
      expect(err?.code, user).toBe('28P01');
      expect(err?.message).toBe(`password authentication failed for user "${user}"`);
    }
    const md5Raw = await rawMd5Login(tp.port, 'wrong');
    expect(md5Raw.length).toBe(1);
    expect(errorText(md5Raw[0]!)).toBe('28P01 password authentication failed for user "md5user"');
    const unknown = await client('md5user', { user: 'nobody' }).connect().then(() => null, (e: { code?: string; message: string }) => e);
    expect(unknown?.code).toBe('28000');
    expect(unknown?.message).toContain('no such user "nobody"');
    const nodb = await client('md5user', { database: 'nodb' }).connect().then(() => null, (e: { code?: string; message: string }) => e);
    expect(nodb?.code).toBe('3D000');
    const events = await show('EVENTS');
    expect(events.some((e) => e['kind'] === 'login_failure' && /password authentication failed for user "scramuser" \(SQLSTATE 28P01\)/.test(String(e['message'])))).toBe(true);
    await until('nobody in login', async () => (await loginClients()) === 0);
  });

  it('malformed SCRAM and password messages get 08P01 with a clear message; everyone else is served', async () => {
    const keep = client('scramuser');
    await keep.connect();
    const errorsBefore = tp.pooler.counters.errors;
    // client-first-message that is not one.
    let c = await raw();
    c.socket.write(writeStartupMessage({ user: 'scramuser', database: 'app' }));
    await c.next();
    c.socket.write(writeSASLInitialResponse('SCRAM-SHA-256', 'garbage'));
    expect(await fatal(c)).toBe('08P01 malformed authentication message: malformed SCRAM client-first-message');
    // client-first-message without a nonce; channel binding.
    for (const [data, why] of [['n,,n=*', 'SCRAM client-first-message has no nonce'], ['p=tls-server-end-point,,n=*,r=abc', 'SCRAM channel binding is not supported']]) {
      c = await raw();
      c.socket.write(writeStartupMessage({ user: 'scramuser', database: 'app' }));
      await c.next();
      c.socket.write(writeSASLInitialResponse('SCRAM-SHA-256', data!));
      expect(await fatal(c)).toBe(`08P01 malformed authentication message: ${why}`);
    }
    // Another mechanism.
    c = await raw();
    c.socket.write(writeStartupMessage({ user: 'scramuser', database: 'app' }));
    await c.next();
    c.socket.write(writeSASLInitialResponse('SCRAM-SHA-1', 'n,,n=*,r=abc'));
    expect(await fatal(c)).toBe('28000 unsupported SASL mechanism "SCRAM-SHA-1"');
    // client-final-message: another nonce, a proof that is not base64, one that is short.
    for (const mangle of [(f: string) => f.replace(/r=[^,]*/, 'r=other'), (f: string) => f.replace(/p=.*/, 'p=not*base64'), (f: string) => f.replace(/p=.*/, 'p=AAAA')]) {
      const s = await scramStarted();
      s.c.socket.write(writeSASLResponse(mangle(s.scram.final(s.serverFirst))));
      expect(await fatal(s.c)).toBe('08P01 malformed authentication message: malformed SCRAM client-final-message');
    }
    // A proof of the wrong password is a wrong password.
    const wrong = await scramStarted();
    const final = wrong.scram.final(wrong.serverFirst);
    const proof = Buffer.from(final.slice(final.lastIndexOf(',p=') + 3), 'base64');
    proof[0] ^= 1;
    wrong.c.socket.write(writeSASLResponse(`${final.slice(0, final.lastIndexOf(',p='))},p=${proof.toString('base64')}`));
    expect(await fatal(wrong.c)).toBe('28P01 password authentication failed for user "scramuser"');
    // A message other than a password, an md5 answer without its terminator, a length that cannot be.
    c = await raw();
    c.socket.write(writeStartupMessage({ user: 'md5user', database: 'app' }));
    await c.next();
    c.socket.write(wireMessage('Q', 'select 1\0'));
    expect(await fatal(c)).toBe('08P01 expected a password message, got "Q"');
    c = await raw();
    c.socket.write(writeStartupMessage({ user: 'md5user', database: 'app' }));
    await c.next();
    c.socket.write(wireMessage('p', 'md5abc'));
    expect(await fatal(c)).toBe('08P01 malformed authentication message: string not terminated');
    c = await raw();
    c.socket.write(writeStartupMessage({ user: 'md5user', database: 'app' }));
    await c.next();
    c.socket.write(Buffer.from([0x70, 0x7f, 0xff, 0xff, 0xff]));
    expect(await fatal(c)).toBe(`08P01 invalid message length ${0x7fffffff} during authentication`);
    expect(tp.pooler.counters.errors - errorsBefore).toBe(11);
    expect((await keep.query('select 8 as n')).rows[0]).toEqual({ n: 8 });
    await keep.end();
    await until('nobody in login', async () => (await loginClients()) === 0);
  });

  it('clients that leave mid-exchange or send Terminate are counted and leave nothing behind', async () => {
    const before = tp.pooler.counters.connections;
    const s = await scramStarted();
    const m = await raw();
    m.socket.write(writeStartupMessage({ user: 'md5user', database: 'app' }));
    await m.next();
    const t = await raw();
    t.socket.write(writeStartupMessage({ user: 'md5user', database: 'app' }));
    await t.next();
    await until('three logins under way', async () => (await loginClients()) === 3);
    s.c.socket.destroy();
    m.socket.destroy();
    t.socket.write(wireMessage('X', ''));
    expect(await t.next()).toBe('closed');
    await until('nobody in login', async () => (await loginClients()) === 0);
    expect(tp.pooler.counters.connections - before).toBe(3);
    const ok = client('md5user');
    await ok.connect();
    await ok.end();
  });

  it('RELOAD with changed passwords: the next login takes the new one, the old one gets 28P01', async () => {
    const scramSecret = db.sql(`select rolpassword from pg_authid where rolname = 'scramuser'`).trim();
    const reloadToml = (md5: string, scram: string) => poolerToml(db, {
      general: 'auth_type = "md5"',
      pools: `
[pools.app]
server_host = "${db.host}"
server_port = ${db.port}

[[pools.app.users]]
username = "md5user"
password = "${md5}"
server_password = "md5pass"

[[pools.app.users]]
username = "scramuser"
password = "${scram}"
`,
    });
    const p = await startTestPooler(reloadToml('md5pass', scramSecret));
    try {
      // The pool logs in to PostgreSQL with the ClientKey the first client proved (the config has only the secret).
      for (const user of ['md5user', 'scramuser']) {
        const c = client(user, {}, p);
        await c.connect();
        await c.end();
      }
      const first = await logins(async () => {
        for (const user of ['md5user', 'scramuser']) {
          const c = client(user, {}, p);
          await c.connect();
          expect((await c.query('select current_user as u')).rows[0]).toEqual({ u: user });
          await c.end();
        }
      }, p);
      expectPath(first, 2);
      p.writeConfig(reloadToml('md5new', scramSecret));
      await p.pooler.reload();
      const old = await client('md5user', {}, p).connect().then(() => null, (e: { code?: string }) => e.code);
      expect(old).toBe('28P01');
      const again = await logins(async () => {
        const c = client('md5user', { password: 'md5new' }, p);
        await c.connect();
        expect((await c.query('select 1 as n')).rows[0]).toEqual({ n: 1 });
        await c.end();
      }, p);
      expectPath(again, 1);
    } finally {
      await p.stop();
    }
  });

  it('pgbench -C with SCRAM: every transaction, no error line, each login in the relay, SHOW STATS counts them', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'tidepool-native-login-'));
    const script = path.join(dir, 'select.sql');
    writeFileSync(script, 'select 1;\n');
    const statsBefore = Number((await show('STATS')).find((r) => r['database'] === 'app' && r['user'] === 'scramuser')?.['total_xact_count'] ?? 0);
    try {
      const got = await logins(async () => {
        const r = await run('pgbench', ['-n', '-C', '-c', '10', '-j', '2', '-t', '50', '-f', script, '-h', '127.0.0.1', '-p', String(tp.port), '-U', 'scramuser', 'app'], { env: { ...process.env, PGPASSWORD: 'scrampass' } })
          .catch((e: { stdout: string; stderr: string }) => e);
        const verdict = r.stdout + r.stderr;
        expect(verdict).toContain('number of transactions actually processed: 500/500');
        expect(verdict).toMatch(/number of failed transactions: 0/);
        expect(verdict).not.toMatch(/\berror\b|aborted/i);
      });
      // pgbench logs in once more before its run (501 logins).
      expect(nativeRelay ? got.js : got.native).toBe(0);
      expect(nativeRelay ? got.native : got.js).toBeGreaterThanOrEqual(500);
      await until('the transactions counted', async () => Number((await show('STATS')).find((r) => r['database'] === 'app' && r['user'] === 'scramuser')?.['total_xact_count'] ?? 0) - statsBefore >= 500);
      await until('nobody left', async () => (await loginClients()) === 0 && (await show('CLIENTS')).length === 0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);

  it('SHOW CLIENTS lists a natively logged-in client, a cancel reaches its query, and the admin console is JavaScript\'s', async () => {
    const c = client('md5user', { application_name: 'cancel-me' });
    const got = await logins(() => c.connect());
    expectPath(got, 1);
    const local = (c as unknown as { connection: { stream: net.Socket } }).connection.stream.localPort;
    const row = (await show('CLIENTS')).find((r) => r['addr'] === `127.0.0.1:${local}`);
    expect(row?.['user']).toBe('md5user');
    expect(row?.['database']).toBe('app');
    expect(row?.['application_name']).toBe('cancel-me');
    const slow = c.query('select pg_sleep(30)').then(() => 'finished', (e: { code?: string }) => e.code);
    await until('the sleep runs', async () => (await show('CLIENTS')).some((r) => r['state'] === 'active'));
    const canceller = client('md5user');
    (canceller as unknown as { cancel(target: pg.Client, q: unknown): void }).cancel(c, (c as unknown as { activeQuery: unknown }).activeQuery);
    expect(await slow).toBe('57014');
    await c.end();
    const admin = await logins(async () => {
      const a = new pg.Client({ host: '127.0.0.1', port: tp.port, user: 'admin', password: ADMIN_PASSWORD, database: 'tidepool' });
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
});
