// A client's way in: startup packets (SSLRequest and GSSENCRequest answered N, CancelRequest routed, protocol
// 3.0/3.2 with NegotiateProtocolVersion for newer minors), then the password exchange of client-auth.ts.
// On success it calls the session's loginOk; bytes the client sent past its login are kept for the relay.
import { FrontendMessage, SqlState, TxStatus, PROTOCOL_3_2 } from '../protocol/codes.js';
import { FrameStream, ALL_TYPES } from '../protocol/frame-stream.js';
import { parseStartupPacket, type StartupPacket } from '../protocol/reader.js';
import {
  writeAuthenticationOk, writeBackendKeyData, writeNegotiateProtocolVersion, writeParameterStatus, writeReadyForQuery,
} from '../protocol/writer.js';
import { ClientAuth } from './auth/client-auth.js';
import type { ClientSession, ClientState } from './client-session.js';

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

export class ClientLogin {
  /** Startup bytes not yet parsed; after the login, what the client sent past it. */
  private buf: Buffer = Buffer.alloc(0);
  private frames: FrameStream | null = null;
  private auth: ClientAuth | null = null;

  constructor(private readonly s: ClientSession) {}

  /** Bytes read before the relay starts (the session copies them out of its read buffer first). */
  feed(chunk: Buffer): void {
    const s = this.s;
    if (s.state === 'auth') return this.feedAuth(chunk);
    this.buf = this.buf.length ? Buffer.concat([this.buf, chunk]) : chunk;
    while (s.state === 'startup' && this.buf.length >= 4) {
      const len = this.buf.readInt32BE(0);
      if (len < 8 || len > MAX_STARTUP_PACKET) return s.fatal(SqlState.ProtocolViolation, `invalid startup packet length ${len}`);
      if (this.buf.length < len) return;
      const packet = this.buf.subarray(0, len);
      this.buf = this.buf.subarray(len);
      let parsed: StartupPacket;
      try {
        parsed = parseStartupPacket(packet);
      } catch (err) {
        return s.fatal(SqlState.ProtocolViolation, (err as Error).message);
      }
      this.onStartupPacket(parsed);
    }
    if ((s.state as ClientState) === 'auth' && this.buf.length) {
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

  private onStartupPacket(p: StartupPacket): void {
    const s = this.s;
    const core = s.core;
    switch (p.kind) {
      case 'ssl':
      case 'gssenc':
        s.socket.write('N');
        return;
      case 'cancel':
        core.cancel(p.pid, p.secret);
        s.socket.destroy();
        return;
      case 'startup':
        break;
    }
    const pq = [...p.params.keys()].filter((k) => k.startsWith('_pq_.'));
    if (p.minor > 2 || pq.length) s.socket.write(writeNegotiateProtocolVersion(Math.min(p.minor, 2) | (3 << 16), pq));
    s.protocol32 = ((3 << 16) | Math.min(p.minor, 2)) === PROTOCOL_3_2;
    s.user = p.params.get('user') ?? '';
    s.database = p.params.get('database') || s.user;
    s.applicationName = p.params.get('application_name') ?? '';
    if (!s.user) return s.fatal(SqlState.InvalidAuthorization, 'no user name in startup packet');
    const max = core.config.general.max_connections;
    if (core.clientCount() > max) return s.fatal(SqlState.TooManyConnections, `too many client connections: max_connections = ${max}`);
    const target = core.resolveLogin(s.database, s.user);
    if ('error' in target) return s.fatal(target.sqlstate, target.error);
    s.isAdmin = target.admin;
    s.pool = target.pool;
    this.auth = new ClientAuth(target.secret, s.user, core.config.general.auth_type);
    s.state = 'auth';
    this.frames = new FrameStream(MAX_AUTH_MESSAGE, ALL_TYPES, this.onAuthMessage);
    const first = this.auth.first();
    if (first) s.socket.write(first);
    else this.done(null, null);
  }

  private feedAuth(chunk: Buffer): void {
    if (!this.frames!.feed(chunk)) this.s.fatal(SqlState.ProtocolViolation, `invalid message length ${this.frames!.badLength} during authentication`);
  }

  private readonly onAuthMessage = (type: number, buf: Buffer, start: number, len: number): void => {
    const s = this.s;
    if (s.state !== 'auth' || !this.auth) return;
    if (type === FrontendMessage.Terminate) return void s.socket.destroy();
    if (type !== FrontendMessage.Password) return s.fatal(SqlState.ProtocolViolation, `expected a password message, got "${String.fromCharCode(type)}"`);
    let r: ReturnType<ClientAuth['step']>;
    try {
      r = this.auth.step(buf.subarray(start + 5, start + 1 + len));
    } catch (err) {
      return s.fatal(SqlState.ProtocolViolation, `malformed authentication message: ${(err as Error).message}`);
    }
    if (r.reply) s.socket.write(r.reply);
    if (!r.result) return;
    if (!r.result.ok) {
      s.core.log.info({ client_id: s.id, user: s.user, database: s.database, addr: s.addr }, 'client authentication failed');
      return s.fatal(r.result.sqlstate, r.result.message);
    }
    this.done(r.result.clientKey, r.result.scramSecret);
  };

  private done(clientKey: Buffer | null, scramSecret: Parameters<ClientSession['loginOk']>[1]): void {
    this.auth = null;
    this.frames = null;
    void this.s.loginOk(clientKey, scramSecret);
  }
}
