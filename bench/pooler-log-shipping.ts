// Log-shipping benchmark: pgbench -S tps through tidepool with [logs] shipping to a real log store on and off,
// alternated within every scenario in one run; medians to bench/results/log-shipping.md.
// Usage: npm run build && node dist/bench/pooler-log-shipping.js [--duration 10 --repeats 3 --clients 10 --quick]
// Env: BENCH_DURATION, BENCH_REPEATS, BENCH_WARMUP, BENCH_CLIENTS, BENCH_POOL_SIZE, BENCH_SCALE, BENCH_MAX_OTHER_LOAD,
// BENCH_RETRIES, BENCH_QUIET_WAIT, BENCH_OUT (each also a --flag of the same name in kebab case).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, type RunningPostgres } from '../src/launcher/embedded-postgres.js';
import { RunSampler, clockTicks, otherLoad } from './pooler-cpu.js';
import {
  BENCH_DB,
  BENCH_PASSWORD,
  BENCH_USER,
  startBenchPostgres,
  startTidepool,
  type RunningPeer,
} from './pooler-peers.js';
import {
  pgbenchCommand,
  runPgbench,
  type PgbenchResult,
  type RunningPgbench,
  type Scenario,
} from './pooler-pgbench.js';
import { median } from './pooler-report.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const QUICK = process.argv.includes('--quick') || process.env.BENCH_QUICK === '1';

function opt(name: string, env: string, dflt: string, quick?: string): string {
  const i = process.argv.indexOf(`--${name}`);
  if (i >= 0 && process.argv[i + 1] !== undefined) return process.argv[i + 1]!;
  if (process.env[env]) return process.env[env]!;
  return QUICK && quick !== undefined ? quick : dflt;
}

const DURATION = Number(opt('duration', 'BENCH_DURATION', '10', '3'));
const REPEATS = Number(opt('repeats', 'BENCH_REPEATS', '3', '1'));
const WARMUP = Number(opt('warmup', 'BENCH_WARMUP', '3', '1'));
const CLIENTS = Number(opt('clients', 'BENCH_CLIENTS', '10'));
const POOL_SIZE = Number(opt('pool-size', 'BENCH_POOL_SIZE', '20'));
const SCALE = Number(opt('scale', 'BENCH_SCALE', '10', '1'));
const MAX_OTHER_LOAD = Number(opt('max-other-load', 'BENCH_MAX_OTHER_LOAD', '0.5'));
const RETRIES = Number(opt('retries', 'BENCH_RETRIES', '2', '0'));
const QUIET_WAIT = Number(opt('quiet-wait', 'BENCH_QUIET_WAIT', '30', '0'));
const OUT = path.resolve(
  opt(
    'out',
    'BENCH_OUT',
    path.join(ROOT, 'bench', 'results', 'log-shipping.md'),
    path.join(ROOT, 'bench', '.work', 'log-shipping-quick.md'),
  ),
);

const progress = (msg: string) => process.stderr.write(`[${new Date().toISOString().slice(11, 19)}] ${msg}\n`);

/** A scenario is a pgbench run and the pooler log level it runs at; each has a pooler with shipping off and one with it on. */
interface ShipScenario {
  title: string;
  scenario: Scenario;
  logLevel: 'info' | 'debug';
}

const SCENARIOS: ShipScenario[] = [
  {
    title: `-S simple, ${CLIENTS} clients, log_level info (a few records a minute)`,
    logLevel: 'info',
    scenario: { key: `simple-c${CLIENTS}-info`, protocol: 'simple', clients: CLIENTS, reconnect: false },
  },
  {
    title: `-S -C simple, ${CLIENTS} clients, log_level debug (one record per connection, so per transaction)`,
    logLevel: 'debug',
    scenario: { key: `simple-C-c${CLIENTS}-debug`, protocol: 'simple', clients: CLIENTS, reconnect: true },
  },
];
const MODES = ['off', 'on'] as const;
type Mode = (typeof MODES)[number];

interface ShipPooler {
  peer: RunningPeer;
  webPort: number;
}
interface Run extends PgbenchResult {
  scenario: string;
  mode: Mode;
  repeat: number;
  poolerCpu: number;
  storeCpu: number;
  foreignCores: number;
  shipped: number;
  dropped: number;
}

