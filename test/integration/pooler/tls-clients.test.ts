// TLS toward clients: each client_tls_sslmode with psql and node-postgres in each sslmode, client certificates, PostgreSQL 17 direct TLS, SHOW columns.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import net from 'node:net';
import { Duplex } from 'node:stream';
import tls from 'node:tls';
import { readFileSync } from 'node:fs';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { startTestPostgres, type TestPostgres } from '../../helpers/postgres.js';
import { ADMIN_PASSWORD, poolerToml, startTestPooler, type TestPooler } from '../../helpers/pooler.js';
import { makeTestCerts, type TestCerts } from '../../helpers/tls-certs.js';
import { RawConnection, errorText } from '../../helpers/raw-pg.js';
import { writeStartupMessage } from '../../../src/protocol/writer.js';
import { buildWebApp } from '../../../src/pooler/web/app.js';
import { nativeLoaded } from '../../../src/native/index.js';

let db: TestPostgres;
let certs: TestCerts;
const poolers: TestPooler[] = [];

beforeAll(async () => {
  certs = makeTestCerts();
  db = await startTestPostgres();
});

afterAll(async () => {
  for (const p of poolers) await p.stop();
  await db?.cleanup();
  certs?.cleanup();
});

async function pooler(mode: string, extra = '', sections = ''): Promise<TestPooler> {
  const p = await startTestPooler(
    poolerToml(db, {
      general: `client_tls_sslmode = "${mode}"
client_tls_key_file = "${certs.serverKey}"
client_tls_cert_file = "${certs.serverCert}"
${extra}`,
      extra: sections,
    }),
  );
  poolers.push(p);
  return p;
}

interface PsqlOptions {
  sslmode: string;
  host?: string;
  user?: string;
  password?: string;
  database?: string;
  extra?: string;
}

/** psql's answer, or its error output when it fails. */
async function psql(port: number, o: PsqlOptions, sql = 'select 42'): Promise<{ ok: boolean; out: string }> {
  const conninfo = `host=${o.host ?? '127.0.0.1'} port=${port} dbname=${o.database ?? 'app'} user=${o.user ?? 'md5user'} sslmode=${o.sslmode} ${o.extra ?? ''}`;
  try {
    const r = await promisify(execFile)('psql', [conninfo, '-Atc', sql], {
      env: { ...process.env, PGPASSWORD: o.password ?? 'md5pass', PGSSLMODE: '', PGCONNECT_TIMEOUT: '10' },
    });
    return { ok: true, out: r.stdout.trim() };
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    return { ok: false, out: e.stderr ?? e.message };
  }
}

function adminShow(port: number, what: string, sslmode = 'prefer'): Promise<{ ok: boolean; out: string }> {
  return psql(port, { sslmode, user: 'admin', password: ADMIN_PASSWORD, database: 'pgbouncer' }, `SHOW ${what}`);
}

async function nodePg(port: number, ssl: pg.ClientConfig['ssl'], host = '127.0.0.1'): Promise<string> {
  const c = new pg.Client({ host, port, user: 'scramuser', password: 'scrampass', database: 'app', ssl });
  await c.connect();
  try {
    return String((await c.query('select 7 as n')).rows[0].n);
  } finally {
    await c.end();
  }
}

const TLS_COLUMN = /^TLSv1\.[23]\/TLS_\w+$/;

