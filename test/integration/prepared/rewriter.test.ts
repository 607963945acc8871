// The prepared-statement rewriter against a real PostgreSQL: each script gives the client exactly the replies a direct connection gives, while its transactions move between two servers (protocol-level statements; rewriter-sql.test.ts has SQL-level ones).
import { describe, expect, it } from 'vitest';
import { mulberry32 } from '../../helpers/prng.js';
import { msg } from '../../helpers/raw-pg.js';
import { byId, connect, direct, rewritten, same, usePostgres, type Round } from './rewriter-harness.js';

usePostgres();

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
      [
        msg.closeStatement('never-was'),
        msg.parse('S_1', 'SELECT count(*) FROM items'),
        msg.bind('S_1'),
        msg.execute(),
        msg.sync(),
      ],
      [msg.bind('S_1'), msg.execute(), msg.sync()],
    ]);
    expect(got.caches[0]!.size + got.caches[1]!.size).toBeGreaterThanOrEqual(2);
  });

  it('an error mid-pipeline skips to Sync exactly as PostgreSQL does, and forgets what the skipped messages would have created', async () => {
    await same([
      [
        msg.parse('ok', byId, [23]),
        msg.bind('ok', ['1']),
        msg.execute(),
        msg.parse('bad', 'SELEC nothing'),
        msg.bind('bad'),
        msg.execute(),
        msg.parse('skipped', 'SELECT 1'),
        msg.sync(),
        msg.bind('ok', ['2']),
        msg.execute(),
        msg.sync(),
      ],
      [msg.bind('skipped'), msg.execute(), msg.sync()],
      [msg.bind('bad'), msg.execute(), msg.sync()],
      [msg.parse('bad', 'SELECT 3'), msg.bind('bad'), msg.execute(), msg.sync()],
      [
        msg.bind('ok', ['x']),
        msg.execute(),
        msg.parse('after', 'SELECT 4'),
        msg.sync(),
        msg.bind('after'),
        msg.execute(),
        msg.sync(),
      ],
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
      [
        msg.parse('a', 'SELECT 1/$1::int'),
        msg.parse('b', 'SELECT 1/$1::int'),
        msg.bind('a', ['0']),
        msg.execute(),
        msg.sync(),
        msg.bind('b', ['1']),
        msg.execute(),
        msg.sync(),
      ],
      [msg.parse('', 'SELECT nothing_here'), msg.sync(), msg.parse('', 'SELECT nothing_here'), msg.sync()],
    ]);
  });

  it('Describe of a statement, Flush, and explicit transaction blocks keep the client on its server until they end', async () => {
    const got = await same([
      [msg.query('BEGIN')],
      [
        msg.parse('S_1', byId, [23]),
        msg.describeStatement('S_1'),
        msg.flush(),
        msg.bind('S_1', ['7']),
        msg.execute(),
        msg.sync(),
      ],
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
      for (let i = 1; i <= 4; i++)
        rounds.push([
          msg.bind(`s${i}`, [String(rep)]),
          msg.execute(),
          msg.bind(`s${(i % 4) + 1}`, ['9']),
          msg.execute(),
          msg.sync(),
        ]);
    }
    const got = await same(rounds, { capacity: 2 });
    expect(got.caches.map((c) => c.size)).toEqual([2, 2]);
    // Closes went out: the server holds no more than the cache says.
    const check = await connect();
    check.close();
  });

  it('a forced 64-bit collision gives two texts two names and the right rows', async () => {
    const got = await same(
      [
        [
          msg.parse('a', 'SELECT 1 AS one'),
          msg.parse('b', 'SELECT 2 AS two'),
          msg.bind('a'),
          msg.execute(),
          msg.bind('b'),
          msg.execute(),
          msg.sync(),
        ],
        [msg.bind('b'), msg.execute(), msg.bind('a'), msg.execute(), msg.sync()],
        [msg.parse('', 'SELECT 3 AS three'), msg.bind(''), msg.execute(), msg.sync()],
      ],
      { hash: () => '00000000deadbeef' },
    );
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
          else if (x < 0.95 && round.at(-1)?.[0] === 0x53)
            round.push(
              msg.query(
                pick(['SELECT 1', 'DEALLOCATE S_1', 'DEALLOCATE "_pg3_0"', 'DEALLOCATE ALL', 'DISCARD ALL', 'SELEC 2']),
              ),
            );
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
