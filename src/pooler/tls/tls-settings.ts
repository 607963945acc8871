// TLS toward clients and PostgreSQL as the config asks: certificate files read into contexts, once at start and per RELOAD.
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import tls from 'node:tls';
import { parseTlsProtocols, type PoolerConfig, type TlsMode } from '../../config/pooler.js';
import { NativeRelay } from '../relay/native.js';
import type { NativeTlsContext } from '../relay/native-tls.js';

/** What a client login needs: the mode and the context the handshake uses (null when the mode is disable). */
export interface ClientTls {
  readonly mode: TlsMode;
  readonly context: tls.SecureContext | null;
  /** verify-ca and verify-full: a client certificate is asked for and must chain to client_tls_ca_file. */
  readonly verifyClient: boolean;
  /** The same context in OpenSSL for the native relay, which then terminates TLS itself (null: Node's tls does). */
  readonly native: NativeTlsContext | null;
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

/** Node's context for `side`, and with `native` the same in OpenSSL for the native relay (client side only). */
function context(
  side: 'client' | 'server',
  g: PoolerConfig['general'],
  files: { key?: string; cert?: string; ca?: string },
  native: NativeRelay | null = null,
): { node: tls.SecureContext; native: NativeTlsContext | null } {
  const range = parseTlsProtocols(g[`${side}_tls_protocols`]);
  if (typeof range === 'string') throw new TlsFileError(`${side}_tls_protocols: ${range}`);
  const opts: tls.SecureContextOptions = {
    minVersion: range.min,
    maxVersion: range.max,
    ciphers: ciphersOf(g[`${side}_tls_ciphers`]),
  };
  const key = files.key ? readPem(`${side}_tls_key_file`, files.key) : undefined;
  const cert = files.cert ? readPem(`${side}_tls_cert_file`, files.cert) : undefined;
  const ca = files.ca ? readPem(`${side}_tls_ca_file`, files.ca) : undefined;
  if (key) opts.key = key;
  if (cert) opts.cert = cert;
  if (ca) opts.ca = ca;
  try {
    const node = tls.createSecureContext(opts);
    // Node checked the files first: the native context is built from the same bytes, and its errors are OpenSSL's.
    const made =
      native && key && cert
        ? native.tlsContext({ key, cert, ca, min: range.min, max: range.max, ciphers: opts.ciphers })
        : null;
    return { node, native: made };
  } catch (err) {
    const named = [files.key, files.cert, files.ca].filter(Boolean).join(', ');
    throw new TlsFileError(`${side} TLS files (${named}) could not be used: ${(err as Error).message}`);
  }
}

/** Reads every file the TLS keys name and builds the contexts; throws TlsFileError naming the key and file. `native`:
 * the native relay that terminates client TLS (null: Node's tls does, on the JavaScript relay). */
export function loadTlsSettings(config: PoolerConfig, native: NativeRelay | null = null): TlsSettings {
  const g = config.general;
  const clientMode = g.client_tls_sslmode;
  const verifyClient = clientMode === 'verify-ca' || clientMode === 'verify-full';
  const made =
    clientMode === 'disable'
      ? null
      : context(
          'client',
          g,
          { key: g.client_tls_key_file, cert: g.client_tls_cert_file, ca: g.client_tls_ca_file || undefined },
          native,
        );
  const client: ClientTls = {
    mode: clientMode,
    verifyClient,
    context: made?.node ?? null,
    native: made?.native ?? null,
  };
  const serverMode = g.server_tls_sslmode;
  const server: ServerTls = {
    mode: serverMode,
    context:
      serverMode === 'disable'
        ? null
        : context('server', g, {
            key: g.server_tls_key_file || undefined,
            cert: g.server_tls_cert_file || undefined,
            ca: g.server_tls_ca_file || undefined,
          }).node,
  };
  return { client, server };
}

export const NO_TLS: TlsSettings = Object.freeze({
  client: Object.freeze({ mode: 'disable', context: null, verifyClient: false, native: null }),
  server: Object.freeze({ mode: 'disable', context: null }),
});

/** Whether a config asks for TLS on either side. */
export function wantsTls(config: PoolerConfig): boolean {
  return config.general.client_tls_sslmode !== 'disable' || config.general.server_tls_sslmode !== 'disable';
}

/** The native relay when it terminates client TLS under `config`: it runs ([native] relay), and nothing else needs the
 * JavaScript relay (server_tls_sslmode, whose sockets Node's tls carries; [native] prepared_relay = "js"). Else null. */
export function nativeTlsRelay(config: PoolerConfig): NativeRelay | null {
  if (config.general.server_tls_sslmode !== 'disable' || config.native.prepared_relay === 'js') return null;
  return config.native.relay ? NativeRelay.start(config.native.relay_events) : null;
}

/** Whether the pools of a pooler started with `config` run on the JavaScript relay for TLS: Node's tls carries TLS
 * sockets there, and a client and its server are always on one relay. Client TLS alone stays native. */
export function tlsNeedsJsRelay(config: PoolerConfig): boolean {
  return wantsTls(config) && nativeTlsRelay(config) === null;
}

/** RELOAD: the files are read again (certificate rotation) for new connections; connected ones keep their session (and
 * their OpenSSL context). A file that cannot be used keeps every previous context (`error` says why). `tlsRelay`: the
 * pools run on the JavaScript relay (tlsNeedsJsRelay at start); otherwise what needs it now needs a restart (`restart`
 * names the keys). `native`: the relay terminating client TLS, fixed at start. */
export function reloadTlsSettings(
  current: TlsSettings,
  next: PoolerConfig,
  tlsRelay: boolean,
  native: NativeRelay | null,
): { settings: TlsSettings; restart?: string; error?: string } {
  if (
    !tlsRelay &&
    wantsTls(next) &&
    (native === null || nativeTlsRelay(next) === null) &&
    next.native.relay &&
    NativeRelay.get() !== null
  ) {
    return {
      settings: current,
      restart:
        'general.client_tls_sslmode/server_tls_sslmode (the pools run on the native relay, which terminates client TLS only: server TLS needs a restart)',
    };
  }
  try {
    return { settings: loadTlsSettings(next, native) };
  } catch (err) {
    return { settings: current, error: (err as Error).message };
  }
}

/** tls.connect options toward PostgreSQL at `host` under `s` (mode other than disable). */
export function serverConnectOptions(
  s: ServerTls,
  host: string,
  socket: import('node:net').Socket,
): tls.ConnectionOptions {
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