describe('client_tls_sslmode = require', () => {
  let tp: TestPooler;
  // md5 toward clients: the raw protocol client of the direct TLS test speaks md5.
  beforeAll(async () => {
    tp = await pooler('require', 'auth_type = "md5"', '[web]\nui = true');
  });

  it('psql gets through with sslmode require, verify-ca and verify-full (host name and IP address)', async () => {
    expect(await psql(tp.port, { sslmode: 'require' })).toEqual({ ok: true, out: '42' });
    expect(await psql(tp.port, { sslmode: 'prefer' })).toEqual({ ok: true, out: '42' });
    expect(await psql(tp.port, { sslmode: 'allow' })).toEqual({ ok: true, out: '42' });
    expect(await psql(tp.port, { sslmode: 'verify-ca', extra: `sslrootcert=${certs.caCert}` })).toEqual({
      ok: true,
      out: '42',
    });
    expect(
      await psql(tp.port, { sslmode: 'verify-full', host: 'localhost', extra: `sslrootcert=${certs.caCert}` }),
    ).toEqual({ ok: true, out: '42' });
    expect(await psql(tp.port, { sslmode: 'verify-full', extra: `sslrootcert=${certs.caCert}` })).toEqual({
      ok: true,
      out: '42',
    });
  });

  it('refuses a plaintext client with 28000 and keeps serving the others', async () => {
    const r = await psql(tp.port, { sslmode: 'disable' });
    expect(r.ok).toBe(false);
    expect(r.out).toMatch(/SSL required/);
    const c = new pg.Client({
      host: '127.0.0.1',
      port: tp.port,
      user: 'md5user',
      password: 'md5pass',
      database: 'app',
      ssl: false,
    });
    const err = await c.connect().then(
      () => null,
      (e: { code?: string; message: string }) => e,
    );
    expect(err?.code).toBe('28000');
    expect(await psql(tp.port, { sslmode: 'require' })).toEqual({ ok: true, out: '42' });
  });

  it('node-postgres with a verified certificate, and a certificate from an unknown CA refused by the client', async () => {
    expect(await nodePg(tp.port, { ca: readFileSync(certs.caCert), rejectUnauthorized: true })).toBe('7');
    expect(await nodePg(tp.port, { ca: readFileSync(certs.caCert), rejectUnauthorized: true }, 'localhost')).toBe('7');
    expect(await nodePg(tp.port, { rejectUnauthorized: false })).toBe('7');
    await expect(nodePg(tp.port, { rejectUnauthorized: true })).rejects.toThrow(/self.signed|unable to (get|verify)/i);
  });

  it('SHOW CLIENTS and SHOW CONNECTIONS show the TLS protocol and cipher of each client', async () => {
    const c = new pg.Client({
      host: '127.0.0.1',
      port: tp.port,
      user: 'md5user',
      password: 'md5pass',
      database: 'app',
      ssl: { rejectUnauthorized: false },
      application_name: 'tls-probe',
    });
    await c.connect();
    try {
      await c.query('select 1');
      const clients = tp.pooler.show('CLIENTS');
      const tlsAt = clients.columns.indexOf('tls');
      const row = clients.rows.find((r) => r[clients.columns.indexOf('application_name')] === 'tls-probe');
      expect(String(row?.[tlsAt])).toMatch(TLS_COLUMN);
      const conns = tp.pooler.show('CONNECTIONS');
      const [total, , tlsCount, plain] = conns.rows[0] as number[];
      expect(tlsCount).toBeGreaterThan(0);
      expect(tlsCount! + plain!).toBe(total);
      // The console over TLS, as an operator's psql would see it.
      const shown = await adminShow(tp.port, 'CLIENTS', 'require');
      expect(shown.out).toMatch(/\|TLSv1\.[23]\/TLS_\w+\|/);
      // And /api/clients, /api/connections: the same rows as JSON.
      const app = await buildWebApp(tp.pooler);
      try {
        const headers = {
          authorization: `Basic ${Buffer.from(`admin:${ADMIN_PASSWORD}`).toString('base64')}`,
          accept: 'application/json',
        };
        const res = await app.inject({ method: 'GET', url: '/api/clients', headers });
        expect(res.statusCode).toBe(200);
        const rows = res.json() as { application_name: string; tls: string }[];
        expect(rows.find((r) => r.application_name === 'tls-probe')?.tls).toMatch(TLS_COLUMN);
        const conn = (await app.inject({ method: 'GET', url: '/api/connections', headers })).json() as {
          tls: number;
        }[];
        expect(conn[0]!.tls).toBeGreaterThan(0);
      } finally {
        await app.close();
      }
    } finally {
      await c.end();
    }
  });

  it('bytes pipelined after an SSLRequest are refused (08P01), not taken as the handshake', async () => {
    const sock = net.connect(tp.port, '127.0.0.1');
    await new Promise((r) => sock.once('connect', r));
    const got: Buffer[] = [];
    sock.on('data', (d: Buffer) => got.push(d));
    sock.write(
      Buffer.concat([
        Buffer.from([0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f]),
        writeStartupMessage({ user: 'md5user', database: 'app' }),
      ]),
    );
    await new Promise((r) => sock.once('close', r));
    const all = Buffer.concat(got);
    expect(String.fromCharCode(all[0]!)).toBe('E');
    expect(errorText({ type: 'E', raw: all })).toBe('08P01 received unencrypted data after SSL request');
  });

  it('TLS clients ride the native relay when it runs, with replies and queries larger than a TLS record and a read', async () => {
    const expectNative = nativeLoaded && process.env.TIDEPOOL_NATIVE_RELAY !== '0';
    const c = new pg.Client({
      host: '127.0.0.1',
      port: tp.port,
      user: 'md5user',
      password: 'md5pass',
      database: 'app',
      ssl: { rejectUnauthorized: false },
      application_name: 'tls-big',
    });
    await c.connect();
    try {
      const big = 'q'.repeat(300_000);
      // The extended protocol (a rewriter's client) and the simple one, both ways past 64 KiB.
      const r = await c.query('select $1::text as t, length($1::text) as n', [big]);
      expect(r.rows[0]).toEqual({ t: big, n: 300_000 });
      const s = await c.query(`select repeat('ab', 400000) as r, '${'z'.repeat(100_000)}' as z`);
      expect(s.rows[0].r.length).toBe(800_000);
      expect(s.rows[0].z.length).toBe(100_000);
      const all = await Promise.all(
        Array.from({ length: 20 }, (_, i) => c.query(`select ${i} as i, repeat('x', 20000) as x`)),
      );
      expect(all.map((q) => q.rows[0].i)).toEqual(Array.from({ length: 20 }, (_, i) => i));
      const session = [...tp.pooler.clients].find((x) => x.applicationName === 'tls-big');
      expect(session?.relayKind).toBe(expectNative ? 'native' : 'js');
      const servers = [...tp.pooler.pools.values()].flatMap((p) => [...p.servers]);
      for (const sv of servers) expect(sv.end.kind).toBe(expectNative ? 'native' : 'js');
    } finally {
      await c.end();
    }
  });

  it('garbage instead of a TLS hello closes that client only; SHOW EVENTS says why', async () => {
    const sock = net.connect(tp.port, '127.0.0.1');
    sock.on('error', () => undefined);
    await new Promise((r) => sock.once('connect', r));
    sock.write(Buffer.from([0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f]));
    const answer = await new Promise<Buffer>((r) => sock.once('data', r));
    expect(answer.toString()).toBe('S');
    sock.write(Buffer.from('GET / HTTP/1.1\r\nHost: pooler\r\n\r\n'));
    await new Promise((r) => sock.once('close', r));
    const events = tp.pooler.show('EVENTS');
    expect(events.rows.some((r) => /TLS handshake failed/.test(String(r[3])))).toBe(true);
    expect(await psql(tp.port, { sslmode: 'require' })).toEqual({ ok: true, out: '42' });
  });

  it('a logged-in TLS client whose next record fails its check loses its connection; the others are served', async () => {
    // TLS over a stream of our own, so bytes can be put under the session on the wire itself.
    const raw = net.connect(tp.port, '127.0.0.1');
    raw.on('error', () => undefined);
    await new Promise((r) => raw.once('connect', r));
    const wire = new Duplex({
      read() {},
      write(chunk: Buffer, _enc, cb) {
        raw.write(chunk, cb);
      },
    });
    raw.on('data', (d: Buffer) => wire.push(d));
    raw.on('end', () => wire.push(null));
    const secure = tls.connect({ socket: wire, ALPNProtocols: ['postgresql'], rejectUnauthorized: false });
    secure.on('error', () => undefined);
    await new Promise((r, j) => secure.once('secureConnect', r).once('error', j));
    const c = await RawConnection.login(secure as unknown as net.Socket, {
      user: 'md5user',
      database: 'app',
      password: 'md5pass',
    });
    c.send(Buffer.concat([Buffer.from('Q'), Buffer.from([0, 0, 0, 13]), Buffer.from('select 6\0')]));
    expect((await c.readUntilReady()).map((m) => m.type).join('')).toBe('TDCZ');
    const closed = new Promise((r) => raw.once('close', r));
    // An application-data record whose authentication tag cannot match.
    raw.write(Buffer.concat([Buffer.from([0x17, 0x03, 0x03, 0x00, 0x20]), Buffer.alloc(32, 7)]));
    // The native relay drops the connection at once (Node's tls on the JavaScript relay leaves it to the client).
    if (nativeLoaded && process.env.TIDEPOOL_NATIVE_RELAY !== '0') await closed;
    else raw.destroy();
    expect(await psql(tp.port, { sslmode: 'require' })).toEqual({ ok: true, out: '42' });
    expect(await nodePg(tp.port, { rejectUnauthorized: false })).toBe('7');
  });

  it('PostgreSQL 17 direct TLS (ALPN "postgresql") is accepted; without ALPN it is refused', async () => {
    const secure = tls.connect({
      host: '127.0.0.1',
      port: tp.port,
      ALPNProtocols: ['postgresql'],
      rejectUnauthorized: false,
    });
    await new Promise((r, j) => secure.once('secureConnect', r).once('error', j));
    expect(secure.alpnProtocol).toBe('postgresql');
    const c = await RawConnection.login(secure, { user: 'md5user', database: 'app', password: 'md5pass' });
    c.send(Buffer.concat([Buffer.from('Q'), Buffer.from([0, 0, 0, 13]), Buffer.from('select 5\0')]));
    const replies = await c.readUntilReady();
    expect(replies.map((m) => m.type).join('')).toBe('TDCZ');
    c.close();

    const bare = tls.connect({ host: '127.0.0.1', port: tp.port, rejectUnauthorized: false });
    await new Promise((r, j) => bare.once('secureConnect', r).once('error', j));
    await expect(RawConnection.login(bare, { user: 'md5user', database: 'app', password: 'md5pass' })).rejects.toThrow(
      '08P01 received direct SSL connection request without ALPN protocol negotiation extension',
    );
  });
});

