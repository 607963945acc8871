// Pooler benchmark peers: starts PgBouncer (installing Debian's package when missing), tidepool and, for the
// field comparison (`bench:pooler -- --peers`), PgBouncer 1.25, Odyssey 1.5 and pgagroal 1.6 built under
// BENCH_PEERS_DIR (default /opt/peers), as child processes on free ports in front of one PostgreSQL.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { freePort, startPostgres, writeHba, type RunningPostgres } from '../src/launcher/embedded-postgres.js';
import { treePids } from './pooler-cpu.js';
import { PGBENCH } from './pooler-pgbench.js';

/** The account the poolers and pgbench log in as; one method everywhere (BENCH_AUTH: md5, the default, or
 * scram-sha-256) so every target pays the same auth. */
export const BENCH_USER = 'bench';
export const BENCH_AUTH: 'md5' | 'scram-sha-256' =
  process.env.BENCH_AUTH === 'scram-sha-256' || process.env.BENCH_AUTH === 'scram' ? 'scram-sha-256' : 'md5';
/** The secret both poolers are configured with: with scram-sha-256 the role's own (pg_authid), so neither derives a
 * key per login; with md5 the plaintext password. `sql` runs a query as the superuser and returns its text. */
export function benchSecret(sql: (q: string) => string): string {
  return BENCH_AUTH === 'scram-sha-256'
    ? sql(`SELECT rolpassword FROM pg_authid WHERE rolname = '${BENCH_USER}'`).trim()
    : BENCH_PASSWORD;
}
/** The SQL that creates the bench role with a secret of BENCH_AUTH's kind (direct connections pay the same auth). */
export const BENCH_ROLE_SQL = `SET password_encryption = '${BENCH_AUTH}'; CREATE ROLE ${'bench'} LOGIN PASSWORD 'bench-password'`;
export const BENCH_PASSWORD = 'bench-password';
/** A second role with a SCRAM-SHA-256 secret and the same password, for `-C` rows that pay SCRAM whatever
 * BENCH_AUTH is (issue 10's login target is SCRAM): both poolers take a user's SCRAM secret as SCRAM even under
 * auth_type md5 (PgBouncer: "if md5 is configured and a user has a SCRAM secret, then SCRAM authentication is used
 * automatically instead"; PostgreSQL's md5 hba method does the same). `sql` runs a query as the superuser. */
export function createScramRole(
  sql: (q: string, db?: string) => string,
  user: string,
): { name: string; secret: string } {
  return createRole(sql, user, 'scram-sha-256');
}
/** A login role with BENCH_PASSWORD stored as `encryption` (md5 or scram-sha-256) and read rights on the bench
 * tables; returns its secret from pg_authid (what a pooler holds to authenticate its clients). */
export function createRole(
  sql: (q: string, db?: string) => string,
  user: string,
  encryption: 'md5' | 'scram-sha-256',
): { name: string; secret: string; method: 'md5' | 'scram-sha-256' } {
  sql(`SET password_encryption = '${encryption}'; CREATE ROLE ${user} LOGIN PASSWORD '${BENCH_PASSWORD}'`);
  sql(`GRANT SELECT ON ALL TABLES IN SCHEMA public TO ${user}`, BENCH_DB);
  return {
    name: user,
    secret: sql(`SELECT rolpassword FROM pg_authid WHERE rolname = '${user}'`).trim(),
    method: encryption,
  };
}
/** A user a pooler authenticates besides BENCH_USER: its secret (from pg_authid) and method. */
export interface ExtraUser {
  name: string;
  secret: string;
  method?: 'md5' | 'scram-sha-256';
}

/** A self-signed certificate for 127.0.0.1 in `dir` for client TLS (owned by nobody when root: the C poolers run as
 * nobody and must read it). */
