// auth_hba_file through the pooler: hostssl/hostnossl/host lines, trust, reject, md5, scram-sha-256 over TLS only, password, cert, no match, RELOAD.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import net from 'node:net';
import path from 'node:path';
import { writeFileSync } from 'node:fs';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { startTestPostgres, type TestPostgres } from '../../helpers/postgres.js';
import { poolerToml, startTestPooler, type TestPooler } from '../../helpers/pooler.js';
import { makeTestCerts, type TestCerts } from '../../helpers/tls-certs.js';
import { writeStartupMessage } from '../../../src/protocol/writer.js';
import { Pooler } from '../../../src/pooler/pooler.js';
import { LogHub } from '../../../src/shared/logger.js';

let db: TestPostgres;
let certs: TestCerts;
let tp: TestPooler;
let hbaFile: string;

const RULES = [
  '# tidepool test rules',
  'hostssl app scramuser 127.0.0.1/32 scram-sha-256',
  'hostnossl app scramuser 0.0.0.0/0 reject',
  'hostnossl app md5user 127.0.0.1 255.255.255.255 md5',
  'hostssl appsession md5user 127.0.0.1/32 cert',
  'host appsession @users.txt 127.0.0.0/8 password',
  'host pgbouncer,tidepool admin 127.0.0.1/32 trust',
  'host all +admins 0.0.0.0/0 trust',
  'host all all ::1/128 reject',
].join('\n');

beforeAll(async () => {
  certs = makeTestCerts();
  db = await startTestPostgres();
  hbaFile = path.join(certs.dir, 'hba.conf');
  writeFileSync(path.join(certs.dir, 'users.txt'), 'md5user\n');
  writeFileSync(hbaFile, RULES);
  tp = await startTestPooler(
    poolerToml(db, {
      general: `auth_hba_file = "${hbaFile}"
client_tls_sslmode = "prefer"
client_tls_key_file = "${certs.serverKey}"
client_tls_cert_file = "${certs.serverCert}"
client_tls_ca_file = "${certs.caCert}"`,
    }),
  );
});

afterAll(async () => {
  await tp?.stop();
  await db?.cleanup();
  certs?.cleanup();
});

/** The authentication request a plaintext client gets first (3 cleartext, 5 md5, 10 SASL, 0 ok), or the error. */
async function firstAuthRequest(user: string, database: string): Promise<string> {
  const sock = net.connect(tp.port, '127.0.0.1');
  await new Promise((r) => sock.once('connect', r));
  sock.write(writeStartupMessage({ user, database }));
  const data = await new Promise<Buffer>((resolve) => sock.once('data', resolve));
  sock.destroy();
  if (data[0] === 0x52) return `R${data.readInt32BE(5)}`;
  const m = /M([^\0]*)\0/.exec(data.toString('utf8', 5));
  return `E ${m?.[1] ?? '?'}`;
}

async function login(o: {
  user: string;
  password?: string;
  database: string;
  ssl?: pg.ClientConfig['ssl'];
}): Promise<string> {
  const c = new pg.Client({
    host: '127.0.0.1',
    port: tp.port,
    user: o.user,
    password: o.password,
    database: o.database,
    ssl: o.ssl ?? false,
  });
  try {
    await c.connect();
    return String((await c.query('select current_user as u')).rows[0].u);
  } catch (err) {
    const e = err as { code?: string; message: string };
    return `error ${e.code}: ${e.message}`;
  } finally {
    await c.end().catch(() => undefined);
  }
}

