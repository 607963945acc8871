// Test helper: writes a pooler config in a temporary directory and runs the pooler in this process or as a child.
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { spawn, type ChildProcess } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import pg from 'pg';
import { LogHub } from '../../src/shared/logger.js';
import { Pooler } from '../../src/pooler/pooler.js';
import type { TestPostgres } from './postgres.js';

export const ADMIN_PASSWORD = 'admin-secret-for-tests';

/** A connected admin console session (user admin, database tidepool) of the pooler listening on `port`. */
export async function adminClient(port: number): Promise<pg.Client> {
  const admin = new pg.Client({
    host: '127.0.0.1',
    port,
    user: 'admin',
    password: ADMIN_PASSWORD,
    database: 'tidepool',
  });
  await admin.connect();
  return admin;
}

export interface PoolerTomlOptions {
  general?: string;
  pools?: string;
  extra?: string;
}

/** Pool app (transaction mode) on the test PostgreSQL with users md5user and scramuser, `poolSize` (2) each. */
export function appPoolToml(pg: TestPostgres, poolSize = 2): string {
  return `
[pools.app]
server_host = "${pg.host}"
server_port = ${pg.port}

[[pools.app.users]]
username = "md5user"
password = "md5pass"
pool_size = ${poolSize}

[[pools.app.users]]
username = "scramuser"
password = "scrampass"
pool_size = ${poolSize}
`;
}

/** A [pools.<db>] section on the test PostgreSQL's database app with the given users (TOML of each user's table). */
export function poolToml(
  db: TestPostgres,
  name: string,
  poolLines: string,
  users: { username: string; password: string; extra?: string }[],
): string {
  return `
[pools.${name}]
server_host = "${db.host}"
server_port = ${db.port}
server_database = "app"
${poolLines}
${users
  .map(
    (u) => `
[[pools.${name}.users]]
username = "${u.username}"
password = "${u.password}"
${u.extra ?? ''}`,
  )
  .join('\n')}
`;
}

/** A config with pool app (md5user, scramuser) in transaction mode and appsession (md5user) in session mode. */
export function poolerToml(pg: TestPostgres, opts: PoolerTomlOptions = {}): string {
  return `
[general]
host = "127.0.0.1"
port = 0
admin_username = "admin"
admin_password = "${ADMIN_PASSWORD}"
log_level = "warn"
${opts.general ?? ''}

${
  opts.pools ??
  `${appPoolToml(pg)}
[pools.appsession]
server_host = "${pg.host}"
server_port = ${pg.port}
server_database = "app"
pool_mode = "session"

[[pools.appsession.users]]
username = "md5user"
password = "md5pass"
pool_size = 2
`
}
${opts.extra ?? ''}
`;
}

export interface TestPooler {
  pooler: Pooler;
  port: number;
  dir: string;
  configFile: string;
  logs: LogHub;
  logText(): string;
  writeConfig(toml: string): void;
  stop(): Promise<void>;
}

export async function startTestPooler(toml: string): Promise<TestPooler> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tidepool-pooler-'));
  const configFile = path.join(dir, 'pooler.toml');
  writeFileSync(configFile, toml);
  const lines: string[] = [];
  const out = new Writable({
    write(chunk: Buffer, _e, cb) {
      lines.push(chunk.toString());
      cb();
    },
  });
  const logs = new LogHub({ out });
  const pooler = await Pooler.start(configFile, logs);
  return {
    pooler,
    port: pooler.port,
    dir,
    configFile,
    logs,
    logText: () => lines.join(''),
    writeConfig: (t) => writeFileSync(configFile, t),
    async stop() {
      await pooler.shutdown(false);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface ChildPooler {
  child: ChildProcess;
  port: number;
  output(): string;
  stop(): Promise<number | null>;
}

/** Runs `tidepool pooler` as a child process (for signals and the CLI); `port` must be set in the TOML. `maxFds`: the
 * child's descriptor limit (ulimit -n, set by a shell that then execs node). */
export async function startChildPooler(
  configFile: string,
  port: number,
  env: NodeJS.ProcessEnv = {},
  opts: { maxFds?: number } = {},
): Promise<ChildPooler> {
  const bin = path.resolve('bin/tidepool.js');
  const args = [bin, 'pooler', '--config', configFile];
  const child = opts.maxFds
    ? spawn('bash', ['-c', `ulimit -n ${Math.floor(opts.maxFds)} && exec "$@"`, 'bash', process.execPath, ...args], {
        env: { ...process.env, ...env },
        stdio: ['ignore', 'pipe', 'pipe'],
      })
    : spawn(process.execPath, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => {
    out += d.toString();
  });
  child.stderr!.on('data', (d: Buffer) => {
    out += d.toString();
  });
  const deadline = Date.now() + 15_000;
  while (!/pooler listening/.test(out)) {
    if (child.exitCode !== null) throw new Error(`pooler exited ${child.exitCode}: ${out}`);
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`pooler did not start: ${out}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    child,
    port,
    output: () => out,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
      const done = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
      child.kill('SIGKILL');
      return done;
    },
  };
}
