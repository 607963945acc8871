// SIGUSR2 to a running `tidepool pooler`: it checks the config with the new code, spawns itself with --takeover, and
// the new process takes the port and the idle clients; a bad config leaves the old process serving and logs why.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { startChildPooler, type ChildPooler } from '../../helpers/pooler.js';
import { until } from '../../helpers/operator.js';
import { TakeoverBed, alive, pgClient as client } from '../../helpers/takeover.js';

const bed = new TakeoverBed('takeover-usr2');
const started: ChildPooler[] = [];
/** Pids of takeover processes (not children of the test: the pooler spawned them). */
const successors: number[] = [];

beforeAll(() => bed.start());

afterAll(async () => {
  // Every successor any pooler logged, including one a failed test did not get to record.
  for (const p of started)
    for (const m of p.output().matchAll(/takeover process started.*successor[=":]+(\d+)/g))
      if (!successors.includes(Number(m[1]))) successors.push(Number(m[1]));
  for (const pid of successors) {
    if (alive(pid)) {
      process.kill(pid, 'SIGKILL');
      await until('a successor to go', () => !alive(pid), 10_000).catch(() => undefined);
    }
  }
  for (const p of started) await p.stop();
  await bed.stop();
});

const writeConfig = (name: string) => bed.writeConfig(name, { general: 'shutdown_timeout = "5s"' });

/** The pid of the first takeover process the pooler logged it started after `from` characters of its output. */
function successorPid(out: string, from: number): number | null {
  for (const line of out.slice(from).split('\n')) {
    if (!line.includes('SIGUSR2: takeover process started')) continue;
    const m = /successor[=":]+(\d+)/.exec(line);
    if (m) return Number(m[1]);
  }
  return null;
}

/** operator.ts's `until` with 30 s, and the pooler's output in the error when it times out. */
async function waitFor(what: string, cond: () => boolean, p?: ChildPooler, ms = 30_000): Promise<void> {
  try {
    await until(what, cond, ms);
  } catch (err) {
    throw new Error(`${(err as Error).message}${p ? `\n${p.output()}` : ''}`);
  }
}

describe('takeover on SIGUSR2', () => {
  it('a new process serves the same port, the old one exits 0, an idle client keeps its connection', async () => {
    const { file, port } = await writeConfig('usr2');
    const old = await startChildPooler(file, port);
    started.push(old);
    await waitFor('the takeover socket', () => existsSync(path.join(bed.dir, `.tidepool-${port}.takeover`)));
    const idle = client(port);
    const idleErrors: string[] = [];
    idle.on('error', (e: Error & { code?: string }) => idleErrors.push(e.code ?? e.message));
    await idle.connect();
    const before = (await idle.query('select pg_backend_pid() as pid')).rows[0].pid as number;
    expect(before).toBeGreaterThan(0);

    const mark = old.output().length;
    old.child.kill('SIGUSR2');
    await waitFor('the old process to start a successor', () => successorPid(old.output(), mark) !== null, old);
    const pid = successorPid(old.output(), mark)!;
    successors.push(pid);
    expect(pid).not.toBe(old.child.pid);
    // The successor inherits the old process's stdout: its lines come on the same pipe.
    await waitFor('the successor to serve', () =>
      /takeover: serving on the inherited sockets/.test(old.output().slice(mark)),
    );
    await waitFor('the old process to exit', () => old.child.exitCode !== null || old.child.signalCode !== null);
    expect(old.child.exitCode, old.output()).toBe(0);
    expect(alive(pid)).toBe(true);

    // The idle client moved on its own connection and never heard of it.
    expect((await idle.query('select 5 as five')).rows[0].five).toBe(5);
    expect(idleErrors).toEqual([]);
    // A new connection reaches the successor on the same port.
    const fresh = client(port);
    await fresh.connect();
    expect((await fresh.query('select 6 as six')).rows[0].six).toBe(6);
    await fresh.end();
    await idle.end();

    process.kill(pid, 'SIGTERM');
    await waitFor('the successor to exit', () => !alive(pid));
    expect(existsSync(path.join(bed.dir, `.tidepool-${port}.takeover`))).toBe(false);
  });

  it('a bad config: the running pooler logs the check errors, starts nothing and serves on', async () => {
    const { file, port } = await writeConfig('usr2-bad');
    const running = await startChildPooler(file, port);
    started.push(running);
    await waitFor('the takeover socket', () => existsSync(path.join(bed.dir, `.tidepool-${port}.takeover`)));
    const good = readFileSync(file, 'utf8');
    writeFileSync(file, good.replace('[general]\n', '[general]\nprot = 1\n'));
    const mark = running.output().length;
    running.child.kill('SIGUSR2');
    await waitFor('the check to fail', () => /config check failed/.test(running.output().slice(mark)), running);
    const logged = running.output().slice(mark);
    expect(logged).toContain('did you mean');
    expect(successorPid(running.output(), mark)).toBeNull();
    expect(running.child.exitCode).toBeNull();
    const c = client(port);
    await c.connect();
    expect((await c.query('select 3 as three')).rows[0].three).toBe(3);
    await c.end();

    // The file fixed, the next SIGUSR2 takes over.
    writeFileSync(file, good);
    const mark2 = running.output().length;
    running.child.kill('SIGUSR2');
    await waitFor('a successor', () => successorPid(running.output(), mark2) !== null, running);
    const pid = successorPid(running.output(), mark2)!;
    successors.push(pid);
    await waitFor('the old process to exit', () => running.child.exitCode !== null);
    expect(running.child.exitCode).toBe(0);
    const d = client(port);
    await d.connect();
    expect((await d.query('select 4 as four')).rows[0].four).toBe(4);
    await d.end();
    process.kill(pid, 'SIGTERM');
    await waitFor('the successor to exit', () => !alive(pid));
  });
});
