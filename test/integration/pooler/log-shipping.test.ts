// The pooler ships its own log records to a real log store: found by seq-ql, bounded while the store is down, resumed after, flushed on SIGTERM.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../../src/launcher/embedded-postgres.js';
import { startWebListener, type WebListener } from '../../../src/pooler/web/server.js';
import { postJson, startLogstore, type LogstoreProcess } from '../../helpers/logstore.js';
import { promtoolCheckMetrics } from '../../helpers/promtool.js';
import {
  appPoolToml,
  startChildPooler,
  startTestPooler,
  type ChildPooler,
  type TestPooler,
} from '../../helpers/pooler.js';
import { startTestPostgres, type TestPostgres } from '../../helpers/postgres.js';

let db: TestPostgres;
let store: LogstoreProcess;
let dir: string;
const running: { tp?: TestPooler; web?: WebListener; child?: ChildPooler } = {};

beforeAll(async () => {
  db = await startTestPostgres();
  // A fixed port, so that the store can come back on the same address.
  store = await startLogstore({ server: { http_addr: `127.0.0.1:${await freePort()}` } });
  dir = mkdtempSync(path.join(os.tmpdir(), 'tidepool-logship-'));
});

afterAll(async () => {
  await running.child?.stop();
  await running.web?.close();
  await running.tp?.stop();
  await store?.cleanup();
  await db?.cleanup();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

function toml(general: string, logs: string): string {
  return `
[general]
host = "127.0.0.1"
port = 0
admin_password = "logship-admin-pw"
${general}

[web]
enabled = true
host = "127.0.0.1"
port = 0

[logs]
ship_to = "${store.url}"
${logs}
${appPoolToml(db)}`;
}

async function startShippingPooler(
  general: string,
  logs: string,
): Promise<{ tp: TestPooler; web: WebListener; base: string }> {
  const tp = await startTestPooler(toml(general, logs));
  running.tp = tp;
  const web = await startWebListener(tp.pooler, { host: '127.0.0.1', port: 0 });
  running.web = web;
  return { tp, web, base: `http://127.0.0.1:${web.port}` };
}

async function stopShippingPooler(): Promise<void> {
  await running.web?.close();
  await running.tp?.stop();
  delete running.web;
  delete running.tp;
}

interface Hit {
  id: string;
  time: string;
  data: Record<string, unknown>;
}

async function search(query: string, from?: string): Promise<Hit[]> {
  const r = await postJson<{ docs: Hit[] }>(`${store.url}/search`, {
    query: { query, ...(from ? { from } : {}) },
    size: 100,
  });
  expect(r.status).toBe(200);
  return r.body.docs;
}

async function until<T>(what: string, probe: () => Promise<T | null | undefined | false>, ms = 20_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function searchUntil(query: string, from?: string): Promise<Hit[]> {
  return until(`a document matching ${query}`, async () => {
    const docs = await search(query, from);
    return docs.length > 0 ? docs : null;
  });
}

/** The pooler_log_ship_* samples of /metrics, keyed by series (`name` or `name{labels}`). */
async function shipMetrics(base: string): Promise<Record<string, number>> {
  const text = await (await fetch(`${base}/metrics`)).text();
  const out: Record<string, number> = {};
  for (const m of text.matchAll(/^(pooler_log_ship_\w+(?:\{[^}]*\})?) (\S+)$/gm)) out[m[1]!] = Number(m[2]);
  return out;
}

const DROPPED = 'pooler_log_ship_dropped_total{reason="queue_full"}';

describe('log shipping', () => {
  it('ships the listening line and web access lines, the record time becoming the document time', async () => {
    const { tp, base } = await startShippingPooler('log_level = "info"', 'ship_flush_interval = "100ms"');
    const marker = `/api/ship-marker-${process.pid}-${Date.now()}`;
    expect((await fetch(`${base}${marker}`)).status).toBe(404);

    const [listening] = await searchUntil(`msg:"pooler listening" and port:${tp.port}`);
    expect(listening!.data).toMatchObject({
      level: 'info',
      target: 'pooler',
      msg: 'pooler listening',
      host: '127.0.0.1',
      port: tp.port,
    });
    expect(listening!.time).toBe(listening!.data['time']);
    const logged = /time=(\S+) level=info target=pooler msg="pooler listening"/.exec(tp.logText());
    expect(new Date(listening!.time).toISOString()).toBe(logged![1]);

    const [access] = await searchUntil(`target:"pooler::web::access" and path:"${marker}"`);
    expect(access!.data).toMatchObject({
      level: 'info',
      target: 'pooler::web::access',
      method: 'GET',
      path: marker,
      status: 404,
    });
    expect(access!.time).toBe(access!.data['time']);

    const m = await shipMetrics(base);
    expect(m['pooler_log_ship_sent_total']).toBeGreaterThanOrEqual(2);
    expect(m[DROPPED]).toBe(0);
    expect(m['pooler_log_ship_queue_capacity']).toBe(10_000);
    expect(promtoolCheckMetrics(await (await fetch(`${base}/metrics`)).text())).toEqual({ output: '', status: 0 });
    await stopShippingPooler();
  });

  it('keeps serving while the store is down, drops the oldest beyond the bound, counts them, and resumes on its own', async () => {
    const QUEUE = 20;
    const { tp, base } = await startShippingPooler(
      'log_level = "debug"',
      `ship_queue_size = ${QUEUE}\nship_batch_size = 10\nship_flush_interval = "50ms"\nship_backoff_max = "300ms"\nship_timeout = "2s"`,
    );
    await searchUntil(`msg:"pooler listening" and port:${tp.port}`);

    await store.stop();
    expect((await fetch(`${base}/api/outage-begins`)).status).toBe(404);
    await until(
      'a failed bulk request',
      async () => ((await shipMetrics(base))['pooler_log_ship_failed_requests_total'] ?? 0) > 0,
    );
    const before = (await shipMetrics(base))[DROPPED]!;

    // Queries and logins go on; every login and web request writes records the queue cannot all hold.
    let maxQueue = 0;
    for (let i = 0; i < 15; i++) {
      const c = new pg.Client({
        host: '127.0.0.1',
        port: tp.port,
        user: 'md5user',
        password: 'md5pass',
        database: 'app',
      });
      await c.connect();
      const r = await c.query('SELECT $1::int + 1 AS n', [i]);
      expect(r.rows[0].n).toBe(i + 1);
      await c.end();
      expect((await fetch(`${base}/api/during-outage-${i}`)).status).toBe(404);
      const m = await shipMetrics(base);
      maxQueue = Math.max(maxQueue, m['pooler_log_ship_queue_length']!);
    }
    const during = await shipMetrics(base);
    expect(maxQueue).toBeLessThanOrEqual(QUEUE);
    expect(during[DROPPED]).toBeGreaterThan(before);
    expect(tp.logText()).toMatch(
      /level=warn target=pooler::log_ship msg="log shipping to http:\/\/127\.0\.0\.1:\d+ failed; retrying with backoff/,
    );
    expect(tp.logText()).not.toMatch(/log shipping resumed/);

    await store.restart();
    const line = await until('the resumed line', async () =>
      /log shipping resumed: (\d+) records dropped while (\S+) was unreachable/.exec(tp.logText()),
    );
    expect(line[2]).toBe(store.url);
    const after = await shipMetrics(base);
    expect(Number(line[1])).toBe(after[DROPPED]! - before);
    expect(Number(line[1])).toBeGreaterThan(0);

    const marker = `/api/after-restart-${process.pid}-${Date.now()}`;
    expect((await fetch(`${base}${marker}`)).status).toBe(404);
    await searchUntil(`target:"pooler::web::access" and path:"${marker}"`);
    const [resumed] = await searchUntil(`target:"pooler::log_ship" and dropped:${line[1]}`);
    expect(resumed!.data).toMatchObject({ level: 'warn', ship_to: store.url, dropped: Number(line[1]) });
    await stopShippingPooler();
  });

  it('RELOAD turns shipping on, moves it to a new index and turns it off', async () => {
    const { tp, base } = await startShippingPooler('log_level = "info"', '');
    const off = (t: string) => t.replace(`ship_to = "${store.url}"`, 'ship_to = ""');
    tp.writeConfig(off(toml('log_level = "info"', '')));
    await tp.pooler.reload();
    expect(await shipMetrics(base)).toEqual({});

    tp.writeConfig(toml('log_level = "info"', 'ship_index = "pooler-two"\nship_flush_interval = "50ms"'));
    await tp.pooler.reload();
    const marker = `/api/after-reload-${process.pid}-${Date.now()}`;
    expect((await fetch(`${base}${marker}`)).status).toBe(404);
    await searchUntil(`path:"${marker}"`);
    expect((await shipMetrics(base))['pooler_log_ship_queue_capacity']).toBe(10_000);

    tp.writeConfig(toml('log_level = "info"', 'ship_queue_size = 600\nship_flush_interval = "50ms"'));
    await tp.pooler.reload();
    expect((await shipMetrics(base))['pooler_log_ship_queue_capacity']).toBe(600);
    await stopShippingPooler();
  });

  it('sends what is queued when SIGTERM stops the pooler process', async () => {
    const port = await freePort();
    const configFile = path.join(dir, 'pooler.toml');
    // Nothing is sent before shutdown: the batch is large and the flush interval an hour.
    writeFileSync(
      configFile,
      toml('log_level = "info"', 'ship_batch_size = 1000\nship_flush_interval = "1h"')
        .replace('\nport = 0\n', `\nport = ${port}\n`)
        .replace(/\[web\]\nenabled = true/, '[web]\nenabled = false'),
    );
    const child = await startChildPooler(configFile, port);
    running.child = child;
    await new Promise((r) => setTimeout(r, 300));
    expect(await search(`msg:"pooler listening" and port:${port}`)).toEqual([]);

    const sigterm = new Date().toISOString();
    const exited = new Promise<number | null>((r) => child.child.once('exit', (code) => r(code)));
    child.child.kill('SIGTERM');
    expect(await exited).toBe(0);
    delete running.child;
    expect(await search(`msg:"pooler listening" and port:${port}`)).toHaveLength(1);
    expect(await search('msg:"SIGTERM: graceful shutdown"', sigterm)).toHaveLength(1);
    expect(await search('msg:"pooler stopped"', sigterm)).toHaveLength(1);
  });
});
