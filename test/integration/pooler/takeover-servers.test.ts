// `tidepool pooler --takeover` moves the old process's idle server connections (takeover-servers.ts): the new process
// pools the same PostgreSQL backends (same pids, no new backend connection), knows the statements prepared on them,
// and cancels reach them with the backend key they had. A server in a transaction at the takeover moves once its
// transaction ends. Runs on both relays (vitest projects).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync, writeFileSync } from 'node:fs';
import type pg from 'pg';
import { freePort } from '../../../src/launcher/embedded-postgres.js';
import { appPoolToml } from '../../helpers/pooler.js';
import { TakeoverBed, adminShow, keyOf, pgClient as client, sendCancel, waitFor } from '../../helpers/takeover.js';

const bed = new TakeoverBed('takeover-servers');

beforeAll(() => bed.start());
afterAll(() => bed.stop());

/** Pool app with `poolSize` servers for md5user (0: the helpers' pools, appsession in session mode among them);
 * `webPort` > 0 turns the web listener on. */
const writeConfig = (name: string, poolSize: number, webPort = 0) =>
  bed.writeConfig(name, { webPort, ...(poolSize > 0 ? { pools: appPoolToml(bed.db, poolSize) } : {}) });
const startFirst = (file: string) => bed.startFirst(file);
const takeOver = (file: string) => bed.takeOver(file);
const showServers = (port: number) => adminShow(port, 'SERVERS');

/** The backends of md5user on database app as PostgreSQL lists them (the pooler's servers; psql runs as another
 * user): pid and connect time, sorted. */
function backends(): string[] {
  return bed.db
    .sql(
      "select pid || ' ' || backend_start from pg_stat_activity where datname = 'app' and usename = 'md5user' order by pid",
      'app',
    )
    .trim()
    .split('\n')
    .filter((l) => l.trim().length > 0)
    .map((l) => l.trim());
}

/** `n` clients each in a transaction at once: the pool opens (or lends) `n` servers; their backend pids. */
async function pidsAtOnce(port: number, n: number): Promise<number[]> {
  const cs = Array.from({ length: n }, () => client(port));
  await Promise.all(cs.map((c) => c.connect()));
  for (const c of cs) await c.query('BEGIN');
  const pids = await Promise.all(cs.map(async (c) => (await c.query('select pg_backend_pid() as pid')).rows[0].pid));
  for (const c of cs) await c.query('COMMIT');
  await Promise.all(cs.map((c) => c.end()));
  return (pids as number[]).sort((a, b) => a - b);
}

