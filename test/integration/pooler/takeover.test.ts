// `tidepool pooler --takeover`: a new process takes the running one's listening sockets (pooler and web port), so a
// loop of fresh connections across the restart meets no refused connection; a bad config leaves the old one serving.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { freePort } from '../../../src/launcher/embedded-postgres.js';
import { startChildPooler } from '../../helpers/pooler.js';
import { TakeoverBed, alive, exitOf, pgClient as client, waitFor } from '../../helpers/takeover.js';

const bed = new TakeoverBed('takeover');

beforeAll(() => bed.start());
afterAll(() => bed.stop());

async function writeConfig(name: string): Promise<{ file: string; port: number; webPort: number }> {
  const webPort = await freePort();
  const { file, port } = await bed.writeConfig(name, { webPort, general: 'shutdown_timeout = "5s"' });
  return { file, port, webPort };
}

/** `tidepool pooler --config file --takeover`, its output gathered. */
const spawnTakeover = (file: string) => bed.spawn(file, true);

/** What a loop of fresh connections met: successes, and each failure by its code (SQLSTATE, errno) or message. */
class ConnectLoop {
  ok = 0;
  readonly failures = new Map<string, number>();
  private running = true;
  private readonly workers: Promise<void>[] = [];

  constructor(
    private readonly port: number,
    parallel: number,
  ) {
    for (let i = 0; i < parallel; i++) this.workers.push(this.work());
  }

  private async work(): Promise<void> {
    while (this.running) {
      const c = client(this.port);
      // An unsolicited FATAL (an idle client told 57P01) comes as an 'error' event; the query then fails too.
      let seen: string | null = null;
      c.on('error', (err: Error & { code?: string }) => {
        seen ??= err.code ?? err.message;
      });
      try {
        await c.connect();
        const r = await c.query('select 1 as one');
        if (r.rows[0].one !== 1) throw new Error('wrong answer');
        this.ok++;
      } catch (err) {
        const e = err as Error & { code?: string };
        const key = seen === '57P01' ? '57P01' : (e.code ?? seen ?? e.message);
        this.failures.set(key, (this.failures.get(key) ?? 0) + 1);
      } finally {
        await c.end().catch(() => undefined);
      }
    }
  }

  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.workers);
  }
}

/** GET /metrics in a loop on the web port: each answer's status, and every failure by its errno. */
class HttpLoop {
  ok = 0;
  readonly failures = new Map<string, number>();
  private running = true;
  private readonly worker: Promise<void>;

  constructor(private readonly port: number) {
    this.worker = this.work();
  }