// Everything started here, stopped by pid on the way out (normal end, error, Ctrl-C).
let pg: RunningPostgres | null = null;
let store: { child: ChildProcess; url: string; pid: number } | null = null;
const poolers = new Map<string, ShipPooler>();
let pgbench: RunningPgbench | null = null;
let workDir = '';
let cleaning: Promise<void> | null = null;
let interrupted = false;

function stopChild(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill(signal);
  });
}

function cleanup(): Promise<void> {
  cleaning ??= (async () => {
    pgbench?.kill();
    for (const p of poolers.values())
      await p.peer.stop().catch((err: Error) => progress(`stopping tidepool: ${err.message}`));
    poolers.clear();
    if (store) await stopChild(store.child, 'SIGTERM');
    if (pg) await pg.stop().catch((err: Error) => progress(`stopping PostgreSQL: ${err.message}`));
    if (workDir) rmSync(workDir, { recursive: true, force: true });
  })();
  return cleaning;
}

function killLeftovers(): void {
  for (const pid of [pgbench?.pid, ...[...poolers.values()].map((p) => p.peer.pid), store?.pid, pg?.pid]) {
    if (!pid || pid < 0) continue;
    try {
      process.kill(pid, 'SIGKILL');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ESRCH') progress(`kill ${pid}: ${(err as Error).message}`);
    }
  }
}

for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.on(sig, () => {
    progress(`${sig}: stopping everything this benchmark started`);
    interrupted = true;
    const force = setTimeout(() => {
      killLeftovers();
      process.exit(130);
    }, 15_000);
    void cleanup().finally(() => {
      clearTimeout(force);
      process.exit(130);
    });
  });
}
process.on('exit', () => {
  if (!cleaning) killLeftovers();
});

/** `tidepool logstore --mode single` on a free port, data in the work dir; resolves when it listens. */
async function startStore(): Promise<{ child: ChildProcess; url: string; pid: number }> {
  const dir = path.join(workDir, 'logstore');
  mkdirSync(dir, { recursive: true });
  const config = path.join(dir, 'logstore.yaml');
  writeFileSync(
    config,
    `server:\n  http_addr: "127.0.0.1:0"\n  grpc_addr: "127.0.0.1:0"\n  debug_addr: "127.0.0.1:0"\nstorage:\n  data_dir: "${path.join(dir, 'data')}"\nmapping:\n  path: auto\nlog:\n  level: warn\n`,
  );
  const child = spawn(
    process.execPath,
    [path.join(ROOT, 'bin', 'tidepool.js'), 'logstore', '--mode', 'single', `--config=${config}`],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the log store did not listen in 30 s: ${out}`)), 30_000);
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /listening on http ([\d.]+:\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(`http://${m[1]}`);
      }
    });
    child.stderr!.on('data', (d: Buffer) => {
      out += d.toString();
    });
    child.once('exit', (code, sig) => {
      clearTimeout(timer);
      reject(new Error(`the log store exited (${code ?? sig}): ${out}`));
    });
  });
  return { child, url, pid: child.pid ?? -1 };
}

async function startShipPooler(s: ShipScenario, mode: Mode): Promise<ShipPooler> {
  const webPort = await freePort();
  const logs = mode === 'on' ? `\n[logs]\nship_to = "${store!.url}"\n` : '';
  const peer = await startTidepool({
    dir: path.join(workDir, `tidepool-${s.logLevel}-${mode}`),
    root: ROOT,
    serverHost: pg!.host,
    serverPort: pg!.port,
    poolSize: POOL_SIZE,
    logLevel: s.logLevel,
    extraToml: `\n[web]\nenabled = true\nhost = "127.0.0.1"\nport = ${webPort}\n${logs}`,
  });
  progress(
    `tidepool (log_level ${s.logLevel}, shipping ${mode}) on ${peer.host}:${peer.port}, web ${webPort} (pid ${peer.pid})`,
  );
  return { peer, webPort };
}

