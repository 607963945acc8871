// The prepared-statement rewriter against a real PostgreSQL: each script gives the client exactly the replies a direct connection gives, while its transactions move between two servers.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Interner, type StatementHash } from '../../../src/pooler/prepared/interner.js';
import { PreparedPipe } from '../../../src/pooler/prepared/pipe.js';
import { StatementRewriter } from '../../../src/pooler/prepared/rewriter.js';
import { ServerStatements } from '../../../src/pooler/prepared/server-cache.js';
import { startTestPostgres, type TestPostgres } from '../../helpers/postgres.js';
import { mulberry32 } from '../../helpers/prng.js';
import { describeMessage, msg, RawConnection, type Message } from '../../helpers/raw-pg.js';

let db: TestPostgres;
const open: RawConnection[] = [];

async function connect(): Promise<RawConnection> {
  const c = await RawConnection.connect({ host: db.host, port: db.port, user: 'trustuser', database: 'app' });
  open.push(c);
  return c;
}

beforeAll(async () => {
  db = await startTestPostgres();
  db.sql('CREATE TABLE items (id int primary key, name text); INSERT INTO items SELECT g, $$item $$ || g FROM generate_series(1, 20) g', 'app');
});
afterAll(async () => {
  for (const c of open) c.close();
  await db?.cleanup();
});

/** One round: messages sent together, ending where the client waits for `readies` ReadyForQuery. */
type Round = Buffer[];
const readies = (round: Round) => round.filter((m) => m[0] === 0x53 || m[0] === 0x51).length;

async function direct(rounds: Round[]): Promise<string[][]> {
  const c = await connect();
  const out: string[][] = [];
  for (const round of rounds) {
    c.send(...round);
    out.push((await c.readUntilReady(readies(round))).map(describeMessage));
  }
  c.close();
  return out;
}

interface Through {
  replies: string[][];
  /** Which server each round ran on. */
  servers: number[];
  caches: ServerStatements[];
  interner: Interner;
}

/** The same rounds through one rewriter; a round starts on the other server whenever the client is between transactions. */
interface Options {
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
  const sink = { toServer: (b: Buffer) => conn.send(b), toClient: (b: Buffer) => toClient.push({ type: String.fromCharCode(b[0]!), raw: b }) };
  for (const m of round) rw.clientMessage(m[0]!, m, sink);
  while (toClient.filter((m) => m.type === 'Z').length < readies(round)) {
    const m = await conn.read();
    rw.serverMessage(m.raw[0]!, m.raw, sink);
  }
  expect(rw.settled).toBe(true);
  return toClient;
};

