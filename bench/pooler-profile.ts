// Pooler profile: tidepool under pgbench -S for each protocol, with node --cpu-prof (self time by function and by
// file), perf (kernel / addon / JavaScript split, top symbols) and strace -c (syscalls per transaction), as chosen.
// Usage: npm run build && node dist/bench/pooler-profile.js [--protocols simple,extended,prepared --clients 10
//   --duration 10 --relay native|js --tls --reconnect --tools cpu-prof,perf,strace --top 25 --out bench/.work/pooler-profile.md
//   --peer tidepool|pgbouncer --perf-limit 0.7]
// --peer pgbouncer runs the same load through PgBouncer (no TLS, no cpu-prof) with perf or strace, for the same split
// of its CPU and system calls. --perf-limit: the smallest share (percent) of a symbol perf's report lists.
// The tools disturb each other (the profiler's signals show up in strace, strace slows every syscall): for counts,
// run strace alone; without tools, only tps and the pooler's CPU per transaction are reported.
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { RunningPostgres } from '../src/launcher/embedded-postgres.js';
import { clockTicks, cpuSeconds } from './pooler-cpu.js';
import {
  BENCH_AUTH,
  benchSecret,
  BENCH_DB,
  BENCH_PASSWORD,
  BENCH_USER,
  startBenchPostgres,
  startPgBouncer,
  startTidepool,
  type RunningPeer,
} from './pooler-peers.js';
import { runPgbench, type RunningPgbench, type Scenario } from './pooler-pgbench.js';
import { runBench, stopOnExit } from './bench-exit.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

function opt(name: string, dflt: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] !== undefined ? process.argv[i + 1]! : dflt;
}

const PROTOCOLS = opt('protocols', 'simple,extended,prepared')
  .split(',')
  .filter((p): p is Scenario['protocol'] => p === 'simple' || p === 'extended' || p === 'prepared');
const CLIENTS = Number(opt('clients', '10'));
const DURATION = Number(opt('duration', '10'));
const RELAY = opt('relay', 'native');
const PEER = opt('peer', 'tidepool') === 'pgbouncer' ? 'PgBouncer' : 'tidepool';
/** -C: a new connection (and login) for every transaction. */
const RECONNECT = process.argv.includes('--reconnect');
/** --tls: clients over TLS (client_tls_sslmode = require, PGSSLMODE=require), a self-signed certificate. */
const TLS = process.argv.includes('--tls');
const TOP = Number(opt('top', '25'));
const TOOLS = opt('tools', 'cpu-prof').split(',');
const CPU_PROF = TOOLS.includes('cpu-prof');
const PERF = TOOLS.includes('perf');
const STRACE = TOOLS.includes('strace');
const OUT = path.resolve(opt('out', path.join(ROOT, 'bench', '.work', 'pooler-profile.md')));

const progress = (msg: string) => process.stderr.write(`[${new Date().toISOString().slice(11, 19)}] ${msg}\n`);

let pg: RunningPostgres | null = null;
let pooler: RunningPeer | null = null;
let pgbench: RunningPgbench | null = null;
let workDir = '';