describe('client_tls_sslmode = prefer and disable', () => {
  it('prefer: TLS when asked, plaintext otherwise, each shown as it is', async () => {
    const tp = await pooler('prefer');
    expect(await psql(tp.port, { sslmode: 'disable' })).toEqual({ ok: true, out: '42' });
    expect(await psql(tp.port, { sslmode: 'require' })).toEqual({ ok: true, out: '42' });
    expect(await nodePg(tp.port, false)).toBe('7');
    const shown = await adminShow(tp.port, 'CLIENTS', 'disable');
    // The admin session itself is plaintext: an empty tls column.
    expect(shown.out).toMatch(/\|127\.0\.0\.1:\d+\|\|/);
  });

  it('disable: SSLRequest answered N, so sslmode=require fails at the client and prefer falls back', async () => {
    const tp = await pooler('disable');
    const r = await psql(tp.port, { sslmode: 'require' });
    expect(r.ok).toBe(false);
    expect(r.out).toMatch(/server does not support SSL/);
    expect(await psql(tp.port, { sslmode: 'prefer' })).toEqual({ ok: true, out: '42' });
    expect(tp.pooler.show('CONNECTIONS').rows[0]![2]).toBe(0);
  });
});

describe('client certificates (verify-ca, verify-full)', () => {
  let verifyCa: TestPooler;
  let verifyFull: TestPooler;
  beforeAll(async () => {
    verifyCa = await pooler('verify-ca', `client_tls_ca_file = "${certs.caCert}"`);
    verifyFull = await pooler('verify-full', `client_tls_ca_file = "${certs.caCert}"`);
  });

  it('verify-ca: a certificate signed by client_tls_ca_file gets in; none, or one of another CA, gets 28000', async () => {
    const good = certs.client('anyone');
    expect(await psql(verifyCa.port, { sslmode: 'require', extra: `sslcert=${good.cert} sslkey=${good.key}` })).toEqual(
      { ok: true, out: '42' },
    );
    const none = await psql(verifyCa.port, { sslmode: 'require', extra: 'sslcert=/nonexistent sslkey=/nonexistent' });
    expect(none.ok).toBe(false);
    expect(none.out).toMatch(/connection requires a valid client certificate/);
    const bad = certs.client('anyone', true);
    const other = await psql(verifyCa.port, { sslmode: 'require', extra: `sslcert=${bad.cert} sslkey=${bad.key}` });
    expect(other.ok).toBe(false);
    expect(other.out).toMatch(/connection requires a valid client certificate/);
    // node-postgres with a certificate.
    expect(
      await nodePg(verifyCa.port, {
        rejectUnauthorized: false,
        cert: readFileSync(good.cert),
        key: readFileSync(good.key),
      }),
    ).toBe('7');
  });

  it('verify-full: the certificate CN must be the user name', async () => {
    const md5user = certs.client('md5user');
    expect(
      await psql(verifyFull.port, {
        sslmode: 'verify-full',
        host: 'localhost',
        extra: `sslrootcert=${certs.caCert} sslcert=${md5user.cert} sslkey=${md5user.key}`,
      }),
    ).toEqual({ ok: true, out: '42' });
    const someoneElse = certs.client('scramuser');
    const r = await psql(verifyFull.port, {
      sslmode: 'require',
      extra: `sslcert=${someoneElse.cert} sslkey=${someoneElse.key}`,
    });
    expect(r.ok).toBe(false);
    expect(r.out).toMatch(/certificate validation \(clientcert=verify-full\) failed for user "md5user": CN mismatch/);
  });
});
