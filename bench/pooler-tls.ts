// Pooler TLS benchmark: pgbench -S with PGSSLMODE=require through PgBouncer, tidepool (TLS in the native relay) and the
// same tidepool with TIDEPOOL_NATIVE_RELAY=0 (Node's tls on the JavaScript relay: the path every TLS client took before
// the native relay terminated TLS), same certificates, rotated; medians to bench/results/pooler-tls.md and a summary
// block in bench/results/pooler.md.
// Usage: npm run build && node dist/bench/pooler-tls.js [--duration 10 --repeats 3 --clients 10,50]
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { RunningPostgres } from '../src/launcher/embedded-postgres.js';
import { runPgbench, type Scenario } from './pooler-pgbench.js';
import { RunSampler, clockTicks } from './pooler-cpu.js';
import {
  BENCH_DB,
  BENCH_PASSWORD,
  BENCH_USER,
  makeCert,
  pgBouncerTlsIni,
  startBenchPostgres,
  tidepoolTlsToml,
  startPgBouncer,
  startTidepool,
  type RunningPeer,
} from './pooler-peers.js';
import { runBench, stopOnExit } from './bench-exit.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
function opt(name: string, dflt: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] !== undefined ? process.argv[i + 1]! : dflt;
}
const DURATION = Number(opt('duration', '10'));
const REPEATS = Number(opt('repeats', '3'));
const CLIENTS = opt('clients', '10,50')
  .split(',')
  .map(Number)
  .filter((n) => n > 0);
const POOL_SIZE = 20;
const OUT = path.join(ROOT, 'bench', 'results', 'pooler-tls.md');
const SUMMARY = path.join(ROOT, 'bench', 'results', 'pooler.md');
const TARGETS = ['PgBouncer', 'tidepool', 'tidepool JS relay'] as const;
type Target = (typeof TARGETS)[number];

const progress = (msg: string) => process.stderr.write(`[${new Date().toISOString().slice(11, 19)}] ${msg}\n`);
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length
    ? s.length % 2
      ? s[(s.length - 1) / 2]!
      : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2
    : Number.NaN;
};

let pg: RunningPostgres | null = null;
const peers = new Map<Target, RunningPeer>();
let workDir = '';

async function cleanup(): Promise<void> {
  for (const p of peers.values()) await p.stop().catch((err: Error) => progress(`stopping ${p.name}: ${err.message}`));
  peers.clear();
  if (pg) await pg.stop().catch((err: Error) => progress(`stopping PostgreSQL: ${err.message}`));
  pg = null;
  if (workDir) rmSync(workDir, { recursive: true, force: true });
}
const stop = stopOnExit(
  cleanup,
  () => [...[...peers.values()].map((p) => p.pid), pg?.pid],
  () => workDir,
  progress,
);

interface Run {
  clients: number;
  target: Target;
  rep: number;
  ok: boolean;
  tps: number;
  p50: number;
  p99: number;
  cpu: number;
  other: number;
  error: string;
}

