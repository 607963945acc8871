// Pooler benchmark: pgbench -S through direct PostgreSQL, PgBouncer and tidepool side by side in one run,
// alternating the targets within every scenario; medians to bench/results/pooler.md.
// Usage: npm run build && npm run bench:pooler [-- --duration 10 --repeats 3 --clients 1,10,50,200 --quick]
// With --peers (BENCH_PEERS=1): the field comparison, also PgBouncer 1.25, Odyssey 1.5 and pgagroal 1.6 from
// BENCH_PEERS_DIR (default /opt/peers; the run stops with an error when one is missing), simple, extended and
// prepared at 10 and 50 clients, then -C at 10 clients with an md5 and with a SCRAM role (--reconnect-clients), 1 000
// clients of which 200 active (--idle-rows 1000:200) and client TLS, simple, 10 clients (--tls-clients: the poolers
// are restarted with TLS required for those rows, last), 8 s runs, 5 rounds; to bench/results/pooler-peers.md, or with
// --section NAME into a generated section of that name (a run of some rows only: the main tables stay).
// Env: BENCH_DURATION, BENCH_REPEATS, BENCH_WARMUP, BENCH_CLIENTS, BENCH_PREPARED_CLIENTS, BENCH_RECONNECT_CLIENTS,
// BENCH_TLS_CLIENTS, BENCH_IDLE_ROWS, BENCH_SECTION, BENCH_PROTOCOLS, BENCH_POOL_SIZE, BENCH_SCALE, BENCH_MAX_OTHER_LOAD, BENCH_RETRIES, BENCH_QUIET_WAIT, BENCH_OUT (each
// also a --flag of the same name in kebab case).
import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { RunningPostgres } from '../src/launcher/embedded-postgres.js';
import {
  MD5_USER,
  PGBENCH,
  SCRAM_USER,
  pgbenchCommand,
  scenarioUser,
  runPgbench,
  type PgbenchTarget,
  type RunningPgbench,
  type Scenario,
} from './pooler-pgbench.js';
import { RunSampler, clockTicks, otherLoad } from './pooler-cpu.js';
import {
  BENCH_AUTH,
  benchSecret,
  BENCH_DB,
  BENCH_PASSWORD,
  BENCH_SESSION_DB,
  BENCH_USER,
  createRole,
  createScramRole,
  ensurePeer,
  makeCert,
  pgBouncerTlsIni,
  tidepoolTlsToml,
  type ExtraUser,
  PEER_BINARIES,
  pgbenchInitArgs,
  startBenchPostgres,
  startOdyssey,
  startPgagroal,
  startPgBouncer,
  startPgBouncer125,
  startTidepool,
  type RunningPeer,
} from './pooler-peers.js';
import {
  PEER_TARGETS,
  TARGETS,
  median,
  renderPeersReport,
  renderReport,
  scenarioTitle,
  targetMode,
  targetRuns,
  type PeerLabels,
  type RunRecord,
  type TargetName,
} from './pooler-report.js';
import { rawLogin, type RawClient } from './raw-pg-client.js';
import { writeResults } from './results-file.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

if (process.argv.includes('--help') || process.argv.includes('-h')) {
  process.stdout.write(`Usage: node dist/bench/pooler.js [options]   (npm run bench:pooler -- [options])
pgbench -S through direct PostgreSQL, PgBouncer and tidepool side by side, targets alternated within every scenario;
medians to bench/results/pooler.md.
  --peers               the field: also PgBouncer 1.25, Odyssey 1.5 and pgagroal 1.6 from BENCH_PEERS_DIR (/opt/peers),
                        simple/extended/prepared, -C with md5 and SCRAM roles, 1 000 clients of which 200 active and
                        client TLS; to bench/results/pooler-peers.md
  --targets LIST        a subset of the targets (e.g. "PgBouncer 1.25,tidepool")
  --section NAME        write into a generated section of that name (the main tables stay)
  --duration S --repeats N --clients LIST --prepared-clients LIST --reconnect-clients LIST --tls-clients LIST
  --idle-rows TOTAL:ACTIVE,... --protocols LIST --pool-size N --scale N --warmup S --out FILE
                        (each also BENCH_<NAME> in the environment)
  --quick               short runs; --keep keeps the work directory
  --help                print this and exit
`);
  process.exit(0);
}
const QUICK = process.argv.includes('--quick') || process.env.BENCH_QUICK === '1';
const KEEP = process.argv.includes('--keep');
/** The field comparison: PgBouncer 1.25, Odyssey 1.5 and pgagroal 1.6 beside the usual three targets. */
const PEERS = process.argv.includes('--peers') || process.env.BENCH_PEERS === '1';
/** --targets (field comparison): a subset of the targets, e.g. "PgBouncer 1.25,tidepool" for a quick look. */
const ONLY = (() => {
  const i = process.argv.indexOf('--targets');
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1]!.split(',').map((t) => t.trim()) : null;
})();
const RUN_TARGETS: readonly TargetName[] = (PEERS ? PEER_TARGETS : TARGETS).filter((t) => !ONLY || ONLY.includes(t));

