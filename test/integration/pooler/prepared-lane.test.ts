// Cache hits answered by the native relay's lane (native/relay-lane.h) and its hand-over to the JavaScript rewriter: scripts of repeated Binds and unnamed Parses, with errors at Bind and at Execute, pipelined groups and messages only the rewriter takes, give the client exactly what a direct connection gives (on the JavaScript relay too, where the rewriter does it all).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nativeLoaded } from '../../../src/native/index.js';
import { Interner } from '../../../src/pooler/prepared/interner.js';
import { NativeRelay } from '../../../src/pooler/relay/native.js';
import { poolerToml, startTestPooler, type TestPooler } from '../../helpers/pooler.js';
import { startItemsPostgres, type TestPostgres } from '../../helpers/postgres.js';
import { mulberry32 } from '../../helpers/prng.js';
import { describeMessage, msg, RawConnection } from '../../helpers/raw-pg.js';

let db: TestPostgres;
let tp: TestPooler;
const open: RawConnection[] = [];
const native = nativeLoaded && process.env['TIDEPOOL_NATIVE_RELAY'] !== '0';

beforeAll(async () => {
  db = await startItemsPostgres();
  tp = await startTestPooler(poolerToml(db, { general: 'auth_type = "md5"\nprepared_statements = true' }));
});
afterAll(async () => {
  for (const c of open) c.close();
  await tp?.stop();
  await db?.cleanup();
});

type Round = Buffer[];
const readies = (round: Round) => round.filter((m) => m[0] === 0x53 || m[0] === 0x51).length;

async function connect(port: number | null): Promise<RawConnection> {
  const c =
    port !== null
      ? await RawConnection.connect({ host: '127.0.0.1', port, user: 'md5user', password: 'md5pass', database: 'app' })
      : await RawConnection.connect({ host: db.host, port: db.port, user: 'trustuser', database: 'app' });
  open.push(c);
  return c;
}

/** The replies to each round on one connection, direct (port null) or through the pooler on `port`. A round given
 * as two parts is sent in two writes (the second while the first may still be answered). */
async function play(rounds: (Round | [Round, Round])[], port: number | null): Promise<string[][]> {
  const c = await connect(port);
  const out: string[][] = [];
  for (const round of rounds) {
    const parts = Array.isArray(round[0]) ? (round as [Round, Round]) : [round as Round];
    for (const p of parts) c.send(...p);
    out.push((await c.readUntilReady(parts.reduce((n, p) => n + readies(p), 0))).map(describeMessage));
  }
  c.close();
  return out;
}

const laneAnswered = () => NativeRelay.get()?.laneAnswered ?? 0;
const byId = 'SELECT id, name FROM items WHERE id = $1';
// Not foldable by the planner: the error comes at Execute under a custom or a generic plan alike (a cached statement
// may get PostgreSQL's generic plan where a direct unnamed one is planned with its values and fails at Bind).
const div = 'SELECT (id + $1::int) / $2::int AS q FROM items WHERE id = 1';
const unnamedRound = (a: number, b: number): Round => [
  msg.parse('', div, [23, 23]),
  msg.bind('', [String(a), String(b)]),
  msg.describePortal(),
  msg.execute(),
  msg.sync(),
];
const namedRound = (id: number): Round => [
  msg.bind('S1', [String(id)]),
  msg.describePortal(),
  msg.execute(),
  msg.sync(),
];

