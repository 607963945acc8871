// Bytes a client sends after its Terminate, or after the pooler closed it with a FATAL error, reach no server:
// PostgreSQL would never read them. A scripted client (half-open, so it can still write after the pooler's FIN)
// splits its stream at chosen bytes; one server (pool_size = 1), so the next client gets the same backend.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import net from 'node:net';
import { startTestPostgres, type TestPostgres } from '../../helpers/postgres.js';
import { poolerToml, poolToml, startTestPooler, type TestPooler } from '../../helpers/pooler.js';
import { wireMessage } from '../../helpers/wire.js';

let db: TestPostgres;
let tp: TestPooler;

beforeAll(async () => {
  db = await startTestPostgres();
  db.sql('CREATE TABLE after_close (n int)', 'app');
  tp = await startTestPooler(
    poolerToml(db, {
      pools: poolToml(db, 'app', '', [{ username: 'trustuser', password: '', extra: 'pool_size = 1' }]),
    }),
  );
});

afterAll(async () => {
  await tp?.stop();
  await db?.cleanup();
});

function startup(params: Record<string, string>): Buffer {
  const body = Buffer.concat([
    Buffer.from([0, 3, 0, 0]),
    ...Object.entries(params).map(([k, v]) => Buffer.from(`${k}\0${v}\0`)),
    Buffer.from([0]),
  ]);
  const len = Buffer.alloc(4);
  len.writeInt32BE(body.length + 4);
  return Buffer.concat([len, body]);
}

/** Logs in (trust), writes `first`, waits for the pooler's FIN, writes `after`, then ends and waits for the close. */
function scripted(first: Buffer, after: Buffer): Promise<void> {
  return new Promise((resolve, reject) => {
    const s = net.connect({ port: tp.port, host: '127.0.0.1', allowHalfOpen: true });
    let reply = Buffer.alloc(0);
    let loggedIn = false;
    s.on('connect', () => s.write(startup({ user: 'trustuser', database: 'app' })));
    s.on('data', (d: Buffer) => {
      reply = Buffer.concat([reply, d]);
      // ReadyForQuery ends the greeting.
      if (!loggedIn && reply.includes(Buffer.from([0x5a, 0, 0, 0, 5, 0x49]))) {
        loggedIn = true;
        s.write(first);
      }
    });
    s.on('end', () => {
      if (!loggedIn) return reject(new Error('closed during login'));
      s.write(after, () => s.end());
    });
    s.on('error', reject);
    s.on('close', () => resolve());
    setTimeout(() => reject(new Error('the pooler did not close the connection')), 5000).unref();
  });
}

async function selectOne(): Promise<number> {
  const c = new pg.Client({
    host: '127.0.0.1',
    port: tp.port,
    user: 'trustuser',
    database: 'app',
    query_timeout: 3000,
  });
  await c.connect();
  try {
    return (await c.query('select 1 as one')).rows[0].one as number;
  } finally {
    await c.end();
  }
}

function rows(n: number): number {
  return Number(db.sql(`SELECT count(*) FROM after_close WHERE n = ${n}`, 'app'));
}

// Each test first runs a query, so the one server is idle in the pool when the scripted client writes.
describe('bytes after the end of a client', () => {
  it("after a Terminate, the rest of a message cut in the same read does not reach the next client's server", async () => {
    expect(await selectOne()).toBe(1);
    // The pooler's view: Terminate, then a CopyData of 5 body bytes, cut after its header. What follows
    // (5 bytes) ends that CopyData; PostgreSQL, fed only those, would read them as the header of a
    // CopyData of 10 bytes and swallow the first 6 bytes of the next client's Query.
    const first = Buffer.concat([wireMessage('X', ''), Buffer.from([0x64, 0, 0, 0, 9])]);
    await scripted(first, Buffer.from([0x64, 0, 0, 0, 10]));
    expect(await selectOne()).toBe(1);
  });

  it('after a Terminate, whole messages in a later read run nowhere', async () => {
    expect(await selectOne()).toBe(1);
    await scripted(wireMessage('X', ''), wireMessage('Q', 'insert into after_close values (1)\0'));
    expect(await selectOne()).toBe(1);
    expect(rows(1)).toBe(0);
  });

  it('after a FATAL for a bad length, whole messages in a later read run nowhere', async () => {
    expect(await selectOne()).toBe(1);
    await scripted(Buffer.from([0x51, 0, 0, 0, 2]), wireMessage('Q', 'insert into after_close values (2)\0'));
    expect(await selectOne()).toBe(1);
    expect(rows(2)).toBe(0);
  });
});
