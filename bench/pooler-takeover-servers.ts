// Server connections across a takeover (issue 38): pgbench -c N (extended protocol, pool_size N) against tidepool, a
// `--takeover` five seconds in, and how many backend connections PostgreSQL saw the pooler open after it (log_connections
// lines of the pool's user): with the servers moved (the default) and with TIDEPOOL_TAKEOVER_SERVERS=0 (the new process
// opens its own pool), alternated in one run. Also the hand-over time (takeover start to the old process's exit),
// failed transactions and pgbench's per-second tps around it. Writes bench/results/pooler-takeover-servers.md.
//
//   node dist/bench/pooler-takeover-servers.js [--clients 40] [--runs 2] [--seconds 12]
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, startPostgres, type RunningPostgres } from '../src/launcher/embedded-postgres.js';
import { runBench, stopOnExit } from './bench-exit.js';
import { PGBENCH } from './pooler-pgbench.js';
import { benchOpt } from './raw-pg-client.js';
import { writeResults } from './results-file.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const BIN = path.join(ROOT, 'bin', 'tidepool.js');
const CLIENTS = Number(benchOpt('clients', '40'));
const RUNS = Number(benchOpt('runs', '2'));
const SECONDS = Number(benchOpt('seconds', '12'));
const TAKEOVER_AT_MS = 5000;

interface Proc {
  child: ChildProcess;
  out(): string;
  exited: Promise<unknown>;
}

interface Row {
  variant: 'moved' | 'reconnect';
  opened: number;
  moved: string;
  handoverMs: number;
  failed: string;
  tps: number;
  /** pgbench -P 1 tps per second. */
  perSecond: number[];
}

let dir = '';
let pg: RunningPostgres | null = null;
const procs: ChildProcess[] = [];

