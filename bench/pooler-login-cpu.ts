// The poolers' CPU per login (issue 40, "Logins"): closed-loop clients in this process log in (md5 or SCRAM-SHA-256),
// run `SELECT 1` and leave, over and over, through each pooler in turn; the pooler's CPU from /proc over the logins it
// served. pgbench -C cannot measure a SCRAM login's cost on this machine: libpq derives the key (4096 PBKDF2 rounds)
// at every connection, so pgbench, not the pooler, is the limit (60-130 logins a second, 1-2% of a core of pooler CPU:
// a handful of clock ticks a run). These clients derive it once per salt (raw-pg-client.ts), so the pooler serves
// thousands of logins a second and its CPU per login is measured over as many.
// Usage: npm run build && node dist/bench/pooler-login-cpu.js [--clients 10] [--seconds 8] [--rounds 5]
//   [--targets "PgBouncer,PgBouncer 1.25,Odyssey,tidepool"] [--out FILE] [--section NAME] [--help]
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { RunningPostgres } from '../src/launcher/embedded-postgres.js';
import { runBench, stopOnExit } from './bench-exit.js';
import { RunSampler, clockTicks } from './pooler-cpu.js';
import {
  BENCH_DB,
  BENCH_PASSWORD,
  benchSecret,
  createRole,
  startBenchPostgres,
  startOdyssey,
  startPgBouncer,
  startPgBouncer125,
  startTidepool,
  type ExtraUser,
  type RunningPeer,
} from './pooler-peers.js';
import { median } from './pooler-report.js';
import { MD5_USER, SCRAM_USER } from './pooler-pgbench.js';
import { benchOpt, rawLogin } from './raw-pg-client.js';
import { writeResults } from './results-file.js';

const USAGE = `Usage: node dist/bench/pooler-login-cpu.js [options]
  --clients N      concurrent clients logging in again and again (default 10)
  --seconds N      length of a run (default 8)
  --rounds N       rounds; every round runs each target and method once, rotated (default 5)
  --targets LIST   comma-separated: PgBouncer (Debian 1.18), PgBouncer 1.25, Odyssey, tidepool (default all four)
  --out FILE       results file (default bench/results/pooler-peers.md)
  --section NAME   generated section of that file (default login-cpu)
  --help           print this and exit
`;
if (process.argv.includes('--help') || process.argv.includes('-h')) {
  process.stdout.write(USAGE);
  process.exit(0);
}
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const CLIENTS = Number(benchOpt('clients', '10'));
const SECONDS = Number(benchOpt('seconds', '8'));
const ROUNDS = Number(benchOpt('rounds', '5'));
const TARGETS = benchOpt('targets', 'PgBouncer,PgBouncer 1.25,Odyssey,tidepool')
  .split(',')
  .map((t) => t.trim())
  .filter(Boolean);
const OUT = path.resolve(benchOpt('out', path.join(ROOT, 'bench', 'results', 'pooler-peers.md')));
const SECTION = benchOpt('section', 'login-cpu');
const METHODS = [
  { key: 'md5', user: MD5_USER },
  { key: 'SCRAM-SHA-256', user: SCRAM_USER },
] as const;
const LABEL: Record<string, string> = { PgBouncer: 'PgBouncer 1.18', Odyssey: 'Odyssey 1.5' };

const progress = (msg: string) => process.stderr.write(`[${new Date().toISOString().slice(11, 19)}] ${msg}\n`);

let pg: RunningPostgres | null = null;
const peers = new Map<string, RunningPeer>();
let workDir = '';
let stopping = false;

async function cleanup(): Promise<void> {
  stopping = true;
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

/** `CLIENTS` loops of login, SELECT 1, Terminate for `seconds`: the logins done and the first error. */
async function loginLoad(port: number, user: string, seconds: number): Promise<{ logins: number; errors: string[] }> {
  const until = performance.now() + seconds * 1000;
  let logins = 0;
  const errors: string[] = [];
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      while (performance.now() < until && !stopping) {
        try {
          const c = await rawLogin(port, user, BENCH_PASSWORD, BENCH_DB);
          await c.query('SELECT 1');
          c.end();
          logins++;
        } catch (err) {
          if (errors.length < 5) errors.push((err as Error).message);
        }
      }
    }),
  );
  return { logins, errors };
}

interface Run {
  target: string;
  method: string;
  logins: number;
  perSecond: number;
  usPerLogin: number;
  other: number;
  errors: string[];
}

