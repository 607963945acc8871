// The scenario of prepared-lane-waiters.test.ts and prepared-lane-waiters-backlog.test.ts: clients of the native lane
// over one server, every transaction's server through the pool's waiter queue. Replies are what direct
// connections give, every Execute and use is counted once on the statements (the same numbers on the JavaScript relay,
// where the rewriter does it all), and SHOW POOLS settles.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nativeLoaded } from '../../../src/native/index.js';
import type { Statement } from '../../../src/pooler/prepared/interner.js';
import { NativeRelay } from '../../../src/pooler/relay/native.js';
import { appPoolToml, poolerToml, startTestPooler, type TestPooler } from '../../helpers/pooler.js';
import { startItemsPostgres, type TestPostgres } from '../../helpers/postgres.js';
import { describeMessage, msg, RawConnection } from '../../helpers/raw-pg.js';
import { show, until } from './native-login-harness.js';

/** The suite: `clients` clients over `servers` servers; `minReports`: release reports that must have brought the lane's
 * counts on the native relay. */
export function laneWaitersSuite(title: string, clients: number, servers: number, minReports: number): void {
  const CLIENTS = clients;
  let db: TestPostgres;
  let tp: TestPooler;
  const open: RawConnection[] = [];
  const native = nativeLoaded && process.env['TIDEPOOL_NATIVE_RELAY'] !== '0';

  beforeAll(async () => {
    db = await startItemsPostgres();
    // Fewer servers than clients for md5user: nearly every transaction waits for one.
    tp = await startTestPooler(
      poolerToml(db, { general: 'auth_type = "md5"\nprepared_statements = true', pools: appPoolToml(db, servers) }),
    );
  });
  afterAll(async () => {
    for (const c of open) c.close();
    await tp?.stop();
    await db?.cleanup();
  });

  type Round = Buffer[];
  const ROUNDS = 25;
  const byId = 'SELECT id, name FROM items WHERE id = $1';
  const div = 'SELECT (id + $1::int) / $2::int AS q FROM items WHERE id = 1';

  /** Parse S1, then rounds of an unnamed Parse of the same text each time (the lane answers it only in a read's first
   * group) and a Bind of S1, each group with its Sync. */
  function script(k: number): Round[] {
    const rounds: Round[] = [[msg.parse('S1', byId, [23]), msg.sync()]];
    for (let i = 0; i < ROUNDS; i++)
      rounds.push([
        msg.parse('', div, [23, 23]),
        msg.bind('', [String(i), '1']),
        msg.describePortal(),
        msg.execute(),
        msg.sync(),
        msg.bind('S1', [String(1 + ((i + k) % 20))]),
        msg.describePortal(),
        msg.execute(),
        msg.sync(),
      ]);
    return rounds;
  }

  /** One client's script on a connection, direct (port null) or through the pooler: the replies to each round. */
  async function play(rounds: Round[], port: number | null): Promise<string[][]> {
    const c =
      port !== null
        ? await RawConnection.connect({
            host: '127.0.0.1',
            port,
            user: 'md5user',
            password: 'md5pass',
            database: 'app',
          })
        : await RawConnection.connect({ host: db.host, port: db.port, user: 'trustuser', database: 'app' });
    open.push(c);
    const out: string[][] = [];
    for (const round of rounds) {
      c.send(...round);
      out.push((await c.readUntilReady(round.filter((m) => m[0] === 0x53).length)).map(describeMessage));
    }
    c.close();
    return out;
  }

  function statements(): Statement[] {
    const all = new Set(
      [...tp.pooler.pools.values()].flatMap((pool) =>
        [...pool.servers].flatMap((srv) => [...(srv.statements?.statements() ?? [])]),
      ),
    );
    return [...all];
  }

  const byText = (text: string) => statements().filter((st) => st.query.toString() === text);

  describe(title, () => {
    it(`${CLIENTS} clients over ${servers} server(s): direct replies, every Execute and use counted once, SHOW POOLS settled`, async () => {
      const relay = NativeRelay.get();
      const reportsBefore = relay?.laneReports ?? 0;
      const answeredBefore = relay?.laneAnswered ?? 0;
      const scripts = Array.from({ length: CLIENTS }, (_, k) => script(k));
      const want = await Promise.all(scripts.map((s) => play(s, null)));
      const got = await Promise.all(scripts.map((s) => play(s, tp.port)));
      scripts.forEach((_, i) => expect(got[i], `client ${i}`).toEqual(want[i]));

      // Every Execute completed, on whichever path its counts came back.
      const total = CLIENTS * ROUNDS;
      await until('every Execute counted', () => {
        const [a, b] = [byText(byId), byText(div)];
        return a.length === 1 && b.length === 1 && a[0]!.executions >= total && b[0]!.executions >= total;
      });
      const [named] = byText(byId);
      const [unnamed] = byText(div);
      expect(named!.executions).toBe(total);
      expect(unnamed!.executions).toBe(total);
      expect(named!.execTimeUs).toBeGreaterThan(0);
      // S1: its Parse and every Bind; the unnamed text: every Parse and every Bind. Each a hit or a miss, counted once.
      expect(named!.countUsed).toBe(CLIENTS * (1 + ROUNDS));
      expect(unnamed!.countUsed).toBe(2 * total);
      for (const st of statements()) expect(st.cacheHits + st.cacheMisses, st.query.toString()).toBe(st.countUsed);
      // Each server prepared each text once at most, every other use was a hit.
      for (const st of [named!, unnamed!]) {
        expect(st.cacheMisses).toBeGreaterThanOrEqual(1);
        expect(st.cacheMisses).toBeLessThanOrEqual(servers);
      }

      if (native) {
        // The lane answered most of it, and its counts came with the release reports.
        expect(relay!.laneAnswered - answeredBefore).toBeGreaterThan(total);
        expect(relay!.laneReports - reportsBefore).toBeGreaterThanOrEqual(minReports);
      }

      await until('SHOW POOLS settled', async () => {
        const row = (await show('POOLS', tp)).find((r) => r['database'] === 'app' && r['user'] === 'md5user')!;
        return Number(row['cl_waiting']) === 0 && Number(row['sv_active']) === 0 && Number(row['sv_idle']) >= 1;
      });
    });
  });
}
