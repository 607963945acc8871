// Pooler benchmark peers: starts PgBouncer (installing Debian's package when missing) and tidepool as child
// processes on free ports in front of one PostgreSQL.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { freePort, startPostgres, writeHba, type RunningPostgres } from '../src/launcher/embedded-postgres.js';
import { PGBENCH } from './pooler-pgbench.js';

/** The account the poolers and pgbench log in as; one method everywhere (BENCH_AUTH: md5, the default, or
 * scram-sha-256) so every target pays the same auth. */
export const BENCH_USER = 'bench';
export const BENCH_AUTH: 'md5' | 'scram-sha-256' = process.env.BENCH_AUTH === 'scram-sha-256' || process.env.BENCH_AUTH === 'scram' ? 'scram-sha-256' : 'md5';
/** The secret both poolers are configured with: with scram-sha-256 the role's own (pg_authid), so neither derives a
 * key per login; with md5 the plaintext password. `sql` runs a query as the superuser and returns its text. */
export function benchSecret(sql: (q: string) => string): string {
  return BENCH_AUTH === 'scram-sha-256' ? sql(`SELECT rolpassword FROM pg_authid WHERE rolname = '${BENCH_USER}'`).trim() : BENCH_PASSWORD;
}
/** The SQL that creates the bench role with a secret of BENCH_AUTH's kind (direct connections pay the same auth). */
export const BENCH_ROLE_SQL = `SET password_encryption = '${BENCH_AUTH}'; CREATE ROLE ${'bench'} LOGIN PASSWORD 'bench-password'`;
export const BENCH_PASSWORD = 'bench-password';
/** A second role with a SCRAM-SHA-256 secret and the same password, for `-C` rows that pay SCRAM whatever
 * BENCH_AUTH is (issue 10's login target is SCRAM): both poolers take a user's SCRAM secret as SCRAM even under
 * auth_type md5 (PgBouncer: "if md5 is configured and a user has a SCRAM secret, then SCRAM authentication is used
 * automatically instead"; PostgreSQL's md5 hba method does the same). `sql` runs a query as the superuser. */
export function createScramRole(sql: (q: string, db?: string) => string, user: string): { name: string; secret: string } {
  sql(`SET password_encryption = 'scram-sha-256'; CREATE ROLE ${user} LOGIN PASSWORD '${BENCH_PASSWORD}'`);
  sql(`GRANT SELECT ON ALL TABLES IN SCHEMA public TO ${user}`, BENCH_DB);
  return { name: user, secret: sql(`SELECT rolpassword FROM pg_authid WHERE rolname = '${user}'`).trim() };
}
export const BENCH_DB = 'bench';

/** `pgbench -i` for the bench database at `scale` on `host`:`port`. */
export function pgbenchInitArgs(host: string, port: number | string, scale: number): string[] {
  return ['-i', '-s', String(scale), '-q', '-h', host, '-p', String(port), '-U', BENCH_USER, BENCH_DB];
}

/** PostgreSQL for a pooler benchmark in `dir`/pgdata (shared_buffers 256MB): the bench role (`roleSql`, default
 * BENCH_ROLE_SQL) and BENCH_DB, loaded by `pgbench -i` at `scale` and analyzed, the hba rules of writeHba. */
export async function startBenchPostgres(dir: string, opts: { maxConnections: number; scale: number; roleSql?: string; progress?: (msg: string) => void }): Promise<RunningPostgres> {
  const pg = await startPostgres({ dataDir: path.join(dir, 'pgdata'), settings: { max_connections: opts.maxConnections, shared_buffers: '256MB' } });
  opts.progress?.(`PostgreSQL on ${pg.host}:${pg.port} (pid ${pg.pid})`);
  pg.sql(opts.roleSql ?? BENCH_ROLE_SQL);
  pg.sql(`CREATE DATABASE ${BENCH_DB} OWNER ${BENCH_USER}`);
  writeHba(pg.dataDir);
  pg.sql('SELECT pg_reload_conf()');
  const initArgs = pgbenchInitArgs(pg.host, pg.port, opts.scale);
  opts.progress?.(`pgbench ${initArgs.join(' ')}`);
  const init = spawnSync(PGBENCH, initArgs, { env: { ...process.env, PGPASSWORD: BENCH_PASSWORD }, encoding: 'utf8' });
  if (init.status !== 0) {
    await pg.stop().catch(() => undefined);
    throw new Error(`pgbench -i failed: ${init.stderr}`);
  }
  pg.sql('VACUUM ANALYZE', BENCH_DB);
  return pg;
}
/** PgBouncer's session-mode alias of the bench database: PgBouncer 1.18 cannot keep pgbench's protocol-level
 * prepared statements (`--protocol prepared`) in transaction mode, so that scenario runs it in session mode. */
