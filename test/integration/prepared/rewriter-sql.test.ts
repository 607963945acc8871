// The prepared-statement rewriter against a real PostgreSQL, compared with a direct connection: SQL-level PREPARE, EXECUTE and DEALLOCATE, DDL under cached statements, malformed extended messages.
import { describe, expect, it } from 'vitest';
import { Interner } from '../../../src/pooler/prepared/interner.js';
import { StatementRewriter } from '../../../src/pooler/prepared/rewriter.js';
import { ServerStatements } from '../../../src/pooler/prepared/server-cache.js';
import { describeMessage, msg, type Message } from '../../helpers/raw-pg.js';
import { byId, connect, database, readies, same, usePostgres, type Round } from './rewriter-harness.js';

usePostgres();

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
      const sink = {
        toServer: (buf: Buffer) => conn.send(buf),
        toClient: (buf: Buffer) => got.push(describeMessage({ type: String.fromCharCode(buf[0]!), raw: buf })),
      };
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
    expect(await run(b, 'EXECUTE mine(2)')).toEqual([
      'T',
      'D 000100000002' + Buffer.from('42').toString('hex'),
      'C SELECT 1',
      'Z I',
    ]);
    expect(await run(a, 'EXECUTE mine(2)')).toEqual(['E 26000 prepared statement "mine" does not exist', 'Z I']);
  });
});

describe('a DDL change under statements the pooler cached', () => {
  /** Rounds on one connection (direct) or one server through a rewriter; a function in the list runs DDL between rounds. */
  async function oneServer(steps: (Round | (() => void))[], through: boolean): Promise<string[][]> {
    database().sql('DROP TABLE IF EXISTS ddl; CREATE TABLE ddl (a int); INSERT INTO ddl VALUES (1)', 'app');
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
        const sink = {
          toServer: (b: Buffer) => conn.send(b),
          toClient: (b: Buffer) => got.push({ type: String.fromCharCode(b[0]!), raw: b }),
        };
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
  const alter = () => database().sql(`ALTER TABLE ddl ADD COLUMN c${++column} text DEFAULT $$x$$`, 'app');
  const select: Round = [
    msg.parse('', 'SELECT * FROM ddl'),
    msg.bind(''),
    msg.describePortal(),
    msg.execute(),
    msg.sync(),
  ];

  it('an unnamed statement answered from the cache is prepared again and retried: the client sees the new columns, no 0A000', async () => {
    const steps = [
      select,
      alter,
      select,
      [msg.parse('', 'SELECT * FROM ddl'), msg.describeStatement(''), msg.bind(''), msg.execute(), msg.sync()],
      alter,
      select,
    ];
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
