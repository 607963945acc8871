// The tidepool command as a process: config check (-t), signals (SIGHUP, SIGTERM, SIGINT), and pgbench through the pooler.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { freePort } from '../../../src/launcher/embedded-postgres.js';
import { startTestPostgres, type TestPostgres } from '../../helpers/postgres.js';
import { ADMIN_PASSWORD, poolerToml, startChildPooler, type ChildPooler } from '../../helpers/pooler.js';

const run = promisify(execFile);
const bin = path.resolve('bin/tidepool.js');
let db: TestPostgres;
let dir: string;
const children: ChildPooler[] = [];

beforeAll(async () => {
  db = await startTestPostgres();
  dir = mkdtempSync(path.join(os.tmpdir(), 'tidepool-proc-'));
});

afterAll(async () => {
  for (const c of children) await c.stop();
  await db?.cleanup();
  rmSync(dir, { recursive: true, force: true });
});

async function spawnPooler(extraGeneral = ''): Promise<{ p: ChildPooler; file: string; port: number }> {
  const port = await freePort();
  const file = path.join(dir, `pooler-${port}.toml`);
  writeFileSync(
    file,
    poolerToml(db, { general: extraGeneral })
      .replace('port = 0', `port = ${port}`)
      .replace('log_level = "warn"', 'log_level = "info"'),
  );
  const p = await startChildPooler(file, port);
  children.push(p);
  return { p, file, port };
}

function client(port: number, database = 'app', user = 'md5user', password = 'md5pass'): pg.Client {
  const c = new pg.Client({ host: '127.0.0.1', port, user, password, database });
  c.on('error', () => undefined);
  return c;
}

function exited(p: ChildPooler): Promise<number | null> {
  if (p.child.exitCode !== null) return Promise.resolve(p.child.exitCode);
  return new Promise((r) => p.child.once('exit', (code) => r(code)));
}

describe('the tidepool command', () => {
  it('--help describes every command and flag', async () => {
    const { stdout } = await run(process.execPath, [bin, '--help']);
    for (const word of ['pooler', 'logstore', '--config', '-t', 'SIGHUP', 'SIGTERM']) expect(stdout).toContain(word);
  });

  it('-t validates: exit 0 for a good file, 1 with every problem for a bad one', async () => {
    const good = path.join(dir, 'good.toml');
    writeFileSync(good, poolerToml(db));
    const ok = await run(process.execPath, [bin, 'pooler', '--config', good, '-t']);
    expect(ok.stdout).toContain('configuration OK');
    const bad = path.join(dir, 'bad.toml');
    writeFileSync(bad, '[general]\nprot = 1\npool_mode = "statement"\nconnect_timeout = "soon"\n');
    const err = await run(process.execPath, [bin, 'pooler', '--config', bad, '-t']).then(
      () => null,
      (e: { code: number; stderr: string }) => e,
    );
    expect(err?.code).toBe(1);
    expect(err?.stderr).toContain('general.prot');
    expect(err?.stderr).toContain('did you mean "port"');
    expect(err?.stderr).toContain('general.pool_mode');
    expect(err?.stderr).toContain('general.connect_timeout');
  });
});

describe('signals', () => {
  it('SIGHUP reloads the file', async () => {
    const { p, file, port } = await spawnPooler();
    writeFileSync(
      file,
      poolerToml(db)
        .replace('port = 0', `port = ${port}`)
        .replace(/pool_size = 2\n/, 'pool_size = 5\n'),
    );
    p.child.kill('SIGHUP');
    const admin = client(port, 'pgbouncer', 'admin', ADMIN_PASSWORD);
    await admin.connect();
    let size = '';
    for (let i = 0; i < 50 && size !== '5'; i++) {
      await new Promise((r) => setTimeout(r, 100));
      size = (await admin.query('SHOW POOLS')).rows.find((r) => r.database === 'app' && r.user === 'md5user').pool_size;
    }
    expect(size).toBe('5');
    await admin.end();
  });

  it('SIGTERM stops accepting, lets a running transaction finish, then exits 0', async () => {
    const { p, port } = await spawnPooler('shutdown_timeout = "10s"');
    const c = client(port);
    await c.connect();
    await c.query('BEGIN');
    await c.query('select 1');
    const exit = exited(p);
    p.child.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 300));
    const late = client(port);
    await expect(late.connect()).rejects.toBeTruthy();
    expect((await c.query('select 2 as two')).rows[0].two).toBe(2);
    await c.query('COMMIT');
    expect(await exit).toBe(0);
    expect(p.output()).toContain('SIGTERM');
  });

  it('SIGINT exits at once, even with a transaction open', async () => {
    const { p, port } = await spawnPooler('shutdown_timeout = "30s"');
    const c = client(port);
    await c.connect();
    await c.query('BEGIN');
    await c.query('select 1');
    const closed = new Promise<void>((r) => c.once('end', () => r()));
    const exit = exited(p);
    const sent = performance.now();
    p.child.kill('SIGINT');
    expect(await exit).toBe(0);
    // SIGTERM would wait up to shutdown_timeout (30 s) for this transaction; SIGINT must not. 5 s is a
    // generous bound for a loaded machine, far below the 30 s a graceful stop would take.
    expect(performance.now() - sent).toBeLessThan(5000);
    await closed;
    await c.end().catch(() => undefined);
  });

  it('the SHUTDOWN admin command stops the process', async () => {
    const { p, port } = await spawnPooler();
    const admin = client(port, 'tidepool', 'admin', ADMIN_PASSWORD);
    await admin.connect();
    const exit = exited(p);
    await admin.query('SHUTDOWN');
    expect(await exit).toBe(0);
    await admin.end().catch(() => undefined);
  });
});

describe('pgbench through the pooler', () => {
  it('runs select-only with the simple and extended protocols and in reconnect mode without errors', async () => {
    const { port } = await spawnPooler();
    const env = { ...process.env, PGPASSWORD: 'md5pass' };
    await run('pgbench', ['-i', '-s', '1', '-h', db.host, '-p', String(db.port), '-U', 'md5user', 'app'], { env });
    for (const extra of [['--protocol', 'simple'], ['--protocol', 'extended'], ['-C']]) {
      const r = await run(
        'pgbench',
        [
          '-S',
          '-c',
          '8',
          '-j',
          '2',
          '-t',
          '200',
          ...extra,
          '-h',
          '127.0.0.1',
          '-p',
          String(port),
          '-U',
          'md5user',
          'app',
        ],
        { env },
      );
      expect(r.stdout).toContain('number of transactions actually processed: 1600/1600');
      expect(r.stdout).toMatch(/number of failed transactions: 0/);
      // pgbench prints a tps even when clients aborted: any error or aborted line fails the run.
      expect(`${r.stdout}\n${r.stderr}`).not.toMatch(/error|aborted/i);
    }
  }, 240_000);
});