async function cleanup(): Promise<void> {
  pgbench?.kill();
  if (pooler) await pooler.stop().catch((err: Error) => progress(`stopping tidepool: ${err.message}`));
  pooler = null;
  if (pg) await pg.stop().catch((err: Error) => progress(`stopping PostgreSQL: ${err.message}`));
  pg = null;
  if (workDir) rmSync(workDir, { recursive: true, force: true });
}
const stop = stopOnExit(
  cleanup,
  () => [pgbench?.pid, pooler?.pid, pg?.pid],
  () => workDir,
  progress,
);

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** Self time per function and per file, in percent of all samples (idle excluded from the total). */
function summarize(profile: CpuProfile): string[] {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const selfUs = new Map<number, number>();
  for (let i = 0; i < profile.samples.length; i++) {
    const id = profile.samples[i]!;
    selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i + 1] ?? profile.timeDeltas[i] ?? 0));
  }
  const fn = new Map<string, number>();
  const file = new Map<string, number>();
  let total = 0;
  let idle = 0;
  for (const [id, us] of selfUs) {
    const n = byId.get(id)!;
    const name = n.callFrame.functionName || '(anonymous)';
    if (name === '(idle)') {
      idle += us;
      continue;
    }
    total += us;
    const url = n.callFrame.url.replace(/^file:\/\//, '').replace(ROOT + '/', '');
    const where = url ? `${url}:${n.callFrame.lineNumber + 1}` : '';
    fn.set(`${name} ${where}`.trim(), (fn.get(`${name} ${where}`.trim()) ?? 0) + us);
    const f = url
      ? url.startsWith('node:')
        ? 'node internals'
        : url.includes('/dist/src/')
          ? url.slice(url.indexOf('/dist/src/') + 6)
          : url
      : `(${name.replace(/[()]/g, '')})`;
    file.set(f, (file.get(f) ?? 0) + us);
  }
  const pct = (us: number) => `${((us / total) * 100).toFixed(1)}%`;
  const rows = (m: Map<string, number>, n: number) =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([k, us]) => `| ${k} | ${pct(us)} | ${(us / 1000).toFixed(0)} |`);
  return [
    `Busy ${(total / 1e6).toFixed(2)} s of ${((total + idle) / 1e6).toFixed(2)} s sampled (JavaScript thread).`,
    '',
    '| file (self time) | share | ms |',
    '|---|---:|---:|',
    ...rows(file, 15),
    '',
    '| function (self time) | share | ms |',
    '|---|---:|---:|',
    ...rows(fn, TOP),
    '',
  ];
}

function perfSummary(data: string): string[] {
  const report = (sort: string, limit: string) => {
    const r = spawnSync(
      'perf',
      ['report', '-i', data, '--stdio', '--no-children', '--sort', sort, '--percent-limit', limit],
      { encoding: 'utf8', maxBuffer: 64 << 20 },
    );
    return (r.stdout || r.stderr)
      .split('\n')
      .filter((l) => /^\s+\d/.test(l))
      .slice(0, TOP);
  };
  return ['```', ...report('dso', '0.5'), '', ...report('dso,sym', opt('perf-limit', '0.7')), '```', ''];
}