export function makeCert(dir: string): { cert: string; key: string } {
  mkdirSync(dir, { recursive: true });
  const cert = path.join(dir, 'server.crt');
  const key = path.join(dir, 'server.key');
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
      '-addext',
      'subjectAltName=IP:127.0.0.1',
    ],
    { encoding: 'utf8' },
  );
  if (r.status !== 0 || !existsSync(cert)) throw new Error(`openssl failed: ${r.stderr}`);
  chmodSync(key, 0o600);
  if (process.getuid?.() === 0) for (const f of [dir, cert, key]) chownSync(f, NOBODY.uid, NOBODY.gid);
  return { cert, key };
}

export const BENCH_DB = 'bench';

/** `pgbench -i` for the bench database at `scale` on `host`:`port`. */
export function pgbenchInitArgs(host: string, port: number | string, scale: number): string[] {
  return ['-i', '-s', String(scale), '-q', '-h', host, '-p', String(port), '-U', BENCH_USER, BENCH_DB];
}

/** PostgreSQL for a pooler benchmark in `dir`/pgdata (shared_buffers 256MB): the bench role (`roleSql`, default
 * BENCH_ROLE_SQL) and BENCH_DB, loaded by `pgbench -i` at `scale` and analyzed, the hba rules of writeHba. */
export async function startBenchPostgres(
  dir: string,
  opts: { maxConnections: number; scale: number; roleSql?: string; progress?: (msg: string) => void },
): Promise<RunningPostgres> {
  const pg = await startPostgres({
    dataDir: path.join(dir, 'pgdata'),
    settings: { max_connections: opts.maxConnections, shared_buffers: '256MB' },
  });
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
  /** The pooler forks a process per client (pgagroal): its CPU is the whole process tree's. */
  cpuTree?: boolean;
  /** Config files to quote in the report (path, and how the process was started). */
  configFiles?: { file: string; how: string }[];
  stop(): Promise<void>;
}

function stopChild(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill(signal);
  });
}

