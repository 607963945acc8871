// A client's way in: startup packets, then the password exchange; it ends in a LoginResult and writes no session fields.
import type { Logger } from 'pino';
import type { PoolerConfig } from '../config/pooler.js';
import { FrontendMessage, SqlState, TxStatus, PROTOCOL_3_2 } from '../protocol/codes.js';
import { FrameStream, ALL_TYPES } from '../protocol/frame-stream.js';
import { parseStartupPacket, type StartupPacket } from '../protocol/reader.js';
import {
  writeAuthenticationOk,
  writeBackendKeyData,
  writeNegotiateProtocolVersion,
  writeParameterStatus,
  writeReadyForQuery,
} from '../protocol/writer.js';
import { ClientAuth } from './auth/client-auth.js';
import type { ScramSecret } from './auth/scram.js';
import type { Pool } from './pool.js';
import type { ClientTls } from './tls/tls-settings.js';
import type { HbaConnection, HbaMethod } from './auth/hba.js';
import type { AuthType } from './auth/client-auth.js';

/** Where a login may go: the admin console, a pool (with the secret to check), or an error. */
export type LoginTarget =
  | { admin: boolean; pool: Pool | null; secret: string; onAuth?: (ok: boolean) => void }
  | { error: string; sqlstate: string };

/** What a login needs of the pooler. */
export interface LoginCore {
  readonly config: PoolerConfig;
  readonly log: Logger;
  cancel(pid: number, secret: Buffer): void;
  clientCount(): number;
  /** A Promise when the user's secret must be fetched first (auth_query). */
  resolveLogin(database: string, user: string): LoginTarget | Promise<LoginTarget>;
  /** The client TLS settings now in force (they change on RELOAD). */
  clientTls(): ClientTls;
  /** auth_hba_file's verdict for a connection: the method, or null without rules; an error when no line takes it or a
   * reject line does. */
  hbaCheck(c: HbaConnection): { method: HbaMethod } | { error: string } | null;
}

/** What the TLS handshake established (client-session.ts reports it). */
export interface ClientTlsResult {
  /** The ALPN protocol agreed on, or '' for none. */
  alpn: string;
  /** The client's certificate chains to client_tls_ca_file. */
  authorized: boolean;
  /** Why it does not (no certificate, an unknown CA...), or ''. */
  authorizationError: string;
  /** The client certificate's common name, or ''. */
  commonName: string;
}

/** The client connection a login talks to. */
export interface LoginConnection {
  readonly id: number;
  readonly addr: string;
  /** The client's IP address (for auth_hba_file). */
  readonly ip: string;
  write(data: Buffer | string): void;
  /** Sends a FATAL error and closes. */
  fatal(sqlstate: string, message: string): void;
  /** Closes without a word (CancelRequest, Terminate). */
  destroy(): void;
  /** Writes until the matching uncork() go out together (one send for a reply and the greeting after it). */
  cork(): void;
  uncork(): void;
  /** Starts the server side of a TLS handshake under `settings`; `initial` holds bytes of it already read (direct TLS).
   * The session calls tlsReady() once it is done, and feed() with the decrypted bytes after. */
  startTls(settings: ClientTls, initial: Buffer | null): void;
}

/** Who logged in, where to, and for SCRAM pass-through the key the client proved. */
export interface LoginResult {
  user: string;
  database: string;
  applicationName: string;
  /** The startup packet's parameters (user, database, application_name, options, GUCs...). */
  startupParams: ReadonlyMap<string, string>;
  protocol32: boolean;
  admin: boolean;
  pool: Pool | null;
  clientKey: Buffer | null;
  scramSecret: ScramSecret | null;
}

const MAX_STARTUP_PACKET = 10_000;
const MAX_AUTH_MESSAGE = 64 * 1024;

const loginPrefixes = new WeakMap<ReadonlyMap<string, string>, Buffer>();

/** AuthenticationOk and the pool's ParameterStatus messages (but application_name, which is the
 * client's own), built once per parameter set: every login sends the same bytes. */
export function loginPrefix(params: ReadonlyMap<string, string>): Buffer {
  let b = loginPrefixes.get(params);
  if (!b) {
    const parts = [writeAuthenticationOk()];
    for (const [k, v] of params) if (k !== 'application_name') parts.push(writeParameterStatus(k, v));
    b = Buffer.concat(parts);
    loginPrefixes.set(params, b);
  }
  return b;
}

