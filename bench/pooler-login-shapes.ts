// Login benchmark: pgbench -S -C (a connection and login per transaction) through PgBouncer and tidepool, with the
// same clients split into client shapes: one pgbench process with 2 threads (bench/pooler.ts's shape), one with 1,
// and 2 processes of 1 thread. pgbench connects synchronously inside each thread, and under SCRAM libpq derives
// the key (4096 PBKDF2 rounds) through OpenSSL 3, whose threads of one process contend on shared locks; separate
// processes share none. Per run: the tps of all processes, each pooler's CPU per login and the CPU pgbench took.
// Usage: npm run build && BENCH_AUTH=scram-sha-256 node dist/bench/pooler-login-shapes.js [--clients 10 --rounds 5
//   --duration 10 --shapes 1x2,1x1,2x1 --out bench/results/pooler-login-shapes.md --b-node-args "<node flags>"]
// --b-node-args adds a third target, "tidepool B": the same build started with those node flags, in the rotation.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { RunningPostgres } from '../src/launcher/embedded-postgres.js';
import { clockTicks, cpuSeconds, reapedChildrenSeconds } from './pooler-cpu.js';
import { median } from './pooler-report.js';
import {
  BENCH_AUTH,
  BENCH_DB,
  BENCH_PASSWORD,
  BENCH_USER,
  benchSecret,
  startBenchPostgres,
  startPgBouncer,
  startTidepool,
  type RunningPeer,
} from './pooler-peers.js';
import { runPgbench, type RunningPgbench } from './pooler-pgbench.js';
import { runBench, stopOnExit } from './bench-exit.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

function opt(name: string, dflt: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] !== undefined ? process.argv[i + 1]! : dflt;
}

const CLIENTS = Number(opt('clients', '10'));
const ROUNDS = Number(opt('rounds', '5'));
const DURATION = Number(opt('duration', '10'));
/** processes x threads each; the clients are split evenly over the processes. */
const SHAPES = opt('shapes', '1x2,1x1,2x1')
  .split(',')
  .map((s) => {
    const [procs, threads] = s.split('x').map(Number);
    if (!procs || !threads || CLIENTS % procs !== 0 || CLIENTS / procs < threads)
      throw new Error(`--shapes: ${s} does not fit ${CLIENTS} clients`);
    return { key: s, procs, threads };
  });
const OUT = path.resolve(opt('out', path.join(ROOT, 'bench', 'results', 'pooler-login-shapes.md')));
/** Node flags of a second tidepool ("tidepool B") in the rotation, when given. */
const B_NODE_ARGS = opt('b-node-args', '').split(' ').filter(Boolean);
const B = 'tidepool B';

const progress = (msg: string) => process.stderr.write(`[${new Date().toISOString().slice(11, 19)}] ${msg}\n`);

let pg: RunningPostgres | null = null;
/** The poolers by label (tidepool B is a second tidepool process). */
const targets: { label: string; peer: RunningPeer }[] = [];
let running: RunningPgbench[] = [];
let workDir = '';

async function cleanup(): Promise<void> {
  for (const r of running) r.kill();
  for (const { label, peer } of targets.splice(0))
    await peer.stop().catch((err: Error) => progress(`stopping ${label}: ${err.message}`));
  if (pg) await pg.stop().catch((err: Error) => progress(`stopping PostgreSQL: ${err.message}`));
  pg = null;
  if (workDir) rmSync(workDir, { recursive: true, force: true });
}
const stop = stopOnExit(
  cleanup,
  () => [...running.map((r) => r.pid), ...targets.map((t) => t.peer.pid), pg?.pid],
  () => workDir,
  progress,
);

interface Run {
  shape: string;
  peer: string;
  tps: number;
  poolerUs: number;
  pgbenchUs: number;
}