describe('the native lane: cache hits answered without the JavaScript rewriter, and its hand-over', () => {
  it('repeated Binds and unnamed Parses, errors at Bind and at Execute, pipelined groups: what a direct connection gives', async () => {
    const rounds: (Round | [Round, Round])[] = [[msg.parse('S1', byId, [23]), msg.sync()], unnamedRound(6, 3)];
    for (let i = 0; i < 12; i++)
      rounds.push(
        i % 3 === 0
          ? [...namedRound(i + 1), ...unnamedRound(i, 2)]
          : i % 3 === 1
            ? namedRound(i + 1)
            : unnamedRound(i, 1),
      );
    rounds.push(
      unnamedRound(1, 0), // division by zero at Execute, after BindComplete and RowDescription reached the client
      namedRound(4),
      [msg.bind('S1', []), msg.execute(), msg.sync()], // wrong parameter count: PostgreSQL's error names S1, not the pooler's name
      namedRound(5),
      [...unnamedRound(2, 0), ...namedRound(6), ...unnamedRound(8, 4)], // the first group fails, the next ones run
      [...namedRound(7), msg.describeStatement('S1'), msg.sync()], // a message only the rewriter takes, in the same read
      [namedRound(8), [msg.closeStatement('S1'), msg.parse('S1', div, [23, 23]), msg.sync()]], // sent while the first is answered
      [msg.bind('S1', ['9', '3']), msg.execute(), msg.sync()],
      [msg.query('BEGIN')],
      unnamedRound(3, 1),
      unnamedRound(3, 0), // fails inside the transaction block
      unnamedRound(3, 1), // current transaction is aborted
      [msg.query('ROLLBACK')],
      unnamedRound(5, 5),
    );
    const before = laneAnswered();
    const want = await play(rounds, null);
    const got = await play(rounds, tp.port);
    expect(got).toEqual(want);
    expect(want.flat().join('\n')).toContain('prepared statement "S1" requires 1');
    // The lane's counts reach JavaScript when the pair splits or the client leaves.
    await new Promise((r) => setTimeout(r, 100));
    if (native) expect(laneAnswered() - before).toBeGreaterThan(10);
    // Every completed Execute of S1's first text is counted and timed, whoever answered it (13 in the rounds above).
    const statements = new Set(
      [...tp.pooler.pools.values()].flatMap((pool) =>
        [...pool.servers].flatMap((srv) => [...(srv.statements?.statements() ?? [])]),
      ),
    );
    const first = [...statements].filter((st) => st.query.toString() === byId);
    expect(first.map((st) => st.executions)).toEqual([13]);
    expect(first[0]!.execTimeUs).toBeGreaterThan(0);
    // Every use that reached a server is a hit or a miss, whoever answered it: the lane's uses count as hits.
    for (const st of statements) expect(st.cacheHits + st.cacheMisses, st.query.toString()).toBe(st.countUsed);
    expect(first[0]!.cacheHits).toBeGreaterThan(10);
  });

  it('random scripts of mostly cache hits from three clients sharing two servers give what a direct connection gives', async () => {
    const before = laneAnswered();
    await randomBatches(
      tp.port,
      mulberry32(20261123),
      ['', 'S_1', '_pg3_0'],
      Number(process.env['LANE_BATCHES'] ?? 10),
    );
    if (native) {
      await new Promise((r) => setTimeout(r, 100));
      expect(laneAnswered() - before).toBeGreaterThan(0);
    }
  });

  it('with a server cache of 2 (evictions closed between lane runs) and every text under one forced 64-bit hash', async () => {
    const small = await startTestPooler(
      poolerToml(db, {
        general: 'auth_type = "md5"\nprepared_statements = true\nserver_prepared_statements_cache_size = 2',
      }),
    );
    try {
      // The interner's test hook, set before any server exists: every text collides, so names get suffixes.
      const hashed: string[] = [];
      for (const pool of small.pooler.pools.values()) {
        if (pool.interner)
          (pool as { interner: Interner }).interner = new Interner({
            idleCapacity: 8192,
            hash: () => {
              hashed.push('x');
              return 'feedfacecafebeef';
            },
          });
      }
      await randomBatches(
        small.port,
        mulberry32(20261124),
        ['', 'S_1', 'S_2', '_pg3_0', '_pg3_1'],
        Number(process.env['LANE_BATCHES'] ?? 10),
      );
      expect(hashed.length).toBeGreaterThan(0);
      // Texts under one hash got suffixed names on the servers.
      const names = [...small.pooler.pools.values()].flatMap((pool) =>
        [...pool.servers].flatMap((srv) => [...(srv.statements?.statements() ?? [])].map((st) => st.name)),
      );
      expect(names.some((n) => /^tp_feedfacecafebeef_\d+$/.test(n))).toBe(true);
    } finally {
      await small.stop();
    }
  });
});

/** Texts the scripts use: each with the parameters of one Bind. */
const TEXTS: [string, (r: () => number) => string[]][] = [
  [byId, (r) => [String(1 + Math.floor(r() * 25))]],
  [div, (r) => [String(Math.floor(r() * 5)), String(Math.floor(r() * 3))]],
  ['SELECT count(*) FROM items WHERE id < $1', (r) => [String(Math.floor(r() * 30))]],
  ['SELECT name FROM items WHERE id > $1 ORDER BY id LIMIT 2', (r) => [String(Math.floor(r() * 22))]],
];

/** One client's script: every name parsed once, then rounds of groups that are mostly cache hits (Binds of known
 * names, Parses of the unnamed statement's own text), now and then a Close and Parse of a name with another text,
 * a Describe of a statement, a Parse of another unnamed text, or a Bind with the wrong parameter count. */
function makeScript(rand: () => number, names: string[]): Round[] {
  const textOf = new Map<string, number>();
  const setup: Round = [];
  for (const name of names) {
    const t = Math.floor(rand() * TEXTS.length);
    textOf.set(name, t);
    setup.push(msg.parse(name, TEXTS[t]![0], []));
  }
  setup.push(msg.sync());
  const rounds: Round[] = [setup];
  for (let r = 0; r < 10; r++) {
    const round: Round = [];
    const groups = 1 + Math.floor(rand() * 3);
    for (let g = 0; g < groups; g++) {
      const name = names[Math.floor(rand() * names.length)]!;
      const x = rand();
      if (x < 0.06) {
        // The rewriter's own business: a Close and a Parse of the name with another text.
        const next = (textOf.get(name)! + 1) % TEXTS.length;
        round.push(msg.closeStatement(name), msg.parse(name, TEXTS[next]![0], []));
        textOf.set(name, next);
      } else if (x < 0.1) round.push(msg.describeStatement(name));
      else if (x < 0.14) {
        // Another text for the unnamed statement: not a cache hit of the one it has.
        const next = (textOf.get('')! + 1) % TEXTS.length;
        round.push(msg.parse('', TEXTS[next]![0], []));
        textOf.set('', next);
      }
      if (name === '' && rand() < 0.7) round.push(msg.parse('', TEXTS[textOf.get('')!]![0], []));
      round.push(msg.bind(name, rand() < 0.04 ? [] : TEXTS[textOf.get(name)!]![1](rand)));
      if (rand() < 0.5) round.push(msg.describePortal());
      round.push(msg.execute(), msg.sync());
    }
    rounds.push(round);
  }
  return rounds;
}

/** `batches` times: three scripts at once through the pooler on `port` (pool_size 2), each compared with a direct connection. */
async function randomBatches(port: number, rand: () => number, names: string[], batches: number): Promise<void> {
  for (let batch = 0; batch < batches; batch++) {
    const scripts = [makeScript(rand, names), makeScript(rand, names), makeScript(rand, names)];
    const want = await Promise.all(scripts.map((s) => play(s, null)));
    const got = await Promise.all(scripts.map((s) => play(s, port)));
    scripts.forEach((_, i) => expect(got[i], `batch ${batch} client ${i}`).toEqual(want[i]));
  }
}
