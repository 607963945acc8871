// A client's way in: startup packets, then the password exchange; it ends in a LoginResult and writes no session fields.
import type { Logger } from 'pino';
import type { PoolerConfig } from '../config/pooler.js';
import { FrontendMessage, SqlState, TxStatus, PROTOCOL_3_2 } from '../protocol/codes.js';
import { FrameStream, ALL_TYPES } from '../protocol/frame-stream.js';
import { parseStartupPacket, type StartupPacket } from '../protocol/reader.js';
import {
  writeAuthenticationOk, writeBackendKeyData, writeNegotiateProtocolVersion, writeParameterStatus, writeReadyForQuery,
} from '../protocol/writer.js';
import { ClientAuth } from './auth/client-auth.js';
import type { ScramSecret } from './auth/scram.js';
import type { Pool } from './pool.js';

/** Where a login may go: the admin console, a pool (with the secret to check), or an error. */
export type LoginTarget = { admin: boolean; pool: Pool | null; secret: string } | { error: string; sqlstate: string };

/** What a login needs of the pooler. */
export interface LoginCore {
  readonly config: PoolerConfig;
  readonly log: Logger;
  cancel(pid: number, secret: Buffer): void;
  clientCount(): number;
  resolveLogin(database: string, user: string): LoginTarget;
}

/** The client connection a login talks to. */
export interface LoginConnection {
  readonly id: number;
  readonly addr: string;
  write(data: Buffer | string): void;
  /** Sends a FATAL error and closes. */
  fatal(sqlstate: string, message: string): void;
  /** Closes without a word (CancelRequest, Terminate). */
  destroy(): void;
}

/** Who logged in, where to, and for SCRAM pass-through the key the client proved. */
export interface LoginResult {
  user: string;
  database: string;
  applicationName: string;
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
function loginPrefix(params: ReadonlyMap<string, string>): Buffer {
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
export function loginGreeting(params: ReadonlyMap<string, string>, applicationName: string, cancelPid: number, cancelSecret: Buffer): Buffer {
  return Buffer.concat([
    loginPrefix(params), writeParameterStatus('application_name', applicationName),
    writeBackendKeyData(cancelPid, cancelSecret), writeReadyForQuery(TxStatus.Idle),
  ]);
}

/** SSLRequest and GSSENCRequest are answered N, a CancelRequest is routed, protocol 3.0 and 3.2 are taken and a newer
 * minor gets NegotiateProtocolVersion; then client-auth.ts checks the password. Bytes the client sent past its login
 * are kept for the relay (takeRest). */
export class ClientLogin {
  /** Startup bytes not yet parsed; after the login, what the client sent past it. */
  private buf: Buffer = Buffer.alloc(0);
  private frames: FrameStream | null = null;
  private auth: ClientAuth | null = null;
  private phase: 'startup' | 'auth' | 'done' = 'startup';
  private who: Omit<LoginResult, 'clientKey' | 'scramSecret'> | null = null;

  constructor(private readonly conn: LoginConnection, private readonly core: LoginCore, private readonly onDone: (result: LoginResult) => void) {}

  /** Bytes read before the relay starts (the session copies them out of its read buffer first). */
  feed(chunk: Buffer): void {
    if (this.phase === 'auth') return this.feedAuth(chunk);
    this.buf = this.buf.length ? Buffer.concat([this.buf, chunk]) : chunk;
    while (this.phase === 'startup' && this.buf.length >= 4) {
      const len = this.buf.readInt32BE(0);
      if (len < 8 || len > MAX_STARTUP_PACKET) return this.fail(SqlState.ProtocolViolation, `invalid startup packet length ${len}`);
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

  /** What arrived after the login (a pipelined first query), handed over once. */
  takeRest(): Buffer {
    const rest = this.buf;
    this.buf = Buffer.alloc(0);
    return rest;
  }

  private fail(sqlstate: string, message: string): void {
    this.phase = 'done';
    this.conn.fatal(sqlstate, message);
  }

  private onStartupPacket(p: StartupPacket): void {
    const { conn, core } = this;
    switch (p.kind) {
      case 'ssl':
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
    const max = core.config.general.max_connections;
    if (core.clientCount() > max) return this.fail(SqlState.TooManyConnections, `too many client connections: max_connections = ${max}`);
    const target = core.resolveLogin(database, user);
    if ('error' in target) return this.fail(target.sqlstate, target.error);
    this.who = { user, database, applicationName, protocol32, admin: target.admin, pool: target.pool };
    this.auth = new ClientAuth(target.secret, user, core.config.general.auth_type);
    this.phase = 'auth';
    this.frames = new FrameStream(MAX_AUTH_MESSAGE, ALL_TYPES, this.onAuthMessage);
    const first = this.auth.first();
    if (first) conn.write(first);
    else this.done(null, null);
  }

  private feedAuth(chunk: Buffer): void {
    if (!this.frames!.feed(chunk)) this.fail(SqlState.ProtocolViolation, `invalid message length ${this.frames!.badLength} during authentication`);
  }

  private readonly onAuthMessage = (type: number, buf: Buffer, start: number, len: number): void => {
    if (this.phase !== 'auth' || !this.auth) return;
    if (type === FrontendMessage.Terminate) {
      this.phase = 'done';
      return this.conn.destroy();
    }
    if (type !== FrontendMessage.Password) return this.fail(SqlState.ProtocolViolation, `expected a password message, got "${String.fromCharCode(type)}"`);
    let r: ReturnType<ClientAuth['step']>;
    try {
      r = this.auth.step(buf.subarray(start + 5, start + 1 + len));
    } catch (err) {
      return this.fail(SqlState.ProtocolViolation, `malformed authentication message: ${(err as Error).message}`);
    }
    if (r.reply) this.conn.write(r.reply);
    if (!r.result) return;
    if (!r.result.ok) {
      const who = this.who!;
      this.core.log.info({ client_id: this.conn.id, user: who.user, database: who.database, addr: this.conn.addr }, 'client authentication failed');
      return this.fail(r.result.sqlstate, r.result.message);
    }
    this.done(r.result.clientKey, r.result.scramSecret);
  };

  private done(clientKey: Buffer | null, scramSecret: ScramSecret | null): void {
    this.auth = null;
    this.frames = null;
    this.phase = 'done';
    this.onDone({ ...this.who!, clientKey, scramSecret });
  }
}