async function main(): Promise<void> {
  if (process.platform !== 'linux') throw new Error('reads /proc: Linux only');
  workDir = mkdtempSync(path.join(os.tmpdir(), 'tidepool-bench-login-shapes-'));
  const ticks = clockTicks();
  const load0 = os.loadavg();
  pg = await startBenchPostgres(workDir, { maxConnections: 100, scale: 10 });
  const common = { serverHost: pg.host, serverPort: pg.port, poolSize: 20, secret: benchSecret((q) => pg!.sql(q)) };
  targets.push({
    label: 'PgBouncer',
    peer: await startPgBouncer({ ...common, sessionPoolSize: CLIENTS, dir: path.join(workDir, 'pgbouncer'), progress }),
  });
  targets.push({
    label: 'tidepool',
    peer: await startTidepool({ ...common, dir: path.join(workDir, 'tidepool'), root: ROOT }),
  });
  if (B_NODE_ARGS.length)
    targets.push({
      label: B,
      peer: await startTidepool({
        ...common,
        dir: path.join(workDir, 'tidepool-b'),
        root: ROOT,
        nodeArgs: B_NODE_ARGS,
      }),
    });
  const logDir = path.join(workDir, 'logs');
  mkdirSync(logDir, { recursive: true });
  for (const { label, peer } of targets) {
    progress(`warm-up ${label}: 3 s`);
    const w = runPgbench(
      { key: 'warmup', protocol: 'simple', clients: CLIENTS, reconnect: true },
      { host: peer.host, port: peer.port, user: BENCH_USER, password: BENCH_PASSWORD, database: BENCH_DB },
      3,
      logDir,
      `warmup-${peer.pid}`,
    );
    running = [w];
    const r = await w.done;
    running = [];
    if (!r.ok) throw new Error(`warm-up through ${label} failed: ${r.error}`);
  }
  const runs: Run[] = [];
  const failures: string[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    for (const shape of SHAPES) {
      // Each target first, last and between in turn.
      const order = targets.map((_, k) => targets[(k + round) % targets.length]!);
      if (round % 2) order.reverse();
      for (const { label: name, peer } of order) {
        const cpu0 = cpuSeconds(peer.pid, ticks);
        const kids0 = reapedChildrenSeconds(ticks);
        const t0 = performance.now();
        const target = {
          host: peer.host,
          port: peer.port,
          user: BENCH_USER,
          password: BENCH_PASSWORD,
          database: BENCH_DB,
        };
        running = Array.from({ length: shape.procs }, (_, k) =>
          runPgbench(
            {
              key: 'login',
              protocol: 'simple',
              clients: CLIENTS / shape.procs,
              threads: shape.threads,
              reconnect: true,
            },
            target,
            DURATION,
            logDir,
            `r${round}-${shape.key}-${peer.pid}-${k}`,
          ),
        );
        const results = await Promise.all(running.map((r) => r.done));
        running = [];
        const wall = (performance.now() - t0) / 1000;
        const cpu = cpuSeconds(peer.pid, ticks) - cpu0;
        const kids = reapedChildrenSeconds(ticks) - kids0;
        const bad = results.find((r) => !r.ok || r.error);
        if (bad) {
          failures.push(`round ${round + 1}, ${shape.key}, ${name}: ${bad.error}`);
          progress(`FAILED ${shape.key} ${name}: ${bad.error}`);
          continue;
        }
        const tps = results.reduce((a, r) => a + r.tps, 0);
        const logins = tps * wall;
        runs.push({
          shape: shape.key,
          peer: name,
          tps,
          poolerUs: (cpu * 1e6) / logins,
          pgbenchUs: (kids * 1e6) / logins,
        });
        progress(
          `round ${round + 1}/${ROUNDS} ${shape.key} ${name}: ${tps.toFixed(0)} tps, pooler ${((cpu * 1e6) / logins).toFixed(0)} us a login, pgbench ${((kids * 1e6) / logins).toFixed(0)} us a login`,
        );
      }
    }
  }
  const head = spawnSync('git', ['-C', ROOT, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).stdout.trim();
  const out = [
    '# Logins by client shape',
    '',
    `pgbench -S -C, ${CLIENTS} clients split over the shape's processes, ${DURATION} s a run, ${ROUNDS} rounds (the targets in a rotating order, reversed every other round), medians quoted. ${BENCH_AUTH} client auth (both poolers hold the role's ${BENCH_AUTH === 'scram-sha-256' ? 'SCRAM secret' : 'password'}), transaction mode, pool size 20, PostgreSQL 15 on one ${os.cpus().length}-CPU machine (${os.cpus()[0]?.model ?? '?'}) with the poolers and pgbench. tidepool at ${head}. Load average at start ${load0.map((x) => x.toFixed(2)).join(' ')}. Written by \`node dist/bench/pooler-login-shapes.js\` (${new Date().toISOString().slice(0, 16)}Z).`,
    '',
    `Each pooler had a 3 s warm-up of the same load first.${B_NODE_ARGS.length ? ` tidepool B: the same build started with \`node ${B_NODE_ARGS.join(' ')}\`.` : ''}`,
    '',
    "Shape: pgbench processes x threads (-j) each. Pooler and pgbench CPU: user + system time per login (pgbench: all its processes, from the reaped children's times).",
    '',
    '| Shape | PgBouncer tps | tidepool tps | tidepool / PgBouncer | runs (tidepool / PgBouncer) | PgBouncer CPU, us a login | tidepool CPU, us a login | pgbench CPU, us a login (PgBouncer, tidepool) |',
    '|---|---:|---:|---:|---|---:|---:|---:|',
  ];
  for (const shape of SHAPES) {
    const of = (peer: string) => runs.filter((r) => r.shape === shape.key && r.peer === peer);
    const b = of('PgBouncer');
    const t = of('tidepool');
    if (!b.length || !t.length) continue;
    const pairs = t.map((x, i) => (b[i] ? (x.tps / b[i]!.tps).toFixed(2) : '-')).join(', ');
    out.push(
      `| ${shape.procs} x -j ${shape.threads} | ${median(b.map((r) => r.tps)).toFixed(0)} | ${median(t.map((r) => r.tps)).toFixed(0)} | **${(median(t.map((r) => r.tps)) / median(b.map((r) => r.tps))).toFixed(2)}x** | ${pairs} | ${median(b.map((r) => r.poolerUs)).toFixed(0)} | ${median(t.map((r) => r.poolerUs)).toFixed(0)} | ${median(b.map((r) => r.pgbenchUs)).toFixed(0)}, ${median(t.map((r) => r.pgbenchUs)).toFixed(0)} |`,
    );
  }
  if (B_NODE_ARGS.length) {
    out.push(
      '',
      `| Shape | tidepool tps | tidepool B tps | B / tidepool | tidepool CPU, us a login | tidepool B CPU, us a login |`,
      '|---|---:|---:|---:|---:|---:|',
    );
    for (const shape of SHAPES) {
      const a = runs.filter((r) => r.shape === shape.key && r.peer === 'tidepool');
      const b = runs.filter((r) => r.shape === shape.key && r.peer === B);
      if (!a.length || !b.length) continue;
      out.push(
        `| ${shape.procs} x -j ${shape.threads} | ${median(a.map((r) => r.tps)).toFixed(0)} | ${median(b.map((r) => r.tps)).toFixed(0)} | **${(median(b.map((r) => r.tps)) / median(a.map((r) => r.tps))).toFixed(3)}x** | ${median(a.map((r) => r.poolerUs)).toFixed(0)} | ${median(b.map((r) => r.poolerUs)).toFixed(0)} |`,
      );
    }
  }
  if (failures.length) out.push('', 'Failed runs (left out of the medians):', '', ...failures.map((f) => `- ${f}`));
  mkdirSync(path.dirname(OUT), { recursive: true });
  writeFileSync(OUT, `${out.join('\n')}\n`);
  progress(`wrote ${OUT}`);
}

runBench(main, stop, progress);
