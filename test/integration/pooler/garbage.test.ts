// Random bytes after login, split at random points: whatever PostgreSQL or the pooler answers, the pooler
// keeps running and serving everyone else (the native relay's scanner sees every byte of these streams).
// Seeded, so a failure replays; runs on both relays.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import net from 'node:net';
import { startTestPostgres, type TestPostgres } from '../../helpers/postgres.js';
import { poolerToml, startTestPooler, type TestPooler } from '../../helpers/pooler.js';
import { mulberry32 } from '../../helpers/prng.js';
import { RawConnection, describeMessage, type Message } from '../../helpers/raw-pg.js';
import { wireMessage } from '../../helpers/wire.js';

let db: TestPostgres;
let tp: TestPooler;

beforeAll(async () => {
  db = await startTestPostgres();
  tp = await startTestPooler(poolerToml(db, { general: 'max_message_size = "64kB"\nauth_type = "md5"' }));
});

afterAll(async () => {
  await tp?.stop();
  await db?.cleanup();
});

const rng = mulberry32;

const TYPES = [...'QPBEDCSHFXcdfp?\0'].map((c) => c.charCodeAt(0));

/** A stream of messages: mostly well-framed with random types and bodies, sometimes a wild length. */
function garbage(rand: () => number): Buffer {
  const parts: Buffer[] = [];
  const n = 1 + Math.floor(rand() * 6);
  for (let i = 0; i < n; i++) {
    const body = Buffer.alloc(Math.floor(rand() * 64));
    for (let j = 0; j < body.length; j++) body[j] = Math.floor(rand() * 256);
    const head = Buffer.alloc(5);
    head[0] = TYPES[Math.floor(rand() * TYPES.length)]!;
    const r = rand();
    head.writeInt32BE(r < 0.1 ? Math.floor(rand() * 4) : r < 0.15 ? 0x7fffffff : r < 0.2 ? 70_000 : body.length + 4, 1);
    parts.push(head, body);
  }
  return Buffer.concat(parts);
}

async function sendAndWait(bytes: Buffer, rand: () => number): Promise<void> {
  const c = new pg.Client({ host: '127.0.0.1', port: tp.port, user: 'md5user', password: 'md5pass', database: 'app' });
  c.on('error', () => undefined);
  await c.connect();
  if (rand() < 0.5) await c.query('select 1');
  const sock = (c as unknown as { connection: { stream: net.Socket } }).connection.stream;
  sock.removeAllListeners('data');
  sock.on('data', () => undefined);
  const closed = new Promise<void>((r) => sock.once('close', () => r()));
  // Split at random points, a few bytes apart, so headers straddle reads.
  let off = 0;
  while (off < bytes.length) {
    const n = 1 + Math.floor(rand() * 40);
    sock.write(bytes.subarray(off, off + n));
    off += n;
    if (rand() < 0.3) await new Promise((r) => setTimeout(r, 1));
  }
  await Promise.race([closed, new Promise((r) => setTimeout(r, 300))]);
  sock.destroy();
}

describe('garbage after login', () => {
  it('never takes the pooler down: 120 seeded streams, then an ordinary query', async () => {
    const rand = rng(20261122);
    for (let batch = 0; batch < 12; batch++) {
      await Promise.all(Array.from({ length: 10 }, () => sendAndWait(garbage(rand), rand)));
    }
    const c = new pg.Client({
      host: '127.0.0.1',
      port: tp.port,
      user: 'md5user',
      password: 'md5pass',
      database: 'app',
    });
    await c.connect();
    try {
      expect((await c.query('select 42 as answer')).rows[0].answer).toBe(42);
    } finally {
      await c.end();
    }
  });
});

describe('bytes sent while waiting for a server', () => {
  // A message type PostgreSQL refuses, then a Parse (the rewriter's first message), then a Sync, all sent while both
  // servers are busy: the server must get them in that order. When the Parse and Sync overtook the refused message,
  // PostgreSQL answered them with ReadyForQuery, the pair split as if the transaction had ended, and the FATAL that
  // followed killed a server already back in the pool, under the next client's query.
  it('reach the server in the order the client sent them', async () => {
    const conf = { host: '127.0.0.1', port: tp.port, user: 'md5user', password: 'md5pass', database: 'app' };
    const blockers = [new pg.Client(conf), new pg.Client(conf)];
    const g = await RawConnection.connect(conf);
    try {
      for (const b of blockers) {
        await b.connect();
        await b.query('begin');
      }
      const refused = wireMessage('p', Buffer.from('not a password'));
      const parse = wireMessage('P', Buffer.from([0x95, 0xe0, 0x67]));
      for (const part of [refused, wireMessage('H', ''), parse, wireMessage('S', '')]) {
        g.send(part);
        await new Promise((r) => setTimeout(r, 5));
      }
      await new Promise((r) => setTimeout(r, 50));
      for (const b of blockers) await b.query('commit');
      const got: Message[] = [];
      for (;;) {
        try {
          got.push(await g.read(5000));
        } catch {
          break;
        }
      }
      // PostgreSQL's FATAL for the refused type, or (when its close reset the connection before the pooler read the
      // FATAL) the pooler's 08006; never the Parse's error or a ReadyForQuery, which only the reordered stream gets.
      const seen = got.map(describeMessage);
      expect(seen.length).toBeGreaterThan(0);
      for (const m of seen)
        expect(m).toMatch(/^E (08P01 invalid frontend message type 112|08006 server connection lost)/);
    } finally {
      g.close();
      for (const b of blockers) await b.end().catch(() => undefined);
    }
  });
});