/** pooler_log_ship_sent_total and the sum of pooler_log_ship_dropped_total (0 when shipping is off). */
async function shipCounters(p: ShipPooler): Promise<{ sent: number; dropped: number }> {
  const text = await (await fetch(`http://127.0.0.1:${p.webPort}/metrics`)).text();
  const sent = Number(/^pooler_log_ship_sent_total (\S+)$/m.exec(text)?.[1] ?? 0);
  let dropped = 0;
  for (const m of text.matchAll(/^pooler_log_ship_dropped_total\{[^}]*\} (\S+)$/gm)) dropped += Number(m[1]);
  return { sent, dropped };
}

let quietWaited = 0;

/** Waits (up to QUIET_WAIT seconds) until other work on the machine takes at most MAX_OTHER_LOAD cores. */
async function waitQuiet(ticks: number): Promise<void> {
  const t0 = Date.now();
  let load = await otherLoad(500, ticks);
  while (load > MAX_OTHER_LOAD && Date.now() - t0 < QUIET_WAIT * 1000 && !interrupted)
    load = await otherLoad(1000, ticks);
  quietWaited += (Date.now() - t0) / 1000;
}

async function measure(s: ShipScenario, mode: Mode, rep: number, ticks: number, logDir: string): Promise<Run> {
  if (QUIET_WAIT > 0) await waitQuiet(ticks);
  const p = poolers.get(`${s.scenario.key}-${mode}`)!;
  const c0 = await shipCounters(p);
  const poolerSampler = new RunSampler(p.peer.pid, ticks);
  const storeSampler = new RunSampler(store!.pid, ticks);
  poolerSampler.start();
  storeSampler.start();
  pgbench = runPgbench(
    s.scenario,
    { host: p.peer.host, port: p.peer.port, user: BENCH_USER, password: BENCH_PASSWORD, database: BENCH_DB },
    DURATION,
    logDir,
    `${s.scenario.key}-${mode}-${rep}`,
  );
  const r = await pgbench.done;
  pgbench = null;
  const ps = poolerSampler.stop();
  const ss = storeSampler.stop();
  // Let the last partial batch (ship_flush_interval 1 s) reach the store before counting.
  await new Promise((res) => setTimeout(res, mode === 'on' ? 1500 : 0));
  const c1 = await shipCounters(p);
  return {
    ...r,
    scenario: s.scenario.key,
    mode,
    repeat: rep,
    poolerCpu: ps.cpuPercent,
    storeCpu: ss.cpuPercent,
    foreignCores: ps.foreignCores,
    shipped: c1.sent - c0.sent,
    dropped: c1.dropped - c0.dropped,
  };
}

function fmt(v: number, digits = 0): string {
  return Number.isFinite(v) ? v.toFixed(digits) : '-';
}

