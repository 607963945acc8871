// Connects to PostgreSQL and logs in (md5, SCRAM, cleartext), handing the socket over at its first ReadyForQuery.
import net from 'node:net';
import tls from 'node:tls';
import { BackendMessage, AuthRequest, SqlState } from '../protocol/codes.js';
import { FrameStream, ALL_TYPES } from '../protocol/frame-stream.js';
import { BodyReader, parseErrorFields } from '../protocol/reader.js';
import {
  writeStartupMessage,
  writePasswordMessage,
  writeSASLInitialResponse,
  writeSASLResponse,
} from '../protocol/writer.js';
import { isMd5Secret, md5Inner, md5Response } from './auth/md5.js';
import { ScramClient, type ScramCredential } from './auth/scram.js';
import { ReadBuffer, type ChunkHandler } from './read-buffer.js';
import type { RelaySocket } from './relay/relay.js';
import { serverConnectOptions, tlsDescription, type ServerTls } from './tls/tls-settings.js';
import type { TlsMode } from '../config/pooler.js';

/** How the pooler proves itself to PostgreSQL for one pool. */
export interface ServerCredential {
  user: string;
  /** Plaintext password, "md5..." secret, or null when only SCRAM pass-through is possible. */
  password: string | null;
  /** SCRAM credential from a client's proof (pass-through), when known. */
  scram: (() => ScramCredential | null) | null;
}

export interface ServerTarget {
  host: string;
  port: number;
  database: string;
  applicationName: string;
  /** server_tls_sslmode and its context. */
  tls: ServerTls;
}

export class ServerLoginError extends Error {
  /** `errno`: the socket's error code (ECONNREFUSED) when PostgreSQL never answered. */
  constructor(
    message: string,
    readonly sqlstate: string = SqlState.ConnectionFailure,
    readonly errno: string | null = null,
  ) {
    super(message);
    this.name = 'ServerLoginError';
  }
}

/** A logged-in server: its socket (reads still go to the login until redirected) and what PostgreSQL told it. */
export interface ServerLogin {
  conn: RelaySocket;
  /** When the connect began (Date.now()). */
  startedAt: number;
  backendPid: number;
  backendSecret: Buffer;
  params: Map<string, string>;
  applicationName: string;
  /** TLS protocol and cipher ("TLSv1.3/TLS_AES_256_GCM_SHA384"), '' for plaintext. */
  tls: string;
}

/** SSLRequest: length 8, code 1234 5679. */
const SSL_REQUEST_PACKET = Buffer.from([0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f]);

/** Read buffer per server socket: results can be large, and there are few servers. */
export const SERVER_READ_BUFFER = 64 * 1024;

/**
 * Connects and logs in, over TLS as server_tls_sslmode says (allow: plaintext first, TLS when PostgreSQL refuses the
 * plaintext login with 28000, as libpq does). At PostgreSQL's first ReadyForQuery, still inside that read, `ready` builds the result
 * (it must take the socket over then: no read may fall between the login and its new owner); an exception it
 * throws fails the login like any other.
 */
export async function serverLogin<T>(
  target: ServerTarget,
  cred: ServerCredential,
  timeoutMs: number,
  noDelay: boolean,
  ready: (login: ServerLogin) => T,
): Promise<T> {
  if (target.tls.mode !== 'allow') return loginOnce(target, cred, timeoutMs, noDelay, ready, target.tls.mode);
  try {
    return await loginOnce(target, cred, timeoutMs, noDelay, ready, 'disable');
  } catch (err) {
    if (!(err instanceof ServerLoginError) || err.sqlstate !== SqlState.InvalidAuthorization) throw err;
    return loginOnce(target, cred, timeoutMs, noDelay, ready, 'require');
  }
}

