// Where a transaction's CPU goes (issue 40, "Parse caching where it pays"): pgbench -S through each target with every
// process's CPU read from /proc, per transaction: pgbench (reaped child), the pooler, and PostgreSQL (postmaster and
// every backend, living and reaped). The targets alternate within every round, the order rotated; medians quoted.
// Usage: npm run build && node dist/bench/pooler-cpu-split.js [--protocols extended,prepared] [--clients 10]
//   [--seconds 8] [--rounds 3] [--targets direct,PgBouncer 1.25,tidepool] [--out FILE] [--help]
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { stopOnExit } from './bench-exit.js';
import { clockTicks, cpuSeconds, reapedChildrenSeconds, treeTicks } from './pooler-cpu.js';
import {
  BENCH_DB,
  BENCH_PASSWORD,
  BENCH_USER,
  benchSecret,
  startBenchPostgres,
  startPgBouncer125,
  startTidepool,
  type RunningPeer,
} from './pooler-peers.js';
import { runPgbench, type Scenario } from './pooler-pgbench.js';
import { benchOpt } from './raw-pg-client.js';
import { writeResults } from './results-file.js';

const USAGE = `Usage: node dist/bench/pooler-cpu-split.js [options]
  --protocols LIST  pgbench protocols, comma-separated (default extended,prepared)
  --clients N       pgbench -c (default 10; -j 2)
  --seconds N       each run's length (default 8)
  --rounds N        rounds; every round runs each target once, the order rotated (default 3)
  --targets LIST    direct, PgBouncer 1.25, tidepool (default all three)
  --out FILE        write the table there instead of bench/results/pooler-cpu-split.md
  --help            print this and exit
`;
if (process.argv.includes('--help') || process.argv.includes('-h')) {
  process.stdout.write(USAGE);
  process.exit(0);
}
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const PROTOCOLS = benchOpt('protocols', 'extended,prepared').split(',') as Scenario['protocol'][];
const CLIENTS = Number(benchOpt('clients', '10'));
const SECONDS = Number(benchOpt('seconds', '8'));
const ROUNDS = Number(benchOpt('rounds', '3'));
const TARGETS = benchOpt('targets', 'direct,PgBouncer 1.25,tidepool').split(',');
const POOL_SIZE = 20;
const say = (msg: string) => process.stderr.write(`[cpu-split] ${msg}\n`);

interface Run {
  tps: number;
  pgbenchUs: number;
  poolerUs: number;
  postgresUs: number;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? (s[(s.length - 1) >> 1]! + s[s.length >> 1]!) / 2 : NaN;
};

