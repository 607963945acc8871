// One connection to PostgreSQL after its login (server-login.ts): relays to the client it serves.
import type net from 'node:net';
import { BackendMessage, TxStatus } from '../protocol/codes.js';
import { FrameStream, typeSet } from '../protocol/frame-stream.js';
import { writeTerminate } from '../protocol/writer.js';
import { serverLogin, type ServerCredential, type ServerTarget } from './server-login.js';
import { NativeRelay, type RelayServerOwner } from './relay/native.js';

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

let nextServerId = 1;

export type ServerState = 'login' | 'idle' | 'active' | 'used' | 'closed';

export class ServerConnection implements RelayServerOwner {
  readonly id = nextServerId++;
  readonly socket: net.Socket;
  readonly createdAt: number;
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

  /** Receives every chunk read from the socket after the login. */
  private dataHandler: (chunk: Buffer) => boolean = () => false;

  private constructor(socket: net.Socket, createdAt: number) {
    this.socket = socket;
    this.createdAt = createdAt;
    this.frames = new FrameStream(1 << 30, typeSet(BackendMessage.ReadyForQuery), this.onRelayMessage);
  }

  /** Connects and logs in; resolves when PostgreSQL sent ReadyForQuery. */
  static connect(target: ServerTarget, cred: ServerCredential, timeoutMs: number, noDelay: boolean): Promise<ServerConnection> {
    return serverLogin(target, cred, timeoutMs, noDelay, (login) => {
      const server = new ServerConnection(login.conn.socket, login.startedAt);
      server.backendPid = login.backendPid;
      server.backendSecret = login.backendSecret;
      for (const [k, v] of login.params) server.params.set(k, v);
      server.applicationName = login.applicationName;
      login.conn.read((chunk) => server.dataHandler(chunk));
      server.startRelay();
      return server;
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