async function main(): Promise<void> {
  if (process.platform !== 'linux') throw new Error('reads /proc: Linux only');
  workDir = mkdtempSync(path.join(os.tmpdir(), 'tidepool-bench-login-cpu-'));
  const ticks = clockTicks();
  const load0 = os.loadavg();
  pg = await startBenchPostgres(workDir, { maxConnections: 300, scale: 1, progress });
  const sql = (q: string, db?: string) => pg!.sql(q, db);
  const extraUsers: ExtraUser[] = [createRole(sql, MD5_USER, 'md5'), createRole(sql, SCRAM_USER, 'scram-sha-256')];
  const common = {
    serverHost: pg.host,
    serverPort: pg.port,
    poolSize: 20,
    secret: benchSecret((q) => pg!.sql(q)),
    extraUsers,
    progress,
  };
  for (const t of TARGETS) {
    const dir = path.join(workDir, t.replace(/\W+/g, '-'));
    const peer =
      t === 'PgBouncer'
        ? await startPgBouncer({ ...common, sessionPoolSize: 1, dir })
        : t === 'PgBouncer 1.25'
          ? await startPgBouncer125({ ...common, sessionPoolSize: 1, dir })
          : t === 'Odyssey'
            ? await startOdyssey({ ...common, dir })
            : t === 'tidepool'
              ? await startTidepool({ ...common, dir, root: ROOT })
              : null;
    if (!peer) throw new Error(`--targets: no target ${t}`);
    peers.set(t, peer);
    progress(`${t} ${peer.version} on ${peer.port} (pid ${peer.pid})`);
  }
  // Warm-up: each method through each pooler, so that its pools are open and its code warm.
  for (const [t, p] of peers)
    for (const m of METHODS) {
      const w = await loginLoad(p.port, m.user, 2);
      if (!w.logins) throw new Error(`warm-up through ${t} as ${m.user}: no login (${w.errors.join('; ')})`);
    }
  const runs: Run[] = [];
  const names = [...peers.keys()];
  for (let round = 0; round < ROUNDS; round++) {
    for (const [mi, m] of METHODS.entries()) {
      const shift = (round + mi) % names.length;
      for (const t of [...names.slice(shift), ...names.slice(0, shift)]) {
        const p = peers.get(t)!;
        const sampler = new RunSampler(p.pid, ticks);
        sampler.start();
        const t0 = performance.now();
        const r = await loginLoad(p.port, m.user, SECONDS);
        const wall = (performance.now() - t0) / 1000;
        const s = sampler.stop();
        const run: Run = {
          target: t,
          method: m.key,
          logins: r.logins,
          perSecond: r.logins / wall,
          usPerLogin: r.logins ? (s.cpuSeconds * 1e6) / r.logins : Number.NaN,
          other: s.foreignCores,
          errors: r.errors,
        };
        runs.push(run);
        progress(
          `round ${round + 1}/${ROUNDS} ${m.key} ${t}: ${run.perSecond.toFixed(0)} logins/s, ${run.usPerLogin.toFixed(1)} µs a login, other load ${run.other.toFixed(2)}${r.errors.length ? `; errors: ${r.errors.join('; ')}` : ''}`,
        );
      }
    }
  }
  const out: string[] = [
    '# Pooler CPU per login',
    '',
    `${CLIENTS} clients in the bench's own Node process log in, run \`SELECT 1\` and send Terminate, again and again, through one pooler at a time for ${SECONDS} s; ${ROUNDS} rounds, every round each pooler and method once in a rotated order; medians. The clients derive a SCRAM password's keys once (as a client with a cached key would), so the pooler's side of each login is what costs: it answers the startup, runs the exchange against the role's secret as pg_authid stores it (md5: ${MD5_USER}, SCRAM-SHA-256: ${SCRAM_USER}), picks a pooled server for the query, and closes. Transaction mode, pool size 20, PostgreSQL ${pg.sql('SHOW server_version')} on the same ${os.cpus().length}-CPU machine; \`node dist/bench/pooler-login-cpu.js --clients ${CLIENTS} --seconds ${SECONDS} --rounds ${ROUNDS}\`. Load average at start ${load0.map((x) => x.toFixed(2)).join(' ')}, at the end ${os
      .loadavg()
      .map((x) => x.toFixed(2))
      .join(' ')}. ${new Date().toISOString().slice(0, 16)}Z.`,
    '',
    `| Method | ${names.map((t) => `${LABEL[t] ?? t} µs a login`).join(' | ')} | tidepool / lowest peer | ${names.map((t) => `${LABEL[t] ?? t} logins/s`).join(' | ')} | other load (cores) |`,
    `|---|${names.map(() => '---:').join('|')}|---:|${names.map(() => '---:').join('|')}|---:|`,
  ];
  const of = (t: string, m: string) => runs.filter((r) => r.target === t && r.method === m && !r.errors.length);
  for (const m of METHODS) {
    const cpu = (t: string) => median(of(t, m.key).map((r) => r.usPerLogin));
    const peerCpu = names.filter((t) => t !== 'tidepool').map(cpu);
    const lowest = Math.min(...peerCpu.filter(Number.isFinite));
    out.push(
      `| ${m.key} | ${names.map((t) => cpu(t).toFixed(1)).join(' | ')} | **${names.includes('tidepool') && Number.isFinite(lowest) ? `${(cpu('tidepool') / lowest).toFixed(2)}x` : '-'}** | ${names.map((t) => median(of(t, m.key).map((r) => r.perSecond)).toFixed(0)).join(' | ')} | ${median(runs.filter((r) => r.method === m.key).map((r) => r.other)).toFixed(2)} |`,
    );
  }
  const bad = runs.filter((r) => r.errors.length);
  out.push(
    '',
    `CPU: the pooler's user + system time from /proc/<pid>/stat over the run divided by the logins it served (median over the rounds); below 1 in "tidepool / lowest peer" is less CPU a login than every peer. Other load: CPU taken by processes this bench did not start. ${bad.length ? `Runs with a failed login (left out): ${bad.map((r) => `${r.target} ${r.method}: ${r.errors[0]}`).join('; ')}.` : 'No login failed.'}`,
  );
  writeResults(OUT, `${out.join('\n')}\n`, SECTION);
  progress(`wrote ${OUT} (section ${SECTION})`);
}

runBench(main, stop, progress);