async function main(): Promise<void> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tidepool-cpu-split-'));
  const ticks = clockTicks();
  let pg: Awaited<ReturnType<typeof startBenchPostgres>> | null = null;
  const peers = new Map<string, RunningPeer>();
  const cleanup = stopOnExit(
    async () => {
      for (const p of peers.values()) await p.stop().catch(() => undefined);
      await pg?.stop().catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    },
    () => [...[...peers.values()].map((p) => p.pid), pg?.pid],
    () => dir,
    say,
  );
  const runs = new Map<string, Run[]>();
  const load0 = os.loadavg();
  try {
    pg = await startBenchPostgres(dir, { maxConnections: 200, scale: 10, progress: say });
    const secret = benchSecret((q) => pg!.sql(q));
    const common = { serverHost: pg.host, serverPort: pg.port, poolSize: POOL_SIZE };
    for (const t of TARGETS) {
      const tdir = path.join(dir, t.replace(/\W+/g, '-'));
      if (t === 'tidepool') peers.set(t, await startTidepool({ ...common, dir: tdir, root: ROOT }));
      else if (t === 'PgBouncer 1.25')
        peers.set(t, await startPgBouncer125({ ...common, dir: tdir, progress: say, secret, sessionPoolSize: 1 }));
      else if (t !== 'direct') throw new Error(`unknown target ${t} (direct, PgBouncer 1.25, tidepool)`);
    }
    for (const protocol of PROTOCOLS) {
      const scenario: Scenario = { key: `${protocol}-c${CLIENTS}`, protocol, clients: CLIENTS, reconnect: false };
      for (let round = 0; round < ROUNDS; round++) {
        const order = TARGETS.map((_, i) => TARGETS[(i + round) % TARGETS.length]!);
        for (const t of order) {
          const peer = peers.get(t);
          const port = peer ? peer.port : pg.port;
          // Warm-up: the pooler's servers open and its caches fill before the measured run.
          if (round === 0)
            await runPgbench(
              scenario,
              { host: '127.0.0.1', port, user: BENCH_USER, password: BENCH_PASSWORD, database: BENCH_DB },
              2,
              dir,
              'warm',
            ).done;
          const pooler0 = peer ? cpuSeconds(peer.pid, ticks) : 0;
          const pg0 = treeTicks(pg.pid) / ticks;
          const reaped0 = reapedChildrenSeconds(ticks);
          const r = await runPgbench(
            scenario,
            { host: '127.0.0.1', port, user: BENCH_USER, password: BENCH_PASSWORD, database: BENCH_DB },
            SECONDS,
            dir,
            'run',
          ).done;
          if (!r.ok) throw new Error(`${t} ${protocol}: ${r.error}`);
          const us = (s: number) => (s * 1e6) / r.transactions;
          const run: Run = {
            tps: r.tps,
            pgbenchUs: us(reapedChildrenSeconds(ticks) - reaped0),
            poolerUs: peer ? us(cpuSeconds(peer.pid, ticks) - pooler0) : 0,
            postgresUs: us(treeTicks(pg.pid) / ticks - pg0),
          };
          say(
            `${protocol} round ${round + 1} ${t}: ${Math.round(r.tps)} tps, pgbench ${run.pgbenchUs.toFixed(1)} µs, pooler ${run.poolerUs.toFixed(1)} µs, PostgreSQL ${run.postgresUs.toFixed(1)} µs a transaction`,
          );
          const key = `${protocol}\0${t}`;
          runs.set(key, [...(runs.get(key) ?? []), run]);
        }
      }
    }
  } finally {
    await cleanup();
  }
  const rows: string[] = [];
  for (const protocol of PROTOCOLS) {
    for (const t of TARGETS) {
      const rs = runs.get(`${protocol}\0${t}`) ?? [];
      const m = (f: (r: Run) => number) => median(rs.map(f));
      const total = m((r) => r.pgbenchUs + r.poolerUs + r.postgresUs);
      rows.push(
        `| ${protocol} | ${t} | ${Math.round(m((r) => r.tps)).toLocaleString('en-US')} | ${m((r) => r.pgbenchUs).toFixed(1)} | ${t === 'direct' ? '-' : m((r) => r.poolerUs).toFixed(1)} | ${m((r) => r.postgresUs).toFixed(1)} | ${total.toFixed(1)} |`,
      );
    }
  }
  const out = [
    '# Where a transaction’s CPU goes',
    '',
    `pgbench -S -n -c ${CLIENTS} -j 2, ${SECONDS} s per run, ${ROUNDS} rounds (every target once a round, the order rotated; medians), transaction mode, pool size ${POOL_SIZE}, md5, pgbench_accounts at scale 10, after a 2 s warm-up per target. CPU from /proc (user + system) per transaction pgbench counted: pgbench (its reaped process), the pooler, PostgreSQL (postmaster and every backend, living and reaped: autovacuum and the checkpointer included). Machine: ${os.cpus().length} CPU, Node ${process.version}; load average at the start ${load0.map((x) => x.toFixed(1)).join(', ')}, at the end ${os
      .loadavg()
      .map((x) => x.toFixed(1))
      .join(', ')}.`,
    '',
    '| protocol | target | tps | pgbench µs | pooler µs | PostgreSQL µs | total µs |',
    '|---|---|---:|---:|---:|---:|---:|',
    ...rows,
    '',
    `Run: \`node dist/bench/pooler-cpu-split.js ${process.argv.slice(2).join(' ')}\` (${new Date().toISOString().slice(0, 10)}).`,
    '',
  ].join('\n');
  const outIdx = process.argv.indexOf('--out');
  if (outIdx >= 0) writeFileSync(path.resolve(process.argv[outIdx + 1]!), out);
  else writeResults(path.join(ROOT, 'bench', 'results', 'pooler-cpu-split.md'), out);
  process.stdout.write(out);
}

main().catch((err: Error) => {
  process.stderr.write(`${err.stack ?? err.message}\n`);
  process.exitCode = 1;
});
