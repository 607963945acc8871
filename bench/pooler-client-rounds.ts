// Many clients in rounds on one long-running pooler (issue 35 item 3, issue 40's 10 000 clients): each round N md5
// clients log in, send `select 1` every 5, 20 or 60 s and leave after 60-150 s, while pgbench -S runs on the same
// pool; the pooler's server_lifetime is shorter than a round, so servers are recycled under the load. Every login
// and query must be answered (no error, none unanswered for 60 s), pgbench must end clean, and after each round
// SHOW POOLS must count no client left. Writes bench/results/pooler-client-rounds.md; exits 1 when a round fails.
// Usage: npm run build && node dist/bench/pooler-client-rounds.js [--clients 10000] [--rounds 3] [--hold 60,150]
//   [--every 5,20,60] [--lifetime 30s] [--pool-size 10] [--pgbench-clients 10] [--out FILE] [--keep-log FILE] [--help]
import { copyFileSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { writeQuery, writeStartupMessage, writeTerminate } from '../src/protocol/writer.js';
import { stopOnExit } from './bench-exit.js';
import { clockTicks, cpuSeconds, rssBytes } from './pooler-cpu.js';
import {
  BENCH_DB,
  BENCH_PASSWORD,
  BENCH_USER,
  startBenchPostgres,
  startTidepool,
  type RunningPeer,
} from './pooler-peers.js';
import { runPgbench } from './pooler-pgbench.js';
import { benchOpt, errorText, md5Answer } from './raw-pg-client.js';
import { writeResults } from './results-file.js';

const USAGE = `Usage: node dist/bench/pooler-client-rounds.js [options]
  --clients N          clients per round (default 10000)
  --rounds N           rounds on the same pooler process (default 3)
  --hold MIN,MAX       seconds each client stays (default 60,150)
  --every A,B,C        seconds between a client's queries, by client in turn (default 5,20,60)
  --lifetime D         the pooler's server_lifetime (default 30s: shorter than a round)
  --pool-size N        servers of the pool (default 10)
  --pgbench-clients N  pgbench -S clients on the same pool during each round (default 10; 0: none)
  --out FILE           write the table there instead of bench/results/pooler-client-rounds.md
  --keep-log FILE      copy the pooler's whole log there (JSON lines) before the run's directory is removed
  --help               print this and exit
`;
if (process.argv.includes('--help') || process.argv.includes('-h')) {
  process.stdout.write(USAGE);
  process.exit(0);
}

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const opt = benchOpt;
const CLIENTS = Number(opt('clients', '10000'));
const ROUNDS = Number(opt('rounds', '3'));
const [HOLD_MIN, HOLD_MAX] = opt('hold', '60,150').split(',').map(Number) as [number, number];
const EVERY = opt('every', '5,20,60').split(',').map(Number);
const LIFETIME = opt('lifetime', '30s');
const POOL_SIZE = Number(opt('pool-size', '10'));
const PGBENCH_CLIENTS = Number(opt('pgbench-clients', '10'));
/** A query or login unanswered this long is a stall. */
const STALL_MS = 60_000;

const say = (msg: string) => process.stderr.write(`[client-rounds] ${msg}\n`);

interface RoundStats {
  logins: number;
  queries: number;
  errors: Map<string, number>;
  stalls: number;
  loginMs: number[];
  queryMs: number[];
}

function addError(st: RoundStats, what: string): void {
  st.errors.set(what, (st.errors.get(what) ?? 0) + 1);
}

/** One client: md5 login, `select 1` every ~everyMs (at least once), Terminate after holdMs. */
function client(port: number, holdMs: number, everyMs: number, st: RoundStats): Promise<void> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    let buf: Buffer = Buffer.alloc(0);
    let phase: 'login' | 'idle' | 'query' = 'login';
    let since = Date.now();
    const leaveAt = Date.now() + holdMs;
    let asked = false;
    let timer: NodeJS.Timeout | null = null;
    let done = false;
    const finish = (why?: string) => {
      if (done) return;
      done = true;
      if (why) addError(st, why);
      if (timer) clearTimeout(timer);
      clearInterval(watch);
      s.destroy();
      resolve();
    };
    const watch = setInterval(() => {
      if (phase !== 'idle' && Date.now() - since > STALL_MS) {
        st.stalls++;
        finish(`no answer to ${phase} in ${STALL_MS / 1000} s`);
      }
    }, 1000);
    const next = () => {
      if (asked && Date.now() >= leaveAt) {
        done = true;
        clearInterval(watch);
        s.end(writeTerminate());
        resolve();
        return;
      }
      timer = setTimeout(
        () => {
          phase = 'query';
          since = Date.now();
          asked = true;
          s.write(writeQuery('select 1'));
        },
        everyMs * (0.5 + Math.random()),
      );
    };
    s.setNoDelay(true);
    s.on('connect', () => s.write(writeStartupMessage({ user: BENCH_USER, database: BENCH_DB })));
    s.on('error', (e) => finish(`socket: ${e.message}`));
    s.on('close', () => finish(`closed by the pooler during ${phase}`));
    s.on('data', (d: Buffer) => {
      buf = buf.length ? Buffer.concat([buf, d]) : d;
      while (buf.length >= 5) {
        const len = buf.readInt32BE(1);
        if (buf.length < 1 + len) break;
        const type = buf[0]!;
        const body = buf.subarray(5, 1 + len);
        buf = buf.subarray(1 + len);
        if (type === 0x52 /* R */ && body.readInt32BE(0) === 5) {
          s.write(md5Answer(body, BENCH_USER, BENCH_PASSWORD));
        } else if (type === 0x45 /* E */) {
          finish(`${phase}: ${errorText(body)}`);
          return;
        } else if (type === 0x5a /* Z */) {
          if (phase === 'login') {
            st.logins++;
            st.loginMs.push(Date.now() - since);
          } else if (phase === 'query') {
            st.queries++;
            st.queryMs.push(Date.now() - since);
          }
          phase = 'idle';
          next();
        }
      }
    });
  });
}

