// A pooler restart under load (issue 38): tps, p99 latency and errors in 1-second buckets across (a) a tidepool
// takeover (SIGUSR2: the new process takes the sockets and the idle clients), (b) a plain restart of tidepool (SIGTERM:
// drain, exit, start again), (c) a drain-and-restart of PgBouncer 1.25 (SIGINT: PAUSE + SHUTDOWN, then start again;
// its SIGTERM waits for every client to leave, which a steady load never does), and (d) PgBouncer 1.25's deprecated
// online restart (`pgbouncer -R`, which takes the sockets and clients over the unix socket directory).
// The load: N clients in a closed loop of pgbench's select-only query, simple protocol or a prepared statement
// (Parse once per connection, then Bind/Execute/Sync), written as a small client that reconnects at once after an
// error and counts it in its second (pgbench would abort the client instead).
// Usage: npm run build && npm run bench:takeover -- [--clients 50] [--seconds 20] [--event-at 8]
//   [--modes simple,prepared] [--targets ...] [--out FILE] [--help]
import { openSync, readFileSync, mkdtempSync, rmSync } from 'node:fs';
import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { stopOnExit } from './bench-exit.js';
import {
  BENCH_DB,
  BENCH_PASSWORD,
  BENCH_USER,
  startBenchPostgres,
  startPgBouncer,
  ensurePeer,
  startTidepool,
  type RunningPeer,
} from './pooler-peers.js';
import { benchOpt, rawLogin, type RawClient } from './raw-pg-client.js';
import { writeResults } from './results-file.js';

const TARGETS_ALL = ['tidepool takeover', 'tidepool restart', 'PgBouncer 1.25 restart', 'PgBouncer 1.25 -R'];
const USAGE = `Usage: node dist/bench/pooler-takeover.js [options]   (npm run bench:takeover -- [options])
  --clients N      clients in a closed loop (default 50)
  --seconds N      length of each run (default 20)
  --event-at N     second at which the pooler is restarted (default 8)
  --modes LIST     simple, prepared (default both)
  --targets LIST   comma-separated, of: ${TARGETS_ALL.join(', ')} (default all)
  --out FILE       write the table there instead of bench/results/pooler-takeover.md
  --help           print this and exit
`;
if (process.argv.includes('--help') || process.argv.includes('-h')) {
  process.stdout.write(USAGE);
  process.exit(0);
}
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const CLIENTS = Number(benchOpt('clients', '50'));
const SECONDS = Number(benchOpt('seconds', '20'));
const EVENT_AT = Number(benchOpt('event-at', '8'));
const MODES = benchOpt('modes', 'simple,prepared').split(',') as ('simple' | 'prepared')[];
const TARGETS = benchOpt('targets', TARGETS_ALL.join(',')).split(',');
const OUT = benchOpt('out', path.join(ROOT, 'bench', 'results', 'pooler-takeover.md'));
const POOL_SIZE = 20;
const SCALE = 10;
/** A query with no answer for this long counts as an error (the client reconnects). */
const QUERY_TIMEOUT_MS = 5_000;
const say = (msg: string) => process.stderr.write(`[takeover] ${msg}\n`);
for (const t of TARGETS)
  if (!TARGETS_ALL.includes(t)) throw new Error(`unknown target ${t}: ${TARGETS_ALL.join(', ')}`);

const SQL = 'SELECT abalance FROM pgbench_accounts WHERE aid = $1';

function msg(type: string, body: Buffer): Buffer {
  const head = Buffer.alloc(5);
  head.write(type, 0, 'latin1');
  head.writeInt32BE(4 + body.length, 1);
  return Buffer.concat([head, body]);
}
const cstr = (s: string) => Buffer.from(`${s}\0`, 'utf8');
const SYNC = msg('S', Buffer.alloc(0));
/** Parse of the prepared statement "sel" (one parameter, type left to the server), then Sync. */
const PARSE = Buffer.concat([msg('P', Buffer.concat([cstr('sel'), cstr(SQL), Buffer.from([0, 0])])), SYNC]);
/** Bind "sel" with aid as text, Execute, Sync. */
function bindExecute(aid: number): Buffer {
  const v = Buffer.from(String(aid));
  const n = Buffer.alloc(4);
  n.writeInt32BE(v.length);
  const bind = Buffer.concat([
    cstr(''),
    cstr('sel'),
    Buffer.from([0, 0, 0, 1]), // no format codes; one parameter
    n,
    v,
    Buffer.from([0, 0]), // result formats: none (text)
  ]);
  return Buffer.concat([msg('B', bind), msg('E', Buffer.concat([cstr(''), Buffer.alloc(4)])), SYNC]);
}

