// TLS certificates re-read on RELOAD: rotation without dropping connected clients; a bad file keeps the old ones and says why.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import tls from 'node:tls';
import { copyFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { startTestPostgres, type TestPostgres } from '../../helpers/postgres.js';
import { poolerToml, startTestPooler, type TestPooler } from '../../helpers/pooler.js';
import { makeTestCerts, type TestCerts } from '../../helpers/tls-certs.js';
import { Pooler } from '../../../src/pooler/pooler.js';
import { LogHub } from '../../../src/shared/logger.js';

let db: TestPostgres;
let certs: TestCerts;
let tp: TestPooler;
let certFile: string;
let keyFile: string;

beforeAll(async () => {
  certs = makeTestCerts();
  db = await startTestPostgres();
  // The files the config names, overwritten in place as an operator's rotation would.
  certFile = path.join(certs.dir, 'live.crt');
  keyFile = path.join(certs.dir, 'live.key');
  const first = certs.server('first');
  copyFileSync(first.cert, certFile);
  copyFileSync(first.key, keyFile);
  tp = await startTestPooler(
    poolerToml(db, {
      general: `client_tls_sslmode = "require"\nclient_tls_key_file = "${keyFile}"\nclient_tls_cert_file = "${certFile}"`,
    }),
  );
});

afterAll(async () => {
  await tp?.stop();
  await db?.cleanup();
  certs?.cleanup();
});

/** The CN of the certificate the pooler presents to a new TLS client now (direct TLS, ALPN postgresql). */
async function presentedCn(): Promise<string> {
  const s = tls.connect({ host: '127.0.0.1', port: tp.port, ALPNProtocols: ['postgresql'], rejectUnauthorized: false });
  try {
    await new Promise((r, j) => s.once('secureConnect', r).once('error', j));
    return String(s.getPeerCertificate().subject.CN);
  } finally {
    s.destroy();
  }
}

describe('RELOAD and TLS files', () => {
  it('a rotated certificate is served to new clients; a connected TLS client keeps working', async () => {
    const held = new pg.Client({
      host: '127.0.0.1',
      port: tp.port,
      user: 'md5user',
      password: 'md5pass',
      database: 'app',
      ssl: { rejectUnauthorized: false },
    });
    await held.connect();
    try {
      await held.query('select 1');
      expect(await presentedCn()).toBe('first');
      const second = certs.server('second');
      copyFileSync(second.cert, certFile);
      copyFileSync(second.key, keyFile);
      expect(await tp.pooler.reload()).toBe('RELOAD done');
      expect(await presentedCn()).toBe('second');
      expect((await held.query('select 2 as n')).rows[0].n).toBe(2);
    } finally {
      await held.end();
    }
  });

  it('a file that cannot be used keeps the previous certificate, and RELOAD, the log and SHOW EVENTS say why', async () => {
    const before = await presentedCn();
    writeFileSync(certFile, '-----BEGIN CERTIFICATE-----\nnot a certificate\n-----END CERTIFICATE-----\n');
    const msg = await tp.pooler.reload();
    expect(msg).toMatch(
      /TLS files not loaded, the previous certificates and keys stay: client TLS files \(.*live\.key, .*live\.crt\) could not be used/,
    );
    expect(tp.logText()).toMatch(/TLS files not loaded/);
    const events = tp.pooler.show('EVENTS');
    expect(events.rows.some((r) => /TLS files not loaded/.test(String(r[3])))).toBe(true);
    expect(await presentedCn()).toBe(before);
    // Plaintext is still refused and TLS clients still get in.
    const c = new pg.Client({
      host: '127.0.0.1',
      port: tp.port,
      user: 'md5user',
      password: 'md5pass',
      database: 'app',
      ssl: { rejectUnauthorized: false },
    });
    await c.connect();
    expect((await c.query('select 3 as n')).rows[0].n).toBe(3);
    await c.end();
  });

  it('RELOAD turns client TLS on in a pooler started without it (no restart: the relay its pools run on carries it)', async () => {
    const plain = await startTestPooler(poolerToml(db));
    try {
      const before = new pg.Client({
        host: '127.0.0.1',
        port: plain.port,
        user: 'md5user',
        password: 'md5pass',
        database: 'app',
        ssl: { rejectUnauthorized: false },
      });
      await expect(before.connect()).rejects.toThrow(/does not support SSL/);
      plain.writeConfig(
        poolerToml(db, {
          general: `client_tls_sslmode = "require"\nclient_tls_key_file = "${certs.serverKey}"\nclient_tls_cert_file = "${certs.serverCert}"`,
        }),
      );
      expect(await plain.pooler.reload()).toBe('RELOAD done');
      const c = new pg.Client({
        host: '127.0.0.1',
        port: plain.port,
        user: 'md5user',
        password: 'md5pass',
        database: 'app',
        ssl: { rejectUnauthorized: false },
        application_name: 'after-reload',
      });
      await c.connect();
      try {
        expect((await c.query('select 4 as n')).rows[0].n).toBe(4);
        const clients = plain.pooler.show('CLIENTS');
        const row = clients.rows.find((r) => r[clients.columns.indexOf('application_name')] === 'after-reload');
        expect(String(row?.[clients.columns.indexOf('tls')])).toMatch(/^TLSv1\.[23]\/TLS_\w+$/);
      } finally {
        await c.end();
      }
    } finally {
      await plain.stop();
    }
  });

  it('a missing file at start stops the start and names the key and the file', async () => {
    const dir = path.join(certs.dir, 'start');
    const file = `${dir}.toml`;
    writeFileSync(
      file,
      poolerToml(db, {
        general: `client_tls_sslmode = "prefer"\nclient_tls_key_file = "${dir}/missing.key"\nclient_tls_cert_file = "${certFile}"`,
      }),
    );
    await expect(
      Pooler.start(file, new LogHub({ out: { write: () => true } as unknown as NodeJS.WritableStream })),
    ).rejects.toThrow(/client_tls_key_file .*missing\.key: ENOENT/);
  });
});
