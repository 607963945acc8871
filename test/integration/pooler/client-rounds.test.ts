// Issue 35 item 3 at a scale CI can run: three rounds of 1 500 md5 clients on one pooler with a server_lifetime far
// shorter than a round, each client logging in, sending a query every few hundred ms to seconds and leaving after
// seconds. Every login and query is answered without error, none waits long, and between rounds SHOW POOLS and
// SHOW CLIENTS count nobody left: no client, waiter or server is lost in the accounting after mass disconnects.
import net from 'node:net';
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { writeQuery, writeStartupMessage, writeTerminate } from '../../../src/protocol/writer.js';
import { poolToml, poolerToml, startTestPooler, type TestPooler } from '../../helpers/pooler.js';
import { startTestPostgres, type TestPostgres } from '../../helpers/postgres.js';

const CLIENTS = 1500;
const ROUNDS = 3;
const POOL_SIZE = 5;
/** A query unanswered this long is a stall (query_wait_timeout is set above it, so it is never the reason). */
const STALL_MS = 45_000;

let db: TestPostgres;
let tp: TestPooler;

beforeAll(async () => {
  db = await startTestPostgres({ max_connections: 50 });
  const pools = poolToml(db, 'app', 'pool_mode = "transaction"', [
    { username: 'md5user', password: 'md5pass', extra: `pool_size = ${POOL_SIZE}` },
  ]);
  tp = await startTestPooler(
    poolerToml(db, {
      general: 'auth_type = "md5"\nserver_lifetime = "1s"\nquery_wait_timeout = "60s"\nmax_connections = 5000',
      pools,
    }),
  );
});

afterAll(async () => {
  await tp?.stop();
  await db?.cleanup();
});

interface RoundStats {
  logins: number;
  answered: number;
  errors: string[];
  stalls: number;
}

const md5 = (x: string | Buffer) => createHash('md5').update(x).digest('hex');

/** One client: md5 login, then `select 1` every ~`everyMs` until `holdMs` have passed (at least one, however slow
 * the login was), then Terminate. */
function client(port: number, holdMs: number, everyMs: number, st: RoundStats): Promise<void> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    let buf: Buffer = Buffer.alloc(0);
    let phase: 'login' | 'idle' | 'query' = 'login';
    let since = Date.now();
    const leaveAt = Date.now() + holdMs;
    let timer: NodeJS.Timeout | null = null;
    let done = false;
    const finish = (why?: string) => {
      if (done) return;
      done = true;
      if (why) st.errors.push(why);
      if (timer) clearTimeout(timer);
      clearInterval(watch);
      s.destroy();
      resolve();
    };
    const watch = setInterval(() => {
      if (phase !== 'idle' && Date.now() - since > STALL_MS) {
        st.stalls++;
        finish(`no answer in ${phase} for ${STALL_MS} ms`);
      }
    }, 1000);
    let asked = 0;
    const next = () => {
      if (Date.now() >= leaveAt && asked > 0) {
        done = true;
        clearInterval(watch);
        s.end(writeTerminate());
        resolve();
        return;
      }
      timer = setTimeout(
        () => {
          asked++;
          phase = 'query';
          since = Date.now();
          s.write(writeQuery('select 1'));
        },
        everyMs * (0.5 + Math.random()),
      );
    };
    s.on('connect', () =>
      s.write(writeStartupMessage({ user: 'md5user', database: 'app', application_name: 'rounds' })),
    );
    s.on('error', (e) => finish(`socket error in ${phase}: ${e.message}`));
    s.on('close', () => finish(`closed by the pooler in ${phase}`));
    s.on('data', (d: Buffer) => {
      buf = buf.length ? Buffer.concat([buf, d]) : d;
      while (buf.length >= 5) {
        const len = buf.readInt32BE(1);
        if (buf.length < 1 + len) break;
        const type = String.fromCharCode(buf[0]!);
        const body = buf.subarray(5, 1 + len);
        buf = buf.subarray(1 + len);
        if (type === 'R' && body.readInt32BE(0) === 5) {
          const hash = 'md5' + md5(Buffer.concat([Buffer.from(md5('md5pass' + 'md5user')), body.subarray(4, 8)]));
          const out = Buffer.alloc(6 + hash.length);
          out.write('p', 0);
          out.writeInt32BE(5 + hash.length, 1);
          out.write(hash, 5);
          s.write(out);
        } else if (type === 'E') {
          st.errors.push(`${phase}: ${body.toString('utf8').replace(/\0/g, ' ').trim().slice(0, 160)}`);
        } else if (type === 'Z') {
          if (phase === 'login') st.logins++;
          else if (phase === 'query') st.answered++;
          phase = 'idle';
          next();
        }
      }
    });
  });
}

/** SHOW POOLS' row of app/md5user as an object. */
function poolRow(): Record<string, unknown> {
  const r = tp.pooler.show('POOLS');
  const row = r.rows.find((x) => x[0] === 'app' && x[1] === 'md5user')!;
  return Object.fromEntries(r.columns.map((c, i) => [c, row[i]]));
}

async function until(what: string, cond: () => boolean, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms; SHOW POOLS ${JSON.stringify(poolRow())}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

it(
  `${ROUNDS} rounds of ${CLIENTS} clients with server_lifetime 1s: every query answered, nobody left in the accounting`,
  { timeout: 600_000 },
  async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const st: RoundStats = { logins: 0, answered: 0, errors: [], stalls: 0 };
      const clients: Promise<void>[] = [];
      let peakWaiting = 0;
      const sample = setInterval(() => {
        const p = poolRow();
        peakWaiting = Math.max(peakWaiting, Number(p.cl_waiting));
        // Servers never exceed the pool, whatever lifetime reconnects are on their way.
        expect(Number(p.sv_active) + Number(p.sv_idle) + Number(p.sv_used) + Number(p.sv_login)).toBeLessThanOrEqual(
          POOL_SIZE,
        );
      }, 500);
      try {
        for (let i = 0; i < CLIENTS; i++) {
          clients.push(client(tp.port, 4000 + Math.random() * 4000, [300, 1000, 3000][i % 3]!, st));
          // Logins arrive in bursts of 100, as an application fleet restarting would send them.
          if (i % 100 === 99) await new Promise((r) => setTimeout(r, 20));
        }
        await Promise.all(clients);
      } finally {
        clearInterval(sample);
      }
      const counts = new Map<string, number>();
      for (const e of st.errors) counts.set(e, (counts.get(e) ?? 0) + 1);
      process.stdout.write(
        `round ${round + 1}: ${st.logins} logins, ${st.answered} queries answered, peak cl_waiting ${peakWaiting}, ${st.errors.length} errors\n`,
      );
      expect([...counts], `round ${round + 1}`).toEqual([]);
      expect(st.logins).toBe(CLIENTS);
      expect(st.answered).toBeGreaterThanOrEqual(CLIENTS);
      // Every client left: the pool counts none, and its servers are back (idle or closed by their lifetime).
      await until('clients gone from SHOW POOLS', () => {
        const p = poolRow();
        return p.cl_idle === 0 && p.cl_active === 0 && p.cl_waiting === 0 && p.sv_active === 0;
      });
      await until('SHOW CLIENTS empty', () => tp.pooler.show('CLIENTS').rows.length === 0);
    }
  },
);
