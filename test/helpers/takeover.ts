// What the takeover tests (test/integration/pooler/takeover*.test.ts) share: a PostgreSQL and a temp dir per file,
// pooler processes started as the CLI starts them (their output gathered), the waits for a process to serve and for a
// takeover to be answered, pgbench, CancelRequests and the admin console.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { expect } from 'vitest';
import { freePort } from '../../src/launcher/embedded-postgres.js';
import { startTestPostgres, type TestPostgres } from './postgres.js';
import { adminClient, poolerToml } from './pooler.js';
import { until } from './operator.js';

export const tidepoolBin = path.resolve('bin/tidepool.js');

/** A pooler process: its output (stdout and stderr) so far, and its exit code once it exits. */
export interface PoolerProc {
  child: ChildProcess;
  output(): string;
  exited: Promise<number | null>;
}

/** operator.ts's `until`, with 30 s by default: a takeover starts a whole pooler process. */
export const waitFor = (what: string, cond: () => boolean, ms = 30_000): Promise<void> => until(what, cond, ms);

/** The exit code of `child`, now or when it exits. */
export function exitOf(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((r) => child.once('exit', (code) => r(code)));
}

/** The process `pid` still exists (or exists as a zombie not reaped yet). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}

export interface ConfigOptions {
  /** > 0: the web listener on this port. */
  webPort?: number;
  /** Lines added to [general] (shutdown_timeout is 20s unless given here). */
  general?: string;
  /** The [pools] section (poolerToml's pools by default: app in transaction mode, appsession in session mode). */
  pools?: string;
  extra?: string;
}

/** One test file's PostgreSQL, temp dir and child processes: `start` in beforeAll, `stop` in afterAll. */
export class TakeoverBed {
  db!: TestPostgres;
  dir = '';
  readonly children: ChildProcess[] = [];

  constructor(private readonly name: string) {}

  async start(settings: Record<string, string | number> = {}): Promise<void> {
    this.db = await startTestPostgres(settings);
    this.dir = mkdtempSync(path.join(os.tmpdir(), `tp-${this.name}-`));
  }

  /** Every child still running is killed (a failed test may leave one), then PostgreSQL and the temp dir go. */
  async stop(): Promise<void> {
    for (const c of this.children) {
      if (c.exitCode === null && c.signalCode === null) {
        const gone = new Promise((r) => c.once('exit', r));
        c.kill('SIGKILL');
        await gone;
      }
    }
    await this.db?.cleanup();
    if (this.dir) rmSync(this.dir, { recursive: true, force: true });
  }

  /** A pooler config file `<name>.toml` on a free port, logging at info (the tests read the log lines). */
  async writeConfig(name: string, o: ConfigOptions = {}): Promise<{ file: string; port: number }> {
    const port = await freePort();
    const file = path.join(this.dir, `${name}.toml`);
    const web = o.webPort ? `[web]\nenabled = true\nhost = "127.0.0.1"\nport = ${o.webPort}\n` : '';
    const general = /shutdown_timeout/.test(o.general ?? '')
      ? o.general!
      : `shutdown_timeout = "20s"\n${o.general ?? ''}`;
    const toml = poolerToml(this.db, {
      general,
      extra: `${web}${o.extra ?? ''}`,
      ...(o.pools ? { pools: o.pools } : {}),
    })
      .replace('port = 0', `port = ${port}`)
      .replace('log_level = "warn"', 'log_level = "info"');
    writeFileSync(file, toml);
    return { file, port };
  }