function report(machine: string, commands: string[], runs: Run[], notes: string[]): string {
  const rows: string[] = [];
  for (const s of SCENARIOS) {
    const offTps = median(
      runs.filter((r) => r.scenario === s.scenario.key && r.mode === 'off' && r.ok).map((r) => r.tps),
    );
    // Runs of one repeat are neighbours in time: the median of their ratios drifts less with the machine's load.
    const pairRatios: number[] = [];
    for (let rep = 0; rep < REPEATS; rep++) {
      const [off, on] = MODES.map((m) =>
        runs.find((r) => r.scenario === s.scenario.key && r.mode === m && r.repeat === rep),
      );
      if (off?.ok && on?.ok) pairRatios.push(on.tps / off.tps);
    }
    for (const mode of MODES) {
      const rs = runs.filter((r) => r.scenario === s.scenario.key && r.mode === mode);
      const ok = rs.filter((r) => r.ok);
      const tps = median(ok.map((r) => r.tps));
      const tpsList = ok.map((r) => Math.round(r.tps)).join(', ');
      const cpuPerXact = median(ok.map((r) => ((r.poolerCpu / 100) * 1e6) / r.tps));
      rows.push(
        `| ${s.title} | ${mode} | ${fmt(tps)} | ${tpsList} | ${mode === 'on' ? `${(tps / offTps).toFixed(2)}x (pairs: ${median(pairRatios).toFixed(2)}x)` : '1'} | ${fmt(median(ok.map((r) => r.p50Ms)), 3)} | ${fmt(median(ok.map((r) => r.p99Ms)), 3)} | ${fmt(median(ok.map((r) => r.poolerCpu)))} | ${fmt(cpuPerXact)} | ${fmt(median(ok.map((r) => r.storeCpu)))} | ${mode === 'on' ? fmt(median(ok.map((r) => r.shipped / DURATION))) : '-'} | ${mode === 'on' ? fmt(ok.reduce((a, r) => a + r.dropped, 0)) : '-'} | ${fmt(median(ok.map((r) => r.foreignCores)), 2)} | ${ok.length}/${rs.length} |`,
      );
    }
  }
  const failures = runs.filter((r) => !r.ok).map((r) => `- ${r.scenario} ${r.mode} run ${r.repeat + 1}: ${r.error}`);
  return [
    '# Log shipping: pgbench -S through tidepool with [logs] shipping on and off',
    '',
    `Run on ${new Date().toISOString().slice(0, 10)}. ${machine}`,
    '',
    `pgbench -S -n, ${DURATION} s per run, ${REPEATS} runs per scenario and mode, off and on alternated (order swapped every run), medians quoted; a ${WARMUP} s warm-up per pooler first. One tidepool process per scenario and mode (transaction mode, pool size ${POOL_SIZE}, md5 auth, web listener on for /metrics), all in front of one PostgreSQL (pgbench scale ${SCALE}); "on" ships to one \`tidepool logstore --mode single\` on the same machine with the default [logs] settings (batches of 500, flush every 1 s, queue 10 000). Process logs go to a file in both modes. Pooler and log store CPU: percent of one core over the run (/proc). Records shipped/s: pooler_log_ship_sent_total over the run. Other load: CPU taken meanwhile by processes this benchmark did not start, in cores; before each run the benchmark waits up to ${QUIET_WAIT} s for it to drop to ${MAX_OTHER_LOAD} cores, and a run with more is done again (up to ${RETRIES} times, the quietest kept). on/off: ratio of the medians, and in brackets the median of the ratios of the two runs of each repeat (neighbours in time).`,
    '',
    '| scenario | shipping | tps (median) | tps of each run | on/off | p50 ms | p99 ms | pooler CPU % | pooler CPU µs/transaction | log store CPU % | records shipped/s | dropped | other load (cores) | runs ok |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|',
    ...rows,
    '',
    ...(failures.length ? ['Failed runs:', '', ...failures, ''] : []),
    ...notes.map((n) => `${n}\n`),
    '```sh',
    ...commands,
    '```',
    '',
  ].join('\n');
}