async function main(): Promise<void> {
  workDir = mkdtempSync(path.join(os.tmpdir(), 'tidepool-bench-tls-'));
  const ticks = clockTicks();
  const load0 = os.loadavg();
  pg = await startBenchPostgres(workDir, {
    maxConnections: 300,
    scale: 10,
    roleSql: `SET password_encryption = 'md5'; CREATE ROLE ${BENCH_USER} LOGIN PASSWORD '${BENCH_PASSWORD}'`,
  });
  const { cert, key } = makeCert(path.join(workDir, 'certs'));
  const common = { serverHost: pg.host, serverPort: pg.port, poolSize: POOL_SIZE };
  peers.set(
    'PgBouncer',
    await startPgBouncer({
      ...common,
      sessionPoolSize: 1,
      dir: path.join(workDir, 'pgbouncer'),
      progress,
      extraIni: pgBouncerTlsIni({ cert, key }),
    }),
  );
  const tidepoolToml = tidepoolTlsToml({ cert, key });
  peers.set(
    'tidepool',
    await startTidepool({ ...common, dir: path.join(workDir, 'tidepool'), root: ROOT, generalToml: tidepoolToml }),
  );
  peers.set(
    'tidepool JS relay',
    await startTidepool({
      ...common,
      dir: path.join(workDir, 'tidepool-js'),
      root: ROOT,
      generalToml: tidepoolToml,
      env: { ...process.env, TIDEPOOL_NATIVE_RELAY: '0' },
    }),
  );
  process.env.PGSSLMODE = 'require';
  const logDir = path.join(workDir, 'pgbench');
  mkdirSync(logDir, { recursive: true });
  const runs: Run[] = [];
  for (const [ci, clients] of CLIENTS.entries()) {
    const s: Scenario = { key: `tls-c${clients}`, protocol: 'simple', clients, reconnect: false };
    for (let rep = 0; rep < REPEATS; rep++) {
      // Each target in each position in turn.
      const shift = (rep + ci) % TARGETS.length;
      const order = [...TARGETS.slice(shift), ...TARGETS.slice(0, shift)];
      for (const target of order) {
        const p = peers.get(target)!;
        const sampler = new RunSampler(p.pid, ticks);
        sampler.start();
        const r = await runPgbench(
          s,
          { host: p.host, port: p.port, user: BENCH_USER, password: BENCH_PASSWORD, database: BENCH_DB },
          DURATION,
          logDir,
          `${s.key}-${target}-${rep}`,
        ).done;
        const m = sampler.stop();
        runs.push({
          clients,
          target,
          rep,
          ok: r.ok,
          tps: r.tps,
          p50: r.p50Ms,
          p99: r.p99Ms,
          cpu: m.cpuPercent,
          other: m.foreignCores,
          error: r.error,
        });
        progress(
          `${clients} clients #${rep + 1} ${target}: ${r.ok ? `${Math.round(r.tps)} tps` : `FAILED ${r.error}`}, CPU ${m.cpuPercent.toFixed(0)}%, other load ${m.foreignCores.toFixed(2)}`,
        );
      }
    }
  }
  const tpsOf = (c: number, t: Target) =>
    median(runs.filter((r) => r.clients === c && r.target === t && r.ok).map((r) => r.tps));
  const stat = (c: number, t: Target, f: (r: Run) => number) =>
    median(runs.filter((r) => r.clients === c && r.target === t && r.ok).map(f));
  const okCount = (c: number, t: Target) => runs.filter((r) => r.clients === c && r.target === t && r.ok).length;
  const head = spawnSync('git', ['-C', ROOT, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).stdout.trim();
  const J = 'tidepool JS relay';
  const us = (c: number, t: Target) => stat(c, t, (r) => ((r.cpu / 100) * 1e6) / r.tps);
  const summaryRows = CLIENTS.map(
    (c) =>
      `| ${c} | ${Math.round(tpsOf(c, 'PgBouncer')).toLocaleString('en')} | ${Math.round(tpsOf(c, 'tidepool')).toLocaleString('en')} | **${(tpsOf(c, 'tidepool') / tpsOf(c, 'PgBouncer')).toFixed(2)}x** | ${Math.round(tpsOf(c, J)).toLocaleString('en')} | ${(tpsOf(c, J) / tpsOf(c, 'PgBouncer')).toFixed(2)}x | ${us(c, 'PgBouncer').toFixed(0)} / ${us(c, 'tidepool').toFixed(0)} / ${us(c, J).toFixed(0)} | ${stat(c, 'PgBouncer', (r) => r.other).toFixed(2)} / ${stat(c, 'tidepool', (r) => r.other).toFixed(2)} / ${stat(c, J, (r) => r.other).toFixed(2)} |`,
  );
  const table = [
    '| clients | PgBouncer tps | tidepool tps (native TLS) | tidepool / PgBouncer | before: JS relay tps | before / PgBouncer | pooler CPU µs per transaction (PgBouncer / tidepool / before) | other load, cores (same order) |',
    '|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...summaryRows,
  ];
  const detail = CLIENTS.flatMap((c) => [
    '',
    `## ${c} clients`,
    '',
    '| Target | tps (median) | runs | p50 ms | p99 ms | pooler CPU | failed runs |',
    '|---|---:|---:|---:|---:|---:|---|',
    ...TARGETS.map(
      (t) =>
        `| ${t} | ${Math.round(tpsOf(c, t)).toLocaleString('en')} | ${runs
          .filter((r) => r.clients === c && r.target === t)
          .map((r) => Math.round(r.tps))
          .join(
            ', ',
          )} | ${stat(c, t, (r) => r.p50).toFixed(3)} | ${stat(c, t, (r) => r.p99).toFixed(3)} | ${stat(c, t, (r) => r.cpu).toFixed(0)}% | ${REPEATS - okCount(c, t)}${runs
          .filter((r) => r.clients === c && r.target === t && !r.ok)
          .map((r) => `: ${r.error}`)
          .join('')} |`,
    ),
  ]);
  const pgb = peers.get('PgBouncer')!;
  const machine = `${os.cpus().length} CPU (${os.cpus()[0]?.model ?? '?'}); Node ${process.version}; ${pgb.version}; tidepool at ${head}; load average at start ${load0.map((x) => x.toFixed(2)).join(' ')}, at the end ${os
    .loadavg()
    .map((x) => x.toFixed(2))
    .join(' ')}; ${new Date().toISOString().slice(0, 10)}`;
  const body = [
    '# Pooler over TLS',
    '',
    `pgbench -S -n (simple protocol), PGSSLMODE=require, through PgBouncer and tidepool presenting the same self-signed certificate (RSA 2048, TLS 1.3, the OpenSSL defaults of each), plaintext toward PostgreSQL; transaction mode, pool size ${POOL_SIZE}, md5 auth; ${DURATION} s per run, ${REPEATS} repeats per client count, the three targets rotated (each in each position); medians. "tidepool" terminates TLS in its native relay (OpenSSL from Node, memory BIOs); "tidepool JS relay" is the same build with TIDEPOOL_NATIVE_RELAY=0, Node's tls on the JavaScript relay, which carried every TLS client before (the "before" of this change). CPU: the pooler process's user+system time over the run in percent of one core. Other load: CPU of processes this benchmark did not start, in cores (this machine has 2 cores shared with other work).`,
    '',
    `Machine: ${machine}.`,
    '',
    '## Summary',
    '',
    ...table,
    ...detail,
    '',
    `Command: \`npm run build && node dist/bench/pooler-tls.js --duration ${DURATION} --repeats ${REPEATS} --clients ${CLIENTS.join(',')}\``,
    '',
  ].join('\n');
  writeFileSync(OUT, body);
  const block = [
    '<!-- tls -->',
    '## Over TLS (client_tls_sslmode = require, PGSSLMODE=require)',
    '',
    `From \`bench/pooler-tls.ts\` (details in \`pooler-tls.md\`), ${machine}:`,
    '',
    ...table,
    '<!-- /tls -->',
  ].join('\n');
  const current = existsSync(SUMMARY) ? readFileSync(SUMMARY, 'utf8') : '';
  writeFileSync(
    SUMMARY,
    /<!-- tls -->[\s\S]*<!-- \/tls -->/.test(current)
      ? current.replace(/<!-- tls -->[\s\S]*<!-- \/tls -->/, block)
      : `${current.trimEnd()}\n\n${block}\n`,
  );
  progress(`wrote ${OUT} and the TLS block of ${SUMMARY}`);
}

runBench(main, stop, progress);
