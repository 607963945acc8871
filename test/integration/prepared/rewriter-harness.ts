// The rewriter tests' harness: a PostgreSQL with an items table, and rounds of client messages sent on a direct connection and through one StatementRewriter whose transactions move between two servers.
import { afterAll, beforeAll, expect } from 'vitest';
import { Interner, type StatementHash } from '../../../src/pooler/prepared/interner.js';
import { PreparedPipe } from '../../../src/pooler/prepared/pipe.js';
import { StatementRewriter } from '../../../src/pooler/prepared/rewriter.js';
import { ServerStatements } from '../../../src/pooler/prepared/server-cache.js';
import { startItemsPostgres, type TestPostgres } from '../../helpers/postgres.js';
import { describeMessage, RawConnection, type Message } from '../../helpers/raw-pg.js';

let db: TestPostgres;
const open: RawConnection[] = [];

export async function connect(): Promise<RawConnection> {
  const c = await RawConnection.connect({ host: db.host, port: db.port, user: 'trustuser', database: 'app' });
  open.push(c);
  return c;
}

/** The test file's PostgreSQL, with an items table (ids 1 to 20): started before its tests, stopped after them. */
export function usePostgres(): void {
  beforeAll(async () => {
    db = await startItemsPostgres();
  });
  afterAll(async () => {
    for (const c of open) c.close();
    await db?.cleanup();
  });
}

/** The PostgreSQL of usePostgres (for DDL between rounds). */
export function database(): TestPostgres {
  return db;
}

/** One round: messages sent together, ending where the client waits for `readies` ReadyForQuery. */
export type Round = Buffer[];
export const readies = (round: Round) => round.filter((m) => m[0] === 0x53 || m[0] === 0x51).length;

export async function direct(rounds: Round[]): Promise<string[][]> {
  const c = await connect();
  const out: string[][] = [];
  for (const round of rounds) {
    c.send(...round);
    out.push((await c.readUntilReady(readies(round))).map(describeMessage));
  }
  c.close();
  return out;
}

export interface Through {
  replies: string[][];
  /** Which server each round ran on. */
  servers: number[];
  caches: ServerStatements[];
  interner: Interner;
}

/** The same rounds through one rewriter; a round starts on the other server whenever the client is between transactions. */
export interface Options {
  capacity?: number;
  hash?: StatementHash;
  /** Go through PreparedPipe with both byte streams cut at random points (else whole messages straight to the rewriter). */
  cut?: () => number;
}

/** Sends one round through the rewriter on `conn` and returns what the client got once its ReadyForQuery messages came. */
type Exchange = (rw: StatementRewriter, conn: RawConnection, round: Round) => Promise<Message[]>;

/** Whole messages straight to the rewriter. */
const wholeMessages: Exchange = async (rw, conn, round) => {
  const toClient: Message[] = [];
  // Messages held back for an earlier group's answer are sent while replies are read: write as they come.
  const sink = {
    toServer: (b: Buffer) => conn.send(b),
    toClient: (b: Buffer) => toClient.push({ type: String.fromCharCode(b[0]!), raw: b }),
  };
  for (const m of round) rw.clientMessage(m[0]!, m, sink);
  while (toClient.filter((m) => m.type === 'Z').length < readies(round)) {
    const m = await conn.read();
    rw.serverMessage(m.raw[0]!, m.raw, sink);
  }
  expect(rw.settled).toBe(true);
  return toClient;
};

/** Through PreparedPipe, client bytes and server bytes fed in random cuts of 1 to 12 bytes. */
const randomCuts =
  (rand: () => number): Exchange =>
  async (rw, conn, round) => {
    const cuts = (b: Buffer): Buffer[] => {
      const out: Buffer[] = [];
      for (let pos = 0; pos < b.length;) {
        const n = 1 + Math.floor(rand() * 12);
        out.push(b.subarray(pos, pos + n));
        pos += n;
      }
      return out;
    };
    let toClient = Buffer.alloc(0);
    const pipe = new PreparedPipe(rw, 1 << 20, {
      toServer: (bufs) => conn.send(...bufs),
      toClient: (bufs) => (toClient = Buffer.concat([toClient, ...bufs])),
    });
    const messages = (): Message[] => {
      const out: Message[] = [];
      for (let pos = 0; pos + 5 <= toClient.length; pos += 1 + toClient.readInt32BE(pos + 1)) {
        out.push({
          type: String.fromCharCode(toClient[pos]!),
          raw: toClient.subarray(pos, pos + 1 + toClient.readInt32BE(pos + 1)),
        });
      }
      return out;
    };
    for (const c of cuts(Buffer.concat(round))) expect(pipe.clientBytes(c)).toBe(true);
    while (messages().filter((m) => m.type === 'Z').length < readies(round)) {
      const m = await conn.read();
      for (const c of cuts(m.raw)) expect(pipe.serverBytes(c)).toBe(true);
    }
    expect(pipe.atBoundary).toBe(true);
    return messages();
  };

/** The rounds through one rewriter; a round starts on the other server whenever the client is between transactions. */
export async function rewritten(rounds: Round[], opts: Options = {}): Promise<Through> {
  const exchange = opts.cut ? randomCuts(opts.cut) : wholeMessages;
  const conns = [await connect(), await connect()];
  const interner = new Interner({ idleCapacity: 8192, ...(opts.hash ? { hash: opts.hash } : {}) });
  const caches = conns.map(() => new ServerStatements(interner, opts.capacity ?? 100));
  const rw = new StatementRewriter(interner, '');
  const replies: string[][] = [];
  const servers: number[] = [];
  let current = 1;
  let idle = true;
  for (const round of rounds) {
    if (idle) {
      current = 1 - current;
      rw.attach(caches[current]!);
    }
    servers.push(current);
    const got = await exchange(rw, conns[current]!, round);
    const last = got.at(-1)!;
    idle = last.type === 'Z' && last.raw[5] === 0x49;
    if (idle) rw.detach();
    replies.push(got.map(describeMessage));
  }
  for (const c of conns) c.close();
  return { replies, servers, caches, interner };
}

export async function same(rounds: Round[], opts: Options = {}): Promise<Through> {
  const want = await direct(rounds);
  const got = await rewritten(rounds, opts);
  expect(got.replies).toEqual(want);
  return got;
}

export const byId = 'SELECT name FROM items WHERE id = $1';