describe('auth_hba_file', () => {
  it('each line type and method: scram over hostssl only, reject, md5 by address and mask, password via @file, trust', async () => {
    expect(
      await login({ user: 'scramuser', password: 'scrampass', database: 'app', ssl: { rejectUnauthorized: false } }),
    ).toBe('scramuser');
    expect(await login({ user: 'scramuser', password: 'scrampass', database: 'app' })).toBe(
      'error 28000: pg_hba.conf rejects connection for host "127.0.0.1", user "scramuser", database "app", no encryption',
    );
    expect(await firstAuthRequest('md5user', 'app')).toBe('R5');
    expect(await login({ user: 'md5user', password: 'md5pass', database: 'app' })).toBe('md5user');
    expect(await firstAuthRequest('md5user', 'appsession')).toBe('R3');
    expect(await login({ user: 'md5user', password: 'md5pass', database: 'appsession' })).toBe('md5user');
    // The admin console by trust: no password asked.
    expect(await firstAuthRequest('admin', 'pgbouncer')).toBe('R0');
  });

  it('cert: a verified certificate whose CN is the user logs in without a password; otherwise 28000', async () => {
    const mine = certs.client('md5user');
    const { readFileSync } = await import('node:fs');
    expect(
      await login({
        user: 'md5user',
        database: 'appsession',
        ssl: { rejectUnauthorized: false, cert: readFileSync(mine.cert), key: readFileSync(mine.key) },
      }),
    ).toBe('md5user');
    const r = await promisify(execFile)(
      'psql',
      [
        `host=127.0.0.1 port=${tp.port} dbname=appsession user=md5user sslmode=require sslcert=/nonexistent sslkey=/nonexistent`,
        '-Atc',
        'select 1',
      ],
      { env: { ...process.env, PGPASSWORD: 'md5pass' } },
    ).then(
      () => 'ok',
      (e: { stderr: string }) => e.stderr,
    );
    expect(r).toMatch(/certificate authentication failed for user "md5user"/);
    const other = certs.client('scramuser');
    expect(
      await login({
        user: 'md5user',
        database: 'appsession',
        ssl: { rejectUnauthorized: false, cert: readFileSync(other.cert), key: readFileSync(other.key) },
      }),
    ).toBe('error 28000: certificate authentication failed for user "md5user": the certificate\'s CN is "scramuser"');
  });

  it("no line matches: PostgreSQL's message, SQLSTATE 28000", async () => {
    expect(
      await login({ user: 'md5user', password: 'md5pass', database: 'app', ssl: { rejectUnauthorized: false } }),
    ).toBe('error 28000: no pg_hba.conf entry for host "127.0.0.1", user "md5user", database "app", SSL encryption');
  });

  it('RELOAD: a syntax error names the file and line and keeps the old rules; good rules apply', async () => {
    writeFileSync(hbaFile, 'host all all 127.0.0.1/32 trust\nhost all all 127.0.0.1/32 bogus\n');
    const msg = await tp.pooler.reload();
    expect(msg).toContain(
      `auth_hba_file not loaded, the previous rules stay: ${hbaFile}:2: invalid authentication method "bogus"`,
    );
    expect(await firstAuthRequest('md5user', 'app')).toBe('R5');
    writeFileSync(hbaFile, 'host all all 0.0.0.0/0 reject\n');
    expect(await tp.pooler.reload()).toBe('RELOAD done');
    expect(await login({ user: 'md5user', password: 'md5pass', database: 'app' })).toBe(
      'error 28000: pg_hba.conf rejects connection for host "127.0.0.1", user "md5user", database "app", no encryption',
    );
    writeFileSync(hbaFile, RULES);
    expect(await tp.pooler.reload()).toBe('RELOAD done');
    expect(await login({ user: 'md5user', password: 'md5pass', database: 'app' })).toBe('md5user');
  });

  it('a syntax error at start stops the start, naming the file and line', async () => {
    const bad = path.join(certs.dir, 'bad-hba.conf');
    writeFileSync(bad, '# ok\nhostssl all\n');
    const file = path.join(certs.dir, 'bad.toml');
    writeFileSync(file, poolerToml(db, { general: `auth_hba_file = "${bad}"` }));
    await expect(
      Pooler.start(file, new LogHub({ out: { write: () => true } as unknown as NodeJS.WritableStream })),
    ).rejects.toThrow(`${bad}:2: end-of-line before role specification`);
  });
});
