// Session parameters in transaction mode: each client sees its own SET / RESET values, as on a direct connection, and no other client's.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import postgres from 'postgres';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { startTestPostgres, type TestPostgres } from '../../helpers/postgres.js';
import { poolerToml, poolToml, startTestPooler, type TestPooler } from '../../helpers/pooler.js';

let db: TestPostgres;
let tp: TestPooler;

const SHOWN = ['search_path', 'TimeZone', 'DateStyle', 'application_name', 'IntervalStyle', 'myapp.tenant'] as const;

function txPool(name: string, size: number): string {
  return poolToml(db, name, 'pool_mode = "transaction"', [
    { username: 'md5user', password: 'md5pass', extra: `pool_size = ${size}` },
  ]);
}

beforeAll(async () => {
  db = await startTestPostgres();
  tp = await startTestPooler(poolerToml(db, { pools: txPool('params1', 1) + txPool('params2', 2) }));
});

afterAll(async () => {
  await tp?.stop();
  await db?.cleanup();
});

type Target = 'direct' | 'params1' | 'params2';

/** A node-postgres client that also records every ParameterStatus it is sent (`told`, and how many after login). */
async function connect(
  target: Target,
  extra: pg.ClientConfig = {},
): Promise<pg.Client & { told: Map<string, string>; toldAfterLogin: number }> {
  const direct = target === 'direct';
  const c = new pg.Client({
    host: direct ? db.host : '127.0.0.1',
    port: direct ? db.port : tp.port,
    user: 'md5user',
    password: 'md5pass',
    database: direct ? 'app' : target,
    ...extra,
  }) as pg.Client & { told: Map<string, string>; toldAfterLogin: number };
  c.told = new Map();
  c.toldAfterLogin = 0;
  let loggedIn = false;
  (
    c as unknown as {
      connection: { on(e: string, f: (m: { parameterName: string; parameterValue: string }) => void): void };
    }
  ).connection.on('parameterStatus', (m) => {
    c.told.set(m.parameterName, m.parameterValue);
    if (loggedIn) c.toldAfterLogin++;
  });
  await c.connect();
  loggedIn = true;
  return c;
}

async function shown(c: pg.Client): Promise<Record<string, string | null>> {
  // A custom placeholder once set stays in a server's session, empty: compared as empty, as apps read it (README).
  const cols = SHOWN.map((n, i) =>
    n.includes('.') ? `coalesce(current_setting('${n}', true), '') AS c${i}` : `current_setting('${n}', true) AS c${i}`,
  ).join(', ');
  const r = await c.query(`SELECT ${cols}`);
  return Object.fromEntries(SHOWN.map((n, i) => [n, r.rows[0][`c${i}`] as string | null]));
}

/** Runs `steps` on a fresh client of `target` and returns what it then shows. */
async function after(
  target: Target,
  steps: string[],
  extra: pg.ClientConfig = {},
): Promise<Record<string, string | null>> {
  const c = await connect(target, extra);
  try {
    for (const s of steps) await c.query(s).catch(() => undefined);
    return await shown(c);
  } finally {
    await c.end();
  }
}

const SETS = [
  'SET search_path = leaked_a, public',
  "SET TimeZone = 'Asia/Tokyo'",
  "SET DateStyle = 'SQL, DMY'",
  "SET application_name = 'client_a'",
  "SET IntervalStyle = 'sql_standard'",
  "SET myapp.tenant = 'tenant_a'",
];