function opt(name: string, env: string, dflt: string, quick?: string): string {
  const i = process.argv.indexOf(`--${name}`);
  if (i >= 0 && process.argv[i + 1] !== undefined) return process.argv[i + 1]!;
  if (process.env[env]) return process.env[env]!;
  return QUICK && quick !== undefined ? quick : dflt;
}
const numList = (s: string) =>
  s
    .split(',')
    .map((x) => Number(x.trim()))
    .filter((x) => Number.isInteger(x) && x > 0);

const DURATION = Number(opt('duration', 'BENCH_DURATION', PEERS ? '8' : '10', '3'));
const REPEATS = Number(opt('repeats', 'BENCH_REPEATS', '5', '1'));
const WARMUP = Number(opt('warmup', 'BENCH_WARMUP', '3', '1'));
const CLIENTS = numList(opt('clients', 'BENCH_CLIENTS', PEERS ? '10,50' : '1,10,50,200', PEERS ? '10' : '1,10'));
/** Client counts of `--protocol prepared` (pgbench's named statements, which need the pooler's rewriting). */
const PREPARED_CLIENTS = numList(opt('prepared-clients', 'BENCH_PREPARED_CLIENTS', '10,50', '10'));
const PROTOCOLS = opt('protocols', 'BENCH_PROTOCOLS', 'simple,extended,prepared')
  .split(',')
  .map((p) => p.trim())
  .filter((p): p is Scenario['protocol'] => p === 'simple' || p === 'extended' || p === 'prepared');
const RECONNECT_CLIENTS = numList(
  opt('reconnect-clients', 'BENCH_RECONNECT_CLIENTS', PEERS ? '10' : '10,50', PEERS ? '' : '10'),
);
/** Field comparison: client counts of the client-TLS rows (simple protocol, every target restarted with TLS required). */
const TLS_CLIENTS = PEERS ? numList(opt('tls-clients', 'BENCH_TLS_CLIENTS', '10', '')) : [];
/** Field comparison: "connected:active" rows, e.g. 1000:200: the idle clients stay logged in beside pgbench's. */
const IDLE_ROWS = PEERS
  ? opt('idle-rows', 'BENCH_IDLE_ROWS', '1000:200', '')
      .split(',')
      .filter(Boolean)
      .map((x) => {
        const [connected, active] = x.split(':').map(Number);
        if (!connected || !active || active > connected) throw new Error(`--idle-rows: ${x} is not connected:active`);
        return { connected, active };
      })
  : [];
/** Writes the report into the generated section of this name instead of the file's main block. */
const SECTION = opt('section', 'BENCH_SECTION', '');
const MAX_OTHER_LOAD = Number(opt('max-other-load', 'BENCH_MAX_OTHER_LOAD', '0.5'));
const RETRIES = Number(opt('retries', 'BENCH_RETRIES', '1', '0'));
const QUIET_WAIT = Number(opt('quiet-wait', 'BENCH_QUIET_WAIT', '30', '0'));
const POOL_SIZE = Number(opt('pool-size', 'BENCH_POOL_SIZE', '20'));
const SCALE = Number(opt('scale', 'BENCH_SCALE', '10', '1'));
const OUT = path.resolve(
  opt(
    'out',
    'BENCH_OUT',
    path.join(ROOT, 'bench', 'results', PEERS ? 'pooler-peers.md' : 'pooler.md'),
    path.join(ROOT, 'bench', '.work', PEERS ? 'pooler-peers-quick.md' : 'pooler-quick.md'),
  ),
);

const progress = (msg: string) => process.stderr.write(`[${new Date().toISOString().slice(11, 19)}] ${msg}\n`);

// Everything started here, stopped by pid on the way out (normal end, error, Ctrl-C).
let pg: RunningPostgres | null = null;
const peers = new Map<TargetName, RunningPeer>();
let pgbench: RunningPgbench | null = null;
let workDir = '';
let cleaning: Promise<void> | null = null;
let interrupted = false;
let quietWaited = 0;

