// TLS toward clients and PostgreSQL as the config asks: certificate files read into contexts, once at start and per RELOAD.
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import tls from 'node:tls';
import { parseTlsProtocols, type PoolerConfig, type TlsMode } from '../../config/pooler.js';

/** What a client login needs: the mode and the context the handshake uses (null when the mode is disable). */
export interface ClientTls {
  readonly mode: TlsMode;
  readonly context: tls.SecureContext | null;
  /** verify-ca and verify-full: a client certificate is asked for and must chain to client_tls_ca_file. */
  readonly verifyClient: boolean;
}

/** What a server login needs: the mode and the options of tls.connect (null when the mode is disable). */
export interface ServerTls {
  readonly mode: TlsMode;
  readonly context: tls.SecureContext | null;
}

export interface TlsSettings {
  readonly client: ClientTls;
  readonly server: ServerTls;
}

export class TlsFileError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TlsFileError';
  }
}

function readPem(key: string, file: string): Buffer {
  try {
    return readFileSync(file);
  } catch (err) {
    throw new TlsFileError(`${key} ${file}: ${(err as Error).message}`);
  }
}

/** PgBouncer's cipher keywords keep OpenSSL's defaults (Node's); "all" allows everything; anything else is an OpenSSL list. */
function ciphersOf(text: string): string | undefined {
  const t = text.trim().toLowerCase();
  if (t === '' || t === 'default' || t === 'secure' || t === 'normal' || t === 'fast') return undefined;
  if (t === 'all') return 'ALL';
  return text;
}

function context(side: 'client' | 'server', g: PoolerConfig['general'], files: { key?: string; cert?: string; ca?: string }): tls.SecureContext {
  const range = parseTlsProtocols(g[`${side}_tls_protocols`]);
  if (typeof range === 'string') throw new TlsFileError(`${side}_tls_protocols: ${range}`);
  const opts: tls.SecureContextOptions = { minVersion: range.min, maxVersion: range.max, ciphers: ciphersOf(g[`${side}_tls_ciphers`]) };
  if (files.key) opts.key = readPem(`${side}_tls_key_file`, files.key);
  if (files.cert) opts.cert = readPem(`${side}_tls_cert_file`, files.cert);
  if (files.ca) opts.ca = readPem(`${side}_tls_ca_file`, files.ca);
  try {
    return tls.createSecureContext(opts);
  } catch (err) {
    const named = [files.key, files.cert, files.ca].filter(Boolean).join(', ');
    throw new TlsFileError(`${side} TLS files (${named}) could not be used: ${(err as Error).message}`);
  }
}

/** Reads every file the TLS keys name and builds the contexts; throws TlsFileError naming the key and file. */
export function loadTlsSettings(config: PoolerConfig): TlsSettings {
  const g = config.general;
  const clientMode = g.client_tls_sslmode;
  const verifyClient = clientMode === 'verify-ca' || clientMode === 'verify-full';
  const client: ClientTls = {
    mode: clientMode, verifyClient,
    context: clientMode === 'disable' ? null : context('client', g, { key: g.client_tls_key_file, cert: g.client_tls_cert_file, ca: g.client_tls_ca_file || undefined }),
  };
  const serverMode = g.server_tls_sslmode;
  const server: ServerTls = {
    mode: serverMode,
    context: serverMode === 'disable' ? null : context('server', g, { key: g.server_tls_key_file || undefined, cert: g.server_tls_cert_file || undefined, ca: g.server_tls_ca_file || undefined }),
  };
  return { client, server };
}

export const NO_TLS: TlsSettings = Object.freeze({
  client: Object.freeze({ mode: 'disable', context: null, verifyClient: false }),
  server: Object.freeze({ mode: 'disable', context: null }),
});

/** Whether a config asks for TLS on either side (such sockets are carried by the JavaScript relay). */
export function wantsTls(config: PoolerConfig): boolean {
  return config.general.client_tls_sslmode !== 'disable' || config.general.server_tls_sslmode !== 'disable';
}

/** RELOAD: the files are read again (certificate rotation) for new connections; connected ones keep their session.
 * A file that cannot be used keeps every previous context (`error` says why). `tlsRelay`: TLS was on at start, so the
 * pools run on the JavaScript relay; otherwise turning it on needs a restart (`restart` names the keys). */
export function reloadTlsSettings(current: TlsSettings, next: PoolerConfig, tlsRelay: boolean): { settings: TlsSettings; restart?: string; error?: string } {
  if (wantsTls(next) && !tlsRelay) {
    return { settings: current, restart: 'general.client_tls_sslmode/server_tls_sslmode (TLS was off at start: its pools run on the native relay)' };
  }
  try {
    return { settings: loadTlsSettings(next) };
  } catch (err) {
    return { settings: current, error: (err as Error).message };
  }
}

/** tls.connect options toward PostgreSQL at `host` under `s` (mode other than disable). */
export function serverConnectOptions(s: ServerTls, host: string, socket: import('node:net').Socket): tls.ConnectionOptions {
  const verify = s.mode === 'verify-ca' || s.mode === 'verify-full';
  const opts: tls.ConnectionOptions = { socket, secureContext: s.context ?? undefined, rejectUnauthorized: verify };
  // SNI takes host names only.
  if (!isIP(host)) opts.servername = host;
  if (s.mode === 'verify-ca') opts.checkServerIdentity = () => undefined;
  else if (s.mode === 'verify-full') opts.checkServerIdentity = (_name, cert) => tls.checkServerIdentity(host, cert);
  return opts;
}

/** How SHOW CLIENTS / SERVERS show a TLS connection, as PgBouncer does ("TLSv1.3/TLS_AES_256_GCM_SHA384"), '' for plaintext. */
export function tlsDescription(socket: tls.TLSSocket): string {
  const protocol = socket.getProtocol() ?? '';
  const cipher = socket.getCipher()?.standardName ?? socket.getCipher()?.name ?? '';
  return cipher ? `${protocol}/${cipher}` : protocol;
}