describe.each(['params1', 'params2'] as const)('session parameters through %s', (pool) => {
  it('a client sees its own SETs in every later transaction, and a new client sees none of them', async () => {
    const directDefault = await after('direct', []);
    const directSet = await after('direct', SETS);
    expect(directSet.search_path).toBe('leaked_a, public');
    const a = await connect(pool);
    const b = await connect(pool);
    try {
      for (const s of SETS) await a.query(s);
      for (let i = 0; i < 5; i++) {
        expect(await shown(a)).toEqual(directSet);
        expect(await shown(b)).toEqual(directDefault);
      }
      // B was never told A's values (the set_config ahead of its transactions is swallowed whole).
      expect(b.toldAfterLogin).toBe(0);
      expect(b.told.get('TimeZone')).toBe(directDefault.TimeZone);
      expect(a.told.get('TimeZone')).toBe('Asia/Tokyo');
    } finally {
      await a.end();
      await b.end();
    }
    // Nor does a client that comes after A left.
    expect(await after(pool, [])).toEqual(directDefault);
  });

  it('RESET ALL, RESET one, SET ... TO DEFAULT and DISCARD ALL end as on a direct connection', async () => {
    for (const steps of [
      [...SETS, 'RESET ALL'],
      [...SETS, 'RESET search_path', 'RESET myapp.tenant', 'SET TimeZone TO DEFAULT'],
      [...SETS, 'DISCARD ALL'],
    ]) {
      expect({ steps, shown: await after(pool, steps) }).toEqual({ steps, shown: await after('direct', steps) });
    }
    // A startup value is what RESET returns to.
    const steps = ["SET application_name = 'changed'", 'RESET ALL'];
    expect(await after(pool, steps, { application_name: 'from_startup' })).toEqual(
      await after('direct', steps, { application_name: 'from_startup' }),
    );
    // And the client is told so: its last ParameterStatus for application_name is its own again.
    for (const target of [pool, 'direct'] as const) {
      const c = await connect(target, { application_name: 'from_startup' });
      try {
        for (const s of steps) await c.query(s);
        await c.query('SELECT 1');
        expect(c.told.get('application_name')).toBe('from_startup');
      } finally {
        await c.end();
      }
    }
  });

  it("startup values (options -c, application_name) are the client's own from login on, ParameterStatus included", async () => {
    const extra = {
      options: '-c TimeZone=Asia/Tokyo -c search_path=opt_s,public -c myapp.tenant=from_options',
      application_name: 'opt_app',
    };
    const direct = await connect('direct', extra);
    const pooled = await connect(pool, extra);
    const plain = await connect(pool);
    try {
      expect(pooled.told.get('TimeZone')).toBe(direct.told.get('TimeZone'));
      expect(pooled.told.get('application_name')).toBe('opt_app');
      for (let i = 0; i < 3; i++) {
        expect(await shown(pooled)).toEqual(await shown(direct));
        expect((await shown(plain)).TimeZone).not.toBe('Asia/Tokyo');
      }
    } finally {
      await Promise.all([direct.end(), pooled.end(), plain.end()]);
    }
  });

  it('SET LOCAL, a rolled-back SET and a failed SET do not stick; SET in a committed block does', async () => {
    for (const steps of [
      ['BEGIN', 'SET LOCAL search_path = local_only, public', "SET LOCAL myapp.tenant = 'local'", 'COMMIT'],
      ['BEGIN', 'SET search_path = rolled_back, public', "SET TimeZone = 'Europe/Paris'", 'ROLLBACK'],
      ['SET search_path = implicit_fail; SELECT 1/0'],
      [
        'BEGIN',
        "SET myapp.tenant = 'kept'",
        'SAVEPOINT s',
        "SET myapp.tenant = 'undone'",
        'ROLLBACK TO SAVEPOINT s',
        'COMMIT',
      ],
      ['BEGIN', 'SET search_path = committed, public', 'COMMIT'],
      ["SET TimeZone = 'No/Such_Zone'", 'SET search_path = after_error, public', 'SET datestyle = nonsense'],
      ['SET search_path = ', "SET myapp.tenant = 'after_syntax_error'"],
    ]) {
      expect(await after(pool, steps)).toEqual(await after('direct', steps));
    }
  });

  it('two clients interleaving with different settings each see only their own', async () => {
    const zone = (await after('direct', [])).TimeZone;
    const a = await connect(pool);
    const b = await connect(pool);
    try {
      await a.query("SET myapp.tenant = 'a'; SET search_path = schema_a, public");
      await b.query("SET myapp.tenant = 'b'");
      await b.query("SET TimeZone = 'America/New_York'");
      const checks: Promise<void>[] = [];
      for (let i = 0; i < 20; i++) {
        checks.push(
          a
            .query(
              "SELECT current_setting('myapp.tenant') t, current_setting('search_path') p, current_setting('TimeZone') z",
            )
            .then((r) => {
              expect(r.rows[0]).toEqual({ t: 'a', p: 'schema_a, public', z: zone });
            }),
        );
        checks.push(
          b
            .query(
              "SELECT current_setting('myapp.tenant') t, current_setting('search_path') p, current_setting('TimeZone') z",
            )
            .then((r) => {
              expect(r.rows[0]).toEqual({ t: 'b', p: '"$user", public', z: 'America/New_York' });
            }),
        );
      }
      await Promise.all(checks);
    } finally {
      await a.end();
      await b.end();
    }
  });

  it('the extended protocol (postgres.js, prepared statements) keeps each client its own', async () => {
    const url = (database: string) => ({
      host: '127.0.0.1',
      port: tp.port,
      user: 'md5user',
      pass: 'md5pass',
      database,
      max: 1,
      onnotice: () => undefined,
    });
    const a = postgres(url(pool));
    const b = postgres(url(pool));
    try {
      await a`SET search_path TO ext_a, public`;
      await a`SELECT set_config('myapp.tenant', 'ext', false)`;
      for (let i = 0; i < 3; i++) {
        const [ra] =
          await a`SELECT current_setting('search_path') p, coalesce(current_setting('myapp.tenant', true), '') t`;
        const [rb] =
          await b`SELECT current_setting('search_path') p, coalesce(current_setting('myapp.tenant', true), '') t`;
        expect(ra).toEqual({ p: 'ext_a, public', t: 'ext' });
        expect(rb).toEqual({ p: '"$user", public', t: '' });
      }
    } finally {
      await a.end();
      await b.end();
    }
  });

  it('psql: its startup application_name and its SETs stay its own', async () => {
    const run = (port: number, host: string, database: string) =>
      promisify(execFile)(
        'psql',
        [
          '-h',
          host,
          '-p',
          String(port),
          '-U',
          'md5user',
          '-d',
          database,
          '-AtX',
          '-c',
          "SET myapp.tenant = 'psql_t'",
          '-c',
          'SET search_path = from_psql, public',
          '-c',
          "SELECT current_setting('application_name'), current_setting('myapp.tenant'), current_setting('search_path')",
        ],
        { env: { ...process.env, PGPASSWORD: 'md5pass' } },
      );
    const other = await connect(pool);
    try {
      const [viaPooler, direct] = await Promise.all([run(tp.port, '127.0.0.1', pool), run(db.port, db.host, 'app')]);
      expect(viaPooler.stdout).toBe(direct.stdout);
      expect(viaPooler.stdout.trim().split('\n').pop()).toBe('psql|psql_t|from_psql, public');
      expect((await shown(other))['myapp.tenant']).toBe('');
    } finally {
      await other.end();
    }
  });

  it('a client that never SETs costs no statement of the pooler once each server has its parameters', async () => {
    const asks: string[] = [];
    const p = tp.pooler.pool(pool, 'md5user')!;
    const clients = await Promise.all([0, 1, 2].map(() => connect(pool)));
    try {
      // Until each server of the pool has served one of them (and taken their parameters once).
      const synced = () =>
        p.servers.size > 0 &&
        [...p.servers].every((s) => s.paramValues !== null) &&
        new Set([...p.servers].map((s) => s.paramValues!.key)).size === 1;
      for (
        let round = 0;
        round < 200 && (round < 3 || !synced() || p.servers.size < (pool === 'params1' ? 1 : 2));
        round++
      ) {
        await Promise.all(clients.map((c) => c.query('SELECT pg_sleep(0.002)')));
      }
      expect(synced()).toBe(true);
      for (const s of p.servers) {
        const end = s.end as { ask: (q: Buffer, d: (r: Buffer, e: boolean) => void) => void };
        const ask = end.ask.bind(end);
        end.ask = (q, d) => {
          asks.push(q.toString('utf8', 5));
          ask(q, d);
        };
      }
      for (let i = 0; i < 10; i++) await Promise.all(clients.map((c) => c.query('SELECT 1')));
      expect(asks).toEqual([]);
    } finally {
      for (const c of clients) await c.end();
    }
  });
});

describe('a SET whose Query arrives in pieces', () => {
  it("is followed when the Query's header is cut across two reads: the next client of the server does not get it", async () => {
    const c = await connect('params1');
    const stream = (c as unknown as { connection: { stream: import('node:net').Socket } }).connection.stream;
    stream.setNoDelay(true);
    const write = stream.write.bind(stream) as (b: Buffer) => boolean;
    // The Query of the SET leaves in two writes 50 ms apart, cut inside its 5-byte header: the pooler reads them apart.
    (stream as unknown as { write: (b: Buffer) => boolean }).write = (b: Buffer) => {
      if (Buffer.isBuffer(b) && b[0] === 0x51 && b.includes('cut_header')) {
        write(b.subarray(0, 3));
        setTimeout(() => write(b.subarray(3)), 50);
        return true;
      }
      return write(b);
    };
    try {
      await c.query('SET search_path = cut_header, public');
      expect((await shown(c))['search_path']).toBe('cut_header, public');
    } finally {
      await c.end();
    }
    // params1 has one server: the next client gets the same one, with its own (default) search_path.
    expect((await after('params1', []))['search_path']).toBe((await after('direct', []))['search_path']);
  });
});