function pct(xs: number[], q: number): number {
  if (!xs.length) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
}

async function showPools(port: number): Promise<Record<string, string>[]> {
  const c = new pg.Client({
    host: '127.0.0.1',
    port,
    user: 'admin',
    password: 'bench-admin-password',
    database: 'pgbouncer',
  });
  await c.connect();
  try {
    return (await c.query<Record<string, string>>('SHOW POOLS')).rows;
  } finally {
    await c.end().catch(() => undefined);
  }
}

async function main(): Promise<void> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tidepool-client-rounds-'));
  let pgsrv: Awaited<ReturnType<typeof startBenchPostgres>> | null = null;
  let pooler: RunningPeer | null = null;
  const cleanup = stopOnExit(
    async () => {
      await pooler?.stop().catch(() => undefined);
      await pgsrv?.stop().catch(() => undefined);
    },
    () => [pooler?.pid, pgsrv?.pid],
    () => dir,
    say,
  );
  const ticks = clockTicks();
  const rows: string[] = [];
  let failed = false;
  let poolerSaid: [string, number][] = [];
  const loadAtStart = os.loadavg();
  try {
    pgsrv = await startBenchPostgres(dir, { maxConnections: 100, scale: 1, progress: say });
    pooler = await startTidepool({
      dir: path.join(dir, 'tidepool'),
      root: ROOT,
      serverHost: pgsrv.host,
      serverPort: pgsrv.port,
      poolSize: POOL_SIZE,
      generalToml: `server_lifetime = "${LIFETIME}"\nmax_connections = ${CLIENTS + 1000}`,
    });
    say(`tidepool pid ${pooler.pid} on ${pooler.port}; ${ROUNDS} rounds of ${CLIENTS} clients`);
    const started = Date.now();
    for (let round = 1; round <= ROUNDS; round++) {
      const st: RoundStats = { logins: 0, queries: 0, errors: new Map(), stalls: 0, loginMs: [], queryMs: [] };
      const cpu0 = cpuSeconds(pooler.pid, ticks);
      const t0 = Date.now();
      const bench =
        PGBENCH_CLIENTS > 0
          ? runPgbench(
              { key: `simple-c${PGBENCH_CLIENTS}`, protocol: 'simple', clients: PGBENCH_CLIENTS, reconnect: false },
              { host: '127.0.0.1', port: pooler.port, user: BENCH_USER, password: BENCH_PASSWORD, database: BENCH_DB },
              HOLD_MAX,
              dir,
              `round-${round}`,
            )
          : null;
      let maxWaiting = 0;
      let maxRss = 0;
      const sampler = setInterval(() => {
        maxRss = Math.max(maxRss, rssBytes(pooler!.pid));
        void showPools(pooler!.port).then(
          (p) => {
            const w = p.reduce((a, r) => a + Number(r.cl_waiting ?? 0), 0);
            maxWaiting = Math.max(maxWaiting, w);
            say(
              `round ${round} t=${((Date.now() - t0) / 1000).toFixed(0)} s: logins ${st.logins}, queries ${st.queries}, errors ${[...st.errors.values()].reduce((a, b) => a + b, 0)}, stalls ${st.stalls}, pools ${p.map((r) => ['cl_active', 'cl_waiting', 'sv_active', 'sv_idle', 'sv_used', 'sv_login', 'maxwait'].map((k) => `${k}=${r[k]}`).join(' ')).join('; ')}`,
            );
          },
          (err: Error) => addError(st, `SHOW POOLS failed: ${err.message}`),
        );
      }, 10_000);
      const all: Promise<void>[] = [];
      for (let i = 0; i < CLIENTS; i++) {
        const hold = (HOLD_MIN + Math.random() * (HOLD_MAX - HOLD_MIN)) * 1000;
        all.push(client(pooler.port, hold, EVERY[i % EVERY.length]! * 1000, st));
        if (i % 200 === 199) await new Promise((r) => setTimeout(r, 20));
      }
      await Promise.all(all);
      const pb = bench ? await bench.done : null;
      clearInterval(sampler);
      // A round shorter than the sampling period still reports its RSS.
      maxRss = Math.max(maxRss, rssBytes(pooler.pid));
      const cpu = cpuSeconds(pooler.pid, ticks) - cpu0;
      // Every client has left: the pool must count none (pgbench has ended too).
      const after = await showPools(pooler.port);
      const left = after.reduce((a, r) => a + Number(r.cl_active) + Number(r.cl_waiting) + Number(r.cl_idle ?? 0), 0);
      const errors = [...st.errors].sort((a, b) => b[1] - a[1]);
      const ok = errors.length === 0 && st.stalls === 0 && left === 0 && st.logins === CLIENTS && !pb?.error;
      if (!ok) failed = true;
      rows.push(
        `| ${round} | ${((t0 - started) / 60_000).toFixed(1)} | ${st.logins} / ${CLIENTS} | ${st.queries} | ${pct(st.loginMs, 0.5)} / ${pct(st.loginMs, 0.99)} | ${pct(st.queryMs, 0.5)} / ${pct(st.queryMs, 0.99)} / ${Math.max(0, ...st.queryMs)} | ${errors.length ? errors.map(([k, n]) => `${n}x ${k}`).join('; ') : 0} | ${st.stalls} | ${maxWaiting} | ${left} | ${pb ? (pb.error ? `failed: ${pb.error}` : `${pb.tps.toFixed(0)} tps`) : '-'} | ${(maxRss / 2 ** 20).toFixed(0)} | ${cpu.toFixed(1)} | ${ok ? 'yes' : 'no'} |`,
      );
      say(rows[rows.length - 1]!);
    }
    // The pooler's warnings and errors, by message: what it said about a round that was not clean.
    const said = new Map<string, number>();
    for (const line of readFileSync(pooler.logFile, 'utf8').split('\n')) {
      // JSON lines (log_format json) or logfmt (the default): level and msg of each.
      let level = '';
      let msg = '';
      if (line.startsWith('{')) {
        const rec = JSON.parse(line) as { level?: number | string; msg?: string };
        level =
          typeof rec.level === 'number'
            ? rec.level >= 50
              ? 'error'
              : rec.level >= 40
                ? 'warn'
                : ''
            : String(rec.level ?? '');
        msg = rec.msg ?? '';
      } else {
        level = /(?:^| )level=(\w+)/.exec(line)?.[1] ?? '';
        msg = /(?:^| )msg="((?:[^"\\]|\\.)*)"/.exec(line)?.[1] ?? /(?:^| )msg=(\S+)/.exec(line)?.[1] ?? '';
        const err = /(?:^| )err="((?:[^"\\]|\\.)*)"/.exec(line)?.[1];
        if (err) msg += ` (${err})`;
      }
      if (!['warn', 'error', 'fatal'].includes(level)) continue;
      const key = `${level}: ${msg}`.replace(/\d+/g, 'N').slice(0, 120);
      said.set(key, (said.get(key) ?? 0) + 1);
    }
    poolerSaid = [...said].sort((a, b) => b[1] - a[1]).slice(0, 12);
    const keepIdx = process.argv.indexOf('--keep-log');
    if (keepIdx >= 0) copyFileSync(pooler.logFile, path.resolve(process.argv[keepIdx + 1]!));
  } finally {
    await cleanup();
  }
  const out = [
    '# Many clients in rounds on one pooler',
    '',
    `${ROUNDS} rounds of ${CLIENTS.toLocaleString('en-US')} md5 clients on one tidepool process (transaction mode, pool_size ${POOL_SIZE}, ` +
      `server_lifetime ${LIFETIME}, default query_wait_timeout), each client logging in, sending \`select 1\` every ` +
      `${EVERY.join('/')} s (by client in turn, 0.5-1.5x at random) and leaving after ${HOLD_MIN}-${HOLD_MAX} s; pgbench -S with ` +
      `${PGBENCH_CLIENTS} clients on the same pool during each round. Machine: ${os.cpus().length} CPU, Node ${process.version}, ` +
      `load average at the start ${loadAtStart.map((x) => x.toFixed(1)).join(', ')}, at the end ${os
        .loadavg()
        .map((x) => x.toFixed(1))
        .join(', ')}.`,
    '',
    '| Round | Started, min | Logins | Queries | Login ms p50 / p99 | Query ms p50 / p99 / max | Errors | Stalls (60 s) | Max cl_waiting | Clients left after | pgbench | Pooler RSS max, MiB | Pooler CPU-s | Clean |',
    '|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---|---:|---:|---|',
    ...rows,
    '',
    poolerSaid.length
      ? `The pooler's warnings and errors over the run (by message, numbers as N): ${poolerSaid.map(([m, n]) => `${n}x "${m}"`).join('; ')}.`
      : 'The pooler logged no warning or error over the run.',
    '',
    `Run: \`node dist/bench/pooler-client-rounds.js ${process.argv.slice(2).join(' ')}\` (${new Date().toISOString().slice(0, 10)}).`,
    '',
  ].join('\n');
  const outIdx = process.argv.indexOf('--out');
  if (outIdx >= 0) writeFileSync(path.resolve(process.argv[outIdx + 1]!), out);
  else writeResults(path.join(ROOT, 'bench', 'results', 'pooler-client-rounds.md'), out);
  process.stdout.write(out);
  if (failed) {
    say('a round was not clean (see the table)');
    process.exitCode = 1;
  }
}

main().catch((err: Error) => {
  process.stderr.write(`${err.stack ?? err.message}\n`);
  process.exitCode = 1;
});