  private async work(): Promise<void> {
    while (this.running) {
      const outcome = await new Promise<string>((resolve) => {
        const req = http.get({ host: '127.0.0.1', port: this.port, path: '/metrics', agent: false }, (res) => {
          res.resume();
          res.on('end', () => resolve(String(res.statusCode)));
          res.on('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message));
        });
        req.on('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message));
      });
      if (outcome === '200') this.ok++;
      else this.failures.set(outcome, (this.failures.get(outcome) ?? 0) + 1);
      await new Promise((r) => setTimeout(r, 5));
    }
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.worker;
  }
}

describe('takeover', () => {
  it('hands the listening sockets over: fresh connections meet no refusal across two takeovers, old processes exit', async () => {
    const { file, port, webPort } = await writeConfig('loop');
    const first = await startChildPooler(file, port);
    bed.children.push(first.child);
    // The takeover socket opens once the pooler and its web listener serve.
    await waitFor('the takeover socket', () => existsSync(path.join(bed.dir, `.tidepool-${port}.takeover`)));
    // The pool knows its server's parameters before the loop starts (a login then needs no server).
    const warm = client(port);
    await warm.connect();
    await warm.query('select 1');
    // Idle on the old process across the takeover: moved to the new one (takeover-clients.test.ts has the details).
    const idle = client(port);
    const idleErrors: string[] = [];
    idle.on('error', (e: Error & { code?: string }) => idleErrors.push(e.code ?? e.message));
    await idle.connect();
    await idle.query('select 1');
    // In a transaction on the old process: it may finish there.
    const busy = client(port);
    busy.on('error', () => undefined);
    await busy.connect();
    await busy.query('BEGIN');
    await busy.query('select 1');
    await warm.end();

    const loop = new ConnectLoop(port, 6);
    const web = new HttpLoop(webPort);
    await waitFor('the loop to run on the first process', () => loop.ok >= 20 && web.ok >= 5);

    const second = spawnTakeover(file);
    await waitFor(
      'the second process to serve',
      () => /serving on the inherited sockets/.test(second.output()) || second.child.exitCode !== null,
    );
    expect(second.child.exitCode, second.output()).toBeNull();
    // The transaction begun on the first process ends there, after the takeover.
    expect((await busy.query('select 2 as two')).rows[0].two).toBe(2);
    await busy.query('COMMIT');
    await busy.end();
    expect(await exitOf(first.child)).toBe(0);
    expect(alive(first.child.pid!)).toBe(false);
    expect(first.output()).toContain('takeover: the new process listens');
    const servedBySecond = loop.ok;
    await waitFor('the loop to run on the second process', () => loop.ok >= servedBySecond + 20);

    // The new process answers takeovers in its turn.
    const third = spawnTakeover(file);
    await waitFor(
      'the third process to serve',
      () => /serving on the inherited sockets/.test(third.output()) || third.child.exitCode !== null,
    );
    expect(third.child.exitCode, third.output()).toBeNull();
    expect(await second.exited).toBe(0);
    expect(alive(second.child.pid!)).toBe(false);
    const servedByThird = loop.ok;
    await waitFor('the loop to run on the third process', () => loop.ok >= servedByThird + 20);
    const webOk = web.ok;
    await waitFor('the web port to answer on the third process', () => web.ok >= webOk + 3);
    await loop.stop();
    await web.stop();

    // No refusal, no reset, no 57P01: a client that had connected to a process that then handed over moved on.
    const failures = Object.fromEntries(loop.failures);
    expect(loop.failures.get('ECONNREFUSED') ?? 0, JSON.stringify(failures)).toBe(0);
    expect([...loop.failures.keys()], JSON.stringify(failures)).toEqual([]);
    expect(Object.fromEntries(web.failures)).toEqual({});
    expect(loop.ok).toBeGreaterThan(60);

    // The idle client moved twice, on its own connection, and never heard of it.
    expect((await idle.query('select 7 as seven')).rows[0].seven).toBe(7);
    expect(idleErrors).toEqual([]);
    await idle.end();

    third.child.kill('SIGTERM');
    expect(await third.exited).toBe(0);
    expect(existsSync(path.join(bed.dir, `.tidepool-${port}.takeover`))).toBe(false);
  });

  it('a client stuck in a transaction past shutdown_timeout is told 57P01 naming the restart; the old process leaves nothing', async () => {
    const { file, port } = await bed.writeConfig('stuck', { general: 'shutdown_timeout = "2s"' });
    const first = await bed.startFirst(file);
    const stuck = client(port);
    const heard: { code?: string; message: string }[] = [];
    stuck.on('error', (e: Error & { code?: string }) => heard.push({ code: e.code, message: e.message }));
    await stuck.connect();
    await stuck.query('BEGIN');
    await stuck.query('select 1');
    // It never ends its transaction: the old process keeps it until shutdown_timeout, then says why it goes.
    const second = await bed.takeOver(file);
    expect(await exitOf(first.child)).toBe(0);
    expect(alive(first.child.pid!)).toBe(false);
    await waitFor('the stuck client to hear', () => heard.length > 0);
    expect(heard[0]).toMatchObject({ code: '57P01' });
    expect(heard[0]!.message).toMatch(/restarted \(takeover\).*shutdown_timeout/);
    await stuck.end().catch(() => undefined);
    // The new process serves, its own takeover socket is the only one; once it stops, none is left.
    const c = client(port);
    await c.connect();
    expect((await c.query('select 5 as five')).rows[0].five).toBe(5);
    await c.end();
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);
    expect(existsSync(path.join(bed.dir, `.tidepool-${port}.takeover`))).toBe(false);
  });

  it('a bad config exits 1 with its errors and the running pooler serves on, and takes a good takeover after', async () => {
    const { file, port } = await writeConfig('bad');
    const running = await startChildPooler(file, port);
    bed.children.push(running.child);
    // The takeover socket opens after the pooler listens.
    await waitFor('the takeover socket', () => existsSync(path.join(bed.dir, `.tidepool-${port}.takeover`)));
    const good = readFileSync(file, 'utf8');
    writeFileSync(
      file,
      good.replace('pool_mode = "session"', 'pool_mode = "statement"').replace('[general]\n', '[general]\nprot = 1\n'),
    );
    const bad = spawnTakeover(file);
    expect(await bad.exited).toBe(1);
    expect(bad.output()).toContain('pool_mode');
    expect(bad.output()).toContain('did you mean "port"');
    expect(running.child.exitCode).toBeNull();
    const c = client(port);
    await c.connect();
    expect((await c.query('select 3 as three')).rows[0].three).toBe(3);
    await c.end();

    // The running pooler's address cannot move by takeover: the new process refuses, the old one serves on.
    const elsewhere = await freePort();
    const movedFile = path.join(bed.dir, 'moved.toml');
    writeFileSync(
      movedFile,
      good
        .replace(`port = ${port}`, `port = ${elsewhere}`)
        .replace('[general]\n', `[general]\ntakeover_socket = "${path.join(bed.dir, `.tidepool-${port}.takeover`)}"\n`),
    );
    const moved = spawnTakeover(movedFile);
    expect(await moved.exited).toBe(1);
    expect(moved.output()).toContain('takeover keeps the listening address');

    writeFileSync(file, good);
    const next = spawnTakeover(file);
    await waitFor(
      'the good takeover',
      () => /serving on the inherited sockets/.test(next.output()) || next.child.exitCode !== null,
    );
    expect(next.child.exitCode, next.output()).toBeNull();
    expect(await exitOf(running.child)).toBe(0);
    const d = client(port);
    await d.connect();
    expect((await d.query('select 4 as four')).rows[0].four).toBe(4);
    await d.end();
    next.child.kill('SIGTERM');
    expect(await next.exited).toBe(0);
  });
});
