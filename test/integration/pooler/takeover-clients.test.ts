// `tidepool pooler --takeover` moves the old process's clients (takeover-clients.ts): clients connected before the
// takeover go on, on the same connection, answered by the new process, with their session parameters, prepared
// statements and cancel keys. pgbench across two takeovers is takeover-linked.test.ts's. Runs on both relays (vitest
// projects).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync, writeFileSync } from 'node:fs';
import pg from 'pg';
import postgres from 'postgres';
import { freePort } from '../../../src/launcher/embedded-postgres.js';
import {
  TakeoverBed,
  keyOf,
  localPort,
  pgClient as client,
  sendCancel,
  showClients,
  waitFor,
} from '../../helpers/takeover.js';
import { makeTestCerts } from '../../helpers/tls-certs.js';
import { RawConnection, msg } from '../../helpers/raw-pg.js';

const bed = new TakeoverBed('takeover-clients');

beforeAll(() => bed.start());
afterAll(() => bed.stop());

const writeConfig = (name: string, webPort = 0, general = '') => bed.writeConfig(name, { webPort, general });
const startFirst = (file: string) => bed.startFirst(file);
const takeOver = (file: string) => bed.takeOver(file);

describe('takeover moves clients', () => {
  it('clients connected before keep their connection, parameters, prepared statements and cancel key', async () => {
    const webPort = await freePort();
    const { file, port } = await writeConfig('keep', webPort);
    const first = await startFirst(file);

    const a = client(port);
    const errors: string[] = [];
    a.on('error', (e) => errors.push(e.message));
    a.on('end', () => errors.push('ended'));
    await a.connect();
    await a.query("SET TimeZone = 'Asia/Tokyo'");
    // A named statement: node-postgres parses it once and from then on sends Bind and Execute only.
    expect((await a.query({ name: 'plus_one', text: 'select $1::int + 1 as v', values: [1] })).rows[0].v).toBe(2);
    const aPort = localPort(a);

    // postgres.js with prepare: true keeps its statements by text and binds them again without a Parse.
    const closes: number[] = [];
    const sql = postgres({
      host: '127.0.0.1',
      port,
      user: 'md5user',
      password: 'md5pass',
      database: 'app',
      max: 1,
      prepare: true,
      onclose: (id) => closes.push(id),
    });
    expect((await sql`select ${41}::int + 1 as v`)[0]!.v).toBe(42);

    // Cancel after the takeover, with the key the first process gave.
    const b = client(port);
    b.on('error', () => undefined);
    await b.connect();
    await b.query('select 1');
    const bKey = keyOf(b);

    // In a transaction across the takeover: stays on the first process until it ends, then moves.
    const c = client(port);
    c.on('error', (e) => errors.push(`c: ${e.message}`));
    await c.connect();
    await c.query('BEGIN');
    await c.query('select 1');
    const cKey = keyOf(c);
    const cPort = localPort(c);

    const second = await takeOver(file);
    // A cancel for the client still on the first process, sent to the port (the second process answers it).
    const cSleep = c.query('select pg_sleep(30)').then(
      () => 'finished',
      (e: Error & { code?: string }) => e.code ?? e.message,
    );
    // The cancel must come while the query runs: the first process answers SHOW there no more, so wait on PostgreSQL.
    await bed.running('select pg_sleep(30)');
    await sendCancel(port, cKey.pid, cKey.secret);
    expect(await cSleep).toBe('57014');
    await c.query('ROLLBACK');
    // Every client moved: the first process has none left and exits.
    expect(await first.exited, first.output()).toBe(0);
    expect(first.output()).not.toMatch(/"level":(50|60)/);

    // The same connections, answered by the second process.
    expect((await a.query('show timezone')).rows[0].TimeZone).toBe('Asia/Tokyo');
    expect((await a.query({ name: 'plus_one', text: 'select $1::int + 1 as v', values: [41] })).rows[0].v).toBe(42);
    expect(localPort(a)).toBe(aPort);
    expect((await sql`select ${41}::int + 1 as v`)[0]!.v).toBe(42);
    expect((await c.query('select 5 as five')).rows[0].five).toBe(5);
    expect(localPort(c)).toBe(cPort);
    const listed = (await showClients(port)).map((r) => r.addr);
    expect(listed).toContain(`127.0.0.1:${aPort}`);
    expect(listed).toContain(`127.0.0.1:${cPort}`);
    expect(listed).toContain(`127.0.0.1:${localPort(b)}`);

    // A CancelRequest with b's original key, sent after the takeover, cancels its query on the second process.
    const sleeping = b.query('select pg_sleep(30)').then(
      () => 'finished',
      (e: Error & { code?: string }) => e.code ?? e.message,
    );
    await bed.running('select pg_sleep(30)');
    const t0 = Date.now();
    await sendCancel(port, bKey.pid, bKey.secret);
    expect(await sleeping).toBe('57014');
    expect(Date.now() - t0).toBeLessThan(10_000);
    expect((await b.query('select 6 as six')).rows[0].six).toBe(6);

    expect(errors).toEqual([]);
    expect(closes).toEqual([]);
    const metrics = await (await fetch(`http://127.0.0.1:${webPort}/metrics`)).text();
    expect(metrics).toMatch(/pooler_takeover_clients_moved_total\{direction="in"\} 4\n/);
    expect(second.output()).toMatch(/the old process is done handing over clients/);
    await a.end();
    await b.end();
    await c.end();
    await sql.end();
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);
  });

  it('clients idle since their login while no server was idle (held in the native relay) move and go on', async () => {
    const webPort = await freePort();
    const { file, port } = await writeConfig('held', webPort);
    const first = await startFirst(file);
    const warm = client(port);
    await warm.connect();
    await warm.query('select 1');
    await warm.end();
    // Both servers of the pool (pool_size 2) in transactions: the logins that follow find none idle.
    const busy = [client(port), client(port)];
    for (const b of busy) {
      await b.connect();
      await b.query('BEGIN');
      await b.query('select 1');
    }
    const errors: string[] = [];
    const idle = [client(port), client(port), client(port)];
    for (const c of idle) {
      c.on('error', (e) => errors.push(e.message));
      await c.connect();
    }
    const second = await takeOver(file);
    for (const b of busy) await b.query('COMMIT');
    expect(await first.exited, first.output()).toBe(0);
    const listed = (await showClients(port)).map((r) => r.addr);
    for (const c of [...idle, ...busy]) expect(listed).toContain(`127.0.0.1:${localPort(c)}`);
    for (const [i, c] of idle.entries()) expect((await c.query('select $1::int as i', [i])).rows[0].i).toBe(i);
    const metrics = await (await fetch(`http://127.0.0.1:${webPort}/metrics`)).text();
    expect(metrics).toMatch(/pooler_takeover_clients_moved_total\{direction="in"\} 5\n/);
    expect(errors).toEqual([]);
    for (const c of [...idle, ...busy]) await c.end();
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);
  });

  it('a client the new process refuses stays on the old one, which tells it 57P01 at its next transaction', async () => {
    const { file, port } = await writeConfig('refused');
    const first = await startFirst(file);
    const a = client(port);
    const errors: string[] = [];
    a.on('error', (e: Error & { code?: string }) => errors.push(e.code ?? e.message));
    await a.connect();
    await a.query('select 1');
    // The new process runs pool app in session mode: it takes no transaction-mode client of it.
    writeFileSync(file, readFileSync(file, 'utf8').replace('[pools.app]\n', '[pools.app]\npool_mode = "session"\n'));
    const second = await takeOver(file);
    await waitFor('the refusal', () => /client stays on this process/.test(first.output()));
    expect(first.output()).toMatch(/not in transaction mode here/);
    await expect(a.query('select 1')).rejects.toMatchObject({
      code: '57P01',
      message: expect.stringMatching(/the pooler restarted \(takeover\) and this connection could not move/),
    });
    await a.end().catch(() => undefined);
    expect(await first.exited, first.output()).toBe(0);
    // New clients are the new process's, in session mode.
    const b = client(port);
    await b.connect();
    expect((await b.query('select 8 as eight')).rows[0].eight).toBe(8);
    await b.end();
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);
  });

  it('a TLS client stays on the old process (57P01 at its next transaction) while a plaintext one moves', async () => {
    const certs = makeTestCerts();
    try {
      const { file, port } = await writeConfig(
        'tls',
        0,
        `client_tls_sslmode = "prefer"\nclient_tls_key_file = "${certs.serverKey}"\nclient_tls_cert_file = "${certs.serverCert}"`,
      );
      const first = await startFirst(file);
      const secure = new pg.Client({
        host: '127.0.0.1',
        port,
        user: 'md5user',
        password: 'md5pass',
        database: 'app',
        ssl: { rejectUnauthorized: false },
      });
      secure.on('error', () => undefined);
      await secure.connect();
      await secure.query('select 1');
      const plain = client(port);
      await plain.connect();
      await plain.query('select 1');
      const second = await takeOver(file);
      expect((await plain.query('select 9 as nine')).rows[0].nine).toBe(9);
      await expect(secure.query('select 1')).rejects.toMatchObject({ code: '57P01' });
      await secure.end().catch(() => undefined);
      expect(await first.exited, first.output()).toBe(0);
      const listed = (await showClients(port)).map((r) => r.addr);
      expect(listed).toContain(`127.0.0.1:${localPort(plain)}`);
      await plain.end();
      second.child.kill('SIGTERM');
      expect(await second.exited).toBe(0);
    } finally {
      certs.cleanup();
    }
  });

  it('a client in the middle of a message in a transaction at the takeover finishes both on the old process, then moves', async () => {
    const { file, port } = await writeConfig('mid-message', 0, 'auth_type = "md5"');
    const first = await startFirst(file);
    const raw = await RawConnection.connect({
      host: '127.0.0.1',
      port,
      user: 'md5user',
      database: 'app',
      password: 'md5pass',
    });
    try {
      raw.send(msg.query('BEGIN'));
      await raw.readUntilReady();
      // Half a Query in a transaction: its start went to the client's server on the old process.
      const q = msg.query('select 42 as answer');
      raw.send(q.subarray(0, 9));
      const second = await takeOver(file);
      raw.send(q.subarray(9));
      const answered = await raw.readUntilReady();
      expect(answered.map((m) => m.type).join('')).toBe('TDCZ');
      expect(answered[1]!.raw.toString('utf8', 11, 13)).toBe('42');
      raw.send(msg.query('COMMIT'));
      await raw.readUntilReady();
      // Its transaction over, it moved: the first process has no client left, and the second answers it.
      expect(await first.exited, first.output()).toBe(0);
      raw.send(msg.query('select 43 as answer'));
      const next = await raw.readUntilReady();
      expect(next.map((m) => m.type).join('')).toBe('TDCZ');
      second.child.kill('SIGTERM');
      expect(await second.exited).toBe(0);
    } finally {
      raw.close();
    }
  });
});