function loginOnce<T>(
  target: ServerTarget,
  cred: ServerCredential,
  timeoutMs: number,
  noDelay: boolean,
  ready: (login: ServerLogin) => T,
  mode: TlsMode,
): Promise<T> {
  return new Promise((resolve, reject) => {
    // onread reads into a reused buffer and skips the stream layer: about 14% less CPU per transaction.
    let handler: ChunkHandler = () => false;
    const onread = new ReadBuffer(SERVER_READ_BUFFER).onread(() => handler);
    const startedAt = Date.now();
    const raw = net.connect({ host: target.host, port: target.port, noDelay, onread });
    /** The socket the login talks through: `raw`, or the TLS socket over it. */
    let socket: net.Socket = raw;
    const login: ServerLogin = {
      conn: {
        socket,
        read: (h) => {
          handler = h;
        },
      },
      startedAt,
      backendPid: 0,
      backendSecret: Buffer.alloc(0),
      params: new Map(),
      applicationName: target.applicationName,
      tls: '',
    };
    let done = false;
    const fail = (err: Error) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      raw.destroy();
      reject(err);
    };
    const timer =
      timeoutMs > 0
        ? setTimeout(
            () =>
              fail(
                new ServerLoginError(
                  `connect_timeout: no login to ${target.host}:${target.port} within ${timeoutMs} ms`,
                ),
              ),
            timeoutMs,
          )
        : undefined;
    const onError = (err: NodeJS.ErrnoException) =>
      fail(
        new ServerLoginError(
          `could not connect to server ${target.host}:${target.port}: ${err.message}`,
          SqlState.ConnectionFailure,
          err.code ?? null,
        ),
      );
    const onClose = () =>
      fail(new ServerLoginError(`server ${target.host}:${target.port} closed the connection during login`));
    raw.once('error', onError);
    raw.once('close', onClose);
    const startup = () => {
      const params: Record<string, string> = { user: cred.user, database: target.database, client_encoding: 'UTF8' };
      if (target.applicationName) params.application_name = target.applicationName;
      socket.write(writeStartupMessage(params));
    };
    const useTls = mode !== 'disable' && mode !== 'allow';
    raw.once('connect', () => {
      if (!useTls) return startup();
      raw.write(SSL_REQUEST_PACKET);
      handler = onSslAnswer;
    });
    /** PostgreSQL's one-byte answer to SSLRequest. */
    const onSslAnswer = (chunk: Buffer): boolean => {
      if (done) return false;
      const answer = chunk[0];
      // Bytes after the S would be taken as part of the TLS handshake: a man in the middle could inject them.
      if (answer === 0x53 && chunk.length > 1)
        fail(new ServerLoginError('received unencrypted data after SSL response', SqlState.ProtocolViolation));
      else if (answer === 0x53) startTls();
      else if (answer === 0x4e && mode === 'prefer') {
        handler = onLoginBytes;
        startup();
      } else if (answer === 0x4e)
        fail(
          new ServerLoginError(
            `server ${target.host}:${target.port} does not support SSL, but server_tls_sslmode is ${mode}`,
          ),
        );
      else
        fail(
          new ServerLoginError(
            `server ${target.host}:${target.port} answered SSLRequest with ${JSON.stringify(String.fromCharCode(answer ?? 0))}`,
            SqlState.ProtocolViolation,
          ),
        );
      return false;
    };
    let onTlsError: ((err: Error) => void) | null = null;
    const startTls = () => {
      const secure = tls.connect(serverConnectOptions(target.tls, target.host, raw));
      socket = secure;
      login.conn = {
        socket: secure,
        read: (h) => {
          handler = h;
        },
      };
      // The TLS socket reports for both from here; an error of the plain one must not go unheard.
      raw.off('error', onError);
      raw.off('close', onClose);
      raw.on('error', () => undefined);
      onTlsError = (err: Error) =>
        fail(
          new ServerLoginError(
            `TLS to server ${target.host}:${target.port} failed (server_tls_sslmode ${mode}): ${err.message}`,
          ),
        );
      secure.once('error', onTlsError);
      secure.once('close', onClose);
      secure.on('data', (chunk: Buffer) => void handler(chunk));
      secure.once('secureConnect', () => {
        login.tls = tlsDescription(secure);
        handler = onLoginBytes;
        startup();
      });
    };
    let scram: ScramClient | null = null;
    const frames = new FrameStream(1 << 20, ALL_TYPES, (type, buf, start, len) => {
      if (done) return;
      const body = buf.subarray(start + 5, start + 1 + len);
      try {
        switch (type) {
          case BackendMessage.Authentication: {
            const r = new BodyReader(body);
            const code = r.int32();
            if (code === AuthRequest.Ok) break;
            if (code === AuthRequest.CleartextPassword) {
              if (cred.password === null || isMd5Secret(cred.password))
                throw new ServerLoginError(
                  `PostgreSQL asked user "${cred.user}" for a cleartext password, but only a hashed secret is configured; set server_password`,
                  SqlState.InvalidAuthorization,
                );
              socket.write(writePasswordMessage(cred.password));
            } else if (code === AuthRequest.MD5Password) {
              if (cred.password === null)
                throw new ServerLoginError(
                  `PostgreSQL asked user "${cred.user}" for md5, but only a SCRAM secret is configured; set server_password`,
                  SqlState.InvalidAuthorization,
                );
              socket.write(writePasswordMessage(md5Response(md5Inner(cred.password, cred.user), r.bytes(4))));
            } else if (code === AuthRequest.SASL) {
              const mechs: string[] = [];
              for (let m = r.cstring(); m !== ''; m = r.cstring()) mechs.push(m);
              if (!mechs.includes('SCRAM-SHA-256'))
                throw new ServerLoginError(`PostgreSQL offers only ${mechs.join(', ')}`, SqlState.InvalidAuthorization);
              let c: ScramCredential | null = null;
              if (cred.password !== null && !isMd5Secret(cred.password)) c = { password: cred.password };
              else c = cred.scram?.() ?? null;
              if (!c) {
                throw new ServerLoginError(
                  cred.password !== null && isMd5Secret(cred.password)
                    ? `PostgreSQL asked user "${cred.user}" for SCRAM-SHA-256, but only an md5 secret is configured; set server_password`
                    : `cannot log in to PostgreSQL as "${cred.user}" with SCRAM yet: only a SCRAM secret is configured and no client has proven its key; a client must log in first, or set server_password`,
                  SqlState.InvalidAuthorization,
                );
              }
              scram = new ScramClient(c);
              socket.write(writeSASLInitialResponse('SCRAM-SHA-256', scram.first()));
            } else if (code === AuthRequest.SASLContinue) {
              if (!scram) throw new ServerLoginError('unexpected SASLContinue');
              socket.write(writeSASLResponse(scram.final(r.rest().toString('utf8'))));
            } else if (code === AuthRequest.SASLFinal) {
              if (!scram) throw new ServerLoginError('unexpected SASLFinal');
              scram.verify(r.rest().toString('utf8'));
            } else
              throw new ServerLoginError(
                `unsupported authentication request ${code} from PostgreSQL`,
                SqlState.InvalidAuthorization,
              );
            break;
          }
          case BackendMessage.ParameterStatus: {
            const r = new BodyReader(body);
            login.params.set(r.cstring(), r.cstring());
            break;
          }
          case BackendMessage.BackendKeyData: {
            const r = new BodyReader(body);
            login.backendPid = r.int32();
            login.backendSecret = Buffer.from(r.rest());
            break;
          }
          case BackendMessage.ErrorResponse: {
            const f = parseErrorFields(body);
            throw new ServerLoginError(f.get('M') ?? 'login failed', f.get('C') ?? SqlState.ConnectionFailure);
          }
          case BackendMessage.ReadyForQuery: {
            // The new owner puts its own listeners on the socket (a TLS socket keeps Node's own).
            raw.off('error', onError);
            raw.off('close', onClose);
            if (onTlsError) socket.off('error', onTlsError);
            socket.off('close', onClose);
            raw.removeAllListeners('connect');
            const result = ready(login);
            done = true;
            clearTimeout(timer);
            resolve(result);
            break;
          }
          default:
            break; // NoticeResponse, NegotiateProtocolVersion
        }
      } catch (err) {
        fail(
          err instanceof ServerLoginError
            ? err
            : new ServerLoginError((err as Error).message, SqlState.InvalidPassword),
        );
      }
    });
    const onLoginBytes = (chunk: Buffer): boolean => {
      if (!frames.feed(chunk))
        fail(new ServerLoginError('PostgreSQL sent a malformed message during login', SqlState.ProtocolViolation));
      return false;
    };
    handler = onLoginBytes;
  });
}
