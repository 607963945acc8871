// TLS toward PostgreSQL: a server with ssl = on whose pg_hba.conf takes md5user over hostssl only, reached in each server_tls_sslmode.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { startTestPostgres, type TestPostgres } from '../../helpers/postgres.js';
import { enablePostgresTls } from '../../helpers/postgres-tls.js';
import { poolerToml, startTestPooler, type TestPooler } from '../../helpers/pooler.js';
import { makeTestCerts, type TestCerts } from '../../helpers/tls-certs.js';

let db: TestPostgres;
let certs: TestCerts;
const poolers: TestPooler[] = [];

beforeAll(async () => {
  certs = makeTestCerts();
  db = await startTestPostgres();
  // Its certificate names 127.0.0.1 only: verify-full passes for that address and fails for "localhost".
  const pgCert = certs.server('postgres', 'IP:127.0.0.1');
  enablePostgresTls(db, { ...pgCert, ca: certs.caCert }, [
    'hostssl all md5user 127.0.0.1/32 md5',
    'hostnossl all md5user 127.0.0.1/32 reject',
    'hostssl all trustuser 127.0.0.1/32 cert',
    'host all trustuser 127.0.0.1/32 reject',
  ]);
});

afterAll(async () => {
  for (const p of poolers) await p.stop();
  await db?.cleanup();
  certs?.cleanup();
});

async function pooler(general: string, host = '127.0.0.1'): Promise<TestPooler> {
  const p = await startTestPooler(
    poolerToml(db, {
      general,
      pools: `
[pools.app]
server_host = "${host}"
server_port = ${db.port}
[[pools.app.users]]
username = "md5user"
password = "md5pass"
pool_size = 2
[[pools.app.users]]
username = "trustuser"
password = ""
pool_size = 2
`,
    }),
  );
  poolers.push(p);
  return p;
}

/** Through the pooler: whether this backend's connection is encrypted, or the error the client got. */
async function backendSsl(port: number, user = 'md5user'): Promise<string> {
  const c = new pg.Client({
    host: '127.0.0.1',
    port,
    user,
    password: user === 'md5user' ? 'md5pass' : undefined,
    database: 'app',
  });
  try {
    await c.connect();
    const r = await c.query('select ssl::text as ssl from pg_stat_ssl where pid = pg_backend_pid()');
    return String(r.rows[0].ssl);
  } catch (err) {
    const e = err as { code?: string; message: string };
    return `error ${e.code}: ${e.message}`;
  } finally {
    await c.end().catch(() => undefined);
  }
}

const TLS_COLUMN = /^TLSv1\.[23]\/TLS_\w+$/;

describe('server_tls_sslmode', () => {
  it('require: a PostgreSQL that takes md5user over hostssl only is reached, and SHOW SERVERS says TLS', async () => {
    const tp = await pooler('server_tls_sslmode = "require"');
    expect(await backendSsl(tp.port)).toBe('true');
    const servers = tp.pooler.show('SERVERS');
    const tlsAt = servers.columns.indexOf('tls');
    expect(servers.rows.length).toBeGreaterThan(0);
    for (const row of servers.rows) expect(String(row[tlsAt])).toMatch(TLS_COLUMN);
  });

  it('disable: PostgreSQL refuses the plaintext login, and the client is told why', async () => {
    const tp = await pooler('server_tls_sslmode = "disable"');
    const r = await backendSsl(tp.port);
    expect(r).toMatch(/^error 28000: .*no encryption/);
  });

  it('prefer and allow reach it too (allow: plaintext refused with 28000, then TLS)', async () => {
    expect(await backendSsl((await pooler('server_tls_sslmode = "prefer"')).port)).toBe('true');
    expect(await backendSsl((await pooler('server_tls_sslmode = "allow"')).port)).toBe('true');
  });

  it('verify-ca: the certificate must chain to server_tls_ca_file', async () => {
    expect(
      await backendSsl((await pooler(`server_tls_sslmode = "verify-ca"\nserver_tls_ca_file = "${certs.caCert}"`)).port),
    ).toBe('true');
    const other = await pooler(`server_tls_sslmode = "verify-ca"\nserver_tls_ca_file = "${certs.dir}/otherca.crt"`);
    const r = await backendSsl(other.port);
    expect(r).toMatch(
      /^error 08006: TLS to server 127\.0\.0\.1:\d+ failed \(server_tls_sslmode verify-ca\): .*(unable to verify|self.signed|certificate)/i,
    );
  });

  it('verify-full: the certificate must also name server_host', async () => {
    expect(
      await backendSsl(
        (await pooler(`server_tls_sslmode = "verify-full"\nserver_tls_ca_file = "${certs.caCert}"`)).port,
      ),
    ).toBe('true');
    const byName = await pooler(
      `server_tls_sslmode = "verify-full"\nserver_tls_ca_file = "${certs.caCert}"`,
      'localhost',
    );
    expect(await backendSsl(byName.port)).toMatch(
      /^error 08006: .*Hostname\/IP does not match certificate's altnames: Host: localhost\./,
    );
    // verify-ca does not look at the name.
    const caOnly = await pooler(
      `server_tls_sslmode = "verify-ca"\nserver_tls_ca_file = "${certs.caCert}"`,
      'localhost',
    );
    expect(await backendSsl(caOnly.port)).toBe('true');
  });

  it("a client certificate (server_tls_cert_file) logs in with PostgreSQL's cert method", async () => {
    const cert = certs.client('trustuser');
    const tp = await pooler(
      `server_tls_sslmode = "verify-full"\nserver_tls_ca_file = "${certs.caCert}"\nserver_tls_cert_file = "${cert.cert}"\nserver_tls_key_file = "${cert.key}"`,
    );
    expect(await backendSsl(tp.port, 'trustuser')).toBe('true');
    const without = await pooler('server_tls_sslmode = "require"');
    expect(await backendSsl(without.port, 'trustuser')).toMatch(/^error 28000: .*certificate/);
  });
});
