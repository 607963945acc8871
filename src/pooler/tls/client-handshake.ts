// The server side of a client's TLS handshake after the pooler's 'S' (or at a direct hello): in the native relay when it terminates client TLS, else in Node's tls.
import type net from 'node:net';
import tls from 'node:tls';
import { SqlState } from '../../protocol/codes.js';
import type { ChunkHandler } from '../read-buffer.js';
import type { ClientTlsResult } from '../client-login.js';
import type { NativeRelay } from '../relay/native.js';
import { NativeTlsSocket, type NativeTlsInfo } from '../relay/native-tls.js';
import { tlsDescription, type ClientTls } from './tls-settings.js';

/** What a handshake needs of its client session. */
export interface HandshakeSession {
  /** The accepted socket, which the 'S' has been written to: Node's, or a plaintext client the native relay accepted. */
  readonly raw: net.Socket | NativeTlsSocket;
  /** The relay terminating client TLS, or null (Node's tls). */
  readonly native: NativeRelay | null;
  /** auth_hba_file's cert lines need a certificate even when client_tls_sslmode does not ask for one. */
  readonly askCertificate: boolean;
  /** Where the raw socket's reads go from now on. */
  readInto(handler: ChunkHandler): void;
  /** The login's reads: decrypted bytes. */
  deliver(chunk: Buffer): void;
  /** The session's socket is `secure` from now on (its error and close go to the session). `raw`'s listeners go. */
  replaceSocket(secure: net.Socket | NativeTlsSocket): void;
  /** False once the session closed or moved on. */
  readonly current: boolean;
  /** The handshake is done: SHOW CLIENTS' description and what the login checks. */
  secured(description: string, result: ClientTlsResult): void;
  fatal(sqlstate: string, message: string): void;
}

/** Why the peer's certificate failed verification (an OpenSSL code such as UNABLE_TO_VERIFY_LEAF_SIGNATURE), or null. */
function peerVerifyError(socket: tls.TLSSocket): string | null {
  const handle = (
    socket as tls.TLSSocket & { _handle?: { verifyError?: () => (Error & { code?: string }) | null } | null }
  )._handle;
  const err = handle?.verifyError?.() ?? null;
  return err ? (err.code ?? err.message) : null;
}

const discardReads: ChunkHandler = () => false;

/** Starts the handshake under `settings`; `initial` holds bytes of it the login already read (direct TLS). */
export function startClientTls(s: HandshakeSession, settings: ClientTls, initial: Buffer | null): void {
  if (s.raw instanceof NativeTlsSocket) return startOnAccepted(s, s.raw, settings, initial);
  if (settings.native && s.native) return startNative(s, s.raw, s.native, settings, initial);
  const raw = s.raw;
  s.readInto(discardReads);
  if (initial) raw.unshift(initial);
  const secure = new tls.TLSSocket(raw, {
    isServer: true,
    secureContext: settings.context ?? undefined,
    requestCert: s.askCertificate,
    rejectUnauthorized: false,
    ALPNProtocols: ['postgresql'],
  });
  // The TLS socket owns the descriptor from here; errors of the plain one are reported through it.
  s.replaceSocket(secure);
  raw.on('error', () => undefined);
  secure.on('data', (chunk: Buffer) => s.deliver(chunk));
  secure.once('secure', () => {
    const cert = secure.getPeerCertificate();
    const cn = cert && typeof cert.subject?.CN === 'string' ? cert.subject.CN : '';
    // A TLSSocket made outside tls.Server does not set `authorized`: the verdict is asked of the handle, as tls.Server does.
    const verifyError = !s.askCertificate
      ? 'no certificate asked for'
      : cn === ''
        ? 'no certificate'
        : peerVerifyError(secure);
    s.secured(tlsDescription(secure), {
      alpn: typeof secure.alpnProtocol === 'string' ? secure.alpnProtocol : '',
      authorized: verifyError === null,
      authorizationError: verifyError ?? '',
      commonName: cn,
    });
  });
}

/** The native relay runs the handshake on the descriptor (relay-tls.cc) once the 'S' has left Node's socket; bytes Node
 * read meanwhile (the start of the hello) go with it. The login then goes on through a NativeTlsSocket, and the relay
 * keeps the same connection when the login hands it over. */
function startNative(
  s: HandshakeSession,
  raw: net.Socket,
  relay: NativeRelay,
  settings: ClientTls,
  initial: Buffer | null,
): void {
  const early: Buffer[] = initial ? [initial] : [];
  s.readInto((chunk) => {
    early.push(Buffer.from(chunk));
    return false;
  });
  const handover = (): void => {
    if (!s.current || raw.destroyed) return;
    // A write still queued in Node (rare: the kernel takes one byte at once) would be lost with the socket.
    if (raw.writableLength > 0) return void setTimeout(handover, 1);
    const secure = relay.startTls(raw, settings.native!, s.askCertificate, early.length ? Buffer.concat(early) : null, {
      onSecure: (info) => nativeSecured(s, info),
      onData: (chunk) => s.deliver(chunk),
    });
    if (!secure)
      return s.fatal(SqlState.ConnectionFailure, 'internal error: the TLS connection could not be handed to the relay');
    s.readInto(discardReads);
    s.replaceSocket(secure);
  };
  handover();
}

/** A client the native relay accepted (no Node socket): the handshake starts on the same endpoint at once (the 'S'
 * went out through the relay's own output queue, ahead of anything TLS writes). */
function startOnAccepted(
  s: HandshakeSession,
  socket: NativeTlsSocket,
  settings: ClientTls,
  initial: Buffer | null,
): void {
  // The native relay runs whenever it accepts clients, and then it terminates client TLS (tls-settings.ts).
  if (!settings.native)
    return s.fatal(SqlState.ConnectionFailure, 'internal error: no native TLS context for a client the relay accepted');
  let started: boolean;
  try {
    started = socket.startTls(settings.native, s.askCertificate, initial, {
      onSecure: (info) => nativeSecured(s, info),
      onData: (chunk) => s.deliver(chunk),
    });
  } catch (err) {
    return s.fatal(SqlState.ConnectionFailure, `TLS could not be started: ${(err as Error).message}`);
  }
  if (!started) socket.destroy();
}

function nativeSecured(s: HandshakeSession, info: NativeTlsInfo | null): void {
  if (!info) return;
  const cn = info.commonName;
  const verifyError = !s.askCertificate
    ? 'no certificate asked for'
    : cn === ''
      ? 'no certificate'
      : info.verifyError || null;
  s.secured(info.cipher ? `${info.protocol}/${info.cipher}` : info.protocol, {
    alpn: info.alpn,
    authorized: verifyError === null,
    authorizationError: verifyError ?? '',
    commonName: cn,
  });
}
