// Clients that never finish their login cannot stop the pooler: client_login_timeout closes half-open startups,
// answered SSLRequests, slow senders and stalled password exchanges; max_connections counts logins in progress.
// Runs on the native relay (its own accepts and logins) and, in the js-relay project, on net.Server's accepts.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  poolerToml,
  startChildPooler,
  startTestPooler,
  type ChildPooler,
  type TestPooler,
} from '../../helpers/pooler.js';
import { freePort } from '../../../src/launcher/embedded-postgres.js';
import { startTestPostgres, type TestPostgres } from '../../helpers/postgres.js';
import { errorText, RawConnection, type Message } from '../../helpers/raw-pg.js';
import { toRows } from '../../../src/pooler/web/show-rows.js';
import { makeTestCerts } from '../../helpers/tls-certs.js';
import { writeQuery as wireQuery, writeStartupMessage } from '../../../src/protocol/writer.js';
import { startWebListener, type WebListener } from '../../../src/pooler/web/server.js';

let db: TestPostgres;
const started: TestPooler[] = [];
const webs: WebListener[] = [];

beforeAll(async () => {
  db = await startTestPostgres();
});

afterAll(async () => {
  for (const w of webs) await w.close();
  for (const tp of started) await tp.stop();
  await db?.cleanup();
});

async function pooler(general: string): Promise<TestPooler> {
  const tp = await startTestPooler(poolerToml(db, { general }));
  started.push(tp);
  return tp;
}