async function waitListening(
  host: string,
  port: number,
  child: ChildProcess,
  logFile: string,
  what: string,
  ready?: RegExp,
): Promise<void> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(
        `${what} exited (${child.exitCode ?? child.signalCode}): ${readFileSync(logFile, 'utf8').slice(-2000)}`,
      );
    }
    const logOk = !ready || ready.test(readFileSync(logFile, 'utf8'));
    const portOk =
      logOk &&
      (await new Promise<boolean>((resolve) => {
        const s = net.connect(port, host);
        s.once('connect', () => {
          s.destroy();
          resolve(true);
        });
        s.once('error', () => {
          s.destroy();
          resolve(false);
        });
      }));
    if (portOk) return;
    if (Date.now() > deadline) {
      // The caller never gets a handle on a peer that did not come up: stop it here, or it outlives the bench.
      child.kill('SIGKILL');
      throw new Error(
        `${what} did not listen on ${host}:${port} in 20 s: ${readFileSync(logFile, 'utf8').slice(-2000)}`,
      );
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Path of the pgbouncer binary, after `apt-get install -y pgbouncer` when it is missing. */
export function ensurePgBouncer(progress: (msg: string) => void): string {
  const bin = '/usr/sbin/pgbouncer';
  if (existsSync(bin)) return bin;
  if (process.getuid?.() !== 0)
    throw new Error('pgbouncer is not installed and we are not root: apt-get install -y pgbouncer');
  progress('installing pgbouncer (apt-get update && apt-get install -y pgbouncer)');
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  for (const args of [['update'], ['install', '-y', '--no-install-recommends', 'pgbouncer']]) {
    const r = spawnSync('apt-get', args, { env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    if (r.status !== 0) throw new Error(`apt-get ${args.join(' ')} failed: ${(r.stderr || r.stdout).slice(-2000)}`);
  }
  // The package starts a system instance on 6432; ours runs on its own port, so leave it be unless it is in the way.
  spawnSync('sh', ['-c', 'command -v systemctl >/dev/null && systemctl stop pgbouncer || service pgbouncer stop'], {
    stdio: 'ignore',
  });
  if (!existsSync(bin)) throw new Error('apt-get install pgbouncer did not provide /usr/sbin/pgbouncer');
  return bin;
}

export interface PgBouncerOptions {
  dir: string;
  /** The binary (default Debian's /usr/sbin/pgbouncer, installed when missing). */
  bin?: string;
  /** The peer's name in reports (default PgBouncer). */
  name?: string;
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
  extraUsers?: ExtraUser[];
  /** max_client_conn (default 2000). */
  maxClients?: number;
}

/** PgBouncer in transaction mode as user nobody, BENCH_AUTH auth from a plaintext auth_file, connection logging off; the
 * same PostgreSQL database also as BENCH_SESSION_DB in session mode. */
export async function startPgBouncer(opts: PgBouncerOptions): Promise<RunningPeer> {
  const bin = opts.bin ?? ensurePgBouncer(opts.progress);
  const version = (spawnSync(bin, ['--version'], { encoding: 'utf8' }).stdout ?? '').split('\n')[0]?.trim() ?? '?';
  mkdirSync(opts.dir, { recursive: true });
  const host = '127.0.0.1';
  const port = await freePort(host);
  const authFile = path.join(opts.dir, 'userlist.txt');
  const configFile = path.join(opts.dir, 'pgbouncer.ini');
  const logFile = path.join(opts.dir, 'pgbouncer.log');
  writeFileSync(
    authFile,
    [{ name: BENCH_USER, secret: opts.secret ?? BENCH_PASSWORD }, ...(opts.extraUsers ?? [])]
      .map((u) => `"${u.name}" "${u.secret}"\n`)
      .join(''),
  );
  writeFileSync(
    configFile,
    [
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
      `max_client_conn = ${opts.maxClients ?? 2000}`,
      'ignore_startup_parameters = extra_float_digits',
      'log_connections = 0',
      'log_disconnections = 0',
      'log_pooler_errors = 1',
      ...(opts.extraIni ?? []),
      '',
    ].join('\n'),
  );
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
  return {
    name: opts.name ?? 'PgBouncer',
    host,
    port,
    child,
    pid: child.pid ?? -1,
    logFile,
    version,
    configFiles: [{ file: configFile, how: `${bin} pgbouncer.ini, as nobody` }],
    stop: () => stopChild(child, 'SIGINT'),
  };
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
  extraUsers?: ExtraUser[];
}

/** `tidepool pooler` in transaction mode, BENCH_AUTH client auth, log_level info unless told (it logs no line per client at info). */
export async function startTidepool(opts: TidepoolOptions): Promise<RunningPeer & { configFile: string }> {
  mkdirSync(opts.dir, { recursive: true });
  const host = '127.0.0.1';
  const port = await freePort(host);
  const configFile = path.join(opts.dir, 'pooler.toml');
  const logFile = path.join(opts.dir, 'tidepool.log');
  writeFileSync(
    configFile,
    `[general]
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
${(opts.extraUsers ?? [])
  .map(
    (u) => `
[[pools.${BENCH_DB}.users]]
username = "${u.name}"
password = "${u.secret}"
pool_size = ${opts.poolSize}
`,
  )
  .join('')}${opts.extraToml ?? ''}`,
  );
  writeFileSync(logFile, '');
  const fd = openSync(logFile, 'a');
  const bin = path.join(opts.root, 'bin', 'tidepool.js');
  // TIDEPOOL_NODE_ARGS (e.g. "--require ./alloc-profile.cjs"): node flags for every tidepool a bench starts.
  const envArgs = (process.env.TIDEPOOL_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const child = spawn(process.execPath, [...envArgs, ...(opts.nodeArgs ?? []), bin, 'pooler', '--config', configFile], {
    cwd: opts.root,
    env: opts.env ?? process.env,
    stdio: ['ignore', fd, fd],
  });
  await waitListening(host, port, child, logFile, 'tidepool', /pooler listening/);
  const pkg = JSON.parse(readFileSync(path.join(opts.root, 'package.json'), 'utf8')) as { version: string };
  return {
    name: 'tidepool',
    host,
    port,
    child,
    pid: child.pid ?? -1,
    logFile,
    configFile,
    version: pkg.version,
    stop: () => stopChild(child, 'SIGINT'),
  };
}

/** Where the field's poolers are unpacked (`tar xzf /work/shared/peers/peers-bin.tar.gz -C /`). */
export const PEERS_DIR = process.env.BENCH_PEERS_DIR ?? '/opt/peers';
const PEERS_ARCHIVE = '/work/shared/peers/peers-bin.tar.gz';
export const PEER_BINARIES = {
  'PgBouncer 1.25': {
    bin: path.join(PEERS_DIR, 'pgbouncer-1.25.2', 'bin', 'pgbouncer'),
    debs: ['libssl3', 'libevent-2.1-7', 'libc-ares2'],
  },
  Odyssey: { bin: path.join(PEERS_DIR, 'odyssey-1.5.1', 'bin', 'odyssey'), debs: ['libssl3'] },
  pgagroal: {
    bin: path.join(PEERS_DIR, 'pgagroal-1.6.0', 'bin', 'pgagroal'),
    debs: ['libssl3', 'libev4', 'libcjson1', 'libsystemd0'],
  },
} as const;
export type FieldPeer = keyof typeof PEER_BINARIES;

/**
 * The peer's binary, its Debian runtime packages installed with apt-get when `ldd` finds a library missing (as
 * root). A missing binary is an error that says where the peers come from: the bench never skips a peer silently.
 */
export function ensurePeer(name: FieldPeer, progress: (msg: string) => void): string {
  const { bin, debs } = PEER_BINARIES[name];
  if (!existsSync(bin)) {
    throw new Error(
      `${name} is missing: no ${bin}. The field's poolers are not unpacked; run \`tar xzf ${PEERS_ARCHIVE} -C /\` (or set BENCH_PEERS_DIR to where they are), then \`apt-get install ${[...new Set(Object.values(PEER_BINARIES).flatMap((p) => [...p.debs]))].join(' ')}\` (see ${path.join(PEERS_DIR, 'README.txt')})`,
    );
  }
  const missing = () =>
    [bin, ...(name === 'pgagroal' ? [path.join(path.dirname(bin), 'pgagroal-admin')] : [])].flatMap((b) =>
      (spawnSync('ldd', [b], { encoding: 'utf8' }).stdout ?? '')
        .split('\n')
        .filter((l) => /not found/.test(l))
        .map((l) => l.trim()),
    );
  let libs = missing();
  if (libs.length) {
    if (process.getuid?.() !== 0)
      throw new Error(`${name}: ${bin} lacks ${libs.join(', ')}; as root: apt-get install -y ${debs.join(' ')}`);
    progress(`${name} lacks ${libs.join(', ')}: apt-get install -y ${debs.join(' ')}`);
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    let r = spawnSync('apt-get', ['install', '-y', '--no-install-recommends', ...debs], { env, encoding: 'utf8' });
    if (r.status !== 0) {
      spawnSync('apt-get', ['update'], { env, encoding: 'utf8' });
      r = spawnSync('apt-get', ['install', '-y', '--no-install-recommends', ...debs], { env, encoding: 'utf8' });
    }
    libs = missing();
    if (r.status !== 0 || libs.length)
      throw new Error(
        `${name}: apt-get install ${debs.join(' ')} did not provide ${libs.join(', ') || 'the libraries'}: ${(r.stderr || r.stdout).slice(-1500)}`,
      );
  }
  return bin;
}

/** The peer's version line (`--version`). */
export function peerVersion(bin: string): string {
  const r = spawnSync(bin, ['--version'], { encoding: 'utf8' });
  return (r.stdout || r.stderr || '?').split('\n')[0]!.trim();
}

interface FieldPeerOptions {
  dir: string;
  serverHost: string;
  serverPort: number;
  poolSize: number;
  progress: (msg: string) => void;
  /** The client-side secret (benchSecret: plaintext with md5, the role's SCRAM secret with scram-sha-256). */
  secret: string;
  /** Clients the pooler admits (PgBouncer max_client_conn, Odyssey client_max; default 2000). */
  maxClients?: number;
  /** More users with their own secrets (createRole), each with a pool of poolSize. */
  extraUsers?: ExtraUser[];
  /** Client TLS required with this certificate (makeCert). */
  tls?: { cert: string; key: string };
  /** More [pgbouncer] lines (PgBouncer only; e.g. `stats_users = bench` for SHOW POOLS). */
  extraIni?: string[];
}

/** Makes `dir` (and what is in it) the property of nobody, when we are root. */
function giveToNobody(dir: string): boolean {
  if (process.getuid?.() !== 0) return false;
  const walk = (p: string) => {
    chownSync(p, NOBODY.uid, NOBODY.gid);
    if (statSync(p).isDirectory()) for (const f of readdirSync(p)) walk(path.join(p, f));
  };
  walk(dir);
  return true;
}

/** PgBouncer 1.25 (built from its release tag): as startPgBouncer, with `max_prepared_statements = 200` so that the
 * `prepared` rows run in transaction mode. */
export async function startPgBouncer125(opts: FieldPeerOptions & { sessionPoolSize: number }): Promise<RunningPeer> {
  const bin = ensurePeer('PgBouncer 1.25', opts.progress);
  return startPgBouncer({
    ...opts,
    bin,
    name: 'PgBouncer 1.25',
    extraIni: [
      'max_prepared_statements = 200',
      ...(opts.tls ? pgBouncerTlsIni(opts.tls) : []),
      ...(opts.extraIni ?? []),
    ],
  });
}

/** PgBouncer's [pgbouncer] lines for required client TLS. */
export function pgBouncerTlsIni(tls: { cert: string; key: string }): string[] {
  return ['client_tls_sslmode = require', `client_tls_key_file = ${tls.key}`, `client_tls_cert_file = ${tls.cert}`];
}

/** tidepool's [general] lines for required client TLS. */
export function tidepoolTlsToml(tls: { cert: string; key: string }): string {
  return `client_tls_sslmode = "require"\nclient_tls_key_file = "${tls.key}"\nclient_tls_cert_file = "${tls.cert}"`;
}

/** Odyssey 1.5 in transaction mode with `workers 2` and `pool_reserve_prepared_statement yes`, BENCH_AUTH client auth
 * with the same secret as the other poolers, the plaintext password towards PostgreSQL; as nobody when root. */
export async function startOdyssey(opts: FieldPeerOptions): Promise<RunningPeer> {
  const bin = ensurePeer('Odyssey', opts.progress);
  mkdirSync(opts.dir, { recursive: true });
  const host = '127.0.0.1';
  const port = await freePort(host);
  const configFile = path.join(opts.dir, 'odyssey.conf');
  const logFile = path.join(opts.dir, 'odyssey.log');
  writeFileSync(
    configFile,
    `daemonize no
pid_file "${path.join(opts.dir, 'odyssey.pid')}"
locks_dir "${opts.dir}"
log_to_stdout yes
log_format "%p %t %l [%i %s] (%c) %m\\n"
log_debug no
log_config no
log_session no
log_query no
log_stats no
workers 2
resolvers 1
readahead 8192
cache_coroutine 0
coroutine_stack_size 16
nodelay yes
keepalive 15
keepalive_keep_interval 75
keepalive_probes 9
keepalive_usr_timeout 0
graceful_die_on_errors no
enable_online_restart no
bindwith_reuseport no

listen {
	host "${host}"
	port ${port}
	backlog 128
${opts.tls ? `\ttls "require"\n\ttls_cert_file "${opts.tls.cert}"\n\ttls_key_file "${opts.tls.key}"` : '\ttls "disable"'}
}

storage "postgres_server" {
	type "remote"
	host "${opts.serverHost}"
	port ${opts.serverPort}
}

database "${BENCH_DB}" {
${[{ name: BENCH_USER, secret: opts.secret, method: BENCH_AUTH }, ...(opts.extraUsers ?? [])]
  .map(
    (u) => `	user "${u.name}" {
		authentication "${u.method ?? BENCH_AUTH}"
		password "${u.secret}"
		storage "postgres_server"
		storage_password "${BENCH_PASSWORD}"
		pool "transaction"
		pool_size ${opts.poolSize}
		pool_timeout 0
		pool_ttl 0
		pool_discard no
		pool_cancel yes
		pool_rollback yes
		pool_reserve_prepared_statement yes
		client_fwd_error yes
		server_lifetime 3600
		log_debug no
		client_max ${opts.maxClients ?? 2000}
	}
`,
  )
  .join('')}}
`,
  );
  writeFileSync(logFile, '');
  const root = giveToNobody(opts.dir);
  chmodSync(configFile, 0o600);
  const fd = openSync(logFile, 'a');
  const child = spawn(bin, [configFile], { stdio: ['ignore', fd, fd], ...(root ? NOBODY : {}) });
  await waitListening(host, port, child, logFile, 'odyssey');
  return {
    name: 'Odyssey',
    host,
    port,
    child,
    pid: child.pid ?? -1,
    logFile,
    version: peerVersion(bin),
    configFiles: [{ file: configFile, how: `${bin} odyssey.conf, as nobody` }],
    stop: () => stopChild(child, 'SIGTERM'),
  };
}

/**
 * pgagroal 1.6 with its transaction pipeline (which needs a users vault: `pgagroal-admin master-key` and `user add`),
 * max_connections = the pool size, prefilled, blocking_timeout/idle_timeout/max_connection_age 0 as its docs ask
 * for that pipeline, BENCH_AUTH in its hba. It refuses to run as root and keeps its master key in the home
 * directory of the user it runs as (getpwuid, not $HOME): it runs as nobody in a private mount namespace where
 * /etc/passwd is a copy giving nobody a home in the work dir, so nothing lands outside it. Its transaction pipeline
 * cannot keep prepared statements: the bench does not run it under `--protocol prepared`.
 */
export async function startPgagroal(opts: FieldPeerOptions): Promise<RunningPeer> {
  const bin = ensurePeer('pgagroal', opts.progress);
  const admin = path.join(path.dirname(bin), 'pgagroal-admin');
  if (process.getuid?.() !== 0)
    throw new Error(
      'pgagroal: the bench starts it as nobody with a home in the work dir, which needs root (unshare, setpriv)',
    );
  mkdirSync(opts.dir, { recursive: true });
  const host = '127.0.0.1';
  const port = await freePort(host);
  const home = path.join(opts.dir, 'home');
  mkdirSync(home, { recursive: true, mode: 0o700 });
  const passwd = path.join(opts.dir, 'passwd');
  copyFileSync('/etc/passwd', passwd);
  const lines = readFileSync(passwd, 'utf8')
    .split('\n')
    .map((l) => {
      const f = l.split(':');
      if (f[0] !== 'nobody' || f.length < 7) return l;
      f[5] = home;
      return f.join(':');
    });
  writeFileSync(passwd, lines.join('\n'));
  chmodSync(passwd, 0o644);
  const configFile = path.join(opts.dir, 'pgagroal.conf');
  const hbaFile = path.join(opts.dir, 'pgagroal_hba.conf');
  const limitFile = path.join(opts.dir, 'pgagroal_databases.conf');
  const usersFile = path.join(opts.dir, 'pgagroal_users.conf');
  const logFile = path.join(opts.dir, 'pgagroal.log');
  writeFileSync(
    configFile,
    [
      '[pgagroal]',
      `host = ${host}`,
      `port = ${port}`,
      'log_type = file',
      'log_level = warn',
      `log_path = ${path.join(opts.dir, 'pgagroal-file.log')}`,
      `max_connections = ${opts.poolSize * (1 + (opts.extraUsers?.length ?? 0))}`,
      'pipeline = transaction',
      ...(opts.tls ? ['tls = on', `tls_cert_file = ${opts.tls.cert}`, `tls_key_file = ${opts.tls.key}`] : []),
      'blocking_timeout = 0',
      'idle_timeout = 0',
      'max_connection_age = 0',
      'validation = off',
      'allow_unknown_users = false',
      'update_process_title = never',
      `unix_socket_dir = ${opts.dir}`,
      '',
      '[primary]',
      `host = ${opts.serverHost}`,
      `port = ${opts.serverPort}`,
      '',
    ].join('\n'),
  );
  const extra = opts.extraUsers ?? [];
  writeFileSync(
    hbaFile,
    [
      `host ${BENCH_DB} ${BENCH_USER} all ${BENCH_AUTH}`,
      ...extra.map((u) => `host ${BENCH_DB} ${u.name} all ${u.method ?? BENCH_AUTH}`),
    ]
      .map((l) => `${l}\n`)
      .join(''),
  );
  // Every user's pool prefilled (its transaction pipeline wants a min_size above 0).
  writeFileSync(
    limitFile,
    [
      `${BENCH_DB} ${BENCH_USER} ${opts.poolSize} ${opts.poolSize} ${opts.poolSize}`,
      ...extra.map((u) => `${BENCH_DB} ${u.name} ${opts.poolSize} ${opts.poolSize} ${opts.poolSize}`),
    ]
      .map((l) => `${l}\n`)
      .join(''),
  );
  writeFileSync(logFile, '');
  giveToNobody(opts.dir);
  // As nobody, with /etc/passwd bind-mounted from the copy in this mount namespace only; exec keeps the pid.
  const asNobody = (args: string[]) => [
    '-m',
    'sh',
    '-c',
    `mount --bind "$0" /etc/passwd && exec setpriv --reuid=${NOBODY.uid} --regid=${NOBODY.gid} --clear-groups "$@"`,
    passwd,
    ...args,
  ];
  const masterKey = `bench-master-${process.pid}-${Date.now()}`;
  for (const args of [
    [admin, '-P', masterKey, 'master-key'],
    [admin, '-f', usersFile, '-U', BENCH_USER, '-P', BENCH_PASSWORD, 'user', 'add'],
    ...extra.map((u) => [admin, '-f', usersFile, '-U', u.name, '-P', BENCH_PASSWORD, 'user', 'add']),
  ]) {
    const r = spawnSync('unshare', asNobody(args), { encoding: 'utf8', cwd: opts.dir });
    if (r.status !== 0)
      throw new Error(
        `pgagroal-admin ${args
          .slice(1)
          .filter((a) => a !== masterKey && a !== BENCH_PASSWORD)
          .join(' ')} failed (${r.status ?? r.signal}): ${(r.stderr || r.stdout).slice(-1500)}`,
      );
  }
  const fd = openSync(logFile, 'a');
  const child = spawn('unshare', asNobody([bin, '-c', configFile, '-a', hbaFile, '-l', limitFile, '-u', usersFile]), {
    cwd: opts.dir,
    stdio: ['ignore', fd, fd],
  });
  await waitListening(host, port, child, logFile, 'pgagroal');
  const pid = child.pid ?? -1;
  const stop = async () => {
    const tree = pid > 0 ? treePids(pid) : [];
    await stopChild(child, 'SIGTERM');
    // Its per-client and prefill processes: stopped by pid if the main process left any.
    for (const p of tree) {
      try {
        process.kill(p, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
  };
  return {
    name: 'pgagroal',
    host,
    port,
    child,
    pid,
    logFile,
    version: peerVersion(bin),
    cpuTree: true,
    configFiles: [
      {
        file: configFile,
        how: `${bin} -c pgagroal.conf -a pgagroal_hba.conf -l pgagroal_databases.conf -u pgagroal_users.conf, as nobody (pgagroal-admin master-key; pgagroal-admin -f pgagroal_users.conf -U bench user add)`,
      },
      { file: hbaFile, how: 'pgagroal_hba.conf' },
      { file: limitFile, how: 'pgagroal_databases.conf' },
    ],
    stop,
  };
}
