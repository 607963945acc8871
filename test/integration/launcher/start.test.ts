// `tidepool start` (npm start): PostgreSQL, the pooler with its console and the log store all answer; Ctrl-C, SIGTERM or a dead service stop everything, leaving no process behind.
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePorts } from '../../../src/launcher/embedded-postgres.js';

const BIN = path.resolve('bin/tidepool.js');
let home: string;
const started: number[] = [];

interface Launch {
  child: ChildProcess;
  out: () => string;
  ports: Record<string, number>;
}

async function launch(): Promise<Launch> {
  // Eight distinct ports (freePort() one after another can give the same one twice).
  const names = [
    'TIDEPOOL_PORT',
    'TIDEPOOL_WEB_PORT',
    'TIDEPOOL_LOGSTORE_PORT',
    'TIDEPOOL_LOGSTORE_GRPC_PORT',
    'TIDEPOOL_LOGSTORE_DEBUG_PORT',
    'TIDEPOOL_UI_PORT',
    'TIDEPOOL_UI_GRPC_PORT',
    'TIDEPOOL_UI_DEBUG_PORT',
  ] as const;
  const free = await freePorts(names.length);
  const ports = Object.fromEntries(names.map((n, i) => [n, free[i]!])) as Record<(typeof names)[number], number>;
  const env = {
    ...process.env,
    TIDEPOOL_HOME: home,
    ...Object.fromEntries(Object.entries(ports).map(([k, v]) => [k, String(v)])),
  };
  // detached: its own process group, as a terminal gives a foreground job, so a Ctrl-C can be sent to the whole group.
  const child = spawn(process.execPath, [BIN, 'start'], { env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  started.push(child.pid!);
  let out = '';
  child.stdout!.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr!.on('data', (b: Buffer) => (out += b.toString()));
  const deadline = Date.now() + 90_000;
  while (!out.includes('tidepool is running')) {
    if (child.exitCode !== null) throw new Error(`tidepool start exited with ${child.exitCode}:\n${out}`);
    if (Date.now() > deadline) throw new Error(`tidepool start printed no address block in 90 s:\n${out}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return { child, out: () => out, ports };
}

/** Every live process below `pid` (zombies count as gone). */
function descendants(pid: number): number[] {
  const parent = new Map<number, number>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (fields[0] !== 'Z') parent.set(Number(name), Number(fields[1]));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err; // the process ended while we read
    }
  }
  const out: number[] = [];
  const walk = (p: number) => {
    for (const [child, pp] of parent) if (pp === p) (out.push(child), walk(child));
  };
  walk(pid);
  return out;
}

function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

async function exited(child: ChildProcess, ms = 40_000): Promise<number | null> {
  if (child.exitCode !== null) return child.exitCode;
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`tidepool start still running ${ms} ms after the signal`)), ms);
    child.once('exit', (code) => (clearTimeout(t), resolve(code)));
  });
}

const credentials = () =>
  JSON.parse(readFileSync(path.join(home, 'credentials.json'), 'utf8')) as {
    appPassword: string;
    adminPassword: string;
  };

beforeAll(() => {
  home = mkdtempSync(path.join(os.tmpdir(), 'tidepool-start-'));
  chmodSync(home, 0o755); // postgres runs as nobody under root and must reach its data below this directory
});
afterAll(() => {
  for (const pid of started) {
    for (const p of [...descendants(pid), pid]) if (alive(p)) process.kill(p, 'SIGKILL');
  }
  rmSync(home, { recursive: true, force: true });
});

describe('tidepool start (npm start)', () => {
  it('starts PostgreSQL, the pooler, its console, the log store and the log explorer; Ctrl-C on the terminal stops them all', async () => {
    const { child, out, ports } = await launch();
    expect(out()).toMatch(/pooler +PGPASSWORD='.+' psql -h 127\.0\.0\.1 -p \d+ -U app app/);
    expect(out()).toContain(`log store        http://127.0.0.1:${ports.TIDEPOOL_LOGSTORE_PORT}`);
    expect(out()).toContain(`web console      http://127.0.0.1:${ports.TIDEPOOL_WEB_PORT}/`);

    const client = new pg.Client({
      host: '127.0.0.1',
      port: ports.TIDEPOOL_PORT,
      user: 'app',
      database: 'app',
      password: credentials().appPassword,
    });
    await client.connect();
    expect((await client.query('select current_user as u')).rows).toEqual([{ u: 'app' }]);
    await client.end();

    const metrics = await fetch(`http://127.0.0.1:${ports.TIDEPOOL_WEB_PORT}/metrics`);
    expect(metrics.status).toBe(200);
    expect(await metrics.text()).toContain('pooler_web_requests_total');

    const logstore = `http://127.0.0.1:${ports.TIDEPOOL_LOGSTORE_PORT}`;
    const bulk = await fetch(`${logstore}/_bulk`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-ndjson' },
      body: `{"index":{}}\n{"service":"start-test","message":"hello from the launcher test"}\n`,
    });
    expect(bulk.status).toBe(200);
    expect(((await bulk.json()) as { errors: boolean }).errors).toBe(false);
    const search = await fetch(`${logstore}/search`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        query: {
          query: 'service:start-test',
          from: new Date(Date.now() - 3_600_000).toISOString(),
          to: new Date(Date.now() + 60_000).toISOString(),
        },
        size: 10,
      }),
    });
    expect(search.status).toBe(200);
    expect(JSON.stringify(await search.json())).toContain('hello from the launcher test');

    // The log explorer's UI backend, over the log store's gRPC API.
    const explorer = `http://127.0.0.1:${ports.TIDEPOOL_UI_PORT}`;
    expect(out()).toContain(
      `log explorer     ${explorer}/  (API ${explorer}/api/v1, gRPC 127.0.0.1:${ports.TIDEPOOL_UI_GRPC_PORT}, debug http://127.0.0.1:${ports.TIDEPOOL_UI_DEBUG_PORT}/metrics)`,
    );
    const uiSearch = await fetch(`${explorer}/api/v1/search`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        query: 'service:start-test',
        from: new Date(Date.now() - 3_600_000).toISOString(),
        to: new Date(Date.now() + 60_000).toISOString(),
        limit: 5,
      }),
    });
    expect(uiSearch.status).toBe(200);
    expect(((await uiSearch.json()) as { events: { data: { message: string } }[] }).events[0]!.data.message).toBe(
      'hello from the launcher test',
    );
    expect((await fetch(`${explorer}/`)).headers.get('content-type')).toContain('text/html');

    // The pooler's own log lines reach the log store: its "listening" line and an access-log line.
    const find = async (query: string) => {
      const r = await fetch(`${logstore}/search`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          query: {
            query,
            from: new Date(Date.now() - 3_600_000).toISOString(),
            to: new Date(Date.now() + 60_000).toISOString(),
          },
          size: 5,
        }),
      });
      return JSON.stringify(await r.json());
    };
    // (a request without credentials: its 401 is logged at info, the level shipped)
    expect(
      (
        await fetch(`http://127.0.0.1:${ports.TIDEPOOL_WEB_PORT}/api/version`, {
          headers: { accept: 'application/json' },
        })
      ).status,
    ).toBe(401);
    await expect
      .poll(() => find(`msg:"pooler listening" and port:${ports.TIDEPOOL_PORT}`), { timeout: 15_000 })
      .toContain('pooler listening');
    await expect
      .poll(() => find('target:"pooler::web::access" and path:"/api/version"'), { timeout: 15_000 })
      .toContain('"status":401');

    const pids = descendants(child.pid!);
    expect(pids.length).toBeGreaterThanOrEqual(5); // postgres (and its workers), log store, pooler, log explorer
    process.kill(-child.pid!, 'SIGINT'); // what a terminal's Ctrl-C does: the whole foreground group
    expect(await exited(child)).toBe(0);
    expect(pids.filter(alive)).toEqual([]);
  });

  it('SIGTERM to the launcher alone stops everything too, and a second start reuses the data and credentials', async () => {
    const before = credentials();
    const { child, ports } = await launch();
    expect(credentials()).toEqual(before);
    const client = new pg.Client({
      host: '127.0.0.1',
      port: ports.TIDEPOOL_PORT,
      user: 'app',
      database: 'app',
      password: before.appPassword,
    });
    await client.connect();
    await client.end();
    const pids = descendants(child.pid!);
    process.kill(child.pid!, 'SIGTERM');
    expect(await exited(child)).toBe(0);
    expect(pids.filter(alive)).toEqual([]);
  });

  it('a service that dies takes the rest down with a message and a non-zero exit, leaving nothing behind', async () => {
    const { child, out } = await launch();
    const pids = descendants(child.pid!);
    const pooler = pids.find((p) => readFileSync(`/proc/${p}/cmdline`, 'utf8').split('\0').includes('pooler'));
    expect(pooler).toBeDefined();
    process.kill(pooler!, 'SIGKILL');
    expect(await exited(child)).not.toBe(0);
    expect(out()).toContain('tidepool start: pooler exited (SIGKILL); stopping everything');
    expect(pids.filter(alive)).toEqual([]);
    expect(existsSync(path.join(home, 'pg', 'data', 'postmaster.pid'))).toBe(false);
  });

  it('a home PostgreSQL cannot reach gets a clear error instead of an initdb failure (root runs postgres as nobody)', async () => {
    const closed = path.join(home, 'closed');
    mkdirSync(path.join(closed, 'home'), { recursive: true });
    chmodSync(path.join(closed, 'home'), 0o755);
    chmodSync(closed, 0o700);
    const child = spawn(process.execPath, [BIN, 'start'], {
      env: { ...process.env, TIDEPOOL_HOME: path.join(closed, 'home') },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    started.push(child.pid!);
    let out = '';
    child.stderr!.on('data', (b: Buffer) => (out += b.toString()));
    child.stdout!.on('data', (b: Buffer) => (out += b.toString()));
    const code = await exited(child);
    if (process.getuid?.() === 0) {
      expect(code).toBe(1);
      expect(out).toContain(
        `cannot reach ${path.join(closed, 'home', 'pg')}: ${closed} is not searchable by other users; run chmod o+x ${closed}`,
      );
    } else {
      // Not root: postgres runs as this user, who owns the directory; the check does not apply.
      expect(out).not.toContain('is not searchable');
    }
  });
});