async function until(what: string, check: () => boolean | Promise<boolean>, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** A raw client socket: what it received, and whether the pooler closed it. */
interface Raw {
  socket: net.Socket;
  received: () => Buffer;
  closed: () => boolean;
}

async function rawConnect(port: number): Promise<Raw> {
  const socket = net.connect(port, '127.0.0.1');
  const chunks: Buffer[] = [];
  let closed = false;
  socket.on('data', (d: Buffer) => chunks.push(d));
  socket.on('close', () => {
    closed = true;
  });
  socket.on('error', () => undefined);
  // A socket the pooler refuses may be reset before its 'connect' is heard: it counts as closed, not as a failure.
  await new Promise<void>((resolve) => socket.once('connect', resolve).once('close', () => resolve()));
  return { socket, received: () => Buffer.concat(chunks), closed: () => closed };
}

/** The first whole message of `b`, as an ErrorResponse reader wants it. */
function firstMessage(b: Buffer): Message | null {
  if (b.length < 5) return null;
  const len = b.readInt32BE(1);
  return b.length >= 1 + len ? { type: String.fromCharCode(b[0]!), raw: b.subarray(0, 1 + len) } : null;
}

const client = (tp: TestPooler) =>
  new pg.Client({ host: '127.0.0.1', port: tp.port, user: 'md5user', password: 'md5pass', database: 'app' });

async function selectOne(tp: TestPooler): Promise<void> {
  const c = client(tp);
  await c.connect();
  try {
    expect((await c.query('SELECT 1 AS one')).rows[0].one).toBe(1);
  } finally {
    await c.end();
  }
}

/** A startup packet's first four bytes: a length, and nothing after it. */
const HALF_STARTUP = writeStartupMessage({ user: 'md5user', database: 'app' }).subarray(0, 4);
const SSL_REQUEST = Buffer.from([0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f]);

describe('client_login_timeout', () => {
  it('thousands of half-open startups: counted, harmless to a real login, closed at the timeout, logged in one line', async () => {
    const tp = await pooler('client_login_timeout = "2s"\nmax_connections = 3000');
    const web = await startWebListener(tp.pooler, { host: '127.0.0.1', port: 0 });
    webs.push(web);
    const n = 2000;
    const raws: Raw[] = [];
    for (let i = 0; i < n; i += 200) {
      const batch = await Promise.all(Array.from({ length: Math.min(200, n - i) }, () => rawConnect(tp.port)));
      for (const r of batch) r.socket.write(HALF_STARTUP);
      raws.push(...batch);
    }
    // Every one is a login in progress (SHOW LISTS login_clients) until the timeout: counted, not forgotten.
    const loggingIn = () => tp.pooler.snapshot().counters.loggingIn;
    await until('the half-open logins to be counted', () => loggingIn() >= n || raws.some((r) => r.closed()));
    expect(tp.pooler.connectionCount()).toBeGreaterThanOrEqual(Math.min(n, loggingIn()));
    await selectOne(tp);
    const res = await fetch(`http://127.0.0.1:${web.port}/metrics`);
    expect(res.status).toBe(200);
    expect(await res.text()).toMatch(/pooler_clients_logging_in \d+/);
    await until('every half-open socket to be closed', () => raws.every((r) => r.closed()));
    // Closed without a word: the client had not spoken the protocol yet (PostgreSQL does the same).
    expect(raws.every((r) => r.received().length === 0)).toBe(true);
    expect(tp.pooler.snapshot().counters.loginTimeouts).toBeGreaterThanOrEqual(n);
    await until('no login left', () => loggingIn() === 0);
    const lines = tp
      .logText()
      .split('\n')
      .filter((l) => l.includes('client_login_timeout'));
    expect(lines.length).toBeGreaterThan(0);
    expect(lines.length).toBeLessThan(10);
    expect(lines[0]).toContain('level=warn');
    await selectOne(tp);
  }, 60_000);

  it('a partial SSLRequest, an SSLRequest answered N then silence, and a 1-byte-per-200ms sender are all closed', async () => {
    const tp = await pooler('client_login_timeout = "1s"');
    const partial = await rawConnect(tp.port);
    partial.socket.write(SSL_REQUEST.subarray(0, 5));
    const answered = await rawConnect(tp.port);
    answered.socket.write(SSL_REQUEST);
    await until('the SSLRequest answer', () => answered.received().length > 0);
    expect(answered.received().toString()).toBe('N');
    answered.socket.write(SSL_REQUEST);
    await until('the second SSLRequest answer', () => answered.received().length > 1 || answered.closed());
    const dribbler = await rawConnect(tp.port);
    // A startup packet far longer than the timeout lets it send at this pace: total time counts, not idle time.
    const packet = writeStartupMessage({ user: 'md5user', database: 'app', application_name: 'x'.repeat(200) });
    let at = 0;
    const drip = setInterval(() => {
      if (!dribbler.closed() && at < packet.length) dribbler.socket.write(packet.subarray(at, ++at));
    }, 200);
    try {
      await until('all three to be closed', () => partial.closed() && answered.closed() && dribbler.closed());
    } finally {
      clearInterval(drip);
    }
    expect(at).toBeLessThan(packet.length);
    expect(tp.pooler.snapshot().counters.loginTimeouts).toBeGreaterThanOrEqual(3);
    await selectOne(tp);
  }, 30_000);

  it('a TLS handshake that stalls after the S (and one that stalls half-way) is closed', async () => {
    const certs = makeTestCerts();
    try {
      const tp = await pooler(
        `client_login_timeout = "1s"\nclient_tls_sslmode = "prefer"\nclient_tls_key_file = "${certs.serverKey}"\nclient_tls_cert_file = "${certs.serverCert}"`,
      );
      const stalled = await rawConnect(tp.port);
      stalled.socket.write(SSL_REQUEST);
      await until('the S', () => stalled.received().length > 0);
      expect(stalled.received().toString()).toBe('S');
      // The first bytes of a ClientHello record (type 22, TLS 1.0 record version, a length) and nothing more.
      const halfHello = await rawConnect(tp.port);
      halfHello.socket.write(SSL_REQUEST);
      await until('the second S', () => halfHello.received().length > 0);
      halfHello.socket.write(Buffer.from([0x16, 0x03, 0x01, 0x02, 0x00, 0x01]));
      await until('both to be closed', () => stalled.closed() && halfHello.closed());
      // Nothing in plaintext after the S: the client expects TLS records there.
      expect(stalled.received().toString()).toBe('S');
      expect(tp.pooler.snapshot().counters.loginTimeouts).toBeGreaterThanOrEqual(2);
    } finally {
      certs.cleanup();
    }
  }, 30_000);

  it('a stalled password exchange gets FATAL 08P01 and is closed', async () => {
    const tp = await pooler('client_login_timeout = "1s"');
    for (const user of ['md5user', 'scramuser']) {
      const raw = await rawConnect(tp.port);
      raw.socket.write(writeStartupMessage({ user, database: 'app' }));
      await until('the closed connection', () => raw.closed());
      const b = raw.received();
      // The authentication request, then the error.
      expect(b[0]).toBe('R'.charCodeAt(0));
      const m = firstMessage(b.subarray(1 + b.readInt32BE(1)));
      expect(m && errorText(m)).toBe('08P01 canceling authentication due to timeout');
    }
  }, 30_000);

  it('a login the native relay began and handed on keeps its accept time', async () => {
    const tp = await pooler('client_login_timeout = "3s"');
    const raw = await rawConnect(tp.port);
    // search_path: a startup parameter the relay's own logins do not take, so JavaScript gets this one.
    const packet = writeStartupMessage({ user: 'md5user', database: 'app', search_path: 'public' });
    const steps = 8;
    const size = Math.ceil(packet.length / steps);
    let lastByteAt = 0;
    for (let i = 0; i < steps; i++) {
      if (i === steps - 1) lastByteAt = Date.now();
      raw.socket.write(packet.subarray(i * size, (i + 1) * size));
      if (i < steps - 1) await new Promise((r) => setTimeout(r, 100));
    }
    await until('the authentication request', () => raw.received().length > 0 || raw.closed());
    const session = [...tp.pooler.logins][0];
    expect(session).toBeDefined();
    // Accepted when the first bytes came, 700 ms before the last: not when the startup packet was complete.
    expect(session!.connectedAt).toBeLessThan(lastByteAt - 300);
    await until('the timeout', () => raw.closed());
    const b = raw.received();
    const m = firstMessage(b.subarray(1 + b.readInt32BE(1)));
    expect(m && errorText(m)).toBe('08P01 canceling authentication due to timeout');
  }, 30_000);

  it('0 turns it off', async () => {
    const tp = await pooler('client_login_timeout = 0');
    const raw = await rawConnect(tp.port);
    raw.socket.write(HALF_STARTUP);
    await until('the login to be counted', () => tp.pooler.snapshot().counters.loggingIn === 1);
    expect(tp.pooler.expireLogins(Date.now() + 3_600_000)).toBe(0);
    expect(raw.closed()).toBe(false);
    raw.socket.destroy();
  });
});

describe('max_connections counts logins in progress', () => {
  it('the client past it gets 53300 at once; a place freed by the timeout is taken again', async () => {
    const tp = await pooler('client_login_timeout = "1500ms"\nmax_connections = 5');
    const raws = await Promise.all(Array.from({ length: 5 }, () => rawConnect(tp.port)));
    for (const r of raws) r.socket.write(HALF_STARTUP);
    await until('five logins in progress', () => tp.pooler.connectionCount() === 5);
    const extra = await rawConnect(tp.port);
    // A byte first: with tcp_defer_accept the kernel hands over a silent connection only after 45 s.
    extra.socket.write(HALF_STARTUP);
    await until('the refusal', () => extra.closed());
    const m = firstMessage(extra.received());
    expect(m && errorText(m)).toBe('53300 sorry, too many clients already (max_connections = 5)');
    await expect(selectOne(tp)).rejects.toMatchObject({ code: '53300' });
    const text = await fetchMetrics(tp);
    expect(text).toMatch(/pooler_clients_refused_total\{reason="max_connections"\} [1-9]/);
    await until('the half-open logins to time out', () => raws.every((r) => r.closed()));
    await selectOne(tp);
  }, 30_000);
});

describe('web listener timeouts', () => {
  it('a slowloris client (a header line every 200 ms, never done) is closed at headers_timeout; others are served', async () => {
    const tp = await pooler('');
    tp.writeConfig(poolerToml(db, { extra: '[web]\nheaders_timeout = "1s"\nrequest_timeout = "2s"' }));
    await tp.pooler.reload();
    const web = await startWebListener(tp.pooler, { host: '127.0.0.1', port: 0 });
    webs.push(web);
    const slow = net.connect(web.port, '127.0.0.1');
    let closed = false;
    slow.on('close', () => {
      closed = true;
    });
    slow.on('error', () => undefined);
    await new Promise<void>((resolve) => slow.once('connect', resolve));
    slow.write('GET /metrics HTTP/1.1\r\nHost: x\r\n');
    let lines = 0;
    const drip = setInterval(() => {
      if (!closed) slow.write(`X-Slow-${lines++}: y\r\n`);
    }, 200);
    try {
      expect((await fetch(`http://127.0.0.1:${web.port}/metrics`)).status).toBe(200);
      await until('the slow client to be closed', () => closed);
    } finally {
      clearInterval(drip);
      slow.destroy();
    }
    // Closed by the timeout, not by the end of the headers: it was still sending.
    expect(lines).toBeGreaterThan(0);
  }, 30_000);
});

/** /metrics as the web listener renders it (the same function, on the same snapshot). */
async function fetchMetrics(tp: TestPooler): Promise<string> {
  const { renderPoolerMetrics } = await import('../../../src/pooler/web/pooler-metrics.js');
  return renderPoolerMetrics(tp.pooler);
}

describe('descriptors run out (EMFILE)', () => {
  it('the pooler refuses what it cannot hold, logs and counts it, and serves again once descriptors free up', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'tidepool-emfile-'));
    const [port, webPort] = [await freePort(), await freePort()];
    const configFile = path.join(dir, 'pooler.toml');
    writeFileSync(
      configFile,
      poolerToml(db, {
        general: 'client_login_timeout = "2s"',
        extra: `[web]\nenabled = true\nhost = "127.0.0.1"\nport = ${webPort}`,
      })
        .replace('port = 0', `port = ${port}`)
        .replace('log_level = "warn"', 'log_level = "info"'),
    );
    let child: ChildPooler | null = null;
    const raws: Raw[] = [];
    try {
      child = await startChildPooler(configFile, port, {}, { maxFds: 256 });
      await until('the web listener', () => child!.output().includes('web listener started'));
      for (let i = 0; i < 400; i += 50) {
        const batch = await Promise.all(Array.from({ length: 50 }, () => rawConnect(port)));
        for (const r of batch) r.socket.write(HALF_STARTUP);
        raws.push(...batch);
      }
      await until('the descriptors log line', () => child!.output().includes('no file descriptors left')).catch(
        (err: Error) => {
          throw new Error(
            `${err.message}; closed ${raws.filter((r) => r.closed()).length} of ${raws.length}; output:\n${child!.output().slice(-3000)}`,
          );
        },
      );
      // The flood times out, the descriptors come back, and the pooler serves a real login and the web listener.
      await until('every flooding socket to be closed', () => raws.every((r) => r.closed()));
      // The test sees a flooding socket closed when the pooler's FIN arrives; the pooler counts it gone at its own
      // 'close' a moment later, and a login in between is still refused (reset). Serving again is the condition.
      let refusedAfterFlood = 0;
      await until('a real login served after the flood', async () => {
        const c = new pg.Client({ host: '127.0.0.1', port, user: 'md5user', password: 'md5pass', database: 'app' });
        c.on('error', () => undefined);
        try {
          await c.connect();
        } catch (err) {
          if (!/ECONNRESET|EPIPE|Connection terminated/.test(String(err))) throw err;
          refusedAfterFlood++;
          return false;
        }
        try {
          return (await c.query('SELECT 1 AS one')).rows[0].one === 1;
        } finally {
          await c.end();
        }
      });
      expect(refusedAfterFlood).toBeLessThan(50);
      const metrics = await (await fetch(`http://127.0.0.1:${webPort}/metrics`)).text();
      expect(metrics).toMatch(/pooler_clients_refused_total\{reason="descriptors"\} [1-9]/);
      expect(child.child.exitCode).toBe(null);
    } finally {
      for (const r of raws) r.socket.destroy();
      await child?.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});

describe('message types no server takes', () => {
  it('type 0x00 gets FATAL 08P01 from the pooler and never reaches the server, which stays in the pool', async () => {
    const tp = await pooler('auth_type = "md5"');
    const c = await RawConnection.connect({
      host: '127.0.0.1',
      port: tp.port,
      user: 'md5user',
      password: 'md5pass',
      database: 'app',
    });
    c.send(wireQuery('SELECT pg_backend_pid()'));
    const rows = await c.readUntilReady();
    const data = rows.find((m) => m.type === 'D')!;
    const pid = Number(data.raw.toString('utf8', 11, 11 + data.raw.readInt32BE(7)));
    expect(pid).toBeGreaterThan(0);
    c.send(Buffer.from([0, 0, 0, 0, 4]));
    const { messages } = await c.rest();
    expect(messages.map((m) => (m.type === 'E' ? errorText(m) : m.type))).toEqual([
      '08P01 invalid frontend message type 0',
    ]);
    // The backend that served the client lives on, still the pool's.
    const servers = () => toRows(tp.pooler.show('SERVERS')).map((r) => Number(r['server_process_id']));
    await until('the server back in the pool', () => servers().includes(pid));
    const direct = new pg.Client({
      host: db.host,
      port: db.port,
      user: 'md5user',
      password: 'md5pass',
      database: 'app',
    });
    await direct.connect();
    try {
      const alive = await direct.query('SELECT count(*)::int AS n FROM pg_stat_activity WHERE pid = $1', [pid]);
      expect(alive.rows[0].n).toBe(1);
    } finally {
      await direct.end();
    }
    await selectOne(tp);
  }, 30_000);
});

describe('graceful shutdown', () => {
  it('after SIGTERM, an idle client that starts a new query gets 57P01 at once while a running transaction finishes', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'tidepool-sigterm-'));
    const port = await freePort();
    const configFile = path.join(dir, 'pooler.toml');
    writeFileSync(
      configFile,
      poolerToml(db, { general: 'shutdown_timeout = "120s"' })
        .replace('port = 0', `port = ${port}`)
        .replace('log_level = "warn"', 'log_level = "info"'),
    );
    let child: ChildPooler | null = null;
    const busy = new pg.Client({ host: '127.0.0.1', port, user: 'md5user', password: 'md5pass', database: 'app' });
    const idle = new pg.Client({ host: '127.0.0.1', port, user: 'scramuser', password: 'scrampass', database: 'app' });
    busy.on('error', () => undefined);
    idle.on('error', () => undefined);
    try {
      child = await startChildPooler(configFile, port);
      await busy.connect();
      await idle.connect();
      await idle.query('SELECT 1');
      await busy.query('BEGIN');
      await busy.query('SELECT 1');
      child.child.kill('SIGTERM');
      await until('the shutdown to begin', () => child!.output().includes('SIGTERM: graceful shutdown'));
      // The vitest timeout (30 s) is far below shutdown_timeout (120 s): an answer only at the deadline fails.
      await expect(idle.query('SELECT 2')).rejects.toMatchObject({
        code: '57P01',
        message: 'terminating connection due to administrator command',
      });
      // The running transaction is not cut short.
      expect((await busy.query('SELECT 3 AS three')).rows[0].three).toBe(3);
      await busy.query('COMMIT');
      const code = await new Promise<number | null>((r) =>
        child!.child.exitCode !== null ? r(child!.child.exitCode) : child!.child.once('exit', (c) => r(c)),
      );
      expect(code).toBe(0);
    } finally {
      await busy.end().catch(() => undefined);
      await idle.end().catch(() => undefined);
      await child?.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 30_000);
});
