// One connection to PostgreSQL: connect, log in (md5, SCRAM, cleartext), then relay to the client it serves.
import net from 'node:net';
import { BackendMessage, AuthRequest, TxStatus, SqlState } from '../protocol/codes.js';
import { FrameStream, ALL_TYPES, typeSet } from '../protocol/frame-stream.js';
import { BodyReader, parseErrorFields } from '../protocol/reader.js';
import {
  writeStartupMessage, writePasswordMessage, writeSASLInitialResponse, writeSASLResponse, writeTerminate,
} from '../protocol/writer.js';
import { isMd5Secret, md5Inner, md5Response } from './auth/md5.js';
import { ScramClient, type ScramCredential } from './auth/scram.js';
import { ReadBuffer } from './read-buffer.js';
import { NativeRelay, type RelayServerOwner } from './native-relay.js';

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
}

/** The session a server currently serves; gets the server's bytes and its transaction boundaries. */
export interface ServerOwner {
  /** Forwards a chunk; returns true when the chunk is still referenced afterwards (queued for writing). */
  onServerData(chunk: Buffer): boolean;
  onReadyForQuery(status: number): void;
  onCopyInResponse(): void;
  onServerError(): void;
  onServerClosed(server: ServerConnection, reason: string, atBoundary: boolean): void;
  /** Native relay: the server died while parked with this owner between transactions. */
  onServerLostBetween?(server: ServerConnection): void;
}

export class ServerLoginError extends Error {
  constructor(message: string, readonly sqlstate: string = SqlState.ConnectionFailure) {
    super(message);
    this.name = 'ServerLoginError';
  }
}

let nextServerId = 1;
/** Read buffer per server socket: results can be large, and there are few servers. */
const SERVER_READ_BUFFER = 64 * 1024;

export type ServerState = 'login' | 'idle' | 'active' | 'used' | 'closed';

export class ServerConnection implements RelayServerOwner {
  readonly id = nextServerId++;
  readonly socket: net.Socket;
  readonly createdAt = Date.now();
  state: ServerState = 'login';
  owner: ServerOwner | null = null;
  /** PostgreSQL's backend pid and secret, for CancelRequest. */
  backendPid = 0;
  backendSecret: Buffer = Buffer.alloc(0);
  readonly params = new Map<string, string>();
  txStatus: number = TxStatus.Idle;
  /** Close instead of pooling at the next release (RECONNECT, lifetime, RELOAD). */
  closeOnRelease = false;
  /** Deadline for replacement: server_lifetime with jitter. */
  expiresAt = Infinity;
  lastUsed = Date.now();
  /** Counted by the JavaScript relay; the native relay keeps its own (see the getters below). */
  private js = { transactions: 0, queries: 0, sent: 0, received: 0 };
  applicationName = '';
  /** Id in the native relay after login, or 0 while the JavaScript relay serves this socket. */
  nativeId = 0;
  private relay: NativeRelay | null = null;
  /** Told of the next ReadyForQuery while unlinked (native relay: after the reset query). */
  onReady: ((sawError: boolean) => void) | null = null;
  private frames: FrameStream;
  private closeReason = '';

  /** Receives every chunk read from the socket (login parser first, then the relay). */
  private dataHandler: (chunk: Buffer) => boolean = () => false;

  private constructor(socket: net.Socket) {
    this.socket = socket;
    this.frames = new FrameStream(1 << 30, typeSet(BackendMessage.ReadyForQuery), this.onRelayMessage);
  }