/** Everything a client gets once it is in: AuthenticationOk, ParameterStatus, BackendKeyData, ReadyForQuery. */
export function loginGreeting(
  params: ReadonlyMap<string, string>,
  applicationName: string,
  cancelPid: number,
  cancelSecret: Buffer,
): Buffer {
  return Buffer.concat([
    loginPrefix(params),
    writeParameterStatus('application_name', applicationName),
    writeBackendKeyData(cancelPid, cancelSecret),
    writeReadyForQuery(TxStatus.Idle),
  ]);
}

/** A Terminate message: type X, length 4. */
const TERMINATE = Buffer.from([FrontendMessage.Terminate, 0, 0, 0, 4]);

/** TLS record type of a handshake: the first byte of a direct TLS connection (a startup packet's is a length's 0). */
const TLS_HANDSHAKE = 0x16;

/** SSLRequest is answered S and the TLS handshake run when client_tls_sslmode allows it (N otherwise), as is a
 * direct TLS connection (PostgreSQL 17's sslnegotiation=direct, ALPN "postgresql"); GSSENCRequest is answered N, a CancelRequest is routed, protocol 3.0 and 3.2 are taken and a newer
 * minor gets NegotiateProtocolVersion; then client-auth.ts checks the password. Bytes the client sent past its login
 * are kept for the relay (takeRest). */
export class ClientLogin {
  /** Startup bytes not yet parsed; after the login, what the client sent past it. */
  private buf: Buffer = Buffer.alloc(0);
  private frames: FrameStream | null = null;
  private auth: ClientAuth | null = null;
  private phase: 'startup' | 'tls' | 'lookup' | 'auth' | 'done' = 'startup';
  private onAuth: ((ok: boolean) => void) | null = null;
  /** The TLS settings the handshake ran under, once it is done (null: plaintext). */
  private tls: ClientTls | null = null;
  private tlsResult: ClientTlsResult | null = null;
  private direct = false;
  private who: Omit<LoginResult, 'clientKey' | 'scramSecret'> | null = null;

  constructor(
    private readonly conn: LoginConnection,
    private readonly core: LoginCore,
    private readonly onDone: (result: LoginResult) => void,
  ) {}

  /** Bytes read before the relay starts (the session copies them out of its read buffer first). */
  feed(chunk: Buffer): void {
    if (this.phase === 'auth') return this.feedAuth(chunk);
    if (this.phase === 'tls') return;
    // After the login (a session-mode login waiting for its server, the pool's parameters) bytes wait for the relay.
    if (this.phase === 'lookup' || this.phase === 'done') {
      this.buf = this.buf.length ? Buffer.concat([this.buf, chunk]) : chunk;
      return;
    }
    if (this.phase === 'startup' && !this.tls && this.buf.length === 0 && chunk[0] === TLS_HANDSHAKE)
      return this.directTls(chunk);
    this.buf = this.buf.length ? Buffer.concat([this.buf, chunk]) : chunk;
    while (this.phase === 'startup' && this.buf.length >= 4) {
      if (this.buf[0] === FrontendMessage.Terminate && this.terminateFirst()) return;
      const len = this.buf.readInt32BE(0);
      if (len < 8 || len > MAX_STARTUP_PACKET)
        return this.fail(SqlState.ProtocolViolation, `invalid startup packet length ${len}`);
      if (this.buf.length < len) return;
      const packet = this.buf.subarray(0, len);
      this.buf = this.buf.subarray(len);
      let parsed: StartupPacket;
      try {
        parsed = parseStartupPacket(packet);
      } catch (err) {
        return this.fail(SqlState.ProtocolViolation, (err as Error).message);
      }
      this.onStartupPacket(parsed);
    }
    if ((this.phase as string) === 'auth' && this.buf.length) {
      const rest = this.buf;
      this.buf = Buffer.alloc(0);
      this.feedAuth(rest);
    }
  }

  /** A Terminate where a startup packet should be (node-postgres's connect() then end() at once sends it first):
   * PostgreSQL reads its type byte as part of a length, finds it invalid and closes without a word (it only logs),
   * so this closes too, and is no failed login. True when the bytes so far are such a Terminate, or its start. */
  private terminateFirst(): boolean {
    const n = Math.min(this.buf.length, TERMINATE.length);
    if (this.buf.compare(TERMINATE, 0, n, 0, n) !== 0) return false;
    if (n < TERMINATE.length) return true;
    this.phase = 'done';
    this.core.log.debug(
      { client_id: this.conn.id, addr: this.conn.addr },
      'client sent Terminate before its startup packet',
    );
    this.conn.destroy();
    return true;
  }