async function main(): Promise<void> {
  if (process.platform !== 'linux') throw new Error('the benchmark reads /proc: Linux only');
  workDir = mkdtempSync(path.join(os.tmpdir(), 'tidepool-bench-logship-'));
  const ticks = clockTicks();
  progress(
    `work dir ${workDir}; ${DURATION} s runs, ${REPEATS} repeats, ${CLIENTS} clients, scale ${SCALE}${QUICK ? ' (quick mode)' : ''}`,
  );
  pg = await startBenchPostgres(workDir, {
    maxConnections: 300,
    scale: SCALE,
    roleSql: `SET password_encryption = 'md5'; CREATE ROLE ${BENCH_USER} LOGIN PASSWORD '${BENCH_PASSWORD}'`,
    progress,
  });
  store = await startStore();
  progress(`log store on ${store.url} (pid ${store.pid})`);
  for (const s of SCENARIOS)
    for (const mode of MODES) poolers.set(`${s.scenario.key}-${mode}`, await startShipPooler(s, mode));

  const logDir = path.join(workDir, 'pgbench');
  mkdirSync(logDir, { recursive: true });
  const notes: string[] = [];
  for (const s of SCENARIOS) {
    for (const mode of MODES) {
      if (WARMUP <= 0) continue;
      const p = poolers.get(`${s.scenario.key}-${mode}`)!;
      pgbench = runPgbench(
        s.scenario,
        { host: p.peer.host, port: p.peer.port, user: BENCH_USER, password: BENCH_PASSWORD, database: BENCH_DB },
        WARMUP,
        logDir,
        'warmup',
      );
      const r = await pgbench.done;
      pgbench = null;
      if (!r.ok) notes.push(`Warm-up of ${s.scenario.key} (${mode}) failed: ${r.error}`);
    }
  }

  const runs: Run[] = [];
  let retried = 0;
  for (const s of SCENARIOS) {
    for (let rep = 0; rep < REPEATS; rep++) {
      const order = rep % 2 === 0 ? MODES : [...MODES].reverse();
      for (const mode of order) {
        let kept: Run | null = null;
        for (let attempt = 0; attempt <= RETRIES; attempt++) {
          if (interrupted) throw new Error('interrupted');
          if (attempt > 0) retried++;
          const r = await measure(s, mode, rep, ticks, logDir);
          if (!kept || !r.ok || r.foreignCores < kept.foreignCores) kept = r;
          progress(
            `${s.scenario.key} #${rep + 1}${attempt ? ` (retry ${attempt})` : ''} shipping ${mode}: ${r.ok ? `${Math.round(r.tps)} tps, p50 ${r.p50Ms.toFixed(3)} ms` : `FAILED (${r.error})`}, pooler CPU ${r.poolerCpu.toFixed(0)}%, store CPU ${r.storeCpu.toFixed(0)}%${mode === 'on' ? `, ${r.shipped} records shipped, ${r.dropped} dropped` : ''}, other load ${r.foreignCores.toFixed(2)} cores`,
          );
          if (!r.ok || r.foreignCores <= MAX_OTHER_LOAD) break;
        }
        runs.push(kept!);
      }
    }
  }

  if (QUIET_WAIT > 0)
    notes.push(`The benchmark waited ${Math.round(quietWaited)} s in all for other work to quiet down.`);
  if (RETRIES > 0)
    notes.push(
      `${retried} run${retried === 1 ? ' was' : 's were'} done again because other work took more than ${MAX_OTHER_LOAD} cores during it.`,
    );
  const head = spawnSync('git', ['-C', ROOT, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).stdout.trim();
  const dirty = spawnSync('git', ['-C', ROOT, 'status', '--porcelain', '--', 'src', 'native'], {
    encoding: 'utf8',
  }).stdout.trim();
  const pgVersion = pg.sql('SHOW server_version');
  const machine = `${os.cpus().length} CPU (${os.cpus()[0]?.model ?? '?'}), ${Math.round(os.totalmem() / 2 ** 30)} GiB RAM; Node ${process.version}; PostgreSQL ${pgVersion}; tidepool at ${head}${dirty ? ' plus uncommitted changes in the work tree' : ''}; load average at the end ${os
    .loadavg()
    .map((x) => x.toFixed(2))
    .join(' ')}. pgbench, PostgreSQL, both poolers of a scenario and the log store share the cores.`;
  const commands = [
    `npm run build && node dist/bench/pooler-log-shipping.js${QUICK ? ' --quick' : ''}   # BENCH_DURATION=${DURATION} BENCH_REPEATS=${REPEATS} BENCH_CLIENTS=${CLIENTS} BENCH_SCALE=${SCALE} BENCH_MAX_OTHER_LOAD=${MAX_OTHER_LOAD} BENCH_RETRIES=${RETRIES} BENCH_QUIET_WAIT=${QUIET_WAIT}`,
    ...SCENARIOS.map((s) => pgbenchCommand(s.scenario, DURATION)),
    '# pooler.toml: as bench/pooler-peers.ts startTidepool writes it, with log_level info or debug, [web] enabled, and for "on":',
    '# [logs]',
    '# ship_to = "http://127.0.0.1:<log store port>"',
  ];
  mkdirSync(path.dirname(OUT), { recursive: true });
  writeFileSync(OUT, report(machine, commands, runs, notes));
  progress(`wrote ${OUT}`);
}

main().then(
  async () => {
    await cleanup();
  },
  async (err: unknown) => {
    if (interrupted) return;
    progress(`failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    await cleanup();
    process.exitCode = 1;
  },
);