  /** `tidepool pooler --config file` (with `--takeover`), its output gathered. */
  spawn(file: string, takeover: boolean, env: NodeJS.ProcessEnv = process.env): PoolerProc {
    const args = [tidepoolBin, 'pooler', '--config', file];
    if (takeover) args.push('--takeover');
    const child = spawn(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    this.children.push(child);
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
    });
    child.stderr!.on('data', (d: Buffer) => {
      out += d.toString();
    });
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    return { child, output: () => out, exited };
  }

  /** The first process, once it answers on its takeover socket (a takeover may follow at once). */
  async startFirst(file: string): Promise<PoolerProc> {
    const p = this.spawn(file, false);
    await waitFor(
      'the pooler to listen',
      () => /takeover socket listening/.test(p.output()) || p.child.exitCode !== null,
    );
    expect(p.child.exitCode, p.output()).toBeNull();
    return p;
  }

  /** A takeover: the new process serves on the inherited sockets, with its own takeover socket open (a takeover of it
   * may follow at once); the old one exits once its clients have moved. */
  async takeOver(file: string, env?: NodeJS.ProcessEnv): Promise<PoolerProc> {
    const next = this.spawn(file, true, env);
    await waitFor(
      'the new process to serve',
      () =>
        (/serving on the inherited sockets/.test(next.output()) && /takeover socket listening/.test(next.output())) ||
        next.child.exitCode !== null,
    );
    expect(next.child.exitCode, next.output()).toBeNull();
    return next;
  }

  /** pgbench on `port` as md5user on database app for `seconds`: its exit code and whole output. */
  pgbench(
    port: number,
    o: { mode: string; clients: number; seconds: number; script?: string },
  ): Promise<{ code: number | null; out: string }> {
    const script = path.join(this.dir, `bench-${o.mode}-${o.clients}.sql`);
    writeFileSync(script, o.script ?? '\\set x random(1, 1000)\nselect :x as x;\nselect now();\n');
    const args = ['-n', '-f', script, '-M', o.mode, '-c', String(o.clients), '-j', '2', '-T', String(o.seconds)];
    args.push('-h', '127.0.0.1', '-p', String(port), '-U', 'md5user', 'app');
    return new Promise((resolve) => {
      const child = execFile(
        'pgbench',
        args,
        { env: { ...process.env, PGPASSWORD: 'md5pass' }, maxBuffer: 64 * 1024 * 1024 },
        (err, stdout, stderr) =>
          resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, out: stdout + stderr }),
      );
      this.children.push(child);
    });
  }

  /** Waits until PostgreSQL runs `query` (state active): a CancelRequest sent then finds it running. */
  running(query: string): Promise<void> {
    return waitFor(
      `${query} to run`,
      () =>
        this.db
          .sql(`select count(*) from pg_stat_activity where query = '${query}' and state = 'active'`, 'app')
          .trim() === '1',
    );
  }
}

/** node-postgres as md5user on database app (or `database`) through the pooler on `port`. */
export function pgClient(port: number, database = 'app'): pg.Client {
  return new pg.Client({
    host: '127.0.0.1',
    port,
    user: 'md5user',
    password: 'md5pass',
    database,
    connectionTimeoutMillis: 20_000,
  });
}

/** The client side's port of a node-postgres connection (SHOW CLIENTS lists it as 127.0.0.1:port). */
export function localPort(c: pg.Client): number {
  return (c as unknown as { connection: { stream: net.Socket } }).connection.stream.localPort!;
}

/** A SHOW command on the admin console of whichever process accepts on `port` now. */
export async function adminShow(port: number, what: string): Promise<Record<string, unknown>[]> {
  const admin = await adminClient(port);
  try {
    return (await admin.query(`SHOW ${what}`)).rows as Record<string, unknown>[];
  } finally {
    await admin.end();
  }
}

/** SHOW CLIENTS of whichever process accepts on `port` now. */
export async function showClients(port: number): Promise<{ addr: string; state: string }[]> {
  return (await adminShow(port, 'CLIENTS')) as unknown as { addr: string; state: string }[];
}

/** A CancelRequest with `pid` and `secret`, on a new connection to `port`. */
export function sendCancel(port: number, pid: number, secret: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1', () => {
      const b = Buffer.alloc(16);
      b.writeInt32BE(16, 0);
      b.writeInt32BE(80877102, 4);
      b.writeInt32BE(pid, 8);
      b.writeInt32BE(secret, 12);
      s.end(b);
    });
    s.on('close', () => resolve());
    s.on('error', reject);
  });
}

/** The BackendKeyData a node-postgres client was given. */
export function keyOf(c: pg.Client): { pid: number; secret: number } {
  const k = c as unknown as { processID: number; secretKey: number };
  return { pid: k.processID, secret: k.secretKey };
}