describe('takeover moves server connections', () => {
  it('the new process pools the same backends: no new connection, prepared statements known, cancels reach them', async () => {
    const webPort = await freePort();
    const { file, port } = await writeConfig('idle', 2, webPort);
    const first = await startFirst(file);

    // Two servers, both idle at the takeover; a named statement prepared on each (two clients in a transaction at once,
    // so each prepares it on its own server).
    const before = await pidsAtOnce(port, 2);
    expect(new Set(before).size).toBe(2);
    const a = client(port);
    const b = client(port);
    const errors: string[] = [];
    for (const c of [a, b]) {
      c.on('error', (e) => errors.push(e.message));
      await c.connect();
    }
    await a.query('BEGIN');
    await b.query('BEGIN');
    const plus = (c: pg.Client, v: number) =>
      c.query({ name: 'plus_one', text: 'select $1::int + 1 as v', values: [v] });
    expect((await plus(a, 1)).rows[0].v).toBe(2);
    expect((await plus(b, 2)).rows[0].v).toBe(3);
    await a.query('COMMIT');
    await b.query('COMMIT');
    const held = bed.db.sql(
      "select count(*) from pg_stat_activity where datname = 'app' and usename = 'md5user'",
      'app',
    );
    expect(held.trim()).toBe('2');
    const backendsBefore = backends();
    // The servers logged in before this time at the latest.
    const createdBy = Date.now();
    const bKey = keyOf(b);

    const second = await takeOver(file);
    expect(await first.exited, first.output()).toBe(0);
    expect(first.output()).not.toMatch(/"level":(50|60)/);
    await waitFor('the servers to be pooled there', () => /servers_took=2/.test(second.output()));

    // The same two backends serve the new process: PostgreSQL saw no new connection.
    expect(await pidsAtOnce(port, 2)).toEqual(before);
    expect(backends()).toEqual(backendsBefore);
    // Their age came along (SHOW SERVERS age_seconds, counted from the connect as server_lifetime is): at least the
    // time since they logged in on the first process.
    const minAge = Math.floor((Date.now() - createdBy - 500) / 1000);
    const listed = await showServers(port);
    expect(listed.map((r) => Number(r.server_process_id)).sort((x, y) => x - y)).toEqual(before);
    for (const r of listed) expect(Number(r.age_seconds)).toBeGreaterThanOrEqual(minAge);

    // The statements the old process prepared on them are known: a Bind on either server needs no new Parse, and a
    // Parse under a name the server already holds would fail (42P05).
    await a.query('BEGIN');
    await b.query('BEGIN');
    expect((await plus(a, 41)).rows[0].v).toBe(42);
    expect((await plus(b, 42)).rows[0].v).toBe(43);
    const onServer = await a.query("select count(*)::int as n from pg_prepared_statements where name like 'tp_%'");
    expect(onServer.rows[0].n).toBe(1);
    await a.query('COMMIT');
    await b.query('COMMIT');
    expect(backends()).toEqual(backendsBefore);

    // A cancel with the key b got from the first process reaches the moved backend.
    const sleeping = b.query('select pg_sleep(30)').then(
      () => 'finished',
      (e: Error & { code?: string }) => e.code ?? e.message,
    );
    await bed.running('select pg_sleep(30)');
    await sendCancel(port, bKey.pid, bKey.secret);
    expect(await sleeping).toBe('57014');
    expect((await b.query('select 6 as six')).rows[0].six).toBe(6);
    expect(backends()).toEqual(backendsBefore);

    const metrics = await (await fetch(`http://127.0.0.1:${webPort}/metrics`)).text();
    expect(metrics).toMatch(/pooler_takeover_servers_moved_total\{direction="in"\} 2\n/);
    expect(errors).toEqual([]);
    await a.end();
    await b.end();
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);
  });

  it('a server in a transaction at the takeover stays until the transaction ends, then moves', async () => {
    const { file, port } = await writeConfig('busy', 1);
    const first = await startFirst(file);
    const c = client(port);
    c.on('error', () => undefined);
    await c.connect();
    await c.query('BEGIN');
    const pid = (await c.query('select pg_backend_pid() as pid')).rows[0].pid as number;
    const backendsBefore = backends();
    expect(backendsBefore).toHaveLength(1);

    const second = await takeOver(file);
    // Still the old process's: the transaction goes on there.
    expect((await c.query('select pg_backend_pid() as pid')).rows[0].pid).toBe(pid);
    await c.query('COMMIT');
    expect(await first.exited, first.output()).toBe(0);
    await waitFor('the server to be pooled there', () => /servers_took=1/.test(second.output()));

    // Its one server is the new process's now, the same backend: both the moved client and a new one get it.
    expect((await c.query('select pg_backend_pid() as pid')).rows[0].pid).toBe(pid);
    expect(await pidsAtOnce(port, 1)).toEqual([pid]);
    expect(backends()).toEqual(backendsBefore);
    await c.end();

    // A second takeover moves it again.
    const third = await takeOver(file);
    expect(await second.exited, second.output()).toBe(0);
    await waitFor('the server to be pooled there', () => /servers_took=1/.test(third.output()));
    expect(await pidsAtOnce(port, 1)).toEqual([pid]);
    expect(backends()).toEqual(backendsBefore);
    third.child.kill('SIGTERM');
    expect(await third.exited).toBe(0);
  });

  it('a server the new process refuses (its pool is full there) is closed by the old one; the others move', async () => {
    const { file, port } = await writeConfig('refused', 2);
    const first = await startFirst(file);
    const before = await pidsAtOnce(port, 2);
    expect(backends()).toHaveLength(2);
    // The new process's pool has room for one server.
    writeFileSync(file, readFileSync(file, 'utf8').replace(/pool_size = 2/g, 'pool_size = 1'));
    const second = await takeOver(file);
    expect(await first.exited, first.output()).toBe(0);
    expect(first.output()).toMatch(/refused a server connection/);
    expect(first.output()).toMatch(/is full here/);
    await waitFor('the one server to be pooled there', () => /servers_took=1 servers_refused=1/.test(second.output()));
    // The refused one's backend ends (the old process sent it a Terminate); the moved one serves.
    await waitFor('the refused backend to end', () => backends().length === 1);
    const [kept] = await pidsAtOnce(port, 1);
    expect(before).toContain(kept);
    expect(backends().map((l) => Number(l.split(' ')[0]))).toEqual([kept]);
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);
  });

  it('the server of a session-mode pool moves once its client has left (after server_reset_query)', async () => {
    const { file, port } = await writeConfig('session', 0);
    const first = await startFirst(file);
    const c = client(port, 'appsession');
    await c.connect();
    await c.query('SET work_mem = 1234');
    const pid = (await c.query('select pg_backend_pid() as pid')).rows[0].pid as number;
    await c.end();
    // Back in its pool once reset (DISCARD ALL).
    await waitFor('the server to be reset', () =>
      bed.db.sql(`select query from pg_stat_activity where pid = ${pid}`, 'app').trim().startsWith('DISCARD ALL'),
    );
    const backendsBefore = backends();
    const second = await takeOver(file);
    expect(await first.exited, first.output()).toBe(0);
    await waitFor('the server to be pooled there', () => /servers_took=1/.test(second.output()));
    const d = client(port, 'appsession');
    await d.connect();
    // The same backend, as it was left: reset.
    expect((await d.query('select pg_backend_pid() as pid')).rows[0].pid).toBe(pid);
    expect((await d.query('show work_mem')).rows[0].work_mem).toBe('4MB');
    await d.end();
    expect(backends()).toEqual(backendsBefore);
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);
  });
});