export const BENCH_SESSION_DB = 'bench_session';

const NOBODY = { uid: 65534, gid: 65534 };

export interface RunningPeer {
  name: string;
  host: string;
  port: number;
  child: ChildProcess;
  pid: number;
  logFile: string;
  version: string;
  stop(): Promise<void>;
}

function stopChild(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
    child.once('exit', () => { clearTimeout(timer); resolve(); });
    child.kill(signal);
  });
}

async function waitListening(host: string, port: number, child: ChildProcess, logFile: string, what: string, ready?: RegExp): Promise<void> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`${what} exited (${child.exitCode ?? child.signalCode}): ${readFileSync(logFile, 'utf8').slice(-2000)}`);
    }
    const logOk = !ready || ready.test(readFileSync(logFile, 'utf8'));
    const portOk = logOk && await new Promise<boolean>((resolve) => {
      const s = net.connect(port, host);
      s.once('connect', () => { s.destroy(); resolve(true); });
      s.once('error', () => { s.destroy(); resolve(false); });
    });
    if (portOk) return;
    if (Date.now() > deadline) throw new Error(`${what} did not listen on ${host}:${port} in 20 s: ${readFileSync(logFile, 'utf8').slice(-2000)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Path of the pgbouncer binary, after `apt-get install -y pgbouncer` when it is missing. */
export function ensurePgBouncer(progress: (msg: string) => void): string {
  const bin = '/usr/sbin/pgbouncer';
  if (existsSync(bin)) return bin;
  if (process.getuid?.() !== 0) throw new Error('pgbouncer is not installed and we are not root: apt-get install -y pgbouncer');
  progress('installing pgbouncer (apt-get update && apt-get install -y pgbouncer)');
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  for (const args of [['update'], ['install', '-y', '--no-install-recommends', 'pgbouncer']]) {
    const r = spawnSync('apt-get', args, { env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    if (r.status !== 0) throw new Error(`apt-get ${args.join(' ')} failed: ${(r.stderr || r.stdout).slice(-2000)}`);
  }
  // The package starts a system instance on 6432; ours runs on its own port, so leave it be unless it is in the way.
  spawnSync('sh', ['-c', 'command -v systemctl >/dev/null && systemctl stop pgbouncer || service pgbouncer stop'], { stdio: 'ignore' });
  if (!existsSync(bin)) throw new Error('apt-get install pgbouncer did not provide /usr/sbin/pgbouncer');
  return bin;
}

export interface PgBouncerOptions {
  dir: string;
  serverHost: string;
  serverPort: number;
  poolSize: number;
  /** Server connections of the session-mode alias (BENCH_SESSION_DB): one per client, so the largest client count. */
  sessionPoolSize: number;
  progress: (msg: string) => void;
  /** More [pgbouncer] lines (e.g. client_tls_*). */
  extraIni?: string[];
  /** The auth_file secret (default BENCH_PASSWORD in plaintext); with scram-sha-256, the role's SCRAM secret from
   * pg_authid, so PgBouncer does not run PBKDF2 for every login (as with a plaintext password it must). */
  secret?: string;
  /** More auth_file users (createScramRole). */
  extraUsers?: { name: string; secret: string }[];
}

/** PgBouncer in transaction mode as user nobody, BENCH_AUTH auth from a plaintext auth_file, connection logging off; the
 * same PostgreSQL database also as BENCH_SESSION_DB in session mode. */
export async function startPgBouncer(opts: PgBouncerOptions): Promise<RunningPeer> {
  const bin = ensurePgBouncer(opts.progress);
  const version = (spawnSync(bin, ['--version'], { encoding: 'utf8' }).stdout ?? '').split('\n')[0]?.trim() ?? '?';
  mkdirSync(opts.dir, { recursive: true });
  const host = '127.0.0.1';
  const port = await freePort(host);
  const authFile = path.join(opts.dir, 'userlist.txt');
  const configFile = path.join(opts.dir, 'pgbouncer.ini');
  const logFile = path.join(opts.dir, 'pgbouncer.log');
  writeFileSync(authFile, [{ name: BENCH_USER, secret: opts.secret ?? BENCH_PASSWORD }, ...(opts.extraUsers ?? [])].map((u) => `"${u.name}" "${u.secret}"\n`).join(''));
  writeFileSync(configFile, [
    '[databases]',
    `${BENCH_DB} = host=${opts.serverHost} port=${opts.serverPort} dbname=${BENCH_DB}`,
    `${BENCH_SESSION_DB} = host=${opts.serverHost} port=${opts.serverPort} dbname=${BENCH_DB} pool_mode=session pool_size=${opts.sessionPoolSize}`,
    '',
    '[pgbouncer]',
    `listen_addr = ${host}`,
    `listen_port = ${port}`,
    'unix_socket_dir =',
    `auth_type = ${BENCH_AUTH}`,
    `auth_file = ${authFile}`,
    'pool_mode = transaction',
    `default_pool_size = ${opts.poolSize}`,
    'max_client_conn = 2000',
    'ignore_startup_parameters = extra_float_digits',
    'log_connections = 0',
    'log_disconnections = 0',
    'log_pooler_errors = 1',
    ...(opts.extraIni ?? []),
    '',
  ].join('\n'));
  writeFileSync(logFile, '');
  const root = process.getuid?.() === 0;
  if (root) {
    chownSync(opts.dir, NOBODY.uid, NOBODY.gid);
    for (const f of [authFile, configFile, logFile]) chownSync(f, NOBODY.uid, NOBODY.gid);
  }
  chmodSync(authFile, 0o600);
  const fd = openSync(logFile, 'a');
  const child = spawn(bin, [configFile], { stdio: ['ignore', fd, fd], ...(root ? NOBODY : {}) });
  await waitListening(host, port, child, logFile, 'pgbouncer');
  return { name: 'PgBouncer', host, port, child, pid: child.pid ?? -1, logFile, version, stop: () => stopChild(child, 'SIGINT') };
}

export interface TidepoolOptions {
  dir: string;
  root: string;
  serverHost: string;
  serverPort: number;
  poolSize: number;
  /** general.log_level (default info). */
  logLevel?: string;
  /** TOML appended to the config (more sections, e.g. [web] or [logs]). */
  extraToml?: string;
  /** More [general] lines (e.g. client_tls_*). */
  generalToml?: string;
  /** Node options before the script (e.g. --cpu-prof). */
  nodeArgs?: string[];
  /** Environment of the child (default: this process's). */
  env?: NodeJS.ProcessEnv;
  /** The user's configured password (default BENCH_PASSWORD); the role's SCRAM secret as PgBouncer gets it. */
  secret?: string;
  /** More users of the bench pool (createScramRole), each with its own pool of poolSize. */
  extraUsers?: { name: string; secret: string }[];
}

/** `tidepool pooler` in transaction mode, BENCH_AUTH client auth, log_level info unless told (it logs no line per client at info). */
export async function startTidepool(opts: TidepoolOptions): Promise<RunningPeer & { configFile: string }> {
  mkdirSync(opts.dir, { recursive: true });
  const host = '127.0.0.1';
  const port = await freePort(host);
  const configFile = path.join(opts.dir, 'pooler.toml');
  const logFile = path.join(opts.dir, 'tidepool.log');
  writeFileSync(configFile, `[general]
host = "${host}"
port = ${port}
admin_username = "admin"
admin_password = "bench-admin-password"
pool_mode = "transaction"
auth_type = "${BENCH_AUTH}"
log_level = "${opts.logLevel ?? 'info'}"
${opts.generalToml ?? ''}

[pools.${BENCH_DB}]
server_host = "${opts.serverHost}"
server_port = ${opts.serverPort}

[[pools.${BENCH_DB}.users]]
username = "${BENCH_USER}"
password = "${opts.secret ?? BENCH_PASSWORD}"
pool_size = ${opts.poolSize}
${(opts.extraUsers ?? []).map((u) => `
[[pools.${BENCH_DB}.users]]
username = "${u.name}"
password = "${u.secret}"
pool_size = ${opts.poolSize}
`).join('')}${opts.extraToml ?? ''}`);
  writeFileSync(logFile, '');
  const fd = openSync(logFile, 'a');
  const bin = path.join(opts.root, 'bin', 'tidepool.js');
  // TIDEPOOL_NODE_ARGS (e.g. "--require ./alloc-profile.cjs"): node flags for every tidepool a bench starts.
  const envArgs = (process.env.TIDEPOOL_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const child = spawn(process.execPath, [...envArgs, ...(opts.nodeArgs ?? []), bin, 'pooler', '--config', configFile], { cwd: opts.root, env: opts.env ?? process.env, stdio: ['ignore', fd, fd] });
  await waitListening(host, port, child, logFile, 'tidepool', /pooler listening/);
  const pkg = JSON.parse(readFileSync(path.join(opts.root, 'package.json'), 'utf8')) as { version: string };
  return { name: 'tidepool', host, port, child, pid: child.pid ?? -1, logFile, configFile, version: pkg.version, stop: () => stopChild(child, 'SIGINT') };
}