function cleanup(): Promise<void> {
  cleaning ??= (async () => {
    pgbench?.kill();
    for (const p of peers.values())
      await p.stop().catch((err: Error) => progress(`stopping ${p.name}: ${err.message}`));
    peers.clear();
    if (pg) await pg.stop().catch((err: Error) => progress(`stopping PostgreSQL: ${err.message}`));
    if (workDir && !KEEP) rmSync(workDir, { recursive: true, force: true });
  })();
  return cleaning;
}

function killLeftovers(): void {
  const pids = [pgbench?.pid, ...[...peers.values()].map((p) => p.pid), pg?.pid];
  for (const pid of pids) {
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

function scenarios(): Scenario[] {
  const list: Scenario[] = [];
  if (PEERS) {
    // Client count first, so that a run cut short has whole rows of the smaller count.
    for (const clients of [...new Set([...CLIENTS, ...PREPARED_CLIENTS])].sort((a, b) => a - b)) {
      for (const protocol of PROTOCOLS) {
        if ((protocol === 'prepared' ? PREPARED_CLIENTS : CLIENTS).includes(clients))
          list.push({ key: `${protocol}-c${clients}`, protocol, clients, reconnect: false });
      }
    }
    // -C: a login per transaction, as a role with an md5 secret and as one with a SCRAM secret, every pooler holding
    // the role's secret (pgagroal its password, which its vault needs).
    if (PROTOCOLS.includes('simple')) {
      for (const clients of RECONNECT_CLIENTS) {
        list.push({ key: `simple-C-c${clients}-md5`, protocol: 'simple', clients, reconnect: true, md5: true });
        list.push({ key: `simple-C-c${clients}-scram`, protocol: 'simple', clients, reconnect: true, scram: true });
      }
      for (const { connected, active } of IDLE_ROWS)
        list.push({
          key: `simple-c${active}-of${connected}`,
          protocol: 'simple',
          clients: active,
          idle: connected - active,
          reconnect: false,
        });
      // Last: the targets are restarted with client TLS required before these rows.
      for (const clients of TLS_CLIENTS)
        list.push({ key: `simple-tls-c${clients}`, protocol: 'simple', clients, reconnect: false, tls: true });
    }
    return list;
  }
  for (const protocol of PROTOCOLS) {
    for (const clients of protocol === 'prepared' ? PREPARED_CLIENTS : CLIENTS)
      list.push({ key: `${protocol}-c${clients}`, protocol, clients, reconnect: false });
  }
  if (PROTOCOLS.includes('simple'))
    for (const clients of RECONNECT_CLIENTS)
      list.push({ key: `simple-C-c${clients}`, protocol: 'simple', clients, reconnect: true });
  // Issue 10's login target is SCRAM: under md5 the -C rows run once more as a role with a SCRAM secret.
  if (PROTOCOLS.includes('simple') && BENCH_AUTH === 'md5') {
    for (const clients of RECONNECT_CLIENTS)
      list.push({ key: `simple-C-c${clients}-scram`, protocol: 'simple', clients, reconnect: true, scram: true });
  }
  return list;
}

function versionOf(cmd: string, args: string[]): string {
  const r = spawnSync(cmd, args, { encoding: 'utf8' });
  return (r.stdout || r.stderr || '?').split('\n')[0]!.trim();
}

/** The SCRAM role of the `-C, SCRAM` rows, when the run has them. */
let scramUser: { name: string; secret: string } | null = null;
/** The field comparison's extra roles (md5 and SCRAM secrets) every pooler holds. */
let extraUsers: ExtraUser[] = [];
/** Set once the run reaches its client-TLS rows: the poolers restart with TLS required (and PostgreSQL gets ssl on). */
let tlsCert: { cert: string; key: string } | null = null;

async function startPeer(name: TargetName): Promise<RunningPeer> {
  const common = {
    serverHost: pg!.host,
    serverPort: pg!.port,
    poolSize: POOL_SIZE,
    secret: benchSecret((q) => pg!.sql(q)),
    extraUsers: PEERS ? extraUsers : scramUser ? [scramUser] : [],
    maxClients: Math.max(2000, ...IDLE_ROWS.map((r) => r.connected + 100)),
    ...(tlsCert ? { tls: tlsCert } : {}),
  };
  const sessionPoolSize = Math.max(1, ...PREPARED_CLIENTS);
  let peer: RunningPeer;
  switch (name) {
    case 'PgBouncer':
      peer = await startPgBouncer({
        ...common,
        sessionPoolSize,
        dir: path.join(workDir, tlsCert ? 'pgbouncer-tls' : 'pgbouncer'),
        progress,
        ...(tlsCert ? { extraIni: pgBouncerTlsIni(tlsCert) } : {}),
      });
      break;
    case 'PgBouncer 1.25':
      peer = await startPgBouncer125({
        ...common,
        sessionPoolSize,
        dir: path.join(workDir, tlsCert ? 'pgbouncer-1.25-tls' : 'pgbouncer-1.25'),
        progress,
      });
      break;
    case 'Odyssey':
      peer = await startOdyssey({ ...common, dir: path.join(workDir, tlsCert ? 'odyssey-tls' : 'odyssey'), progress });
      break;
    case 'pgagroal':
      peer = await startPgagroal({
        ...common,
        dir: path.join(workDir, tlsCert ? 'pgagroal-tls' : 'pgagroal'),
        progress,
      });
      break;
    case 'tidepool':
      peer = await startTidepool({
        ...common,
        dir: path.join(workDir, tlsCert ? 'tidepool-tls' : 'tidepool'),
        root: ROOT,
        // The same client cap as the C poolers' (max_client_conn): tidepool's default, 10 000, is exactly the
        // --idle-rows 10000:100 row's clients, with none to spare for a closing one.
        generalToml: `max_connections = ${common.maxClients}\n${tlsCert ? tidepoolTlsToml(tlsCert) : ''}`,
      });
      break;
    default:
      throw new Error(`no peer ${name}`);
  }
  peers.set(name, peer);
  progress(`${peer.name} ${peer.version} listening on ${peer.host}:${peer.port} (pid ${peer.pid})`);
  return peer;
}

/** The target's address; PgBouncer's session-mode alias for a scenario it cannot run in transaction mode. */
function targetOf(name: TargetName, s?: Scenario): PgbenchTarget {
  const p = name === 'direct' ? { host: pg!.host, port: pg!.port } : peers.get(name)!;
  const database = s && targetMode(name, s) === 'session' ? BENCH_SESSION_DB : BENCH_DB;
  return {
    host: p.host,
    port: p.port,
    user: s ? scenarioUser(s, BENCH_USER) : BENCH_USER,
    password: BENCH_PASSWORD,
    database,
  };
}

/** Waits (up to QUIET_WAIT seconds) until other work on the machine takes at most MAX_OTHER_LOAD cores. */
async function waitQuiet(ticks: number): Promise<number> {
  const t0 = Date.now();
  let load = await otherLoad(500, ticks);
  while (load > MAX_OTHER_LOAD && Date.now() - t0 < QUIET_WAIT * 1000 && !interrupted)
    load = await otherLoad(1000, ticks);
  return (Date.now() - t0) / 1000;
}

async function measure(
  s: Scenario,
  target: TargetName,
  rep: number,
  notes: string[],
  ticks: number,
  logDir: string,
): Promise<RunRecord> {
  if (QUIET_WAIT > 0) quietWaited += await waitQuiet(ticks);
  const peer = target === 'direct' ? null : peers.get(target)!;
  if (peer && (peer.child.exitCode !== null || peer.child.signalCode !== null)) {
    const tail = readFileSync(peer.logFile, 'utf8').slice(-1500);
    notes.push(
      `${peer.name} exited (${peer.child.exitCode ?? peer.child.signalCode}) before ${scenarioTitle(s)} run ${rep + 1}; restarted. Log tail: ${tail.replace(/\s+/g, ' ')}`,
    );
    progress(`${peer.name} died; restarting`);
    await startPeer(target);
  }
  const live = target === 'direct' ? null : peers.get(target)!;
  const idle = s.idle ? await openIdle(targetOf(target, s), s.idle) : [];
  try {
    const sampler = new RunSampler(live ? live.pid : null, ticks, live?.cpuTree ?? false);
    sampler.start();
    pgbench = runPgbench(s, targetOf(target, s), DURATION, logDir, `${s.key}-${target}-${rep}`);
    const r = await pgbench.done;
    pgbench = null;
    return { ...r, scenario: s.key, target, repeat: rep, ...sampler.stop() };
  } finally {
    for (const c of idle) c.end();
  }
}

/** `n` clients logged in (md5, 50 at a time) and left idle; they leave when the run is over. */
async function openIdle(t: PgbenchTarget, n: number): Promise<RawClient[]> {
  const clients: RawClient[] = [];
  try {
    while (clients.length < n) {
      const batch = Math.min(50, n - clients.length);
      clients.push(
        ...(await Promise.all(
          Array.from({ length: batch }, () => rawLogin(t.port, BENCH_USER, t.password, t.database, t.host)),
        )),
      );
    }
  } catch (err) {
    for (const c of clients) c.end();
    throw new Error(`opening ${n} idle clients on port ${t.port}: ${(err as Error).message}`);
  }
  return clients;
}

/** Before the client-TLS rows: a certificate, ssl on in PostgreSQL (reloaded), every pooler restarted with client TLS
 * required, and a warm-up of each over TLS. */
async function switchToTls(logDir: string, notes: string[]): Promise<void> {
  tlsCert = makeCert(path.join(workDir, 'certs'));
  const owner = statSync(pg!.dataDir);
  for (const f of ['server.crt', 'server.key']) {
    const to = path.join(pg!.dataDir, `bench-${f}`);
    copyFileSync(path.join(workDir, 'certs', f), to);
    chmodSync(to, 0o600);
    if (process.getuid?.() === 0) chownSync(to, owner.uid, owner.gid);
  }
  for (const set of ["ssl_cert_file = 'bench-server.crt'", "ssl_key_file = 'bench-server.key'", 'ssl = on'])
    pg!.sql(`ALTER SYSTEM SET ${set}`);
  pg!.sql('SELECT pg_reload_conf()');
  for (const name of [...peers.keys()]) {
    progress(`restarting ${name} with client TLS required`);
    await peers.get(name)!.stop();
    peers.delete(name);
    await startPeer(name);
  }
  for (const t of RUN_TARGETS) {
    if (interrupted) throw new Error('interrupted');
    pgbench = runPgbench(
      { key: 'warmup-tls', protocol: 'simple', clients: 10, reconnect: false, tls: true },
      targetOf(t),
      WARMUP,
      logDir,
      'warmup',
    );
    const r = await pgbench.done;
    pgbench = null;
    if (!r.ok) notes.push(`TLS warm-up against ${t} failed: ${r.error}`);
  }
}

async function main(): Promise<void> {
  if (process.platform !== 'linux') throw new Error('the pooler benchmark reads /proc: Linux only');
  workDir = mkdtempSync(path.join(os.tmpdir(), 'tidepool-bench-pooler-'));
  const ticks = clockTicks();
  const notes: string[] = [];
  const load0 = os.loadavg();
  progress(
    `work dir ${workDir}; ${DURATION} s runs, ${REPEATS} repeats, protocols ${PROTOCOLS.join(',')}, clients ${CLIENTS.join(',')}, prepared clients ${PREPARED_CLIENTS.join(',')}, -C clients ${RECONNECT_CLIENTS.join(',')}, pool_size ${POOL_SIZE}, scale ${SCALE}${QUICK ? ' (quick mode)' : ''}`,
  );

  // Room for every pool at once: PgBouncer's two (and PgBouncer 1.25's), every other pooler's, and the direct run's clients.
  const pooled = RUN_TARGETS.filter((t) => t !== 'direct').length;
  // The field comparison's poolers hold three roles (bench, md5, SCRAM), a pool of POOL_SIZE each; the direct run
  // of a 1 000-client row has all of them on PostgreSQL.
  const maxConnections = Math.max(
    300,
    (pooled + 1) * POOL_SIZE * (PEERS && RECONNECT_CLIENTS.length ? 3 : 1) +
      (PEERS ? 2 : 1) * Math.max(0, ...PREPARED_CLIENTS) +
      Math.max(0, ...CLIENTS, ...RECONNECT_CLIENTS, ...IDLE_ROWS.map((r) => r.connected)) +
      20,
  );
  // A missing peer stops the run here, before PostgreSQL is loaded: the field comparison never skips one silently.
  if (PEERS)
    for (const name of Object.keys(PEER_BINARIES) as (keyof typeof PEER_BINARIES)[]) ensurePeer(name, progress);
  pg = await startBenchPostgres(workDir, { maxConnections, scale: SCALE, progress });
  const pgVersion = pg.sql('SHOW server_version');
  if (PEERS && scenarios().some((x) => x.scram || x.md5))
    extraUsers = [
      createRole((q, db) => pg!.sql(q, db), MD5_USER, 'md5'),
      createRole((q, db) => pg!.sql(q, db), SCRAM_USER, 'scram-sha-256'),
    ];
  else if (scenarios().some((x) => x.scram)) scramUser = createScramRole((q, db) => pg!.sql(q, db), SCRAM_USER);

  for (const t of RUN_TARGETS) if (t !== 'direct') await startPeer(t);
  const labels: PeerLabels = {};
  const shortVersion = (t: TargetName) => /(\d+\.\d+)(\.\d+)?/.exec(peers.get(t)?.version ?? '')?.[1] ?? '';
  for (const t of ['PgBouncer', 'Odyssey', 'pgagroal'] as const)
    if (peers.has(t)) labels[t] = `${t} ${shortVersion(t)}`;
  if (peers.has('PgBouncer 1.25')) labels['PgBouncer 1.25'] = `PgBouncer ${shortVersion('PgBouncer 1.25')}`;

  const { nativeLoaded } = await import('../src/native/index.js');
  const cpuModel = os.cpus()[0]?.model ?? '?';
  const head = versionOf('git', ['-C', ROOT, 'rev-parse', '--short', 'HEAD']);
  const dirty = spawnSync(
    'git',
    ['-C', ROOT, 'status', '--porcelain', '--', 'src/pooler', 'src/protocol', 'src/native', 'native'],
    { encoding: 'utf8' },
  ).stdout.trim();
  const peerVersions = RUN_TARGETS.filter((t) => t !== 'direct' && t !== 'tidepool')
    .map(
      (t) =>
        `${peers.get(t)!.version}${t === 'PgBouncer' ? ' (Debian)' : ` (${path.dirname(path.dirname(PEER_BINARIES[t as keyof typeof PEER_BINARIES].bin))})`}`,
    )
    .join('; ');
  const machine = `${os.cpus().length} CPU (${cpuModel}), ${Math.round(os.totalmem() / 2 ** 30)} GiB RAM, ${os.release()}; Node ${process.version}; PostgreSQL ${pgVersion}; ${versionOf(PGBENCH, ['--version'])}; ${peerVersions}; tidepool ${peers.get('tidepool')!.version} at ${head}${dirty ? ' plus uncommitted pooler changes in the work tree' : ''} (native addon ${nativeLoaded ? 'loaded' : 'not built: TypeScript twins'}); load average at start ${load0.map((x) => x.toFixed(2)).join(' ')}`;

  const logDir = path.join(workDir, 'pgbench');
  mkdirSync(logDir, { recursive: true });
  if (WARMUP > 0) {
    // Each role's pool too (the md5 and SCRAM roles of the -C rows), so no row pays for opening its servers.
    const roles: Scenario[] = [
      { key: 'warmup', protocol: 'simple', clients: 10, reconnect: false },
      ...(extraUsers.length
        ? [
            { key: 'warmup', protocol: 'simple' as const, clients: 10, reconnect: false, md5: true },
            { key: 'warmup', protocol: 'simple' as const, clients: 10, reconnect: false, scram: true },
          ]
        : []),
    ];
    for (const t of RUN_TARGETS) {
      for (const w of roles) {
        if (interrupted) throw new Error('interrupted');
        progress(`warm-up ${t}: simple, 10 clients as ${scenarioUser(w, BENCH_USER)}, ${WARMUP} s`);
        pgbench = runPgbench(w, targetOf(t, w), WARMUP, logDir, 'warmup');
        const r = await pgbench.done;
        if (!r.ok) notes.push(`Warm-up against ${t} as ${scenarioUser(w, BENCH_USER)} failed: ${r.error}`);
      }
    }
  }

  const list = scenarios();
  const records: RunRecord[] = [];
  const total = list.reduce((a, s) => a + RUN_TARGETS.filter((t) => targetRuns(t, s)).length, 0) * REPEATS;
  let n = 0;
  const t0 = Date.now();
  let retried = 0;
  const configs = PEERS
    ? RUN_TARGETS.filter((t) => t !== 'direct' && t !== 'tidepool').flatMap((t) =>
        (peers.get(t)!.configFiles ?? []).flatMap((c) => [
          '',
          `# ${c.how}`,
          ...readFileSync(c.file, 'utf8')
            .trim()
            .split('\n')
            .map((l) => l.replaceAll(workDir, '$WORK')),
        ]),
      )
    : [
        '',
        '# pgbouncer.ini (run as nobody: pgbouncer pgbouncer.ini)',
        ...readFileSync(path.join(workDir, 'pgbouncer', 'pgbouncer.ini'), 'utf8')
          .trim()
          .split('\n')
          .map((l) => l.replace(workDir, '$WORK')),
      ];
  const flags = [
    QUICK ? '--quick' : '',
    PEERS ? '--peers' : '',
    ...(PEERS
      ? [
          `--clients "${CLIENTS.join(',')}"`,
          `--prepared-clients "${PREPARED_CLIENTS.join(',')}"`,
          `--reconnect-clients "${RECONNECT_CLIENTS.join(',')}"`,
          `--idle-rows "${IDLE_ROWS.map((r) => `${r.connected}:${r.active}`).join(',')}"`,
          `--tls-clients "${TLS_CLIENTS.join(',')}"`,
          `--protocols ${PROTOCOLS.join(',')}`,
        ]
      : []),
    SECTION ? `--section ${SECTION}` : '',
  ]
    .filter(Boolean)
    .join(' ');
  const commands = [
    `npm run build && ${flags ? `npm run bench:pooler -- ${flags}` : 'npm run bench:pooler'}   # BENCH_AUTH=${BENCH_AUTH} BENCH_DURATION=${DURATION} BENCH_REPEATS=${REPEATS} BENCH_WARMUP=${WARMUP} BENCH_POOL_SIZE=${POOL_SIZE} BENCH_SCALE=${SCALE} BENCH_MAX_OTHER_LOAD=${MAX_OTHER_LOAD} BENCH_RETRIES=${RETRIES} BENCH_QUIET_WAIT=${QUIET_WAIT}`,
    `pgbench ${pgbenchInitArgs(pg.host, '$PG_PORT', SCALE).join(' ')}`,
    ...list.map((s) => pgbenchCommand(s, DURATION)),
    `# $PORT: PostgreSQL, ${RUN_TARGETS.filter((t) => t !== 'direct').join(', ')}; PGPASSWORD set; -j is min(2, clients)`,
    ...configs,
    '',
    '# pooler.toml (node bin/tidepool.js pooler --config pooler.toml)',
    ...readFileSync(path.join(workDir, 'tidepool', 'pooler.toml'), 'utf8')
      .trim()
      .split('\n'),
  ];
  const settings = `pgbench -S -n -j min(2, clients), ${DURATION} s per run, ${REPEATS} repeat${REPEATS === 1 ? '' : 's'} per scenario and target (order rotated every repeat), medians quoted; a ${WARMUP} s warm-up per target first. Both poolers in transaction mode with pool size ${POOL_SIZE} (tidepool with its default \`prepared_statements = true\`), except PgBouncer under \`--protocol prepared\`: PgBouncer 1.18 cannot keep protocol-level prepared statements in transaction mode, so those rows run it in session mode (one server connection per client, pool size ${Math.max(1, ...PREPARED_CLIENTS)}), marked "(session mode)". ${BENCH_AUTH} client auth (the role's secret is ${BENCH_AUTH} so direct connections pay the same${BENCH_AUTH === 'md5' ? `; the rows marked SCRAM-SHA-256 log in as ${SCRAM_USER}, a role with a SCRAM secret, which both poolers and PostgreSQL then authenticate with SCRAM` : ''}), all on 127.0.0.1 on one machine with PostgreSQL (max_connections ${maxConnections}, shared_buffers 256MB, fsync off) and pgbench sharing the cores; pgbench_accounts at scale ${SCALE}. Latency p50/p99: per-transaction latencies from pgbench \`--log\` (all transactions of a run; with -C they include the connection and login), median over the repeats.`;
  const peersSettings = `pgbench -S -n -j min(2, clients), ${DURATION} s per run, ${REPEATS} round${REPEATS === 1 ? '' : 's'}: every round runs each target once, the order rotated from round to round, medians quoted; a ${WARMUP} s warm-up per target first. Every pooler in transaction mode with ${POOL_SIZE} server connections per user: PgBouncer 1.25 with \`max_prepared_statements = 200\`, Odyssey with \`workers 2\` and \`pool_reserve_prepared_statement yes\`, pgagroal with its transaction pipeline (prefilled; it cannot keep prepared statements, so it does not run the \`prepared\` rows), tidepool with its default \`prepared_statements = true\`; PgBouncer 1.18 runs \`prepared\` in session mode (pool size ${Math.max(1, ...PREPARED_CLIENTS)}). ${BENCH_AUTH} client auth for every target with the bench role's password (the role's secret is ${BENCH_AUTH}, so direct connections pay the same${BENCH_AUTH === 'scram-sha-256' ? "; both PgBouncers, Odyssey and tidepool are given the role's SCRAM secret, pgagroal the password in its vault, which is all it takes" : ''}).${extraUsers.length ? ` The -C rows (a connection and login per transaction) log in as ${MD5_USER}, a role with an md5 secret, or as ${SCRAM_USER}, one with a SCRAM-SHA-256 secret; both PgBouncers, Odyssey and tidepool hold that secret as PostgreSQL stores it (pg_authid), pgagroal the password in its vault (it has no other way), and PostgreSQL authenticates the server logins with the same method.` : ''}${IDLE_ROWS.length ? ' The "of N connected" rows log N - active clients in (md5, before each run) and leave them idle during the run beside pgbench\'s active clients; pgagroal does not run them (a process per client: with 200 pgbench clients on its 20 connections it answered 12-14 tps in the 200-client run, its waiting processes spinning on both cores).' : ''}${TLS_CLIENTS.length ? ' The TLS rows come last: PostgreSQL gets `ssl = on` (reloaded) and every pooler is restarted with client TLS required (PgBouncer `client_tls_sslmode = require`, Odyssey `tls "require"`, pgagroal `tls = on`, tidepool `client_tls_sslmode = "require"`), one self-signed RSA-2048 certificate for all, pgbench with PGSSLMODE=require (TLS 1.3, OpenSSL\'s default ciphers); the poolers talk to PostgreSQL without TLS.' : ''} All on 127.0.0.1 on one machine with PostgreSQL (max_connections ${maxConnections}, shared_buffers 256MB, fsync off) and pgbench sharing the cores; pgbench_accounts at scale ${SCALE}. The C poolers run as nobody.`;
  const write = () => {
    const ctx = {
      date: new Date().toISOString().slice(0, 10),
      machine,
      settings: PEERS ? peersSettings : settings,
      commands,
      notes,
    };
    // The results file keeps its other sections (TLS, logins, dated runs: results-file.ts).
    writeResults(
      OUT,
      PEERS ? renderPeersReport(ctx, list, records, labels, SECTION) : renderReport(ctx, list, records),
      SECTION || undefined,
    );
  };

  for (const [si, s] of list.entries()) {
    if (s.tls && !tlsCert) await switchToTls(logDir, notes);
    const targets = RUN_TARGETS.filter((t) => targetRuns(t, s));
    for (let rep = 0; rep < REPEATS; rep++) {
      const shift = (rep + si) % targets.length;
      const order = [...targets.slice(shift), ...targets.slice(0, shift)];
      for (const target of order) {
        if (interrupted) throw new Error('interrupted');
        n++;
        // A run during which other work took more than MAX_OTHER_LOAD cores is done again (up to RETRIES
        // times) and the quietest attempt kept; a failed run is kept as it is, never retried away.
        let kept: RunRecord | null = null;
        for (let attempt = 0; attempt <= RETRIES; attempt++) {
          if (interrupted) throw new Error('interrupted');
          if (attempt > 0) retried++;
          const rec = await measure(s, target, rep, notes, ticks, logDir);
          if (!kept || !rec.ok || rec.foreignCores < kept.foreignCores) kept = rec;
          const eta = Math.round((((Date.now() - t0) / n) * (total - n)) / 1000);
          progress(
            `[${n}/${total}] ${scenarioTitle(s)} #${rep + 1}${attempt ? ` (retry ${attempt})` : ''} ${target}: ${rec.ok ? `${Math.round(rec.tps)} tps, p50 ${rec.p50Ms.toFixed(3)} ms, p99 ${rec.p99Ms.toFixed(3)} ms` : 'FAILED'}${target !== 'direct' ? `, CPU ${rec.cpuPercent.toFixed(0)}%, RSS ${(rec.rssMax / 1048576).toFixed(0)} MiB` : ''}, other load ${rec.foreignCores.toFixed(2)} cores${rec.error ? ` (${rec.error})` : ''}; ~${eta} s left`,
          );
          if (!rec.ok || rec.foreignCores <= MAX_OTHER_LOAD) break;
        }
        records.push(kept!);
      }
    }
    write();
  }
  if (QUIET_WAIT > 0)
    notes.push(
      `Before each run the benchmark waited up to ${QUIET_WAIT} s (BENCH_QUIET_WAIT) for other work to drop to ${MAX_OTHER_LOAD} cores or less; it waited ${Math.round(quietWaited)} s in all.`,
    );
  if (RETRIES > 0)
    notes.push(
      `${retried} run${retried === 1 ? ' was' : 's were'} done again because other work took more than ${MAX_OTHER_LOAD} cores during it (BENCH_MAX_OTHER_LOAD, up to BENCH_RETRIES=${RETRIES} more attempts each; the attempt with the least other load is kept).`,
    );
  const noisy = list.filter(
    (s) => median(records.filter((r) => r.scenario === s.key).map((r) => r.foreignCores)) > MAX_OTHER_LOAD,
  );
  if (noisy.length)
    notes.push(
      `Other work took more than ${MAX_OTHER_LOAD} cores (median) during: ${noisy.map(scenarioTitle).join('; ')}. On a 2-core machine those rows measure the neighbours as much as the poolers: treat their ratios with care.`,
    );
  const load1 = os.loadavg();
  notes.push(
    `Load average at the end: ${load1.map((x) => x.toFixed(2)).join(' ')} (pgbench, PostgreSQL and the pooler share ${os.cpus().length} cores, so the poolers compete with their own load generator; 200 clients on ${os.cpus().length} cores mostly measures queueing).`,
  );
  write();
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