  /** Connects and logs in; resolves when PostgreSQL sent ReadyForQuery. */
  static connect(target: ServerTarget, cred: ServerCredential, timeoutMs: number, noDelay: boolean): Promise<ServerConnection> {
    return new Promise((resolve, reject) => {
      // onread reads into a reused buffer and skips the stream layer: about 14% less CPU per transaction.
      let server: ServerConnection | null = null;
      const onread = new ReadBuffer(SERVER_READ_BUFFER).onread(() => server!.dataHandler);
      const socket = net.connect({ host: target.host, port: target.port, noDelay, onread });
      server = new ServerConnection(socket);
      let done = false;
      const fail = (err: Error) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        server.state = 'closed';
        socket.destroy();
        reject(err);
      };
      const timer = timeoutMs > 0
        ? setTimeout(() => fail(new ServerLoginError(`connect_timeout: no login to ${target.host}:${target.port} within ${timeoutMs} ms`)), timeoutMs)
        : undefined;
      socket.once('error', (err) => fail(new ServerLoginError(`could not connect to server ${target.host}:${target.port}: ${err.message}`)));
      socket.once('close', () => fail(new ServerLoginError(`server ${target.host}:${target.port} closed the connection during login`)));
      socket.once('connect', () => {
        const params: Record<string, string> = { user: cred.user, database: target.database, client_encoding: 'UTF8' };
        if (target.applicationName) params.application_name = target.applicationName;
        server.applicationName = target.applicationName;
        socket.write(writeStartupMessage(params));
      });
      let scram: ScramClient | null = null;
      const login = new FrameStream(1 << 20, ALL_TYPES, (type, buf, start, len) => {
        if (done) return;
        const body = buf.subarray(start + 5, start + 1 + len);
        try {
          switch (type) {
            case BackendMessage.Authentication: {
              const r = new BodyReader(body);
              const code = r.int32();
              if (code === AuthRequest.Ok) break;
              if (code === AuthRequest.CleartextPassword) {
                if (cred.password === null || isMd5Secret(cred.password)) throw new ServerLoginError(`PostgreSQL asked user "${cred.user}" for a cleartext password, but only a hashed secret is configured; set server_password`, SqlState.InvalidAuthorization);
                socket.write(writePasswordMessage(cred.password));
              } else if (code === AuthRequest.MD5Password) {
                if (cred.password === null) throw new ServerLoginError(`PostgreSQL asked user "${cred.user}" for md5, but only a SCRAM secret is configured; set server_password`, SqlState.InvalidAuthorization);
                socket.write(writePasswordMessage(md5Response(md5Inner(cred.password, cred.user), r.bytes(4))));
              } else if (code === AuthRequest.SASL) {
                const mechs: string[] = [];
                for (let m = r.cstring(); m !== ''; m = r.cstring()) mechs.push(m);
                if (!mechs.includes('SCRAM-SHA-256')) throw new ServerLoginError(`PostgreSQL offers only ${mechs.join(', ')}`, SqlState.InvalidAuthorization);
                let c: ScramCredential | null = null;
                if (cred.password !== null && !isMd5Secret(cred.password)) c = { password: cred.password };
                else c = cred.scram?.() ?? null;
                if (!c) {
                  throw new ServerLoginError((cred.password !== null && isMd5Secret(cred.password))
                    ? `PostgreSQL asked user "${cred.user}" for SCRAM-SHA-256, but only an md5 secret is configured; set server_password`
                    : `cannot log in to PostgreSQL as "${cred.user}" with SCRAM yet: only a SCRAM secret is configured and no client has proven its key; a client must log in first, or set server_password`, SqlState.InvalidAuthorization);
                }
                scram = new ScramClient(c);
                socket.write(writeSASLInitialResponse('SCRAM-SHA-256', scram.first()));
              } else if (code === AuthRequest.SASLContinue) {
                if (!scram) throw new ServerLoginError('unexpected SASLContinue');
                socket.write(writeSASLResponse(scram.final(r.rest().toString('utf8'))));
              } else if (code === AuthRequest.SASLFinal) {
                if (!scram) throw new ServerLoginError('unexpected SASLFinal');
                scram.verify(r.rest().toString('utf8'));
              } else throw new ServerLoginError(`unsupported authentication request ${code} from PostgreSQL`, SqlState.InvalidAuthorization);
              break;
            }
            case BackendMessage.ParameterStatus: {
              const r = new BodyReader(body);
              server.params.set(r.cstring(), r.cstring());
              break;
            }
            case BackendMessage.BackendKeyData: {
              const r = new BodyReader(body);
              server.backendPid = r.int32();
              server.backendSecret = Buffer.from(r.rest());
              break;
            }
            case BackendMessage.ErrorResponse: {
              const f = parseErrorFields(body);
              throw new ServerLoginError(f.get('M') ?? 'login failed', f.get('C') ?? SqlState.ConnectionFailure);
            }
            case BackendMessage.ReadyForQuery:
              done = true;
              clearTimeout(timer);
              socket.removeAllListeners('error');
              socket.removeAllListeners('close');
              socket.removeAllListeners('connect');
              server.startRelay();
              resolve(server);
              break;
            default:
              break; // NoticeResponse, NegotiateProtocolVersion
          }
        } catch (err) {
          fail(err instanceof ServerLoginError ? err : new ServerLoginError((err as Error).message, SqlState.InvalidPassword));
        }
      });
      server.dataHandler = (chunk) => {
        if (!login.feed(chunk)) fail(new ServerLoginError('PostgreSQL sent a malformed message during login', SqlState.ProtocolViolation));
        return false;
      };
    });
  }

  private startRelay(): void {
    this.state = 'idle';
    const relay = NativeRelay.get();
    if (relay) {
      const id = relay.adoptServer(this.socket, this);
      if (id) {
        this.relay = relay;
        this.nativeId = id;
        this.dataHandler = () => false;
        return;
      }
    }
    this.dataHandler = this.onData;
    this.socket.on('error', (err) => { this.closeReason ||= err.message; });
    this.socket.on('close', () => this.onClose());
  }

  private readonly onData = (chunk: Buffer): boolean => {
    this.js.received += chunk.length;
    const owner = this.owner;
    const retained = owner !== null && owner.onServerData(chunk);
    if (!this.frames.feed(chunk)) {
      this.closeReason = 'PostgreSQL sent a malformed message';
      this.socket.destroy();
    }
    return retained;
  };

  private readonly onRelayMessage = (type: number, buf: Buffer, start: number): void => {
    switch (type) {
      case BackendMessage.ReadyForQuery:
        this.txStatus = buf[start + 5]!;
        this.owner?.onReadyForQuery(this.txStatus);
        break;
      case BackendMessage.CopyInResponse:
        this.owner?.onCopyInResponse();
        break;
      case BackendMessage.ErrorResponse:
        this.owner?.onServerError();
        break;
      default:
        break;
    }
  };

  private onClose(): void {
    const wasOwner = this.owner;
    this.state = 'closed';
    this.owner = null;
    this.onClosed?.(this);
    if (wasOwner) wasOwner.onServerClosed(this, this.closeReason || 'server closed the connection unexpectedly', this.frames.atBoundary);
  }

  /** Set by the pool: told once when the socket is gone. */
  onClosed: ((server: ServerConnection) => void) | null = null;

  write(data: Buffer): boolean {
    this.js.sent += data.length;
    if (this.relay) return this.relay.write(this.nativeId, data);
    return this.socket.write(data);
  }

  private nativeNumbers() {
    return this.relay ? this.relay.info(this.nativeId) : null;
  }

  get transactionCount(): number {
    return this.js.transactions + (this.nativeNumbers()?.transactions ?? 0);
  }
  set transactionCount(v: number) {
    this.js.transactions = v - (this.nativeNumbers()?.transactions ?? 0);
  }
  get queryCount(): number {
    return this.js.queries + (this.nativeNumbers()?.queries ?? 0);
  }
  set queryCount(v: number) {
    this.js.queries = v - (this.nativeNumbers()?.queries ?? 0);
  }
  get bytesSent(): number {
    return this.js.sent + (this.nativeNumbers()?.bytesSent ?? 0);
  }
  get bytesReceived(): number {
    return this.js.received + (this.nativeNumbers()?.bytesReceived ?? 0);
  }

  /** Native relay: the socket closed under us (EOF, error, a malformed message). */
  onNativeClosed(atBoundary: boolean, reason: number, parked: boolean): void {
    if (this.state === 'closed') return;
    this.closeReason ||= reason === 2 ? 'PostgreSQL sent a malformed message' : reason === 1 ? 'socket error' : '';
    this.relay = null;
    const wasOwner = this.owner;
    this.state = 'closed';
    this.owner = null;
    this.onClosed?.(this);
    // A parked server dies as an idle one would: its client was between transactions and carries on.
    if (wasOwner && parked) wasOwner.onServerLostBetween?.(this);
    else if (wasOwner) wasOwner.onServerClosed(this, this.closeReason || 'server closed the connection unexpectedly', atBoundary);
  }

  onNativeReady(sawError: boolean): void {
    const r = this.onReady;
    this.onReady = null;
    r?.(sawError);
  }

  /** Closes at once, without Terminate (KILL, shutdown). */
  destroy(): void {
    this.state = 'closed';
    if (this.relay) {
      this.relay.destroy(this.nativeId);
      this.relay = null;
    } else this.socket.destroy();
  }

  get atBoundary(): boolean {
    return this.frames.atBoundary;
  }

  /** Polite close: Terminate, then end. */
  close(reason: string): void {
    if (this.state === 'closed') return;
    this.closeReason ||= reason;
    this.state = 'closed';
    if (this.relay) {
      this.relay.write(this.nativeId, writeTerminate());
      this.relay.close(this.nativeId, 1000);
      this.relay = null;
      return;
    }
    if (!this.socket.destroyed) {
      this.socket.end(writeTerminate());
      setTimeout(() => this.socket.destroy(), 1000).unref();
    }
  }
}