  /** What arrived after the login (a pipelined first query), handed over once. */
  takeRest(): Buffer {
    const rest = this.buf;
    this.buf = Buffer.alloc(0);
    return rest;
  }

  /** The handshake is done (see LoginConnection.startTls): startup packets come encrypted from now on. */
  tlsReady(result: ClientTlsResult): void {
    if (this.phase !== 'tls') return;
    this.phase = 'startup';
    this.tlsResult = result;
    // PostgreSQL asks direct TLS for ALPN "postgresql": a client of another protocol must not get this far by mistake.
    if (this.direct && result.alpn !== 'postgresql')
      return this.fail(
        SqlState.ProtocolViolation,
        'received direct SSL connection request without ALPN protocol negotiation extension',
      );
  }

  /** A startup packet was taken (the client speaks the protocol: an ErrorResponse means something to it). */
  get startupTaken(): boolean {
    return this.who !== null || this.phase === 'lookup' || this.phase === 'auth';
  }

  /** True once the connection is encrypted. */
  get encrypted(): boolean {
    return this.tls !== null;
  }

  private directTls(chunk: Buffer): void {
    const settings = this.core.clientTls();
    // Like a PostgreSQL without ssl: the client's TLS hello is not a startup packet, and nothing useful can be said.
    if (settings.mode === 'disable') {
      this.phase = 'done';
      return this.conn.destroy();
    }
    this.direct = true;
    this.beginTls(settings, chunk);
  }

  private beginTls(settings: ClientTls, initial: Buffer | null): void {
    this.phase = 'tls';
    this.tls = settings;
    this.conn.startTls(settings, initial);
  }

  private fail(sqlstate: string, message: string): void {
    this.phase = 'done';
    this.conn.fatal(sqlstate, message);
  }

  private onStartupPacket(p: StartupPacket): void {
    const { conn, core } = this;
    switch (p.kind) {
      case 'ssl': {
        const settings = core.clientTls();
        if (this.tls) return this.fail(SqlState.ProtocolViolation, 'SSLRequest on an encrypted connection');
        if (settings.mode === 'disable') return void conn.write('N');
        // What follows an SSLRequest must be the TLS handshake: plaintext bytes already there would be taken as if encrypted.
        if (this.buf.length)
          return this.fail(SqlState.ProtocolViolation, 'received unencrypted data after SSL request');
        conn.write('S');
        this.beginTls(settings, null);
        return;
      }
      case 'gssenc':
        conn.write('N');
        return;
      case 'cancel':
        core.cancel(p.pid, p.secret);
        this.phase = 'done';
        conn.destroy();
        return;
      case 'startup':
        break;
    }
    const pq = [...p.params.keys()].filter((k) => k.startsWith('_pq_.'));
    if (p.minor > 2 || pq.length) conn.write(writeNegotiateProtocolVersion(Math.min(p.minor, 2) | (3 << 16), pq));
    const protocol32 = ((3 << 16) | Math.min(p.minor, 2)) === PROTOCOL_3_2;
    const user = p.params.get('user') ?? '';
    const database = p.params.get('database') || user;
    const applicationName = p.params.get('application_name') ?? '';
    if (!user) return this.fail(SqlState.InvalidAuthorization, 'no user name in startup packet');
    const tlsRefusal = this.tlsRefusal(user);
    if (tlsRefusal) return this.fail(SqlState.InvalidAuthorization, tlsRefusal);
    const max = core.config.general.max_connections;
    if (core.clientCount() > max)
      return this.fail(SqlState.TooManyConnections, `too many client connections: max_connections = ${max}`);
    const resolved = core.resolveLogin(database, user);
    if (!(resolved instanceof Promise))
      return this.withTarget(resolved, { user, database, applicationName, protocol32, startupParams: p.params });
    this.phase = 'lookup';
    resolved.then(
      (t) => {
        if (this.phase !== 'lookup') return;
        this.phase = 'startup';
        this.withTarget(t, { user, database, applicationName, protocol32, startupParams: p.params });
        // What the client sent while its secret was fetched (its password message, at most).
        if ((this.phase as string) === 'auth' && this.buf.length) this.feedAuth(this.takeRest());
      },
      (err: Error & { sqlstate?: string }) => {
        if (this.phase === 'lookup') this.fail(err.sqlstate ?? SqlState.ConnectionFailure, err.message);
      },
    );
  }

