// A Terminate before any startup packet (node-postgres's connect() then end() at once): PostgreSQL closes without a
// word, and so does the pooler, on both relays and on the native relay's own listener.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import net from 'node:net';
import { startTestPostgres, type TestPostgres } from '../../helpers/postgres.js';
import { poolerToml, startTestPooler, type TestPooler } from '../../helpers/pooler.js';

let db: TestPostgres;
let tp: TestPooler;

beforeAll(async () => {
  db = await startTestPostgres();
  tp = await startTestPooler(poolerToml(db, { general: 'auth_type = "md5"' }));
});

afterAll(async () => {
  await tp?.stop();
  await db?.cleanup();
});

const TERMINATE = Buffer.from([0x58, 0, 0, 0, 4]);

/** Sends `parts` (a pause between them) on a new connection: every byte received until the peer closed.
 * `afterReply`: each part after the first waits for a byte of answer instead (an SSLRequest's N: PostgreSQL refuses
 * bytes that come with it in one read, which a loaded machine's slow fork makes likely). */
function sendAndCollect(port: number, parts: Buffer[], afterReply = false): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const got: Buffer[] = [];
    let replied: () => void = () => undefined;
    const reply = new Promise<void>((r) => {
      replied = r;
    });
    const sock = net.connect(port, '127.0.0.1', async () => {
      for (const [i, p] of parts.entries()) {
        if (i > 0) await (afterReply ? reply : new Promise((r) => setTimeout(r, 30)));
        sock.write(p);
      }
    });
    sock.on('data', (d: Buffer) => {
      got.push(d);
      replied();
    });
    sock.on('error', reject);
    sock.on('close', () => resolve(Buffer.concat(got)));
    setTimeout(() => {
      sock.destroy();
      reject(new Error('the connection was not closed'));
    }, 10_000).unref();
  });
}

describe('Terminate as the first message', () => {
  it('closes the connection without sending a byte, as PostgreSQL does (whole, or cut across reads)', async () => {
    for (const port of [db.port, tp.port]) {
      expect((await sendAndCollect(port, [TERMINATE])).length).toBe(0);
      expect((await sendAndCollect(port, [TERMINATE.subarray(0, 2), TERMINATE.subarray(2)])).length).toBe(0);
      // Four bytes already read as a (too long) length: the native relay's login hands them to JavaScript's.
      expect((await sendAndCollect(port, [TERMINATE.subarray(0, 4), TERMINATE.subarray(4)])).length).toBe(0);
      // Terminate after an SSLRequest answered N (libpq's sslmode=prefer against a server without TLS).
      const ssl = Buffer.from([0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f]);
      expect((await sendAndCollect(port, [ssl, TERMINATE], true)).toString()).toBe('N');
    }
  });

  it('is no failed login: no error counted, no login_failure event', async () => {
    const errors = tp.pooler.counters.errors;
    const failures = () => tp.pooler.events.list().filter((e) => e.kind === 'login_failure').length;
    const before = failures();
    await sendAndCollect(tp.port, [TERMINATE]);
    await new Promise((r) => setTimeout(r, 50));
    expect(tp.pooler.counters.errors).toBe(errors);
    expect(failures()).toBe(before);
  });

  it('node-postgres connect() then end() at once: no error event, and connect() ends as against PostgreSQL', async () => {
    const outcomes: string[] = [];
    for (const [port, database] of [
      [db.port, 'app'],
      [tp.port, 'app'],
      [tp.port, 'appsession'],
    ] as const) {
      const c = new pg.Client({ host: '127.0.0.1', port, user: 'md5user', password: 'md5pass', database });
      const errors: Error[] = [];
      c.on('error', (e) => errors.push(e));
      const connected = c.connect().then(
        () => 'connected',
        (e: Error) => `rejected: ${e.message}`,
      );
      await c.end();
      // (Against PostgreSQL this node-postgres leaves connect() pending: nobody answers its startup packet.)
      outcomes.push(await Promise.race([connected, new Promise<string>((r) => setTimeout(() => r('pending'), 100))]));
      expect(errors.map((e) => e.message)).toEqual([]);
    }
    expect(outcomes.slice(1)).toEqual([outcomes[0], outcomes[0]]);
    // The pooler serves the next client as before.
    const c = new pg.Client({
      host: '127.0.0.1',
      port: tp.port,
      user: 'md5user',
      password: 'md5pass',
      database: 'app',
    });
    await c.connect();
    expect((await c.query('select 1 as one')).rows[0].one).toBe(1);
    await c.end();
  });
});