interface Bucket {
  done: number;
  errors: number;
  latencies: number[];
}

/** The load: CLIENTS loops that reconnect after any error, each counted in the second it happened. */
class Load {
  readonly buckets: Bucket[] = [];
  private running = true;
  private readonly loops: Promise<void>[] = [];
  private readonly t0 = performance.now();
  readonly errorKinds = new Map<string, number>();

  constructor(
    private readonly port: number,
    private readonly mode: 'simple' | 'prepared',
  ) {
    for (let i = 0; i < CLIENTS; i++) this.loops.push(this.loop());
  }

  second(): number {
    return Math.floor((performance.now() - this.t0) / 1000);
  }

  private bucket(): Bucket {
    const s = this.second();
    while (this.buckets.length <= s) this.buckets.push({ done: 0, errors: 0, latencies: [] });
    return this.buckets[s]!;
  }

  private error(e: unknown): void {
    this.bucket().errors++;
    const key = (e as Error).message.slice(0, 60);
    this.errorKinds.set(key, (this.errorKinds.get(key) ?? 0) + 1);
  }

  private async loop(): Promise<void> {
    while (this.running) {
      let c: RawClient | null = null;
      try {
        c = await withTimeout(rawLogin(this.port, BENCH_USER, BENCH_PASSWORD, BENCH_DB));
        if (this.mode === 'prepared') await withTimeout(c.exec(PARSE));
        while (this.running) {
          const aid = 1 + Math.floor(Math.random() * SCALE * 100_000);
          const ms = await withTimeout(
            this.mode === 'prepared' ? c.exec(bindExecute(aid)) : c.query(SQL.replace('$1', String(aid))),
          );
          const b = this.bucket();
          b.done++;
          b.latencies.push(ms);
        }
      } catch (e) {
        if (this.running) this.error(e);
        await new Promise((r) => setTimeout(r, 10));
      } finally {
        c?.end();
      }
    }
  }

  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.loops);
  }
}

function withTimeout<T>(p: Promise<T>): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`no answer in ${QUERY_TIMEOUT_MS} ms`)), QUERY_TIMEOUT_MS);
    p.then(
      (v) => {
        clearTimeout(t);
        resolve(v);
      },
      (e: unknown) => {
        clearTimeout(t);
        reject(e as Error);
      },
    );
  });
}

function p99(xs: number[]): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil(s.length * 0.99) - 1)]!;
}

