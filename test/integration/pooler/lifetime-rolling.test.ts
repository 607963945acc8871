// server_lifetime replaces a busy pool's servers one at a time (issue 35, item 3). Servers opened together reach
// their lifetime together; closing them all at once left the pool with none while PostgreSQL forked the
// replacements, and on a loaded host waiting clients reached query_wait_timeout. Here every server connect is held
// 600 ms by a forwarder (a slow fork, as on a loaded host) while clients keep the pool busy: SHOW POOLS must never
// count fewer than pool_size - 1 open servers once the pool is full, and the servers must still be replaced.
import { afterAll, beforeAll, expect, it } from 'vitest';
import pg from 'pg';
import { startForwarder, type Forwarder } from '../../helpers/forwarder.js';
import { poolerToml, startTestPooler, type TestPooler } from '../../helpers/pooler.js';
import { startTestPostgres, type TestPostgres } from '../../helpers/postgres.js';

const POOL_SIZE = 3;
const CONNECT_DELAY_MS = 600;

let db: TestPostgres;
let slow: Forwarder;
let tp: TestPooler;

beforeAll(async () => {
  db = await startTestPostgres();
  slow = await startForwarder(db, { delayMs: CONNECT_DELAY_MS });
  tp = await startTestPooler(
    poolerToml(db, {
      general: 'server_lifetime = "2s"\nquery_wait_timeout = "60s"',
      pools: `
[pools.app]
server_host = "127.0.0.1"
server_port = ${slow.port}
pool_mode = "transaction"

[[pools.app.users]]
username = "md5user"
password = "md5pass"
pool_size = ${POOL_SIZE}
`,
    }),
  );
});

afterAll(async () => {
  await tp?.stop();
  await slow?.stop();
  await db?.cleanup();
});

function openServers(): number {
  const show = tp.pooler.show('POOLS');
  const col = (name: string) => show.columns.indexOf(name);
  const row = show.rows.find((r) => r[col('database')] === 'app' && r[col('user')] === 'md5user');
  if (!row) return 0;
  return ['sv_active', 'sv_idle', 'sv_used', 'sv_tested'].reduce(
    (a, c) => a + Number(col(c) >= 0 ? row[col(c)] : 0),
    0,
  );
}

it('a busy pool retires its expired servers one at a time, never dropping below pool_size - 1', async () => {
  const clients = Array.from(
    { length: 6 },
    () => new pg.Client({ host: '127.0.0.1', port: tp.port, user: 'md5user', password: 'md5pass', database: 'app' }),
  );
  await Promise.all(clients.map((c) => c.connect()));
  const pids = new Set<number>();
  let stop = false;
  const errors: string[] = [];
  const loops = clients.map(async (c) => {
    while (!stop) {
      try {
        const r = await c.query('select pg_backend_pid() as pid');
        pids.add(r.rows[0].pid as number);
        // Gaps between queries: at a maintenance tick the servers are often all idle although the pool is busy.
        await new Promise((r) => setTimeout(r, 10));
      } catch (err) {
        errors.push((err as Error).message);
        return;
      }
    }
  });
  try {
    // The pool fills (three slow connects) before the watch starts.
    const fullBy = Date.now() + 30_000;
    while (openServers() < POOL_SIZE) {
      if (Date.now() > fullBy) throw new Error(`the pool never reached ${POOL_SIZE} servers`);
      await new Promise((r) => setTimeout(r, 20));
    }
    const first = new Set(pids);
    // Watch until every first server was replaced (three lifetimes of 2 s, each replacement 600 ms+), sampling often
    // enough to see a gap of one connect delay.
    let minOpen = POOL_SIZE;
    const watchUntil = Date.now() + 60_000;
    let replaced = 0;
    while (Date.now() < watchUntil && !errors.length) {
      minOpen = Math.min(minOpen, openServers());
      replaced = [...pids].filter((p) => !first.has(p)).length;
      if (replaced >= 2 * POOL_SIZE) break;
      await new Promise((r) => setTimeout(r, 25));
    }
    expect(errors).toEqual([]);
    expect(replaced).toBeGreaterThanOrEqual(2 * POOL_SIZE);
    expect(minOpen).toBeGreaterThanOrEqual(POOL_SIZE - 1);
  } finally {
    stop = true;
    await Promise.all(loops);
    await Promise.all(clients.map((c) => c.end().catch(() => undefined)));
  }
});
