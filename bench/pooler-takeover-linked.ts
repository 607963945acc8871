// Clients linked to their server across a takeover (issue 38): session-mode clients holding a temporary table and an
// advisory lock, each in a closed loop of small queries, and transaction-mode clients pinned by LISTEN, fed a steady
// stream of notifications sent straight to PostgreSQL; `tidepool pooler --takeover` a few seconds in. With the pairs
// moved (the default) and with TIDEPOOL_TAKEOVER_PAIRS=0 in the new process (such clients finish on the old process,
// which ends them at shutdown_timeout: the behaviour before pairs moved), alternated in one run. Measures the hand-over
// (takeover start to the old process's exit), client errors, session clients that kept their backend (same
// pg_backend_pid at the end), notifications sent and delivered (in order, each once), and query latency around it.
// Writes bench/results/pooler-takeover-linked.md.
//
//   node dist/bench/pooler-takeover-linked.js [--session 20] [--listeners 20] [--runs 2] [--shutdown-timeout 5]
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { freePort, startPostgres, type RunningPostgres } from '../src/launcher/embedded-postgres.js';
import { runBench, stopOnExit } from './bench-exit.js';
import { benchOpt } from './raw-pg-client.js';
import { writeResults } from './results-file.js';

const USAGE = `Usage: node dist/bench/pooler-takeover-linked.js [options]
  --session N            session-mode clients in a closed loop (default 20)
  --listeners N          LISTEN clients in transaction mode (default 20)
  --runs N               runs of each variant, alternated (default 2)
  --shutdown-timeout S   the pooler's shutdown_timeout in seconds (default 5)
  --help                 print this and exit
`;
if (process.argv.includes('--help') || process.argv.includes('-h')) {
  process.stdout.write(USAGE);
  process.exit(0);
}
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const BIN = path.join(ROOT, 'bin', 'tidepool.js');
const SESSION = Number(benchOpt('session', '20'));
const LISTENERS = Number(benchOpt('listeners', '20'));
const RUNS = Number(benchOpt('runs', '2'));
const SHUTDOWN_S = Number(benchOpt('shutdown-timeout', '5'));
const TAKEOVER_AT_MS = 3000;
/** After the takeover: long enough for the old process to reach shutdown_timeout and end what it kept. */
const AFTER_MS = SHUTDOWN_S * 1000 + 2000;
const NOTIFY_EVERY_MS = 5;

type Variant = 'pairs' | 'stay';

interface Row {
  variant: Variant;
  handoverMs: number;
  errors: number;
  kept: number;
  sent: number;
  delivered: number;
  outOfOrder: number;
  queries: number;
  p99Ms: number;
  maxMs: number;
  load: string;
}

let dir = '';
let db: RunningPostgres | null = null;
const procs: ChildProcess[] = [];

function run(
  args: string[],
  env: NodeJS.ProcessEnv = process.env,
): { child: ChildProcess; out(): string; exited: Promise<unknown> } {
  const child = spawn(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
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
    await new Promise((r) => setTimeout(r, 20));
  }
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? (s[(s.length - 1) >> 1]! + s[s.length >> 1]!) / 2 : NaN;
};

function quantile(xs: number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor(q * s.length))]! : NaN;
}

const client = (port: number, database: string) =>
  new pg.Client({ host: '127.0.0.1', port, user: 'bench', password: 'bench', database });

