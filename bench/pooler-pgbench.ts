// Pooler benchmark runner: one pgbench run against one target, with tps from pgbench's summary and
// latency percentiles from its per-transaction `--log` files.
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';

export const PGBENCH = '/usr/bin/pgbench';

/** The role of the SCRAM-SHA-256 `-C` rows (pooler-peers.ts creates it). */
export const SCRAM_USER = 'bench_scram';
/** The role of the field comparison's md5 `-C` rows: an md5 secret, which every pooler holds as it is. */
export const MD5_USER = 'bench_md5';

export interface Scenario {
  /** Short key, e.g. `simple-c50` or `simple-C-c50`. */
  key: string;
  protocol: 'simple' | 'extended' | 'prepared';
  clients: number;
  /** -C: a new connection for every transaction. */
  reconnect: boolean;
  /** Logs in as SCRAM_USER (a role with a SCRAM-SHA-256 secret) whatever the run's BENCH_AUTH. */
  scram?: boolean;
  /** Logs in as MD5_USER (a role with an md5 secret the poolers hold as it is). */
  md5?: boolean;
  /** Client TLS: pgbench with PGSSLMODE=require. */
  tls?: boolean;
  /** Clients logged in and idle beside pgbench's `clients` during the run (the bench opens and closes them). */
  idle?: number;
  /** pgbench -j (default min(2, clients)). */
  threads?: number;
}

/** The role a scenario logs in as. */
export function scenarioUser(s: Scenario, dflt: string): string {
  return s.scram ? SCRAM_USER : s.md5 ? MD5_USER : dflt;
}

export interface PgbenchTarget {
  host: string;
  port: number;
  user: string;
  password: string;
  database: string;
}

export interface PgbenchResult {
  ok: boolean;
  tps: number;
  transactions: number;
  failed: number;
  p50Ms: number;
  p99Ms: number;
  /** Short error text when pgbench failed, hung or reported failed transactions. */
  error: string;
}

export function pgbenchArgs(s: Scenario, t: PgbenchTarget, seconds: number, logPrefix?: string): string[] {
  const args = [
    '-h',
    t.host,
    '-p',
    String(t.port),
    '-U',
    t.user,
    '-n',
    '-S',
    `--protocol=${s.protocol}`,
    '-c',
    String(s.clients),
    '-j',
    String(s.threads ?? Math.min(2, s.clients)),
    '-T',
    String(seconds),
  ];
  if (s.reconnect) args.push('-C');
  if (logPrefix) args.push('--log', `--log-prefix=${logPrefix}`);
  args.push(t.database);
  return args;
}

/** The exact command line, with the port shown as $PORT. */
export function pgbenchCommand(s: Scenario, seconds: number): string {
  const t = { host: '127.0.0.1', port: 0, user: scenarioUser(s, 'bench'), password: '', database: 'bench' };
  return `${s.tls ? 'PGSSLMODE=require ' : ''}pgbench ${pgbenchArgs(s, t, seconds, '<dir>/run').join(' ').replace('-p 0', '-p $PORT')}`;
}

function percentile(sorted: Float64Array, q: number): number {
  if (sorted.length === 0) return Number.NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[i]!;
}

/** Latencies in ms from pgbench log lines `client_id transaction_no time_us script_no time_epoch time_us_frac`. */
function readLatencies(dir: string, base: string): Float64Array {
  const parts: number[] = [];
  for (const f of readdirSync(dir)) {
    if (!f.startsWith(`${base}.`)) continue;
    const text = readFileSync(path.join(dir, f), 'latin1');
    let start = 0;
    while (start < text.length) {
      let end = text.indexOf('\n', start);
      if (end < 0) end = text.length;
      const s1 = text.indexOf(' ', start);
      const s2 = s1 < 0 ? -1 : text.indexOf(' ', s1 + 1);
      const s3 = s2 < 0 ? -1 : text.indexOf(' ', s2 + 1);
      if (s3 > 0 && s3 < end) {
        const lat = text.slice(s2 + 1, s3);
        // "skipped" and "failed" lines carry no latency.
        if (lat !== 'skipped' && lat !== 'failed') parts.push(Number(lat) / 1000);
      }
      start = end + 1;
    }
    rmSync(path.join(dir, f), { force: true });
  }
  return Float64Array.from(parts).sort();
}

export interface RunningPgbench {
  pid: number;
  done: Promise<PgbenchResult>;
  kill(): void;
}

/** Starts pgbench; a run that has not ended `graceSeconds` after its duration is killed and reported as hung. */
export function runPgbench(
  s: Scenario,
  t: PgbenchTarget,
  seconds: number,
  logDir: string,
  base: string,
  graceSeconds = 60,
): RunningPgbench {
  const child = spawn(PGBENCH, pgbenchArgs(s, t, seconds, path.join(logDir, base)), {
    cwd: logDir,
    env: {
      ...process.env,
      PGPASSWORD: t.password,
      PGCONNECT_TIMEOUT: '10',
      ...(s.tls ? { PGSSLMODE: 'require' } : {}),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout!.on('data', (d: Buffer) => {
    out += d.toString();
  });
  child.stderr!.on('data', (d: Buffer) => {
    err += d.toString();
  });
  let hung = false;
  const timer = setTimeout(
    () => {
      hung = true;
      child.kill('SIGKILL');
    },
    (seconds + graceSeconds) * 1000,
  );
  const done = new Promise<PgbenchResult>((resolve) => {
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      // Without -C: "(without initial connection time)"; with -C: "(including reconnection times)".
      const tps = Number(
        /tps = ([\d.]+) \((?:without initial connection time|including reconnection times)\)/.exec(out)?.[1] ?? NaN,
      );
      const transactions = Number(/number of transactions actually processed: (\d+)/.exec(out)?.[1] ?? 0);
      const failed = Number(/number of failed transactions: (\d+)/.exec(out)?.[1] ?? 0);
      const lat = readLatencies(logDir, base);
      const errorLines = err.split('\n').filter((l) => /error|fatal|abort|could not|server closed/i.test(l));
      // Any "error" or "aborted" line in pgbench's output makes the run a failed one, whatever its exit code: a
      // client that aborted leaves the others running, and their tps is not the target's.
      const failLines = `${out}\n${err}`.split('\n').filter((l) => /error|abort/i.test(l));
      let error = '';
      if (hung) error = `hung: no exit ${graceSeconds} s after -T ${seconds}; killed`;
      else if (code !== 0)
        error = `exit ${code ?? signal}: ${errorLines.slice(0, 3).join(' | ') || err.trim().slice(0, 300)}`;
      else if (failed > 0) error = `${failed} failed transactions: ${errorLines.slice(0, 3).join(' | ')}`;
      else if (failLines.length) error = `error/aborted lines: ${failLines.slice(0, 3).join(' | ')}`;
      else if (!Number.isFinite(tps))
        error = `no tps line in pgbench's output: ${out.trim().split('\n').slice(-3).join(' | ')}`;
      resolve({
        ok: !hung && code === 0 && failed === 0 && failLines.length === 0 && Number.isFinite(tps),
        tps,
        transactions,
        failed,
        p50Ms: percentile(lat, 0.5),
        p99Ms: percentile(lat, 0.99),
        error,
      });
    });
  });
  return {
    pid: child.pid ?? -1,
    done,
    kill: () => {
      child.kill('SIGKILL');
    },
  };
}