function waitExit(child: ChildProcess | number, ms = 60_000): Promise<void> {
  if (typeof child === 'number') {
    return (async () => {
      const deadline = Date.now() + ms;
      while (alive(child) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    })();
  }
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((r) => child.once('exit', () => r()));
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}

async function waitPort(port: number, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = net.connect(port, '127.0.0.1');
      s.once('connect', () => {
        s.destroy();
        resolve(true);
      });
      s.once('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`nothing listens on ${port}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** Pids to SIGKILL if the bench dies (the current pooler of each target, PostgreSQL). */
const livePids = new Set<number>();

/** A running pooler under test and how to restart it; `restart` resolves once the event is over. */
interface Target {
  port: number;
  restart(): Promise<string>;
  stop(): Promise<void>;
}

async function tidepoolTarget(name: string, dir: string, pgHost: string, pgPort: number): Promise<Target> {
  const peer = await startTidepool({ dir, root: ROOT, serverHost: pgHost, serverPort: pgPort, poolSize: POOL_SIZE });
  let pid = peer.pid;
  livePids.add(pid);
  let restarted: ChildProcess | null = null;
  const takeover = name === 'tidepool takeover';
  return {
    port: peer.port,
    async restart() {
      const t = performance.now();
      if (takeover) {
        const before = readFileSync(peer.logFile, 'utf8').length;
        process.kill(pid, 'SIGUSR2');
        let successor = 0;
        while (!successor) {
          const m = /SIGUSR2: takeover process started.*successor[=":]+(\d+)/.exec(
            readFileSync(peer.logFile, 'utf8').slice(before),
          );
          if (m) successor = Number(m[1]);
          else await new Promise((r) => setTimeout(r, 10));
          if (performance.now() - t > 30_000) throw new Error('no successor');
        }
        livePids.add(successor);
        await waitExit(peer.child);
        livePids.delete(pid);
        pid = successor;
        return `SIGUSR2; old process exited after ${Math.round(performance.now() - t)} ms`;
      }
      process.kill(pid, 'SIGTERM');
      await waitExit(restarted ?? peer.child);
      livePids.delete(pid);
      const down = performance.now();
      const fd = openSync(peer.logFile, 'a');
      const child = spawn(
        process.execPath,
        [path.join(ROOT, 'bin', 'tidepool.js'), 'pooler', '--config', peer.configFile],
        { cwd: ROOT, stdio: ['ignore', fd, fd] },
      );
      restarted = child;
      pid = child.pid!;
      livePids.add(pid);
      await waitPort(peer.port);
      return `SIGTERM; drained and exited after ${Math.round(down - t)} ms, listening again ${Math.round(performance.now() - down)} ms later`;
    },
    async stop() {
      process.kill(pid, 'SIGINT');
      await waitExit(pid, 10_000);
      if (alive(pid)) process.kill(pid, 'SIGKILL');
      livePids.delete(pid);
    },
  };
}

async function pgbouncerTarget(name: string, dir: string, pgHost: string, pgPort: number): Promise<Target> {
  const bin = ensurePeer('PgBouncer 1.25', say);
  const online = name.endsWith('-R');
  const peer: RunningPeer = await startPgBouncer({
    dir,
    bin,
    name: 'PgBouncer 1.25',
    serverHost: pgHost,
    serverPort: pgPort,
    poolSize: POOL_SIZE,
    sessionPoolSize: CLIENTS,
    progress: say,
    // The load's client answers md5 (BENCH_AUTH's default): the plaintext password.
    secret: BENCH_PASSWORD,
    // -R hands the sockets over the unix socket directory.
    extraIni: ['max_prepared_statements = 200', ...(online ? [`unix_socket_dir = ${dir}`] : [])],
  });
  const configFile = peer.configFiles![0]!.file;
  let pid = peer.pid;
  livePids.add(pid);
  let current: ChildProcess = peer.child;
  const root = process.getuid?.() === 0;
  const start = (args: string[]) => {
    const fd = openSync(peer.logFile, 'a');
    const child = spawn(bin, [...args, configFile], {
      stdio: ['ignore', fd, fd],
      ...(root ? { uid: 65534, gid: 65534 } : {}),
    });
    livePids.add(child.pid!);
    return child;
  };
  return {
    port: peer.port,
    async restart() {
      const t = performance.now();
      if (online) {
        const child = start(['-R']);
        await waitExit(current);
        livePids.delete(pid);
        current = child;
        pid = child.pid!;
        if (child.exitCode !== null) throw new Error(`pgbouncer -R exited ${child.exitCode}`);
        return `pgbouncer -R; old process exited after ${Math.round(performance.now() - t)} ms`;
      }
      current.kill('SIGINT');
      await waitExit(current);
      livePids.delete(pid);
      const down = performance.now();
      current = start([]);
      pid = current.pid!;
      await waitPort(peer.port);
      return `SIGINT (PAUSE + SHUTDOWN); exited after ${Math.round(down - t)} ms, listening again ${Math.round(performance.now() - down)} ms later`;
    },
    async stop() {
      current.kill('SIGQUIT');
      await waitExit(current, 10_000);
      if (current.exitCode === null && current.signalCode === null) current.kill('SIGKILL');
      livePids.delete(pid);
    },
  };
}

interface Run {
  target: string;
  mode: string;
  event: string;
  buckets: Bucket[];
  errorKinds: Map<string, number>;
}

async function main(): Promise<void> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tp-bench-takeover-'));
  let pgPid: number | null = null;
  let stopPg: () => Promise<void> = async () => undefined;
  const cleanup = stopOnExit(
    async () => {
      for (const pid of livePids) if (alive(pid)) process.kill(pid, 'SIGKILL');
      await stopPg();
      rmSync(dir, { recursive: true, force: true });
    },
    () => [...livePids, pgPid],
    () => dir,
    say,
  );
  const runs: Run[] = [];
  try {
    const pg = await startBenchPostgres(dir, { maxConnections: 200, scale: SCALE, progress: say });
    pgPid = pg.pid;
    stopPg = () => pg.stop();
    for (const mode of MODES) {
      for (const name of TARGETS) {
        const tdir = path.join(dir, `${name.replace(/[^a-z0-9]+/gi, '-')}-${mode}`);
        const target = name.startsWith('tidepool')
          ? await tidepoolTarget(name, tdir, pg.host, pg.port)
          : await pgbouncerTarget(name, tdir, pg.host, pg.port);
        say(`${name}, ${mode}: ${CLIENTS} clients for ${SECONDS} s, restart at ${EVENT_AT} s`);
        const load = new Load(target.port, mode);
        while (load.second() < EVENT_AT) await new Promise((r) => setTimeout(r, 20));
        const event = await target.restart();
        say(`  ${event}`);
        while (load.second() < SECONDS) await new Promise((r) => setTimeout(r, 20));
        await load.stop();
        await target.stop();
        runs.push({ target: name, mode, event, buckets: load.buckets.slice(0, SECONDS), errorKinds: load.errorKinds });
      }
    }
  } finally {
    await cleanup();
  }
  writeResults(OUT, report(runs));
  say(`written ${OUT}`);
}

function report(runs: Run[]): string {
  const load = os.loadavg().map((l) => l.toFixed(2));
  const lines = [
    '# Pooler restart under load: takeover, restart, PgBouncer',
    '',
    `\`npm run bench:takeover\` (bench/pooler-takeover.ts), ${new Date().toISOString().slice(0, 16)} UTC, ${os.cpus().length} cores, load average ${load.join(' ')} at the end (a shared, noisy host). ${CLIENTS} clients in a closed loop of pgbench's select-only query (scale ${SCALE}), pool_size ${POOL_SIZE}, the restart at second ${EVENT_AT}; a client reconnects at once after an error, which counts in its second. tps: queries answered in that second; p99 in ms; err: errors (refused or dropped connections, FATALs, timeouts of ${QUERY_TIMEOUT_MS / 1000} s).`,
    '',
  ];
  const cols = ['second', ...runs.map((r) => `${r.target} ${r.mode}`)];
  lines.push('## Per run', '');
  lines.push(
    '| run | what happened | errors | tps before (median) | tps after (median) | worst second tps | worst p99 ms |',
  );
  lines.push('|---|---|---:|---:|---:|---:|---:|');
  for (const r of runs) {
    const tps = r.buckets.map((b) => b.done);
    const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
    const before = med(tps.slice(1, EVENT_AT));
    const after = med(tps.slice(EVENT_AT + 3));
    const errors = r.buckets.reduce((a, b) => a + b.errors, 0);
    const worstP99 = Math.max(
      ...r.buckets
        .slice(1)
        .map((b) => p99(b.latencies))
        .filter((x) => !Number.isNaN(x)),
    );
    const kinds = [...r.errorKinds].map(([k, n]) => `${n}x ${k}`).join('; ');
    lines.push(
      `| ${r.target}, ${r.mode} | ${r.event}${kinds ? `; errors: ${kinds}` : ''} | ${errors} | ${before} | ${after} | ${Math.min(...tps.slice(1))} | ${worstP99.toFixed(1)} |`,
    );
  }
  lines.push('', '## Per second (tps / p99 ms / errors)', '');
  lines.push(`| ${cols.join(' | ')} |`, `|${cols.map(() => '---:').join('|')}|`);
  for (let s = 0; s < SECONDS; s++) {
    const cells = runs.map((r) => {
      const b = r.buckets[s];
      if (!b) return '-';
      const p = p99(b.latencies);
      return `${b.done} / ${Number.isNaN(p) ? '-' : p.toFixed(1)} / ${b.errors}`;
    });
    lines.push(`| ${s}${s === EVENT_AT ? ' (restart)' : ''} | ${cells.join(' | ')} |`);
  }
  lines.push('');
  return lines.join('\n');
}

main().catch((err: unknown) => {
  say(err instanceof Error ? (err.stack ?? err.message) : String(err));
  process.exitCode = 1;
});
