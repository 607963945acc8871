// Clients that start with the simple protocol pass straight through (no rewriter) until their first Parse, Bind, Describe, Close or SQL PREPARE/EXECUTE/DEALLOCATE/DISCARD: the rewriter taking over mid-stream (with a large result still arriving, a header cut by a read) gives what a direct connection gives, SQL PREPARE after simple queries survives a change of server, and a DEALLOCATE ALL the rewriter never saw still empties that server's cache.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { ADMIN_PASSWORD, appPoolToml, poolerToml, startTestPooler, type TestPooler } from '../../helpers/pooler.js';
import { startTestPostgres, type TestPostgres } from '../../helpers/postgres.js';
import { describeMessage, msg, RawConnection } from '../../helpers/raw-pg.js';

let db: TestPostgres;
let tp: TestPooler;
let admin: pg.Client;
const open: RawConnection[] = [];

beforeAll(async () => {
  db = await startTestPostgres();
  tp = await startTestPooler(
    poolerToml(db, { general: 'auth_type = "md5"\nprepared_statements = true', pools: appPoolToml(db, 1) }),
  );
  admin = new pg.Client({
    host: '127.0.0.1',
    port: tp.port,
    user: 'admin',
    password: ADMIN_PASSWORD,
    database: 'tidepool',
  });
  await admin.connect();
});
afterAll(async () => {
  for (const c of open) c.close();
  await admin?.end().catch(() => undefined);
  await tp?.stop();
  await db?.cleanup();
});

async function connect(viaPooler = true): Promise<RawConnection> {
  const c = viaPooler
    ? await RawConnection.connect({
        host: '127.0.0.1',
        port: tp.port,
        user: 'md5user',
        password: 'md5pass',
        database: 'app',
      })
    : await RawConnection.connect({ host: db.host, port: db.port, user: 'trustuser', database: 'app' });
  open.push(c);
  return c;
}

/** Replies, with rows reduced to a count per reply group (the big results are compared by count and by an md5 row). */
async function readAll(c: RawConnection, readies: number): Promise<string[]> {
  const out: string[] = [];
  let rows = 0;
  for (const m of await c.readUntilReady(readies)) {
    if (m.type === 'D' && m.raw.length > 200) {
      rows++;
      continue;
    }
    if (rows > 0) out.push(`${rows} big rows`);
    rows = 0;
    out.push(describeMessage(m));
  }
  return out;
}

const BIG = 'SELECT g, repeat(md5(g::text), 40) FROM generate_series(1, 3000) g';