async function once(pgdb: RunningPostgres, variant: Variant): Promise<Row> {
  const port = await freePort();
  const file = path.join(dir, `${variant}-${port}.toml`);
  const pool = (name: string, mode: string, size: number) =>
    `[pools.${name}]\nserver_host = "127.0.0.1"\nserver_port = ${pgdb.port}\nserver_database = "app"\npool_mode = "${mode}"\n\n` +
    `[[pools.${name}.users]]\nusername = "bench"\npassword = "bench"\npool_size = ${size}\n\n`;
  writeFileSync(
    file,
    `[general]\nhost = "127.0.0.1"\nport = ${port}\nadmin_username = "admin"\nadmin_password = "bench"\n` +
      `log_level = "info"\nshutdown_timeout = "${SHUTDOWN_S}s"\n\n` +
      pool('app', 'transaction', 4) +
      pool('appsession', 'session', SESSION + 2),
  );
  const first = run([BIN, 'pooler', '--config', file]);
  await until('the pooler to listen', () => /takeover socket listening/.test(first.out()));

  let errors = 0;
  let running = true;
  const latencies: number[] = [];
  let queries = 0;
  // Session-mode clients: a temp table and an advisory lock each, then a closed loop of queries on the table.
  const sessions = await Promise.all(
    Array.from({ length: SESSION }, async (_, i) => {
      const c = client(port, 'appsession');
      c.on('error', () => undefined);
      await c.connect();
      await c.query('create temp table t (v int); insert into t values (1)');
      await c.query(`select pg_advisory_lock(${1000 + i})`);
      const pid = (await c.query('select pg_backend_pid() as pid')).rows[0].pid as number;
      return { c, pid, ok: true };
    }),
  );
  const loops = sessions.map(async (s) => {
    while (running && s.ok) {
      const t0 = performance.now();
      try {
        await s.c.query('select v from t');
        latencies.push(performance.now() - t0);
        queries++;
      } catch {
        errors++;
        s.ok = false;
      }
      await new Promise((r) => setTimeout(r, 10));
    }
  });
  // LISTEN clients (pinned in transaction mode), each checking it hears every notification once, in order.
  let outOfOrder = 0;
  const heard: number[] = [];
  const listeners = await Promise.all(
    Array.from({ length: LISTENERS }, async (_, i) => {
      const c = client(port, 'app');
      let failed = false;
      c.on('error', () => {
        if (!failed) errors++;
        failed = true;
      });
      let last = 0;
      heard[i] = 0;
      c.on('notification', (n) => {
        const k = Number(n.payload);
        if (k !== last + 1) outOfOrder++;
        last = k;
        heard[i]!++;
      });
      await c.connect();
      await c.query('LISTEN stream');
      return c;
    }),
  );
  const notifier = client(pgdb.port, 'app');
  await notifier.connect();
  let sent = 0;
  const stream = (async () => {
    while (running) {
      await notifier.query(`NOTIFY stream, '${++sent}'`);
      await new Promise((r) => setTimeout(r, NOTIFY_EVERY_MS));
    }
  })();

  await new Promise((r) => setTimeout(r, TAKEOVER_AT_MS));
  const t0 = Date.now();
  const env = { ...process.env, TIDEPOOL_TAKEOVER_PAIRS: variant === 'pairs' ? '1' : '0' };
  const second = run([BIN, 'pooler', '--config', file, '--takeover'], env);
  await first.exited;
  const handoverMs = Date.now() - t0;
  const until0 = t0 + AFTER_MS;
  while (Date.now() < until0) await new Promise((r) => setTimeout(r, 100));
  running = false;
  await Promise.all(loops);
  await stream;
  // What is on its way arrives: wait until every listener heard the last one (bounded: one ended early never does).
  const settle = Date.now() + 5000;
  while (Date.now() < settle && heard.some((n) => n < sent)) await new Promise((r) => setTimeout(r, 20));
  let kept = 0;
  for (const s of sessions) {
    if (!s.ok) continue;
    try {
      if ((await s.c.query('select pg_backend_pid() as pid')).rows[0].pid === s.pid) kept++;
    } catch {
      errors++;
    }
  }
  for (const c of [...sessions.map((s) => s.c), ...listeners, notifier]) await c.end().catch(() => undefined);
  second.child.kill('SIGTERM');
  await second.exited;
  return {
    variant,
    handoverMs,
    errors,
    kept,
    sent: sent * LISTENERS,
    delivered: heard.reduce((a, b) => a + b, 0),
    outOfOrder,
    queries,
    p99Ms: quantile(latencies, 0.99),
    maxMs: Math.max(...latencies),
    load: os.loadavg()[0]!.toFixed(1),
  };
}

