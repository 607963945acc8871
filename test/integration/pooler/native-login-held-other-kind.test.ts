// Held logins beside servers lent for another kind of login (native/relay-lend.cc Hold): a pool's idle servers lent to
// the relay for one application_name cannot serve a login with another (Lend matches kinds, and a session's prelink
// takes only JavaScript's idle servers), so such logins are held, not made sessions. Before, every login of another
// kind became a JavaScript session for as long as the lent servers waited: after pgbench (application_name pgbench)
// ran on a pool, all 9 900 idle clients of bench:pooler's 10 000-connected row were sessions (3 KiB of V8 heap each).
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { poolerToml, startTestPooler, appPoolToml, type TestPooler } from '../../helpers/pooler.js';
import { client, nativeRelay, until, useNativeLoginPooler } from './native-login-harness.js';

const env = useNativeLoginPooler();
const holding = nativeRelay && process.env.TIDEPOOL_NATIVE_LEND !== '0';
let tp: TestPooler;
const relayOnly = () => tp.pooler.nativeLogins.relayOnly;
const sessions = () => tp.pooler.clients.size;
const lent = () => [...tp.pooler.pools.values()].reduce((n, p) => n + p.servers.count('lent'), 0);

beforeAll(async () => {
  tp = await startTestPooler(poolerToml(env.db, { pools: appPoolToml(env.db, 2) }));
  // The pool's first login runs in JavaScript (its server's parameters make the relay's greeting).
  const warm = client('md5user', {}, tp);
  await warm.connect();
  await warm.query('select 1');
  await warm.end();
  await until('the first client gone', () => sessions() === 0);
  // Two clients of one kind run a transaction each at the same time: the pool's two servers, then lent to the relay
  // for that kind once they are idle.
  const first = [
    client('md5user', { application_name: 'kind-a' }, tp),
    client('md5user', { application_name: 'kind-a' }, tp),
  ];
  await Promise.all(first.map((c) => c.connect()));
  await Promise.all(first.map((c) => c.query('select pg_sleep(0.05)')));
  await Promise.all(first.map((c) => c.end()));
  await until('the clients gone', () => sessions() === 0 && relayOnly() === 0);
  if (holding) await until('both servers lent', () => lent() === 2);
});

afterAll(async () => {
  await tp?.stop();
});

describe('servers lent for another kind of login', () => {
  it('logins of another application_name are held, not made sessions, and are served', async () => {
    const n = 200;
    const clients: pg.Client[] = [];
    try {
      for (let i = 0; i < n; i += 50) {
        const batch = Array.from({ length: Math.min(50, n - i) }, () => {
          const c = client('md5user', { application_name: 'kind-b' }, tp);
          c.on('error', () => undefined);
          return c;
        });
        await Promise.all(batch.map((c) => c.connect()));
        clients.push(...batch);
      }
      if (holding) {
        expect(sessions()).toBe(0);
        expect(relayOnly()).toBe(n);
        expect(lent()).toBe(2);
      } else expect(sessions()).toBe(n);
      // A held login's first query takes a lent server back and runs with its own parameters.
      const r = await clients[n - 1]!.query<{ app: string }>("select current_setting('application_name') as app");
      expect(r.rows[0]!.app).toBe('kind-b');
      const all = await Promise.all(clients.slice(0, 20).map((c) => c.query<{ one: number }>('select 1 as one')));
      expect(all.every((x) => x.rows[0]!.one === 1)).toBe(true);
    } finally {
      await Promise.all(clients.map((c) => c.end().catch(() => undefined)));
    }
    await until('every client gone', () => sessions() === 0 && relayOnly() === 0);
  });
});
