// Errors sent to clients counted per pool and SQLSTATE (as pg_doorman shows them): PostgreSQL's, over the simple and
// the extended protocol, and the pooler's own; through SHOW ERRORS, /api/errors and /api/pools/<database>/<user>/errors.
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestPostgres, type TestPostgres } from '../../helpers/postgres.js';
import { operatorToml, poolToml, startOperator, type OperatorHarness } from '../../helpers/operator.js';

let db: TestPostgres;
let h: OperatorHarness;
let deadPort: number;

beforeAll(async () => {
  db = await startTestPostgres();
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  deadPort = (s.address() as net.AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  h = await startOperator(
    operatorToml({
      pools:
        poolToml(db, 'errs', '', [
          { username: 'md5user', password: 'md5pass' },
          { username: 'scramuser', password: 'scrampass' },
        ]) +
        `
[pools.dead]
server_host = "127.0.0.1"
server_port = ${deadPort}
server_database = "postgres"

[[pools.dead.users]]
username = "md5user"
password = "md5pass"
`,
    }),
  );
});
afterAll(async () => {
  await h?.stop();
  await db?.cleanup();
});

async function failing(
  user: string,
  password: string,
  run: (q: (text: string, values?: unknown[]) => Promise<string>) => Promise<void>,
): Promise<void> {
  const c = h.client('errs', user, password);
  await c.connect();
  try {
    await run(async (text, values) => {
      try {
        await c.query(text, values);
        return 'ok';
      } catch (err) {
        return (err as { code: string }).code;
      }
    });
  } finally {
    await c.end();
  }
}

describe('errors by SQLSTATE', () => {
  it("counts each pool's errors under their SQLSTATE, most first, the same on SHOW and both API paths", async () => {
    await failing('md5user', 'md5pass', async (q) => {
      for (let i = 0; i < 3; i++) expect(await q('SELECT 1/0')).toBe('22012');
      // Extended protocol (Parse/Bind/Execute).
      expect(await q('SELECT 1/$1::int', [0])).toBe('22012');
      expect(await q('SELECT * FROM no_such_table')).toBe('42P01');
      expect(await q('SELECT * FROM no_such_table')).toBe('42P01');
      expect(await q('SELEC 1')).toBe('42601');
      expect(await q('BEGIN')).toBe('ok');
      expect(await q('SELECT 1/0')).toBe('22012');
      expect(await q('SELECT 1')).toBe('25P02');
      expect(await q('ROLLBACK')).toBe('ok');
      expect(await q('SELECT 1')).toBe('ok');
    });
    await failing('scramuser', 'scrampass', async (q) => {
      expect(await q('SELECT * FROM no_such_table')).toBe('42P01');
    });
    const md5 = [
      { sqlstate: '22012', count: 5 },
      { sqlstate: '42P01', count: 2 },
      { sqlstate: '25P02', count: 1 },
      { sqlstate: '42601', count: 1 },
    ];
    const api = await h.api('/api/pools/errs/md5user/errors');
    expect(api).toEqual({ status: 200, body: md5 });
    expect((await h.api('/api/pools/errs/scramuser/errors')).body).toEqual([{ sqlstate: '42P01', count: 1 }]);
    const rows = (await h.api('/api/errors')).body as Record<string, unknown>[];
    expect(rows.filter((r) => r['database'] === 'errs')).toEqual([
      ...md5.map((e) => ({ database: 'errs', user: 'md5user', ...e })),
      { database: 'errs', user: 'scramuser', sqlstate: '42P01', count: 1 },
    ]);
    const shown = (await h.show('ERRORS')).filter((r) => r['database'] === 'errs');
    expect(shown).toEqual(
      rows.filter((r) => r['database'] === 'errs').map((r) => ({ ...r, count: String(r['count']) })),
    );
    // The total the console and STATS show is the same errors.
    const stats = (await h.show('STATS')).find((r) => r['database'] === 'errs' && r['user'] === 'md5user')!;
    expect(Number(stats['total_errors'])).toBe(9);
  });

  it("counts the pooler's own errors (PostgreSQL unreachable: 08006) and answers 404 for an unknown pool", async () => {
    const c = h.client('dead', 'md5user', 'md5pass');
    await expect(c.connect()).rejects.toMatchObject({ code: '08006' });
    expect((await h.api('/api/pools/dead/md5user/errors')).body).toEqual([{ sqlstate: '08006', count: 1 }]);
    expect(await h.api('/api/pools/nope/md5user/errors')).toMatchObject({ status: 404, body: { error: 'not_found' } });
  });
});