async function main(): Promise<void> {
  dir = mkdtempSync(path.join(os.tmpdir(), 'tp-bench-takeover-linked-'));
  db = await startPostgres({
    dataDir: path.join(dir, 'data'),
    settings: { max_connections: (SESSION + LISTENERS) * 2 + 40 },
  });
  db.sql(`SET password_encryption = 'md5'; CREATE ROLE bench LOGIN PASSWORD 'bench' SUPERUSER;`);
  db.sql('CREATE DATABASE app OWNER bench');
  const rows: Row[] = [];
  for (let i = 0; i < RUNS; i++) {
    for (const variant of ['stay', 'pairs'] as const) {
      const row = await once(db, variant);
      rows.push(row);
      console.log(JSON.stringify(row));
    }
  }
  const med = (v: Variant, f: (r: Row) => number) => median(rows.filter((r) => r.variant === v).map(f));
  const lines = [
    '# Linked clients (session mode, LISTEN) across a takeover',
    '',
    `${SESSION} session-mode clients (a temp table and an advisory lock each, then \`select v from t\` every 10 ms) and`,
    `${LISTENERS} transaction-mode clients pinned by \`LISTEN stream\`, fed \`NOTIFY stream\` every ${NOTIFY_EVERY_MS} ms`,
    `straight to PostgreSQL; \`tidepool pooler --takeover\` ${TAKEOVER_AT_MS / 1000} s in, shutdown_timeout ${SHUTDOWN_S} s,`,
    `the run ending ${AFTER_MS / 1000} s after the takeover. \`pairs\`: the default (a linked client moves with its server);`,
    '`stay`: the new process with `TIDEPOOL_TAKEOVER_PAIRS=0` (linked clients finish on the old process, which ends',
    'them at shutdown_timeout: the behaviour before pairs moved), alternated with `pairs` in one run. "hand-over":',
    'takeover start to the old process exit; "errors": clients that got an error (57P01, a closed connection);',
    '"kept": session clients that ended on the backend they started on; notifications: sent x listeners, delivered,',
    'out of order;',
    "latency of the session clients' queries over the whole run (ms).",
    `Run ${new Date().toISOString().slice(0, 16)}Z, ${os.cpus().length} cores, 1-minute load average at each row's end`,
    '(a shared, busy machine: latencies are noise-dominated, the counts are not).',
    '',
    '| variant | hand-over ms | errors | kept | notifications sent | delivered | out of order | queries | p99 ms | max ms | load |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...rows.map(
      (r) =>
        `| ${r.variant} | ${r.handoverMs} | ${r.errors} | ${r.kept}/${SESSION} | ${r.sent} | ${r.delivered} | ${r.outOfOrder} | ${r.queries} | ${r.p99Ms.toFixed(1)} | ${r.maxMs.toFixed(1)} | ${r.load} |`,
    ),
    '',
    `Medians: hand-over ${med('stay', (r) => r.handoverMs)} ms (stay) vs ${med('pairs', (r) => r.handoverMs)} ms (pairs); ` +
      `errors ${med('stay', (r) => r.errors)} vs ${med('pairs', (r) => r.errors)}; notifications lost ` +
      `${med('stay', (r) => r.sent - r.delivered)} vs ${med('pairs', (r) => r.sent - r.delivered)}.`,
    '',
    'Regenerate: `npx tsc -p tsconfig.json && npm run bench:takeover-linked -- [--session 20] [--listeners 20]`.',
  ];
  writeResults(path.join(ROOT, 'bench', 'results', 'pooler-takeover-linked.md'), lines.join('\n'));
  console.log(lines.join('\n'));
}

const stop = stopOnExit(
  async () => {
    for (const c of procs) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    await db?.stop().catch(() => undefined);
    if (dir) rmSync(dir, { recursive: true, force: true });
  },
  () => [...procs.map((c) => c.pid), db?.pid],
  () => dir,
  (m) => console.error(m),
);
runBench(main, stop, (m) => console.error(m));
