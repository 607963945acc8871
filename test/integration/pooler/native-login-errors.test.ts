// Logins the native relay runs itself (native/relay-auth.cc) that fail or change, with the JavaScript login's errors: wrong passwords, unknown users and databases, malformed and abandoned exchanges, RELOAD with changed passwords.
import { describe, expect, it } from 'vitest';
import { poolerToml, startTestPooler } from '../../helpers/pooler.js';
import { errorText } from '../../helpers/raw-pg.js';
import { wireMessage } from '../../helpers/wire.js';
import { writeSASLInitialResponse, writeSASLResponse, writeStartupMessage } from '../../../src/protocol/writer.js';
import {
  client,
  expectPath,
  fatal,
  loginClients,
  logins,
  raw,
  rawMd5Login,
  scramStarted,
  show,
  until,
  useNativeLoginPooler,
} from './native-login-harness.js';

const env = useNativeLoginPooler();

describe('logins the native relay refuses, and password changes', () => {
  it("a wrong password gets 28P01 for md5 and SCRAM; an unknown user and database get JavaScript's errors", async () => {
    for (const user of ['md5user', 'scramuser']) {
      const err = await client(user, { password: 'wrong' })
        .connect()
        .then(
          () => null,
          (e: { code?: string; message: string }) => e,
        );
      expect(err?.code, user).toBe('28P01');
      expect(err?.message).toBe(`password authentication failed for user "${user}"`);
    }
    const md5Raw = await rawMd5Login(env.tp.port, 'wrong');
    expect(md5Raw.length).toBe(1);
    expect(errorText(md5Raw[0]!)).toBe('28P01 password authentication failed for user "md5user"');
    const unknown = await client('md5user', { user: 'nobody' })
      .connect()
      .then(
        () => null,
        (e: { code?: string; message: string }) => e,
      );
    expect(unknown?.code).toBe('28000');
    expect(unknown?.message).toContain('no such user "nobody"');
    const nodb = await client('md5user', { database: 'nodb' })
      .connect()
      .then(
        () => null,
        (e: { code?: string; message: string }) => e,
      );
    expect(nodb?.code).toBe('3D000');
    const events = await show('EVENTS');
    expect(
      events.some(
        (e) =>
          e['kind'] === 'login_failure' &&
          /password authentication failed for user "scramuser" \(SQLSTATE 28P01\)/.test(String(e['message'])),
      ),
    ).toBe(true);
    await until('nobody in login', async () => (await loginClients()) === 0);
  });

  it('malformed SCRAM and password messages get 08P01 with a clear message; everyone else is served', async () => {
    const keep = client('scramuser');
    await keep.connect();
    const errorsBefore = env.tp.pooler.counters.errors;
    // client-first-message that is not one.
    let c = await raw();
    c.socket.write(writeStartupMessage({ user: 'scramuser', database: 'app' }));
    await c.next();
    c.socket.write(writeSASLInitialResponse('SCRAM-SHA-256', 'garbage'));
    expect(await fatal(c)).toBe('08P01 malformed authentication message: malformed SCRAM client-first-message');
    // client-first-message without a nonce; channel binding.
    for (const [data, why] of [
      ['n,,n=*', 'SCRAM client-first-message has no nonce'],
      ['p=tls-server-end-point,,n=*,r=abc', 'SCRAM channel binding is not supported'],
    ]) {
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
    for (const mangle of [
      (f: string) => f.replace(/r=[^,]*/, 'r=other'),
      (f: string) => f.replace(/p=.*/, 'p=not*base64'),
      (f: string) => f.replace(/p=.*/, 'p=AAAA'),
    ]) {
      const s = await scramStarted();
      s.c.socket.write(writeSASLResponse(mangle(s.scram.final(s.serverFirst))));
      expect(await fatal(s.c)).toBe('08P01 malformed authentication message: malformed SCRAM client-final-message');
    }
    // A proof of the wrong password is a wrong password.
    const wrong = await scramStarted();
    const final = wrong.scram.final(wrong.serverFirst);
    const proof = Buffer.from(final.slice(final.lastIndexOf(',p=') + 3), 'base64');
    proof[0] ^= 1;
    wrong.c.socket.write(
      writeSASLResponse(`${final.slice(0, final.lastIndexOf(',p='))},p=${proof.toString('base64')}`),
    );
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
    expect(env.tp.pooler.counters.errors - errorsBefore).toBe(11);
    expect((await keep.query('select 8 as n')).rows[0]).toEqual({ n: 8 });
    await keep.end();
    await until('nobody in login', async () => (await loginClients()) === 0);
  });

  it('clients that leave mid-exchange or send Terminate are counted and leave nothing behind', async () => {
    const before = env.tp.pooler.counters.connections;
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
    expect(env.tp.pooler.counters.connections - before).toBe(3);
    const ok = client('md5user');
    await ok.connect();
    await ok.end();
  });

  it('RELOAD with changed passwords: the next login takes the new one, the old one gets 28P01', async () => {
    const scramSecret = env.db.sql(`select rolpassword from pg_authid where rolname = 'scramuser'`).trim();
    const reloadToml = (md5: string, scram: string) =>
      poolerToml(env.db, {
        general: 'auth_type = "md5"',
        pools: `
[pools.app]
server_host = "${env.db.host}"
server_port = ${env.db.port}

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
      const old = await client('md5user', {}, p)
        .connect()
        .then(
          () => null,
          (e: { code?: string }) => e.code,
        );
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
});
