// A/B benchmark: pgbench -S through tidepool at two git revisions side by side, on each relay, alternated in one run.
// Usage: npm run build && node dist/bench/pooler-ab.js --before <rev> [--after <rev>] [--duration 10 --repeats 5 --clients 10 --relays native,js --protocols simple --reconnect]
// [--before-general 'prepared_statements = false'] [--after-general ...]: more [general] config lines for one side (one revision
// against itself with a setting changed: --before HEAD --before-general ...).
// Without --after, "after" is this checkout as built (dist/). Each revision is exported with `git archive` and
// compiled with this checkout's node_modules; both use this checkout's native addon (build/Release) unless the
// revision's native/ differs, when it builds its own.
// Env: BENCH_DURATION, BENCH_REPEATS, BENCH_WARMUP, BENCH_CLIENTS, BENCH_RELAYS, BENCH_PROTOCOLS, BENCH_POOL_SIZE, BENCH_SCALE,
// BENCH_MAX_OTHER_LOAD, BENCH_QUIET_WAIT, BENCH_OUT (each also a --flag of the same name in kebab case).
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { RunningPostgres } from '../src/launcher/embedded-postgres.js';
import { RunSampler, clockTicks, otherLoad } from './pooler-cpu.js';
import {
  BENCH_AUTH,
  benchSecret,
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
import { runBench, stopOnExit } from './bench-exit.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

function opt(name: string, env: string, dflt: string): string {
  const i = process.argv.indexOf(`--${name}`);
  if (i >= 0 && process.argv[i + 1] !== undefined) return process.argv[i + 1]!;
  return process.env[env] || dflt;
}

const BEFORE = opt('before', 'BENCH_BEFORE', '');
const AFTER = opt('after', 'BENCH_AFTER', '');
const GENERAL: Record<'before' | 'after', string> = {
  before: opt('before-general', 'BENCH_BEFORE_GENERAL', ''),
  after: opt('after-general', 'BENCH_AFTER_GENERAL', ''),
};
const DURATION = Number(opt('duration', 'BENCH_DURATION', '10'));
const REPEATS = Number(opt('repeats', 'BENCH_REPEATS', '5'));
const WARMUP = Number(opt('warmup', 'BENCH_WARMUP', '3'));
const CLIENTS = Number(opt('clients', 'BENCH_CLIENTS', '10'));
const RELAYS = opt('relays', 'BENCH_RELAYS', 'native,js')
  .split(',')
  .filter((r): r is Relay => r === 'native' || r === 'js');
/** pgbench --protocol values, each a scenario of its own (prepared needs a revision with prepared_statements). */
const PROTOCOLS = opt('protocols', 'BENCH_PROTOCOLS', 'simple')
  .split(',')
  .map((p) => p.trim())
  .filter((p): p is Scenario['protocol'] => p === 'simple' || p === 'extended' || p === 'prepared');
const POOL_SIZE = Number(opt('pool-size', 'BENCH_POOL_SIZE', '20'));
const SCALE = Number(opt('scale', 'BENCH_SCALE', '10'));
const MAX_OTHER_LOAD = Number(opt('max-other-load', 'BENCH_MAX_OTHER_LOAD', '0.5'));
const QUIET_WAIT = Number(opt('quiet-wait', 'BENCH_QUIET_WAIT', '20'));
const OUT = path.resolve(opt('out', 'BENCH_OUT', path.join(ROOT, 'bench', 'results', 'pooler-ab.md')));

type Relay = 'native' | 'js';
const SIDES = ['before', 'after'] as const;
type Side = (typeof SIDES)[number];
interface Run extends PgbenchResult {
  relay: Relay;
  protocol: Scenario['protocol'];
  side: Side;
  repeat: number;
  poolerCpu: number;
  foreignCores: number;
}

const progress = (msg: string) => process.stderr.write(`[${new Date().toISOString().slice(11, 19)}] ${msg}\n`);
/** --reconnect (BENCH_RECONNECT=1): pgbench -C, a new connection and login for every transaction. */
const RECONNECT = process.argv.includes('--reconnect') || process.env.BENCH_RECONNECT === '1';
const scenarios: Scenario[] = PROTOCOLS.map((protocol) => ({
  key: `${protocol}-c${CLIENTS}`,
  protocol,
  clients: CLIENTS,
  reconnect: RECONNECT,
}));

let pg: RunningPostgres | null = null;
const poolers = new Map<string, RunningPeer>();
let pgbench: RunningPgbench | null = null;
let workDir = '';

async function cleanup(): Promise<void> {
  pgbench?.kill();
  for (const p of poolers.values()) await p.stop().catch((err: Error) => progress(`stopping tidepool: ${err.message}`));
  poolers.clear();
  if (pg) await pg.stop().catch((err: Error) => progress(`stopping PostgreSQL: ${err.message}`));
  if (workDir) rmSync(workDir, { recursive: true, force: true });
}

const stop = stopOnExit(
  cleanup,
  () => [pgbench?.pid, ...[...poolers.values()].map((p) => p.pid), pg?.pid],
  () => workDir,
  progress,
);

function git(...args: string[]): string {
  const r = spawnSync('git', ['-C', ROOT, ...args], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`git ${args.join(' ')}: ${r.stderr}`);
  return r.stdout.trim();
}

/** Exports `rev` into the work dir and compiles it; returns its root. */
function checkout(rev: string, side: Side): string {
  const dir = path.join(workDir, side);
  mkdirSync(dir, { recursive: true });
  const tar = spawnSync('sh', ['-c', `git -C "${ROOT}" archive "${rev}" | tar -x -C "${dir}"`], { encoding: 'utf8' });
  if (tar.status !== 0) throw new Error(`git archive ${rev}: ${tar.stderr}`);
  symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'));
  // A revision whose addon differs from this checkout's (its JavaScript calls the addon it was written for) builds its own.
  const sameAddon = spawnSync('git', ['-C', ROOT, 'diff', '--quiet', rev, '--', 'native', 'binding.gyp']).status === 0;
  if (sameAddon) symlinkSync(path.join(ROOT, 'build'), path.join(dir, 'build'));
  else {
    progress(`building the native addon of ${rev} (its native/ differs from this checkout's)`);
    const gyp = spawnSync('npx', ['--no-install', 'node-gyp', 'rebuild'], { cwd: dir, encoding: 'utf8' });
    if (gyp.status !== 0) throw new Error(`node-gyp at ${rev}: ${gyp.stdout}${gyp.stderr}`);
  }
  const tsc = spawnSync(
    process.execPath,
    [path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.json'],
    { cwd: dir, encoding: 'utf8' },
  );
  if (tsc.status !== 0) throw new Error(`tsc at ${rev}: ${tsc.stdout}${tsc.stderr}`);
  return dir;
}

async function measure(
  relay: Relay,
  scenario: Scenario,
  side: Side,
  repeat: number,
  ticks: number,
  logDir: string,
): Promise<Run> {
  const t0 = Date.now();
  while (QUIET_WAIT > 0 && (await otherLoad(1000, ticks)) > MAX_OTHER_LOAD && Date.now() - t0 < QUIET_WAIT * 1000);
  const p = poolers.get(`${relay}-${side}`)!;
  const sampler = new RunSampler(p.pid, ticks);
  sampler.start();
  pgbench = runPgbench(
    scenario,
    { host: p.host, port: p.port, user: BENCH_USER, password: BENCH_PASSWORD, database: BENCH_DB },
    DURATION,
    logDir,
    `${relay}-${scenario.protocol}-${side}-${repeat}`,
  );
  const r = await pgbench.done;
  pgbench = null;
  const s = sampler.stop();
  return {
    ...r,
    relay,
    protocol: scenario.protocol,
    side,
    repeat,
    poolerCpu: s.cpuPercent,
    foreignCores: s.foreignCores,
  };
}

function report(revs: Record<Side, string>, runs: Run[], machine: string): string {
  const fmt = (v: number, d = 0) => (Number.isFinite(v) ? v.toFixed(d) : '-');
  const rows: string[] = [];
  for (const { protocol } of scenarios)
    for (const relay of RELAYS) {
      const mine = runs.filter((r) => r.relay === relay && r.protocol === protocol);
      const pairs: number[] = [];
      for (let rep = 0; rep < REPEATS; rep++) {
        const [b, a] = SIDES.map((side) => mine.find((r) => r.side === side && r.repeat === rep));
        if (b?.ok && a?.ok) pairs.push(a.tps / b.tps);
      }
      const beforeTps = median(mine.filter((r) => r.side === 'before' && r.ok).map((r) => r.tps));
      for (const side of SIDES) {
        const ok = mine.filter((r) => r.side === side && r.ok);
        const tps = median(ok.map((r) => r.tps));
        const ratio = side === 'after' ? `${(tps / beforeTps).toFixed(3)}x (pairs: ${median(pairs).toFixed(3)}x)` : '1';
        rows.push(
          `| ${protocol} | ${relay} | ${side} (${revs[side]}${GENERAL[side] ? `, ${GENERAL[side]}` : ''}) | ${fmt(tps)} | ${ok.map((r) => Math.round(r.tps)).join(', ')} | ${ratio} | ${fmt(median(ok.map((r) => r.p50Ms)), 3)} | ${fmt(median(ok.map((r) => ((r.poolerCpu / 100) * 1e6) / r.tps)), 1)} | ${fmt(median(ok.map((r) => r.foreignCores)), 2)} |`,
        );
      }
    }
  const failed = runs
    .filter((r) => !r.ok)
    .map((r) => `- ${r.protocol} ${r.relay} ${r.side} run ${r.repeat + 1}: ${r.error}`);
  return [
    `# tidepool A/B: ${revs.before} -> ${revs.after}, pgbench -S${RECONNECT ? ' -C' : ''} --protocol ${PROTOCOLS.join('/')}, ${CLIENTS} clients`,
    '',
    `Run on ${new Date().toISOString().slice(0, 10)}. ${machine}`,
    '',
    `pgbench -S -n${RECONNECT ? ' -C' : ''} --protocol=${PROTOCOLS.join('|')} -c ${CLIENTS}, ${DURATION} s per run, ${REPEATS} runs per protocol, relay and revision, before and after alternated (order swapped every run), medians quoted, after a ${WARMUP} s warm-up each. One tidepool process per relay and revision (transaction mode, pool size ${POOL_SIZE}, ${BENCH_AUTH} auth), all in front of one PostgreSQL (scale ${SCALE}); the js rows run with TIDEPOOL_NATIVE_RELAY=0. Pooler CPU: µs of the pooler process per transaction (/proc). Other load: cores used meanwhile by processes this benchmark did not start (it waits up to ${QUIET_WAIT} s for at most ${MAX_OTHER_LOAD} before each run). after/before: ratio of the medians, and in brackets the median of the ratios of each repeat's two runs (neighbours in time).`,
    '',
    '| protocol | relay | revision | tps (median) | tps of each run | after/before | p50 ms | pooler CPU µs/transaction | other load (cores) |',
    '|---|---|---|---|---|---|---|---|---|',
    ...rows,
    '',
    ...(failed.length ? ['Failed runs:', '', ...failed, ''] : []),
    '```sh',
    `npm run build && ${BENCH_AUTH === 'md5' ? '' : `BENCH_AUTH=${BENCH_AUTH} `}node dist/bench/pooler-ab.js --before ${revs.before}${AFTER ? ` --after ${revs.after}` : ''} --duration ${DURATION} --repeats ${REPEATS} --clients ${CLIENTS} --relays ${RELAYS.join(',')} --protocols ${PROTOCOLS.join(',')}${RECONNECT ? ' --reconnect' : ''}${SIDES.map((side) => (GENERAL[side] ? ` --${side}-general '${GENERAL[side]}'` : '')).join('')}`,
    ...scenarios.map((s) => pgbenchCommand(s, DURATION)),
    '```',
    '',
  ].join('\n');
}

async function main(): Promise<void> {
  if (!BEFORE) throw new Error('--before <rev> is required');
  if (process.platform !== 'linux') throw new Error('the benchmark reads /proc: Linux only');
  workDir = mkdtempSync(path.join(os.tmpdir(), 'tidepool-bench-ab-'));
  const ticks = clockTicks();
  const revs: Record<Side, string> = {
    before: git('rev-parse', '--short', BEFORE),
    after: AFTER ? git('rev-parse', '--short', AFTER) : `${git('rev-parse', '--short', 'HEAD')} as built`,
  };
  const roots: Record<Side, string> = {
    before: checkout(BEFORE, 'before'),
    after: AFTER ? checkout(AFTER, 'after') : ROOT,
  };
  progress(`before ${revs.before}, after ${revs.after}; work dir ${workDir}`);
  pg = await startBenchPostgres(workDir, { maxConnections: 300, scale: SCALE });
  for (const relay of RELAYS) {
    for (const side of SIDES) {
      // The child inherits the environment it is spawned with.
      if (relay === 'js') process.env.TIDEPOOL_NATIVE_RELAY = '0';
      else delete process.env.TIDEPOOL_NATIVE_RELAY;
      const peer = await startTidepool({
        dir: path.join(workDir, `tidepool-${relay}-${side}`),
        root: roots[side],
        serverHost: pg.host,
        serverPort: pg.port,
        poolSize: POOL_SIZE,
        generalToml: GENERAL[side],
        secret: benchSecret((q) => pg!.sql(q)),
      });
      poolers.set(`${relay}-${side}`, peer);
      progress(`tidepool ${side} (${relay} relay) on ${peer.host}:${peer.port}, pid ${peer.pid}`);
    }
  }
  delete process.env.TIDEPOOL_NATIVE_RELAY;
  const logDir = path.join(workDir, 'pgbench');
  mkdirSync(logDir, { recursive: true });
  for (const [key, p] of poolers) {
    pgbench = runPgbench(
      scenarios[0]!,
      { host: p.host, port: p.port, user: BENCH_USER, password: BENCH_PASSWORD, database: BENCH_DB },
      WARMUP,
      logDir,
      `warmup-${key}`,
    );
    await pgbench.done;
    pgbench = null;
  }
  const runs: Run[] = [];
  for (let rep = 0; rep < REPEATS; rep++) {
    for (const scenario of scenarios)
      for (const relay of RELAYS) {
        for (const side of rep % 2 === 0 ? SIDES : [...SIDES].reverse()) {
          const r = await measure(relay, scenario, side, rep, ticks, logDir);
          runs.push(r);
          progress(
            `#${rep + 1} ${scenario.protocol} ${relay} ${side}: ${r.ok ? `${Math.round(r.tps)} tps` : `FAILED (${r.error})`}, pooler CPU ${r.poolerCpu.toFixed(0)}%, other load ${r.foreignCores.toFixed(2)} cores`,
          );
        }
      }
  }
  const machine = `${os.cpus().length} CPU (${os.cpus()[0]?.model ?? '?'}); Node ${process.version}; PostgreSQL ${pg.sql('SHOW server_version')}; pgbench, PostgreSQL and all ${poolers.size} poolers share the cores.`;
  mkdirSync(path.dirname(OUT), { recursive: true });
  writeFileSync(OUT, report(revs, runs, machine));
  progress(`wrote ${OUT}`);
}

runBench(main, stop, progress);
