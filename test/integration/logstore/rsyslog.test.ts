// rsyslog (Debian's rsyslogd with omelasticsearch, its own config in a temporary directory) ships a file into
// the log store: every line once, through a period of overload, a kill -9 of the store, and invalid UTF-8.
import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LogstoreProcess, ndjson, startLogstore, tempDir } from '../../helpers/logstore.js';
import { omelasticsearchModule } from '../../setup/tools.js';
import { freePort } from '../../../src/launcher/embedded-postgres.js';

let ls: LogstoreProcess;
let rsyslog: ChildProcess | null = null;
let rsOut = '';
let dir = '';
let input = '';

beforeAll(async () => {
  if (omelasticsearchModule() === null)
    throw new Error(
      'rsyslog-elasticsearch is not installed (test/setup/tools.ts installs it: apt-get install rsyslog rsyslog-elasticsearch)',
    );
  dir = tempDir('tidepool-rsyslog-');
  input = path.join(dir, 'in.log');
  const port = await freePort();
  // One write at a time, so that a held bulk makes the others wait (bulk_queue_wait stays at its 10 s default).
  ls = await startLogstore({ server: { http_addr: `127.0.0.1:${port}` }, limits: { inflight_bulks: 1 } });
  mkdirSync(path.join(dir, 'work'));
  writeFileSync(input, '');
  // rsyslog's defaults but for action.resumeRetryCount="-1" (retry forever while the store is down), which
  // rsyslog's documentation gives for no loss, and action.resumeInterval="2" (30 s by default) to keep the test short; retryfailures stays off and the action queue direct, as
  // shipped. (An action queue of the default 1 000 messages drops lines after queue.timeoutEnqueue, 2 s,
  // whenever the output is slow, whatever the server answers: seen here with queue.type="linkedlist".)
  writeFileSync(
    path.join(dir, 'rsyslog.conf'),
    `
global(workDirectory="${path.join(dir, 'work')}")
module(load="imfile")
module(load="omelasticsearch")
input(type="imfile" File="${input}" Tag="app" freshStartTail="off")
template(name="es" type="list" option.jsonf="on") {
  property(outname="@timestamp" name="timereported" dateFormat="rfc3339" format="jsonf")
  property(outname="message" name="msg" format="jsonf")
  constant(outname="tag" value="rsyslog" format="jsonf")
}
action(type="omelasticsearch" server="127.0.0.1" serverport="${port}" template="es" searchIndex="rsyslog" bulkmode="on"
       action.resumeRetryCount="-1" action.resumeInterval="2" errorfile="${path.join(dir, 'es-errors.json')}")
`,
  );
  rsyslog = spawn(
    '/usr/sbin/rsyslogd',
    ['-n', '-f', path.join(dir, 'rsyslog.conf'), '-i', path.join(dir, 'rsyslogd.pid')],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  rsyslog.stdout!.on('data', (d: Buffer) => {
    rsOut += d.toString();
  });
  rsyslog.stderr!.on('data', (d: Buffer) => {
    rsOut += d.toString();
  });
});

afterAll(async () => {
  if (rsyslog && rsyslog.exitCode === null) {
    const exited = new Promise((r) => rsyslog!.once('exit', r));
    rsyslog.kill('SIGTERM');
    await exited;
  }
  await ls?.cleanup();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

let written = 0;
function writeLines(n: number, extra?: Buffer): void {
  const lines: string[] = [];
  for (let i = 0; i < n; i++) lines.push(`line ${written++} of the rsyslog test`);
  appendFileSync(input, lines.join('\n') + '\n');
  if (extra) {
    appendFileSync(input, extra);
    written++;
  }
}

async function count(): Promise<number> {
  const r = await fetch(`${ls.url}/_count?q=tag:rsyslog`);
  return ((await r.json()) as { count: number }).count;
}

/** Waits (generously) until the store holds `n` lines from rsyslog; fails saying what rsyslog printed. */
async function waitFor(n: number): Promise<void> {
  const deadline = Date.now() + 90_000;
  let c = 0;
  while (Date.now() < deadline) {
    c = await count().catch(() => -1);
    if (c >= n) break;
    await new Promise((r) => setTimeout(r, 250));
  }
  if (c !== n) {
    const have = new Set(await messages());
    const odd = [...have].filter((m) => !/^line \d+ of the rsyslog test$/.test(m));
    const missing = Array.from({ length: written }, (_, i) => `line ${i} of the rsyslog test`).filter(
      (m) => !have.has(m),
    );
    let errors = '';
    try {
      errors = readFileSync(path.join(dir, 'es-errors.json'), 'utf8').slice(0, 3000);
    } catch (err) {
      errors = (err as Error).message;
    }
    expect(
      c,
      `odd ${JSON.stringify(odd).slice(0, 2000)}; missing ${missing.slice(0, 20).join('; ')}; rsyslog output:\n${rsOut}\nerrorfile: ${errors}`,
    ).toBe(n);
  }
}

async function messages(): Promise<string[]> {
  const res = await fetch(`${ls.url}/export`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query: { query: 'tag:rsyslog | fields message' } }),
  });
  return (await res.text())
    .trim()
    .split('\n')
    .map((l) => (JSON.parse(l) as { data: { message: string } }).data.message);
}

describe('rsyslog with omelasticsearch', () => {
  it('ships every line once, and a line of invalid UTF-8 arrives repaired', async () => {
    writeLines(2000, Buffer.concat([Buffer.from('raw bytes \xff\xfe here', 'latin1'), Buffer.from('\n')]));
    await waitFor(written);
    const msgs = await messages();
    expect(new Set(msgs).size).toBe(written);
    expect(msgs).toContain('raw bytes \ufffd\ufffd here');
  }, 120_000);

  it('a period of overload (the one write slot held 4 s): rsyslog waits in the bulk queue, nothing lost', async () => {
    const url = new URL(ls.url);
    const hold = http.request({
      host: url.hostname,
      port: url.port,
      method: 'POST',
      path: '/_bulk',
      headers: { 'content-type': 'application/x-ndjson' },
    });
    const held = new Promise<void>((resolve, reject) => {
      hold.on('response', (res) => {
        res.resume();
        res.on('end', () => resolve());
      });
      hold.on('error', reject);
    });
    hold.write(ndjson([{ tag: 'holder' }]));
    writeLines(3000);
    await new Promise((r) => setTimeout(r, 4000));
    const queued = /tidepool_logstore_queued_bulks (\d+)/.exec(await (await fetch(`${ls.debugUrl}/metrics`)).text());
    expect(Number(queued?.[1])).toBeGreaterThan(0);
    hold.end();
    await held;
    await waitFor(written);
    expect(new Set(await messages()).size).toBe(written);
  }, 120_000);

  it('the store killed (-9) and restarted: rsyslog resumes (polling /_cat/health) and nothing is lost or doubled', async () => {
    await ls.kill9();
    writeLines(1000);
    await new Promise((r) => setTimeout(r, 3000));
    await ls.restart();
    await waitFor(written);
    expect(new Set(await messages()).size).toBe(written);
    const metrics = await (await fetch(`${ls.debugUrl}/metrics`)).text();
    expect(metrics).toMatch(/tidepool_logstore_http_requests_total\{route="\/_cat\/health",status="200"\} [1-9]/);
  }, 180_000);
});
