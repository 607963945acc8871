// Held logins (native/relay-lend.cc Hold): a native login that finds no idle server of its pool (none lent to the
// relay, none idle in JavaScript) is held in the relay with no server and not reported, so an idle client costs
// JavaScript nothing. Its first bytes, KILL, RELOAD, a cancel and a shutdown or takeover report it first, as a
// session (SHOW and the web API list it and leave it held: native-login-held-snapshot.test.ts); one that leaves
// unreported is still counted. On the JavaScript relay (and with lending off) nothing is held: the same checks hold
// for its sessions.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_PASSWORD, appPoolToml, poolerToml, startTestPooler, type TestPooler } from '../../helpers/pooler.js';
import {
  client,
  logins,
  nativeRelay,
  show,
  startBlockedPool,
  until,
  useNativeLoginPooler,
} from './native-login-harness.js';

const env = useNativeLoginPooler();
const holding = nativeRelay && process.env.TIDEPOOL_NATIVE_LEND !== '0';
let tp: TestPooler;
/** The pool's only server, in a transaction: a login meanwhile finds no idle server. */
let blocker: pg.Client;

const relayOnly = () => tp.pooler.nativeLogins.relayOnly;
const sessions = () => tp.pooler.clients.size;

beforeAll(async () => {
  ({ tp, blocker } = await startBlockedPool(env.db, 'held-blocker'));
});

afterAll(async () => {
  await blocker?.end().catch(() => undefined);
  await tp?.stop();
});

/** Logs in `app` while the only server is in the blocker's transaction: held on the native relay. */
async function heldClient(app: string): Promise<pg.Client> {
  const relayOnlyBefore = relayOnly();
  const sessionsBefore = sessions();
  const c = client('md5user', { application_name: app }, tp);
  c.on('error', () => undefined);
  await c.connect();
  if (holding) {
    expect(relayOnly()).toBe(relayOnlyBefore + 1);
    expect(sessions()).toBe(sessionsBefore);
  }
  return c;
}

async function admin(sql: string): Promise<void> {
  const a = new pg.Client({
    host: '127.0.0.1',
    port: tp.port,
    user: 'admin',
    password: ADMIN_PASSWORD,
    database: 'tidepool',
  });
  await a.connect();
  try {
    await a.query(sql);
  } finally {
    await a.end();
  }
}

describe('a login with no idle server is held in the native relay', () => {
  it('the pool tick and SHOW CLIENTS leave it held; SHOW CLIENTS lists it, and it goes on as a session', async () => {
    const c = await heldClient('held-show');
    try {
      // What the one-second tick does: parked and lent servers come back; a held login has none and stays held.
      const held = relayOnly();
      for (const p of tp.pooler.pools.values()) p.maintain(Date.now());
      if (holding) expect(relayOnly()).toBe(held);
      const local = (c as unknown as { connection: { stream: { localPort: number } } }).connection.stream.localPort;
      const row = (await show('CLIENTS', tp)).find((r) => r['addr'] === `127.0.0.1:${local}`);
      expect(row?.['user']).toBe('md5user');
      expect(row?.['database']).toBe('app');
      expect(row?.['application_name']).toBe('held-show');
      expect(row?.['state']).toBe('idle');
      // Listed from the relay, it stays held (native-login-held-snapshot.test.ts).
      if (holding) expect(relayOnly()).toBe(held);
      // Its query waits for the server like any session's.
      const q = c.query<{ app: string }>("select current_setting('application_name') as app");
      await blocker.query('COMMIT');
      expect((await q).rows[0]!.app).toBe('held-show');
    } finally {
      await c.end();
      await blocker.query('BEGIN');
      await blocker.query('select 1');
    }
  });

  it('its first query reports it and is served with its own parameters', async () => {
    const c = await heldClient('held-query');
    try {
      const q = c.query<{ app: string; n: number }>(
        "select current_setting('application_name') as app, $1::int + 1 as n",
        [41],
      );
      if (holding) await until('the held login reported', () => relayOnly() === 0);
      await blocker.query('COMMIT');
      expect((await q).rows[0]).toEqual({ app: 'held-query', n: 42 });
    } finally {
      await c.end();
      await blocker.query('BEGIN');
      await blocker.query('select 1');
    }
  });

  it('one that leaves without a query is counted as a connection and a native login, never a session', async () => {
    const sessionsBefore = sessions();
    const reportedBefore = tp.pooler.counters.nativeLogins;
    const connections = Number((await show('CONNECTIONS', tp))[0]!['total']);
    const got = await logins(async () => {
      const c = await heldClient('held-leave');
      await c.end();
      await until('it left', () => relayOnly() === 0 && sessions() === sessionsBefore);
    }, tp);
    expect(got.native + got.js).toBe(1);
    // Held, it was never reported: no session was made for it.
    if (holding) expect(got.native - (tp.pooler.counters.nativeLogins - reportedBefore)).toBe(1);
    expect(Number((await show('CONNECTIONS', tp))[0]!['total'])).toBe(connections + 1);
  });

  it('max_connections counts it: the login past it gets 53300', async () => {
    const limited = await startTestPooler(
      poolerToml(env.db, { general: 'max_connections = 2', pools: appPoolToml(env.db, 1) }),
    );
    const cs: pg.Client[] = [];
    try {
      const first = client('md5user', {}, limited);
      await first.connect();
      await first.query('BEGIN');
      cs.push(first);
      const idle = client('md5user', {}, limited);
      await idle.connect();
      cs.push(idle);
      if (holding) expect(limited.pooler.nativeLogins.relayOnly).toBe(1);
      await expect(client('md5user', {}, limited).connect()).rejects.toMatchObject({ code: '53300' });
    } finally {
      await Promise.all(cs.map((c) => c.end()));
      await limited.stop();
    }
  });

  it('RELOAD reports it and it goes on; KILL drops it', async () => {
    const c = await heldClient('held-reload');
    await admin('RELOAD');
    expect(relayOnly()).toBe(0);
    const q = c.query<{ two: number }>('select 2 as two');
    await blocker.query('COMMIT');
    expect((await q).rows[0]!.two).toBe(2);
    await blocker.query('BEGIN');
    await blocker.query('select 1');
    const k = await heldClient('held-kill');
    const closed = new Promise<void>((resolve) => k.once('end', () => resolve()));
    await blocker.query('COMMIT');
    await admin('KILL app');
    await closed;
    expect((await show('CLIENTS', tp)).some((r) => r['application_name'] === 'held-kill')).toBe(false);
    await admin('RESUME app');
    await c.end().catch(() => undefined);
    blocker = client('md5user', { application_name: 'held-blocker' }, tp);
    blocker.on('error', () => undefined);
    await blocker.connect();
    await blocker.query('BEGIN');
    await blocker.query('select 1');
  });
});