function run(cmd: string, args: string[], env: NodeJS.ProcessEnv = process.env): Proc {
  const child = spawn(cmd, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  procs.push(child);
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  return { child, out: () => out, exited: new Promise((r) => child.once('exit', r)) };
}

async function until(what: string, cond: () => boolean, ms = 30_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? (s[(s.length - 1) >> 1]! + s[s.length >> 1]!) / 2 : NaN;
};

async function once(db: RunningPostgres, logFile: string, variant: Row['variant'], script: string): Promise<Row> {
  const port = await freePort();
  const file = path.join(dir, `${variant}-${port}.toml`);
  writeFileSync(
    file,
    `[general]\nhost = "127.0.0.1"\nport = ${port}\nadmin_username = "admin"\nadmin_password = "bench"\n` +
      `log_level = "info"\nshutdown_timeout = "20s"\n\n[pools.app]\nserver_host = "127.0.0.1"\n` +
      `server_port = ${db.port}\n\n[[pools.app.users]]\nusername = "bench"\npassword = "bench"\npool_size = ${CLIENTS}\n`,
  );
  const connections = () => (readFileSync(logFile, 'utf8').match(/connection authorized: user=bench\b/g) ?? []).length;
  const first = run(process.execPath, [BIN, 'pooler', '--config', file]);
  await until('the pooler to listen', () => /takeover socket|pooler listening/.test(first.out()));
  const bench = run(
    PGBENCH,
    [
      '-n',
      '-f',
      script,
      '-M',
      'extended',
      '-c',
      String(CLIENTS),
      '-j',
      '2',
      '-T',
      String(SECONDS),
      '-P',
      '1',
      '-h',
      '127.0.0.1',
      '-p',
      String(port),
      '-U',
      'bench',
      'app',
    ],
    { ...process.env, PGPASSWORD: 'bench' },
  );
  await new Promise((r) => setTimeout(r, TAKEOVER_AT_MS));
  const before = connections();
  const t0 = Date.now();
  const env = { ...process.env, TIDEPOOL_TAKEOVER_SERVERS: variant === 'moved' ? '1' : '0' };
  const second = run(process.execPath, [BIN, 'pooler', '--config', file, '--takeover'], env);
  await until('the new process to serve', () => /serving on the inherited sockets/.test(second.out()));
  await first.exited;
  const handoverMs = Date.now() - t0;
  await bench.exited;
  const opened = connections() - before;
  const out = bench.out();
  second.child.kill('SIGTERM');
  await second.exited;
  return {
    variant,
    opened,
    moved: /servers_took=(\d+)/.exec(second.out())?.[1] ?? '0',
    handoverMs,
    failed: /number of failed transactions: (\d+)/.exec(out)?.[1] ?? '?',
    tps: Number(/tps = ([\d.]+)/.exec(out)?.[1] ?? NaN),
    perSecond: [...out.matchAll(/progress: [\d.]+ s, ([\d.]+) tps/g)].map((m) => Math.round(Number(m[1]))),
  };
}

async function main(): Promise<void> {
  dir = mkdtempSync(path.join(os.tmpdir(), 'tp-bench-takeover-'));
  const logFile = path.join(dir, 'postgres.log');
  pg = await startPostgres({
    dataDir: path.join(dir, 'data'),
    logFile,
    settings: { max_connections: CLIENTS * 3 + 20, log_connections: 'on' },
  });
  pg.sql(`SET password_encryption = 'md5'; CREATE ROLE bench LOGIN PASSWORD 'bench' SUPERUSER;`);
  pg.sql('CREATE DATABASE app OWNER bench');
  const script = path.join(dir, 'q.sql');
  writeFileSync(script, '\\set x random(1, 1000)\nselect :x as x;\nselect now();\n');
  const rows: Row[] = [];
  const loads: string[] = [];
  for (let i = 0; i < RUNS; i++) {
    for (const variant of ['reconnect', 'moved'] as const) {
      const row = await once(pg, logFile, variant, script);
      rows.push(row);
      loads.push(os.loadavg()[0]!.toFixed(1));
      console.log(JSON.stringify(row));
    }
  }
  const lines = [
    '# Server connections across a takeover',
    '',
    `pgbench -c ${CLIENTS} -j 2 -M extended -T ${SECONDS} -P 1 (two selects per transaction) through tidepool with`,
    `pool_size ${CLIENTS}; \`tidepool pooler --takeover\` ${TAKEOVER_AT_MS / 1000} s in. "opened": backend connections PostgreSQL`,
    'logged for the pool user after the takeover began (log_connections); "moved": servers the new process took;',
    '"hand-over": takeover start to the old process exit. `reconnect` is the new process with',
    '`TIDEPOOL_TAKEOVER_SERVERS=0` (it opens its own pool, as before servers moved), alternated with `moved` in one run.',
    `Run ${new Date().toISOString().slice(0, 16)}Z, ${os.cpus().length} cores, 1-minute load average at each row's end:`,
    `${loads.join(', ')} (a shared, busy machine: tps here is noise-dominated, the connection counts are not).`,
    '',
    '| variant | opened | moved | hand-over ms | failed | tps | tps per second (pgbench -P 1) |',
    '|---|---:|---:|---:|---:|---:|---|',
    ...rows.map(
      (r) =>
        `| ${r.variant} | ${r.opened} | ${r.moved} | ${r.handoverMs} | ${r.failed} | ${Math.round(r.tps)} | ${r.perSecond.join(' ')} |`,
    ),
    '',
    `Medians: opened ${median(rows.filter((r) => r.variant === 'reconnect').map((r) => r.opened))} (reconnect) vs ` +
      `${median(rows.filter((r) => r.variant === 'moved').map((r) => r.opened))} (moved); tps ` +
      `${Math.round(median(rows.filter((r) => r.variant === 'reconnect').map((r) => r.tps)))} vs ` +
      `${Math.round(median(rows.filter((r) => r.variant === 'moved').map((r) => r.tps)))}.`,
    '',
    'Regenerate: `npx tsc -p tsconfig.json && node dist/bench/pooler-takeover-servers.js [--clients 40] [--runs 2]`.',
  ];
  writeResults(path.join(ROOT, 'bench', 'results', 'pooler-takeover-servers.md'), lines.join('\n'));
  console.log(lines.join('\n'));
}

const stop = stopOnExit(
  async () => {
    for (const c of procs) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    await pg?.stop().catch(() => undefined);
    if (dir) rmSync(dir, { recursive: true, force: true });
  },
  () => [...procs.map((c) => c.pid), pg?.pid],
  () => dir,
  (m) => console.error(m),
);
runBench(main, stop, (m) => console.error(m));
