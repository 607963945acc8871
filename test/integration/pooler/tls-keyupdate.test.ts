// TLS 1.3 KeyUpdate under a logged-in client (openssl s_client's K command): the pooler reads on with the client's new
// keys, answers with its own, and the replies that follow decrypt under them.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { startTestPostgres, type TestPostgres } from '../../helpers/postgres.js';
import { poolerToml, poolToml, startTestPooler, type TestPooler } from '../../helpers/pooler.js';
import { makeTestCerts, type TestCerts } from '../../helpers/tls-certs.js';
import { writeStartupMessage } from '../../../src/protocol/writer.js';

let db: TestPostgres;
let certs: TestCerts;
let tp: TestPooler;
const children: ChildProcess[] = [];

beforeAll(async () => {
  certs = makeTestCerts();
  db = await startTestPostgres();
  // A user the pooler trusts (no password exchange to script through s_client); its server login uses md5pass.
  tp = await startTestPooler(
    poolerToml(db, {
      general: `client_tls_sslmode = "require"\nclient_tls_key_file = "${certs.serverKey}"\nclient_tls_cert_file = "${certs.serverCert}"`,
      pools: poolToml(db, 'app', '', [
        { username: 'md5user', password: '', extra: 'server_password = "md5pass"\npool_size = 2' },
      ]),
    }),
  );
});

afterAll(async () => {
  for (const c of children) if (c.exitCode === null && c.pid) process.kill(c.pid, 'SIGKILL');
  await tp?.stop();
  await db?.cleanup();
  certs?.cleanup();
});

/** Parse, Bind, Execute, Sync of `sql` (a first byte s_client does not take as a command, as Q would be). */
function extendedQuery(sql: string): Buffer {
  const msg = (type: string, body: Buffer) => {
    const head = Buffer.alloc(5);
    head.write(type, 0);
    head.writeInt32BE(body.length + 4, 1);
    return Buffer.concat([head, body]);
  };
  return Buffer.concat([
    msg('P', Buffer.concat([Buffer.from('\0'), Buffer.from(`${sql}\0`), Buffer.from([0, 0])])),
    msg('B', Buffer.from([0, 0, 0, 0, 0, 0, 0, 0])),
    msg('E', Buffer.from([0, 0, 0, 0, 0])),
    msg('S', Buffer.alloc(0)),
  ]);
}

describe('TLS 1.3 KeyUpdate', () => {
  it('a client that updates its keys (and asks for ours) keeps its session and gets its answers', async () => {
    const child = spawn(
      'openssl',
      ['s_client', '-connect', `127.0.0.1:${tp.port}`, '-starttls', 'postgres', '-tls1_3', '-servername', 'localhost'],
      { stdio: ['pipe', 'pipe', 'pipe'] },
    );
    children.push(child);
    let out = Buffer.alloc(0);
    let err = '';
    child.stdout!.on('data', (d: Buffer) => {
      out = Buffer.concat([out, d]);
    });
    child.stderr!.on('data', (d: Buffer) => {
      err += d.toString('latin1');
    });
    const until = async (what: () => boolean, label: string) => {
      for (let i = 0; i < 600 && !what(); i++) await new Promise((r) => setTimeout(r, 50));
      if (!what())
        throw new Error(
          `s_client: no ${label}; stderr: ${err.slice(-2000)}; stdout: ${out.toString('latin1').slice(-2000)}`,
        );
    };
    try {
      await until(
        () => out.includes('---\n') && /Verify return code|Cipher is/.test(out.toString('latin1') + err),
        'handshake',
      );
      child.stdin!.write(writeStartupMessage({ user: 'md5user', database: 'app' }));
      await until(() => out.includes('server_version'), 'login');
      for (let round = 1; round <= 3; round++) {
        child.stdin!.write('K\n');
        await until(() => (err.match(/KEYUPDATE/g) ?? []).length >= round, `KEYUPDATE ${round}`);
        await new Promise((r) => setTimeout(r, 100));
        child.stdin!.write(extendedQuery(`select 'keyupdate-ok-' || ${round} * 7`));
        await until(() => out.includes(`keyupdate-ok-${round * 7}`), `answer ${round}`);
      }
    } finally {
      child.stdin!.end();
      if (child.exitCode === null && child.pid) process.kill(child.pid, 'SIGTERM');
    }
    expect(out.toString('latin1')).toContain('keyupdate-ok-21');
  });
});
