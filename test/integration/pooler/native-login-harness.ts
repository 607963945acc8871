// The native-login tests' harness: a PostgreSQL and a pooler whose pool app (transaction mode) takes md5user by md5 and scramuser by SCRAM, logins counted by who ran them, raw md5 and SCRAM exchanges.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import net from 'node:net';
import { promisify } from 'node:util';
import pg from 'pg';
import { afterAll, beforeAll, expect } from 'vitest';
import { appPoolToml, poolToml, poolerToml, startTestPooler, type TestPooler } from '../../helpers/pooler.js';
import { startTestPostgres, type TestPostgres } from '../../helpers/postgres.js';
import { errorText, type Message } from '../../helpers/raw-pg.js';
import { writePasswordMessage, writeSASLInitialResponse, writeStartupMessage } from '../../../src/protocol/writer.js';
import { ScramClient } from '../../../src/pooler/auth/scram.js';
import { nativeLoaded } from '../../../src/native/index.js';
import { toRows } from '../../../src/pooler/web/show-rows.js';

export const run = promisify(execFile);
export const nativeRelay = nativeLoaded && process.env.TIDEPOOL_NATIVE_RELAY !== '0';

/** The test file's PostgreSQL and pooler, set before its tests. */
export interface NativeLoginEnv {
  db: TestPostgres;
  tp: TestPooler;
}

const env = {} as NativeLoginEnv;

/** Pool app (transaction mode): md5user with its md5 secret (the md5 exchange), scramuser with a plaintext password
 * (SCRAM, auth_type's default); appsession (session mode): md5user. */
export function toml(general?: string): string {
  const md5Secret = env.db.sql(`select rolpassword from pg_authid where rolname = 'md5user'`).trim();
  return poolerToml(env.db, {
    ...(general ? { general } : {}),
    pools: `${poolToml(env.db, 'app', '', [
      { username: 'md5user', password: md5Secret },
      { username: 'scramuser', password: 'scrampass' },
    ])}
${poolToml(env.db, 'appsession', 'pool_mode = "session"', [{ username: 'md5user', password: md5Secret }])}`,
  });
}

/** Starts the file's PostgreSQL and pooler before its tests (each pool's first login done), stops them after. */
export function useNativeLoginPooler(): NativeLoginEnv {
  beforeAll(async () => {
    env.db = await startTestPostgres();
    env.tp = await startTestPooler(toml());
    // The first login of each pool runs in JavaScript: it waits for a server, whose parameters make the greeting.
    for (const user of ['md5user', 'scramuser']) {
      const c = client(user);
      await c.connect();
      await c.end();
    }
  });

  afterAll(async () => {
    await env.tp?.stop();
    await env.db?.cleanup();
  });
  return env;
}

/** A pooler whose pool app has one server, held in a transaction by `blocker` (application_name `app`): a login
 * meanwhile finds no idle server (the native relay holds it). The pool's first login runs in JavaScript first (its
 * server's parameters make the relay's greeting). `extra`: more pooler TOML (e.g. a [web] section). */
export async function startBlockedPool(
  db: TestPostgres,
  app: string,
  extra?: string,
): Promise<{ tp: TestPooler; blocker: pg.Client }> {
  const tp = await startTestPooler(poolerToml(db, { pools: appPoolToml(db, 1), ...(extra ? { extra } : {}) }));
  const first = client('md5user', {}, tp);
  await first.connect();
  await first.query('select 1');
  await first.end();
  const blocker = client('md5user', { application_name: app }, tp);
  blocker.on('error', () => undefined);
  await blocker.connect();
  await blocker.query('BEGIN');
  await blocker.query('select 1');
  return { tp, blocker };
}

export const PASSWORDS: Record<string, string> = { md5user: 'md5pass', scramuser: 'scrampass' };

export function client(user: string, extra: Partial<pg.ClientConfig> = {}, p = env.tp): pg.Client {
  return new pg.Client({ host: '127.0.0.1', port: p.port, user, password: PASSWORDS[user], database: 'app', ...extra });
}

export async function show(what: string, p = env.tp): Promise<Record<string, unknown>[]> {
  return toRows(p.pooler.show(what));
}

export async function until(what: string, check: () => boolean | Promise<boolean>, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

export const loginClients = async (p = env.tp) =>
  Number((await show('LISTS', p)).find((r) => r['list'] === 'login_clients')?.['items'] ?? -1);

/** Runs `body` and returns how many logins the native relay and JavaScript ran meanwhile (the native ones include
 * relay-only logins that left unreported, native/relay-lend.cc). */
export async function logins(body: () => Promise<void>, p = env.tp): Promise<{ native: number; js: number }> {
  const before = { ...p.pooler.counters };
  const quietBefore = p.pooler.nativeLogins.unreported;
  await body();
  const quiet = p.pooler.nativeLogins.unreported - quietBefore;
  return {
    native: p.pooler.counters.nativeLogins - before.nativeLogins + quiet,
    js: p.pooler.counters.jsLogins - before.jsLogins,
  };
}

/** `n` logins on the native relay's path when it carries this pooler, else on JavaScript's. */
export function expectPath(got: { native: number; js: number }, n: number, native = nativeRelay): void {
  expect(got).toEqual(native ? { native: n, js: 0 } : { native: 0, js: n });
}

/** A raw connection reading whole messages. */
export async function raw(
  port = env.tp.port,
): Promise<{ socket: net.Socket; next(ms?: number): Promise<Message | 'closed'> }> {
  const socket = net.connect(port, '127.0.0.1');
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
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
  const whole = () => buf.length >= 5 && buf.length >= 1 + buf.readInt32BE(1);
  return {
    socket,
    async next(ms = 10_000) {
      const deadline = Date.now() + ms;
      while (!whole() && !closed) {
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
      if (!whole()) return 'closed';
      const m = buf.subarray(0, 1 + buf.readInt32BE(1));
      buf = buf.subarray(m.length);
      return { type: String.fromCharCode(m[0]!), raw: m };
    },
  };
}

const md5hex = (s: string | Buffer) => createHash('md5').update(s).digest('hex');

/** A raw md5 login: every message of the pooler's answer up to ReadyForQuery. */
export async function rawMd5Login(port: number, password = 'md5pass'): Promise<Message[]> {
  const c = await raw(port);
  c.socket.write(writeStartupMessage({ user: 'md5user', database: 'app', application_name: 'raw-md5' }));
  const request = await c.next();
  if (request === 'closed' || request.type !== 'R' || request.raw.readInt32BE(5) !== 5)
    throw new Error('no md5 request');
  const salt = request.raw.subarray(9, 13);
  c.socket.write(
    writePasswordMessage('md5' + md5hex(Buffer.concat([Buffer.from(md5hex(password + 'md5user')), salt]))),
  );
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
export async function scramStarted(): Promise<{
  c: Awaited<ReturnType<typeof raw>>;
  scram: ScramClient;
  serverFirst: string;
}> {
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
export async function fatal(c: Awaited<ReturnType<typeof raw>>): Promise<string> {
  const m = await c.next();
  expect(m !== 'closed' && m.type).toBe('E');
  expect(await c.next()).toBe('closed');
  return m === 'closed' ? '' : errorText(m);
}
