// Test helper: a CA, server and client certificates made with the openssl CLI in a temporary directory.
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export interface TestCerts {
  dir: string;
  /** CA that signs everything below. */
  caCert: string;
  /** Server certificate for localhost and 127.0.0.1 (also usable by PostgreSQL), and its key. */
  serverCert: string;
  serverKey: string;
  /** Issues a client certificate with this CN signed by the CA (or by another, untrusted CA). */
  client(cn: string, untrusted?: boolean): { cert: string; key: string };
  /** Issues another server certificate (rotation), with this CN and SANs. */
  server(name: string, sans?: string): { cert: string; key: string };
  cleanup(): void;
}

function openssl(dir: string, args: string[]): void {
  execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
}

function makeCa(dir: string, name: string): void {
  openssl(dir, [
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-days',
    '30',
    '-subj',
    `/CN=${name}`,
    '-keyout',
    `${name}.key`,
    '-out',
    `${name}.crt`,
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  ]);
}

function issue(dir: string, ca: string, file: string, cn: string, ext: string): { cert: string; key: string } {
  openssl(dir, [
    'req',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-subj',
    `/CN=${cn}`,
    '-keyout',
    `${file}.key`,
    '-out',
    `${file}.csr`,
  ]);
  writeFileSync(path.join(dir, `${file}.ext`), ext);
  openssl(dir, [
    'x509',
    '-req',
    '-in',
    `${file}.csr`,
    '-CA',
    `${ca}.crt`,
    '-CAkey',
    `${ca}.key`,
    '-CAcreateserial',
    '-days',
    '30',
    '-out',
    `${file}.crt`,
    '-extfile',
    `${file}.ext`,
  ]);
  // PostgreSQL refuses a key file others can read.
  chmodSync(path.join(dir, `${file}.key`), 0o600);
  return { cert: path.join(dir, `${file}.crt`), key: path.join(dir, `${file}.key`) };
}

export function makeTestCerts(): TestCerts {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tidepool-certs-'));
  makeCa(dir, 'ca');
  makeCa(dir, 'otherca');
  let n = 0;
  const server = (name: string, sans = 'DNS:localhost,IP:127.0.0.1') =>
    issue(dir, 'ca', `server${n++}`, name, `subjectAltName=${sans}\nextendedKeyUsage=serverAuth\n`);
  const first = server('localhost');
  return {
    dir,
    caCert: path.join(dir, 'ca.crt'),
    serverCert: first.cert,
    serverKey: first.key,
    client: (cn, untrusted = false) =>
      issue(dir, untrusted ? 'otherca' : 'ca', `client${n++}`, cn, 'extendedKeyUsage=clientAuth\n'),
    server,
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}