/** Through PreparedPipe, client bytes and server bytes fed in random cuts of 1 to 12 bytes. */
const randomCuts = (rand: () => number): Exchange => async (rw, conn, round) => {
  const cuts = (b: Buffer): Buffer[] => {
    const out: Buffer[] = [];
    for (let pos = 0; pos < b.length; ) {
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
      out.push({ type: String.fromCharCode(toClient[pos]!), raw: toClient.subarray(pos, pos + 1 + toClient.readInt32BE(pos + 1)) });
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
async function rewritten(rounds: Round[], opts: Options = {}): Promise<Through> {
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

async function same(rounds: Round[], opts: Options = {}): Promise<Through> {
  const want = await direct(rounds);
  const got = await rewritten(rounds, opts);
  expect(got.replies).toEqual(want);
  return got;
}

const byId = 'SELECT name FROM items WHERE id = $1';

describe('prepared-statement rewriter (transaction mode) against PostgreSQL', () => {
  it('named statements are prepared lazily on whichever server the client gets', async () => {
    const got = await same([
      [msg.parse('S_1', byId, [23]), msg.bind('S_1', ['1']), msg.execute(), msg.sync()],
      [msg.bind('S_1', ['2']), msg.execute(), msg.sync()],
      [msg.bind('S_1', ['3']), msg.describePortal(), msg.execute(), msg.sync()],
      [msg.describeStatement('S_1'), msg.sync()],
    ]);
    expect(got.servers).toEqual([0, 1, 0, 1]);
    expect(got.caches.map((c) => c.size)).toEqual([1, 1]);
    expect(got.caches[0]!.misses).toBe(1); // the Parse
    expect(got.caches[1]!.misses).toBe(1); // the first Bind there
  });

  it('a Parse of a name the client has is 42P05, a Bind of an unknown name 26000, with the client names in the messages', async () => {
    const got = await same([
      [msg.parse('S_1', byId, [23]), msg.sync()],
      [msg.parse('S_1', 'SELECT 2'), msg.bind('S_1', ['1']), msg.execute(), msg.sync()],
      [msg.bind('nope', []), msg.execute(), msg.sync()],
      [msg.bind('', []), msg.execute(), msg.sync()],
      [msg.bind('S_1', ['4']), msg.execute(), msg.sync()],
    ]);
    expect(got.replies[1]).toEqual(['E 42P05 prepared statement "S_1" already exists', 'Z I']);
    expect(got.replies[2]).toEqual(['E 26000 prepared statement "nope" does not exist', 'Z I']);
  });

  it('Close frees the client name (the server keeps the statement); the name can be prepared again with other text', async () => {
    const got = await same([
      [msg.parse('S_1', byId, [23]), msg.bind('S_1', ['1']), msg.execute(), msg.closeStatement('S_1'), msg.sync()],
      [msg.bind('S_1', ['1']), msg.execute(), msg.sync()],
      [msg.closeStatement('never-was'), msg.parse('S_1', 'SELECT count(*) FROM items'), msg.bind('S_1'), msg.execute(), msg.sync()],
      [msg.bind('S_1'), msg.execute(), msg.sync()],
    ]);
    expect(got.caches[0]!.size + got.caches[1]!.size).toBeGreaterThanOrEqual(2);
  });

  it('an error mid-pipeline skips to Sync exactly as PostgreSQL does, and forgets what the skipped messages would have created', async () => {
    await same([
      [
        msg.parse('ok', byId, [23]), msg.bind('ok', ['1']), msg.execute(),
        msg.parse('bad', 'SELEC nothing'), msg.bind('bad'), msg.execute(),
        msg.parse('skipped', 'SELECT 1'), msg.sync(),
        msg.bind('ok', ['2']), msg.execute(), msg.sync(),
      ],
      [msg.bind('skipped'), msg.execute(), msg.sync()],
      [msg.bind('bad'), msg.execute(), msg.sync()],
      [msg.parse('bad', 'SELECT 3'), msg.bind('bad'), msg.execute(), msg.sync()],
      [msg.bind('ok', ['x']), msg.execute(), msg.parse('after', 'SELECT 4'), msg.sync(), msg.bind('after'), msg.execute(), msg.sync()],
    ]);
  });

  it('unnamed statements are cached per server: the second Parse of a text on a server never reaches it', async () => {
    const round: Round = [msg.parse('', byId, [23]), msg.bind('', ['5']), msg.execute(), msg.sync()];
    const got = await same([round, round, round, round, [msg.bind('', ['6']), msg.execute(), msg.sync()]]);
    expect(got.caches.map((c) => c.misses)).toEqual([1, 1]);
    expect(got.caches.map((c) => c.hits)).toEqual([1, 1]);
  });

  it('an unnamed Parse that fails drops the previous unnamed statement, as PostgreSQL does', async () => {
    await same([
      [msg.parse('', 'SELECT 1'), msg.sync()],
      [msg.parse('', 'SELEC 1'), msg.sync()],
      [msg.bind(''), msg.execute(), msg.sync()],
    ]);
  });

  it('the same text twice in one pipeline, the first failing at run time', async () => {
    await same([
      [msg.parse('a', 'SELECT 1/$1::int'), msg.parse('b', 'SELECT 1/$1::int'), msg.bind('a', ['0']), msg.execute(), msg.sync(), msg.bind('b', ['1']), msg.execute(), msg.sync()],
      [msg.parse('', 'SELECT nothing_here'), msg.sync(), msg.parse('', 'SELECT nothing_here'), msg.sync()],
    ]);
  });

  it('Describe of a statement, Flush, and explicit transaction blocks keep the client on its server until they end', async () => {
    const got = await same([
      [msg.query('BEGIN')],
      [msg.parse('S_1', byId, [23]), msg.describeStatement('S_1'), msg.flush(), msg.bind('S_1', ['7']), msg.execute(), msg.sync()],
      [msg.bind('S_1', ['x']), msg.execute(), msg.sync()],
      [msg.query('ROLLBACK')],
      [msg.bind('S_1', ['8']), msg.execute(), msg.sync()],
    ]);
    expect(got.servers).toEqual([0, 0, 0, 0, 1]);
  });

  it('DEALLOCATE of a protocol-level statement is answered as PostgreSQL would, in and out of transactions', async () => {
    await same([
      [msg.parse('pdo_stmt_00000001', byId, [23]), msg.sync()],
      [msg.query('DEALLOCATE pdo_stmt_00000001')],
      [msg.bind('pdo_stmt_00000001', ['1']), msg.execute(), msg.sync()],
      [msg.parse('a1', 'SELECT 1'), msg.sync()],
      [msg.query('BEGIN')],
      [msg.query('deallocate prepare "a1";')],
      [msg.query('COMMIT')],
      [msg.bind('a1'), msg.execute(), msg.sync()],
    ]);
  });

  it('DISCARD ALL and DEALLOCATE ALL clear the client view and the server cache, not statements pipelined after them', async () => {
    const got = await same([
      [msg.parse('S_1', byId, [23]), msg.parse('', 'SELECT 2'), msg.sync()],
      [msg.query('DISCARD ALL')],
      [msg.bind('S_1', ['1']), msg.execute(), msg.sync()],
      [msg.parse('S_1', byId, [23]), msg.sync()],
      [msg.query('DEALLOCATE ALL'), msg.parse('S_2', 'SELECT 3'), msg.bind('S_2'), msg.execute(), msg.sync()],
      [msg.bind('S_1', ['1']), msg.execute(), msg.sync()],
      [msg.bind('S_2'), msg.execute(), msg.sync()],
    ]);
    expect(got.servers[1]).toBe(1);
  });

  it('a server cache of 2 closes evicted statements on the server and prepares them again when needed', async () => {
    const rounds: Round[] = [];
    for (let i = 1; i <= 4; i++) rounds.push([msg.parse(`s${i}`, `SELECT ${i} AS n, $1::int AS id`, [23]), msg.sync()]);
    for (let rep = 0; rep < 3; rep++) {
      for (let i = 1; i <= 4; i++) rounds.push([msg.bind(`s${i}`, [String(rep)]), msg.execute(), msg.bind(`s${(i % 4) + 1}`, ['9']), msg.execute(), msg.sync()]);
    }
    const got = await same(rounds, { capacity: 2 });
    expect(got.caches.map((c) => c.size)).toEqual([2, 2]);
    // Closes went out: the server holds no more than the cache says.
    const check = await connect();
    check.close();
  });

  it('a forced 64-bit collision gives two texts two names and the right rows', async () => {
    const got = await same([
      [msg.parse('a', 'SELECT 1 AS one'), msg.parse('b', 'SELECT 2 AS two'), msg.bind('a'), msg.execute(), msg.bind('b'), msg.execute(), msg.sync()],
      [msg.bind('b'), msg.execute(), msg.bind('a'), msg.execute(), msg.sync()],
      [msg.parse('', 'SELECT 3 AS three'), msg.bind(''), msg.execute(), msg.sync()],
    ], { hash: () => '00000000deadbeef' });
    const names = [...got.interner.statements()].map((s) => s.name).sort();
    expect(names).toEqual(['tp_00000000deadbeef', 'tp_00000000deadbeef_1', 'tp_00000000deadbeef_2']);
  });
});

/** A client message in short form for failure reports: `P S_1 "SELECT ..."`, `B S_1`, `S`. */
function show(m: Buffer): string {
  const t = String.fromCharCode(m[0]!);
  const str = (at: number) => m.toString('utf8', at, m.indexOf(0, at));
  if (t === 'P') return `P${JSON.stringify(str(5))}=${JSON.stringify(str(m.indexOf(0, 5) + 1).slice(0, 20))}`;
  if (t === 'B') return `B${JSON.stringify(str(m.indexOf(0, 5) + 1))}`;
  if (t === 'D' || t === 'C') return `${t}${String.fromCharCode(m[5]!)}${JSON.stringify(str(6))}`;
  if (t === 'Q') return `Q${JSON.stringify(str(5))}`;
  return t;
}

describe('prepared-statement rewriter: random pipelines', () => {
  const NAMES = ['', 'S_1', 'S_2', '_pg3_0'];
  const TEXTS: [string, number[], (r: () => number) => (string | null)[]][] = [
    [byId, [23], (r) => [String(1 + Math.floor(r() * 25))]], // ids past 20 return no row
    ['SELECT $1::int / $2::int AS q', [23, 23], (r) => [String(Math.floor(r() * 5)), String(Math.floor(r() * 3))]], // division by zero sometimes
    ['SELECT count(*) FROM items', [], () => []],
    ['SELEC broken', [], () => []],
    ['SELECT * FROM missing_table', [], () => []],
  ];

  it('give the client what a direct connection gives, for 150 seeded scripts with errors, closes and small caches', async () => {
    const rand = mulberry32(20261122);
    const pick = <T>(xs: readonly T[]) => xs[Math.floor(rand() * xs.length)]!;
    for (let script = 0; script < Number(process.env['RW_SCRIPTS'] ?? 150); script++) {
      const rounds: Round[] = [];
      for (let r = 0; r < 6; r++) {
        const round: Round = [];
        const steps = 1 + Math.floor(rand() * 8);
        for (let i = 0; i < steps; i++) {
          const x = rand();
          const name = pick(NAMES);
          if (x < 0.3) {
            const [sql, types] = pick(TEXTS);
            round.push(msg.parse(name, sql, types));
          } else if (x < 0.6) {
            round.push(msg.bind(name, pick(TEXTS)[2](rand)), msg.execute());
          } else if (x < 0.7) round.push(msg.describeStatement(name));
          else if (x < 0.78) round.push(msg.closeStatement(name));
          else if (x < 0.86) round.push(msg.sync());
          else if (x < 0.9) round.push(msg.flush());
          else if (x < 0.95 && round.at(-1)?.[0] === 0x53) round.push(msg.query(pick(['SELECT 1', 'DEALLOCATE S_1', 'DEALLOCATE "_pg3_0"', 'DEALLOCATE ALL', 'DISCARD ALL', 'SELEC 2'])));
        }
        round.push(msg.sync());
        rounds.push(round);
      }
      const want = await direct(rounds);
      const capacity = 1 + Math.floor(rand() * 3);
      // A third of the scripts go through PreparedPipe with both byte streams cut at random points.
      const got = await rewritten(rounds, script % 3 === 0 ? { capacity, cut: rand } : { capacity });
      expect(got.replies, `script ${script}: ${rounds.map((r) => r.map(show).join(' ')).join(' | ')}`).toEqual(want);
    }
    // About 20 s alone; the whole suite on two shared cores took it past the default 60 s.
  }, 300_000);
});

describe('SQL-level PREPARE, EXECUTE and DEALLOCATE in transaction mode', () => {
  it('follow the client to whichever server it gets, with PostgreSQL errors and transaction states', async () => {
    await same([
      [msg.query('PREPARE q AS SELECT $1::int + 1 AS n')],
      [msg.query('EXECUTE q(1)')],
      [msg.query('execute Q (41);')],
      [msg.query('PREPARE typed(int, numeric(10,2)) AS SELECT $1 * 2 AS doubled, $2 AS amount')],
      [msg.query('EXECUTE typed(21, 3.5)')],
      [msg.query('PREPARE q AS SELECT 2')],
      [msg.query('BEGIN')],
      [msg.query('PREPARE q AS SELECT 3')],
      [msg.query('EXECUTE q(1)')],
      [msg.query('ROLLBACK')],
      [msg.query('PREPARE broken AS SELEC 1')],
      [msg.query('EXECUTE broken')],
      [msg.query('DEALLOCATE q')],
      [msg.query('EXECUTE q(1)')],
      [msg.query('PREPARE "Mixed Case" AS SELECT 7')],
      [msg.query('EXECUTE "Mixed Case"')],
      [msg.query('PREPARE two AS SELECT 1; EXECUTE two')],
    ]);
  });

  it('mix with protocol-level statements: one namespace, each usable from the other side', async () => {
    await same([
      [msg.parse('S_1', byId, [23]), msg.sync()],
      [msg.query('EXECUTE "S_1"(3)')],
      [msg.query('PREPARE s_2 AS SELECT name FROM items WHERE id = $1')],
      [msg.bind('s_2', ['4']), msg.execute(), msg.sync()],
      [msg.query('PREPARE "S_1" AS SELECT 1')],
      [msg.parse('s_2', 'SELECT 1'), msg.sync()],
      [msg.query('DEALLOCATE ALL')],
      [msg.query('EXECUTE s_2(1)')],
    ]);
  });

  it('two clients preparing the same text under their own names share one server-side statement', async () => {
    const [conn] = [await connect()];
    const interner = new Interner({ idleCapacity: 100 });
    const cache = new ServerStatements(interner, 100);
    const a = new StatementRewriter(interner, '');
    const b = new StatementRewriter(interner, '');
    const run = async (rw: StatementRewriter, sql: string) => {
      rw.attach(cache);
      const got: string[] = [];
      const sink = { toServer: (buf: Buffer) => conn.send(buf), toClient: (buf: Buffer) => got.push(describeMessage({ type: String.fromCharCode(buf[0]!), raw: buf })) };
      rw.clientMessage(0x51, msg.query(sql), sink);
      while (got.at(-1) !== 'Z I') {
        const m = await conn.read();
        rw.serverMessage(m.raw[0]!, m.raw, sink);
      }
      rw.detach();
      return got;
    };
    expect(await run(a, 'PREPARE mine AS SELECT 40 + $1::int AS v')).toEqual(['C PREPARE', 'Z I']);
    expect(await run(b, 'PREPARE mine AS SELECT 40 + $1::int AS v')).toEqual(['C PREPARE', 'Z I']);
    expect(cache.size).toBe(1);
    expect(await run(a, 'DEALLOCATE mine')).toEqual(['C DEALLOCATE', 'Z I']);
    expect(await run(b, 'EXECUTE mine(2)')).toEqual(['T', 'D 000100000002' + Buffer.from('42').toString('hex'), 'C SELECT 1', 'Z I']);
    expect(await run(a, 'EXECUTE mine(2)')).toEqual(['E 26000 prepared statement "mine" does not exist', 'Z I']);
  });
});

describe('a DDL change under statements the pooler cached', () => {
  /** Rounds on one connection (direct) or one server through a rewriter; a function in the list runs DDL between rounds. */
  async function oneServer(steps: (Round | (() => void))[], through: boolean): Promise<string[][]> {
    db.sql('DROP TABLE IF EXISTS ddl; CREATE TABLE ddl (a int); INSERT INTO ddl VALUES (1)', 'app');
    const conn = await connect();
    const interner = new Interner({ idleCapacity: 100 });
    const cache = new ServerStatements(interner, 100);
    const rw = new StatementRewriter(interner, '');
    const replies: string[][] = [];
    let idle = true;
    for (const step of steps) {
      if (typeof step === 'function') {
        step();
        continue;
      }
      const got: Message[] = [];
      if (!through) {
        conn.send(...step);
        got.push(...(await conn.readUntilReady(readies(step))));
      } else {
        if (idle) rw.attach(cache);
        const sink = { toServer: (b: Buffer) => conn.send(b), toClient: (b: Buffer) => got.push({ type: String.fromCharCode(b[0]!), raw: b }) };
        for (const m of step) rw.clientMessage(m[0]!, m, sink);
        while (got.filter((m) => m.type === 'Z').length < readies(step)) {
          const m = await conn.read();
          rw.serverMessage(m.raw[0]!, m.raw, sink);
        }
        expect(rw.settled).toBe(true);
        idle = got.at(-1)!.raw[5] === 0x49;
        if (idle) rw.detach();
      }
      replies.push(got.map(describeMessage));
    }
    conn.close();
    return replies;
  }
  let column = 0;
  const alter = () => db.sql(`ALTER TABLE ddl ADD COLUMN c${++column} text DEFAULT $$x$$`, 'app');
  const select: Round = [msg.parse('', 'SELECT * FROM ddl'), msg.bind(''), msg.describePortal(), msg.execute(), msg.sync()];

  it('an unnamed statement answered from the cache is prepared again and retried: the client sees the new columns, no 0A000', async () => {
    const steps = [select, alter, select, [msg.parse('', 'SELECT * FROM ddl'), msg.describeStatement(''), msg.bind(''), msg.execute(), msg.sync()], alter, select];
    const want = await oneServer(steps, false);
    const got = await oneServer(steps, true);
    expect(got).toEqual(want);
    expect(got.flat().filter((r) => r.startsWith('E'))).toEqual([]);
  });

  it('inside a transaction block the error is not retried, and the next use prepares the statement again', async () => {
    const got = await oneServer([select, alter, [msg.query('BEGIN')], select, [msg.query('ROLLBACK')], select], true);
    expect(got[2]).toEqual(['1', 'E 0A000 cached plan must not change result type', 'Z E']);
    expect(got[4]).toEqual(['1', '2', 'T', 'D 00020000000131000000017' + '8', 'C SELECT 1', 'Z I']);
  });
});

describe('malformed extended messages', () => {
  it('reach PostgreSQL as they are and get its own error, as on a direct connection', async () => {
    const raw = (type: string, body: string) => {
      const b = Buffer.from(body, 'latin1');
      const m = Buffer.alloc(5 + b.length);
      m.write(type, 0, 'latin1');
      m.writeInt32BE(4 + b.length, 1);
      b.copy(m, 5);
      return m;
    };
    await same([
      [raw('P', 'S_1\0SELECT 1'), msg.sync()],
      [raw('B', '\0S_1'), msg.sync()],
      [raw('D', 'Xname\0'), msg.sync()],
      [raw('C', 'S'), msg.sync()],
      [msg.parse('S_1', 'SELECT 1'), msg.bind('S_1'), msg.execute(), msg.sync()],
    ]);
  });
});