async function profileOne(protocol: Scenario['protocol'], ticks: number): Promise<string[]> {
  const dir = path.join(workDir, `tidepool-${protocol}`);
  const profDir = path.join(dir, 'prof');
  mkdirSync(profDir, { recursive: true });
  const env = { ...process.env };
  if (RELAY === 'js') env.TIDEPOOL_NATIVE_RELAY = '0';
  else delete env.TIDEPOOL_NATIVE_RELAY;
  let generalToml = '';
  if (TLS) {
    const key = path.join(dir, 'tls.key');
    const cert = path.join(dir, 'tls.crt');
    const r = spawnSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-days',
        '2',
        '-subj',
        '/CN=127.0.0.1',
        '-keyout',
        key,
        '-out',
        cert,
      ],
      { encoding: 'utf8' },
    );
    if (r.status !== 0) throw new Error(`openssl failed: ${r.stderr}`);
    generalToml = `client_tls_sslmode = "require"\nclient_tls_key_file = "${key}"\nclient_tls_cert_file = "${cert}"`;
    process.env.PGSSLMODE = 'require';
  }
  pooler =
    PEER === 'PgBouncer'
      ? await startPgBouncer({
          dir,
          serverHost: pg!.host,
          serverPort: pg!.port,
          poolSize: 20,
          sessionPoolSize: CLIENTS,
          progress,
          secret: benchSecret((q) => pg!.sql(q)),
        })
      : await startTidepool({
          dir,
          root: ROOT,
          serverHost: pg!.host,
          serverPort: pg!.port,
          poolSize: 20,
          env,
          generalToml,
          secret: benchSecret((q) => pg!.sql(q)),
          nodeArgs: CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`, '--cpu-prof-interval=200'] : [],
        });
  const target = {
    host: pooler.host,
    port: pooler.port,
    user: BENCH_USER,
    password: BENCH_PASSWORD,
    database: BENCH_DB,
  };
  const scenario: Scenario = { key: protocol, protocol, clients: CLIENTS, reconnect: RECONNECT };
  pgbench = runPgbench(scenario, target, 2, dir, 'warmup');
  await pgbench.done;
  const tools: { name: string; child: ReturnType<typeof spawn>; out: string }[] = [];
  if (PERF) {
    const out = path.join(dir, 'perf.data');
    tools.push({
      name: 'perf',
      out,
      child: spawn('perf', ['record', '-F', '999', '-o', out, '-p', String(pooler.pid)], { stdio: 'ignore' }),
    });
  }
  if (STRACE) {
    const out = path.join(dir, 'strace.txt');
    tools.push({
      name: 'strace',
      out,
      child: spawn('strace', ['-c', '-f', '-o', out, '-p', String(pooler.pid)], { stdio: 'ignore' }),
    });
  }
  const cpu0 = cpuSeconds(pooler.pid, ticks);
  const t0 = performance.now();
  pgbench = runPgbench(scenario, target, DURATION, dir, 'run');
  const r = await pgbench.done;
  pgbench = null;
  const cpu = cpuSeconds(pooler.pid, ticks) - cpu0;
  const wall = (performance.now() - t0) / 1000;
  for (const t of tools) {
    await new Promise<void>((resolve) => {
      t.child.once('exit', () => resolve());
      t.child.kill('SIGINT');
    });
  }
  await pooler.stop();
  pooler = null;
  const prof = readdirSync(profDir).find((f) => f.endsWith('.cpuprofile'));
  const out: string[] = [
    `## ${protocol}${RECONNECT ? ' -C' : ''}, ${CLIENTS} clients, ${PEER === 'PgBouncer' ? 'PgBouncer' : `${RELAY} relay`}${TLS ? ', clients over TLS' : ''}`,
    '',
  ];
  out.push(
    `pgbench: ${r.ok ? `${Math.round(r.tps)} tps, p50 ${r.p50Ms.toFixed(3)} ms, p99 ${r.p99Ms.toFixed(3)} ms` : `FAILED: ${r.error}`}; pooler CPU ${((cpu / wall) * 100).toFixed(0)}% of a core, ${r.tps > 0 ? ((cpu * 1e6) / (r.tps * wall)).toFixed(1) : '-'} µs per transaction (with the profiler's own cost).`,
    '',
  );
  if (!CPU_PROF) out.push('');
  else if (prof) out.push(...summarize(JSON.parse(readFileSync(path.join(profDir, prof), 'utf8')) as CpuProfile));
  else out.push('(no .cpuprofile written)', '');
  for (const t of tools) {
    if (t.name === 'perf') out.push('perf (self, by shared object and symbol):', '', ...perfSummary(t.out));
    else {
      const text = readFileSync(t.out, 'utf8');
      out.push(
        `strace -c over the run (${r.transactions} transactions):`,
        '',
        '```',
        ...text.trim().split('\n').slice(0, 14),
        '```',
        '',
      );
    }
  }
  progress(`${protocol}: ${Math.round(r.tps)} tps, pooler ${((cpu / wall) * 100).toFixed(0)}%`);
  return out;
}

async function main(): Promise<void> {
  if (PEER === 'PgBouncer' && (TLS || CPU_PROF))
    throw new Error('--peer pgbouncer takes --tools perf, strace or none, without --tls');
  workDir = mkdtempSync(path.join(os.tmpdir(), 'tidepool-bench-profile-'));
  const ticks = clockTicks();
  pg = await startBenchPostgres(workDir, { maxConnections: 100, scale: 10 });
  const head = spawnSync('git', ['-C', ROOT, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).stdout.trim();
  const out = [
    `# tidepool profile at ${head} (${new Date().toISOString().slice(0, 16)}Z)`,
    '',
    `pgbench -S${RECONNECT ? ' -C' : ''} -c ${CLIENTS} -T ${DURATION} through ${PEER} (transaction mode, pool size 20, ${BENCH_AUTH}) with ${TOOLS.join(', ') || 'no profiler'}; load average ${os
      .loadavg()
      .map((x) => x.toFixed(2))
      .join(' ')}.`,
    '',
  ];
  for (const protocol of PROTOCOLS) out.push(...(await profileOne(protocol, ticks)));
  mkdirSync(path.dirname(OUT), { recursive: true });
  writeFileSync(OUT, out.join('\n'));
  progress(`wrote ${OUT}`);
}

runBench(main, stop, progress);