  private withTarget(
    target: LoginTarget,
    who: {
      user: string;
      database: string;
      applicationName: string;
      protocol32: boolean;
      startupParams: ReadonlyMap<string, string>;
    },
  ): void {
    const { conn, core } = this;
    const { user, database, applicationName, protocol32, startupParams } = who;
    if ('error' in target) return this.fail(target.sqlstate, target.error);
    this.onAuth = target.onAuth ?? null;
    let secret = target.secret;
    let authType: AuthType = core.config.general.auth_type;
    const hba = core.hbaCheck({ address: conn.ip, tls: this.tls !== null, database, user });
    if (hba && 'error' in hba) return this.fail(SqlState.InvalidAuthorization, hba.error);
    if (hba) {
      const m = hba.method;
      if (m === 'cert') {
        // The certificate is the proof: verified against client_tls_ca_file, its CN the user name.
        const r = this.tlsResult;
        if (!r || !r.authorized)
          return this.fail(
            SqlState.InvalidAuthorization,
            `certificate authentication failed for user "${user}": ${r ? `no valid client certificate (${r.authorizationError || 'none sent'})` : 'the connection is not encrypted'}`,
          );
        if (r.commonName !== user)
          return this.fail(
            SqlState.InvalidAuthorization,
            `certificate authentication failed for user "${user}": the certificate's CN is "${r.commonName}"`,
          );
        secret = '';
      } else if (m === 'trust') secret = '';
      else authType = m === 'password' ? 'plain' : m === 'md5' ? 'md5' : 'scram-sha-256';
    }
    this.who = { user, database, applicationName, startupParams, protocol32, admin: target.admin, pool: target.pool };
    this.auth = new ClientAuth(secret, user, authType);
    this.phase = 'auth';
    this.frames = new FrameStream(MAX_AUTH_MESSAGE, ALL_TYPES, this.onAuthMessage);
    const first = this.auth.first();
    if (first) conn.write(first);
    else this.done(null, null);
  }

  /** Why client_tls_sslmode refuses this connection for `user`, or null. */
  private tlsRefusal(user: string): string | null {
    const mode = this.core.clientTls().mode;
    if (mode === 'disable' || mode === 'allow' || mode === 'prefer') return null;
    if (!this.tls) return `SSL required: client_tls_sslmode is ${mode}, and this connection is not encrypted`;
    if (!this.tls.verifyClient) return null;
    const r = this.tlsResult;
    if (!r || !r.authorized)
      return `connection requires a valid client certificate${r?.authorizationError ? ` (${r.authorizationError})` : ''}`;
    if (this.tls.mode === 'verify-full' && r.commonName !== user)
      return `certificate validation (clientcert=verify-full) failed for user "${user}": CN mismatch`;
    return null;
  }

  private feedAuth(chunk: Buffer): void {
    if (!this.frames!.feed(chunk))
      this.fail(SqlState.ProtocolViolation, `invalid message length ${this.frames!.badLength} during authentication`);
  }

  private readonly onAuthMessage = (type: number, buf: Buffer, start: number, len: number): void => {
    if (this.phase !== 'auth' || !this.auth) return;
    if (type === FrontendMessage.Terminate) {
      this.phase = 'done';
      return this.conn.destroy();
    }
    if (type !== FrontendMessage.Password)
      return this.fail(SqlState.ProtocolViolation, `expected a password message, got "${String.fromCharCode(type)}"`);
    // The last reply of the exchange (SASLFinal) and the greeting that follows a success leave in one send.
    this.conn.cork();
    try {
      this.onPassword(buf, start, len);
    } finally {
      this.conn.uncork();
    }
  };

  private onPassword(buf: Buffer, start: number, len: number): void {
    let r: ReturnType<ClientAuth['step']>;
    try {
      r = this.auth!.step(buf.subarray(start + 5, start + 1 + len));
    } catch (err) {
      return this.fail(SqlState.ProtocolViolation, `malformed authentication message: ${(err as Error).message}`);
    }
    if (r.reply) this.conn.write(r.reply);
    if (!r.result) return;
    this.onAuth?.(r.result.ok);
    if (!r.result.ok) {
      const who = this.who!;
      // A warning, as PostgreSQL and PgBouncer log it: security monitoring watches failed logins.
      this.core.log.warn(
        { client_id: this.conn.id, user: who.user, database: who.database, addr: this.conn.addr },
        'client authentication failed',
      );
      return this.fail(r.result.sqlstate, r.result.message);
    }
    this.done(r.result.clientKey, r.result.scramSecret);
  }

  private done(clientKey: Buffer | null, scramSecret: ScramSecret | null): void {
    this.auth = null;
    this.frames = null;
    this.phase = 'done';
    this.onDone({ ...this.who!, clientKey, scramSecret });
  }
}