describe('the rewriter taking over a client mid-stream', () => {
  it('a Parse pipelined behind simple queries whose large result is still arriving, and a Parse header cut by a write', async () => {
    const script = async (c: RawConnection): Promise<string[]> => {
      const out: string[] = [];
      c.send(msg.query('SELECT 1 AS one'));
      out.push(...(await readAll(c, 1)));
      // A large result in flight, and the first message the rewriter must see behind it in the same write.
      c.send(
        msg.query(BIG),
        msg.query('SELECT 2'),
        msg.parse('S1', 'SELECT $1::int * 2 AS twice', []),
        msg.bind('S1', ['21']),
        msg.execute(),
        msg.sync(),
      );
      out.push(...(await readAll(c, 3)));
      c.send(msg.bind('S1', ['5']), msg.execute(), msg.sync());
      out.push(...(await readAll(c, 1)));
      return out;
    };
    const want = await script(await connect(false));
    const got = await script(await connect());
    expect(got).toEqual(want);
    expect(want).toContain('3000 big rows');

    // The header of the first Parse split across two writes, sent while a large result is arriving (its first
    // message read already: the server's stream is then most likely inside a row when the rewriter takes over).
    const cutScript = async (c: RawConnection): Promise<string[]> => {
      const parse = msg.parse('S2', 'SELECT $1::text || $1::text AS twice', []);
      c.send(msg.query(BIG));
      const out = [describeMessage(await c.read())];
      c.send(parse.subarray(0, 3));
      await new Promise((r) => setTimeout(r, 20));
      c.send(parse.subarray(3), msg.bind('S2', ['ab']), msg.execute(), msg.sync());
      out.push(...(await readAll(c, 2)));
      c.send(msg.bind('S2', ['cd']), msg.execute(), msg.sync());
      out.push(...(await readAll(c, 1)));
      return out;
    };
    const wantCut = await cutScript(await connect(false));
    const gotCut = await cutScript(await connect());
    expect(gotCut).toEqual(wantCut);
    expect(wantCut.join('\n')).toContain('D ');
  });

  it('a simple BEGIN pipelined ahead of an extended INSERT while the only server is busy runs first, as sent', async () => {
    // Bytes before the rewriter's first message wait for the server with it: they must reach it first. (They came
    // after the rewriter's own: the INSERT committed on its own and the ROLLBACK had nothing to undo.)
    db.sql('CREATE TABLE IF NOT EXISTS divert_order (v int)', 'app');
    const script = async (c: RawConnection): Promise<string[]> => {
      c.send(
        msg.query('BEGIN'),
        msg.parse('', 'INSERT INTO divert_order VALUES ($1::int)', []),
        msg.bind('', ['7']),
        msg.execute(),
        msg.sync(),
        msg.query('ROLLBACK'),
      );
      const out = await readAll(c, 3);
      c.send(msg.query('SELECT count(*) FROM divert_order'));
      return [...out, ...(await readAll(c, 1))];
    };
    const want = await script(await connect(false));
    const blocker = await connect();
    blocker.send(msg.query('BEGIN'));
    await blocker.readUntilReady();
    const c = await connect();
    const got = script(c);
    await new Promise((r) => setTimeout(r, 100));
    blocker.send(msg.query('COMMIT'));
    await blocker.readUntilReady();
    expect(await got).toEqual(want);
    expect(want).toContain('D 0001000000013' + '0');
  });

  it('SQL PREPARE after simple queries, in any case after whitespace, is re-created on the next server', async () => {
    const a = new pg.Client({
      host: '127.0.0.1',
      port: tp.port,
      user: 'md5user',
      password: 'md5pass',
      database: 'app',
    });
    await a.connect();
    try {
      expect((await a.query('SELECT 1 AS one')).rows[0].one).toBe(1);
      const pid = (await a.query('SELECT pg_backend_pid() AS pid')).rows[0].pid;
      await a.query(' \n\tPrePare q1(int) AS SELECT $1 * 2 AS twice');
      await admin.query('RECONNECT app');
      const r = await a.query('execute Q1(21)');
      expect(r.rows[0].twice).toBe(42);
      expect((await a.query('SELECT pg_backend_pid() AS pid')).rows[0].pid).not.toBe(pid);
    } finally {
      await a.end();
    }
  });

  it('DEALLOCATE ALL inside a longer simple query from a client the rewriter never saw empties that server cache', async () => {
    const b = await connect();
    b.send(msg.parse('S1', 'SELECT $1::int + 1 AS next', []), msg.bind('S1', ['1']), msg.execute(), msg.sync());
    expect((await b.readUntilReady()).map((m) => m.type)).toEqual(['1', '2', 'D', 'C', 'Z']);
    const a = await connect();
    a.send(msg.query('SELECT 1; DEALLOCATE ALL'));
    const replies = (await a.readUntilReady()).map(describeMessage);
    expect(replies).toContain('C DEALLOCATE ALL');
    // One server: b's statement is gone from it; the pooler must prepare it again, not send a Bind of a lost name.
    b.send(msg.bind('S1', ['41']), msg.execute(), msg.sync());
    const again = (await b.readUntilReady()).map(describeMessage);
    expect(again.filter((d) => d.startsWith('E'))).toEqual([]);
    expect(again.find((d) => d.startsWith('D'))).toBe(`D 0001000000023432`);
    a.close();
    b.close();
  });
});
