// The JavaScript relay's server side (js.ts has the client side): a logged-in PostgreSQL socket, its framing and reports.
import type net from 'node:net';
import { BackendMessage, TxStatus } from '../../protocol/codes.js';
import { FrameStream, typeSet } from '../../protocol/frame-stream.js';
import { endsSession, sqlStateOf } from '../../protocol/reader.js';
import { writeTerminate } from '../../protocol/writer.js';
import type { RelayCounts, RelaySocket, ServerEnd, ServerEvents } from './relay.js';
import type { ParamChanges } from '../session-state/params.js';
import { isSchemaTagAt } from '../prepared/schema-epoch.js';
import { fdPassing } from '../../native/fd-passing.js';

/** Texts kept for takeParams at most (as the native relay's kParamTextMax): past it, flag 2 says some are missing. */
const PARAM_TEXT_MAX = 64 * 1024;

/** ErrorResponse whole for its severity: a FATAL the client got is the last word of its session (see `toldClient`). */
const SERVER_WHOLE = typeSet(BackendMessage.ReadyForQuery, BackendMessage.ErrorResponse);
/** With prepared statements, CommandComplete too: its tag tells when the server dropped every statement. */
const SERVER_WHOLE_REWRITES = typeSet(
  BackendMessage.ReadyForQuery,
  BackendMessage.ErrorResponse,
  BackendMessage.CommandComplete,
);
const DISCARD_ALL = Buffer.from('DISCARD ALL\0');
const DEALLOCATE_ALL = Buffer.from('DEALLOCATE ALL\0');

/** What a server end needs of the client linked to it (js.ts). */
export interface LinkedClient {
  /** Set at the ReadyForQuery that ends a transaction: `releaseAfterRead` is due once the read is scanned. */
  readonly releaseDue: boolean;
  fromServer(chunk: Buffer, s: JsServerEnd): boolean;
  onReadyForQuery(s: JsServerEnd, status: number): void;
  releaseAfterRead(s: JsServerEnd): void;
  onCopyInResponse(): void;
  /** An ErrorResponse goes to the client; `sqlstate` its field C (null when absent). */
  onServerError(sqlstate: string | null): void;
  serverGone(s: JsServerEnd): void;
  /** Client bytes wait for the server's stream to reach a message boundary (see js.ts, switchOver). */
  readonly holding: boolean;
  switchOver(): void;
  /** The server's replies reach the client as they are (no rewriter has taken them over). */
  readonly repliesThrough: boolean;
}

export class JsServerEnd implements ServerEnd {
  readonly kind = 'js';
  readonly socket: net.Socket;
  /** The linked client, set and cleared by js.ts. */
  client: LinkedClient | null = null;
  txStatus: number = TxStatus.Idle;
  transactions = 0;
  queries = 0;
  private sent = 0;
  private received = 0;
  private readonly frames: FrameStream;
  private closed = false;
  private reason = '';
  /** Session reset in progress: called at its ReadyForQuery. */
  private resetDone: ((sawError: boolean) => void) | null = null;
  /** An ErrorResponse arrived while no client was linked. */
  private sawError = false;
  /** The last message was PostgreSQL's FATAL (or PANIC) and went to the linked client: if the connection ends now,
   * that client was told why, as on a direct connection (ServerEvents.onClose). */
  private toldClient = false;
  /** ask(): replies gathered until its ReadyForQuery. */
  private captured: Buffer[] | null = null;
  /** Session parameters: see ServerEnd.takeParams (js.ts notes the client's statements here). */
  paramFlags = 0;
  private paramTexts: string[] = [];
  private paramBytes = 0;

  constructor(
    conn: RelaySocket,
    private readonly events: ServerEvents,
    private readonly rewrites = false,
  ) {
    this.socket = conn.socket;
    this.frames = new FrameStream(1 << 30, rewrites ? SERVER_WHOLE_REWRITES : SERVER_WHOLE, this.onMessage);
    this.socket.on('error', (err) => {
      this.reason ||= err.message;
    });
    this.socket.on('close', this.onSocketClose);
    conn.read(this.onData);
  }

  get alive(): boolean {
    return !this.closed && !this.socket.destroyed;
  }

  get atBoundary(): boolean {
    return this.frames.atBoundary;
  }

  private readonly onData = (chunk: Buffer): boolean => {
    this.received += chunk.length;
    const c = this.client;
    if (c === null && this.captured) this.captured.push(Buffer.from(chunk));
    const retained = c !== null && c.fromServer(chunk, this);
    if (!this.frames.feed(chunk)) {
      this.reason = 'PostgreSQL sent a malformed message';
      this.socket.destroy();
      return retained;
    }
    if (c !== null && c.holding && this.client === c && this.frames.atBoundary) c.switchOver();
    if (c !== null && c.releaseDue) c.releaseAfterRead(this);
    return retained;
  };

  private readonly onMessage = (type: number, buf: Buffer, start: number, len: number): void => {
    this.toldClient = false;
    switch (type) {
      case BackendMessage.ReadyForQuery: {
        this.txStatus = buf[start + 5]!;
        if (this.client) this.client.onReadyForQuery(this, this.txStatus);
        else if (this.resetDone) {
          const done = this.resetDone;
          this.resetDone = null;
          // The read with this ReadyForQuery is in `captured` already (pushed before the scan).
          done(this.sawError);
        }
        break;
      }
      case BackendMessage.CopyInResponse:
        this.client?.onCopyInResponse();
        break;
      case BackendMessage.CommandComplete:
        // A client the rewriter does not see (yet) dropped the server's statements (DISCARD ALL inside a longer query).
        if (this.rewrites && (this.client === null || this.client.repliesThrough) && this.dropsAll(buf, start))
          this.events.onStatementsDropped?.();
        else if (this.rewrites && isSchemaTagAt(buf, start + 5, start + buf.readUInt32BE(start + 1)))
          this.events.onSchemaChanged?.();
        break;
      case BackendMessage.ParameterStatus:
        if (this.client) this.paramFlags |= 4;
        break;
      case BackendMessage.ErrorResponse:
        if (this.client) {
          this.client.onServerError(sqlStateOf(buf, start, len));
          this.toldClient = endsSession(buf, start, len);
        } else this.sawError = true;
        break;
      default:
        break;
    }
  };

  private dropsAll(buf: Buffer, start: number): boolean {
    const len = buf.readUInt32BE(start + 1) - 4;
    const tag = len === DISCARD_ALL.length ? DISCARD_ALL : len === DEALLOCATE_ALL.length ? DEALLOCATE_ALL : null;
    return tag !== null && buf.compare(tag, 0, tag.length, start + 5, start + 5 + len) === 0;
  }

  write(data: Buffer): boolean {
    this.sent += data.length;
    return this.socket.write(data);
  }

  reset(query: Buffer, done: (sawError: boolean) => void): void {
    this.resetDone = done;
    this.sawError = false;
    this.write(query);
  }

  ask(query: Buffer, done: (replies: Buffer, sawError: boolean) => void): void {
    const captured: Buffer[] = [];
    this.captured = captured;
    this.reset(query, (sawError) => {
      if (this.captured === captured) this.captured = null;
      done(Buffer.concat(captured), sawError);
    });
  }

  /** A client statement that may change a parameter (js.ts): `text` null when it was not seen whole. */
  noteParams(text: string | null): void {
    if (text !== null && this.paramBytes + text.length < PARAM_TEXT_MAX) {
      this.paramTexts.push(text);
      this.paramBytes += text.length;
      this.paramFlags |= 1;
    } else this.paramFlags |= 2;
  }

  takeParams(): ParamChanges | null {
    if (this.paramFlags === 0) return null;
    const out = { flags: this.paramFlags, texts: this.paramTexts };
    this.paramFlags = 0;
    this.paramTexts = [];
    this.paramBytes = 0;
    return out;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.dropClient();
    if (this.socket.destroyed) return;
    this.socket.end(writeTerminate());
    setTimeout(() => this.socket.destroy(), 1000).unref();
  }

  get gone(): boolean {
    return this.socket.destroyed;
  }

  /** After close() the polite close runs its course (forced after its second). */
  destroy(): void {
    if (this.closed) return;
    this.closed = true;
    this.dropClient();
    this.socket.destroy();
  }

  release(): number | null {
    const socket = this.socket;
    if (this.closed || this.client !== null || this.resetDone !== null || this.captured !== null) return null;
    if (!this.frames.atBoundary || this.txStatus !== TxStatus.Idle) return null;
    const fd = dupOf(socket);
    if (fd === null) return null;
    this.closed = true;
    // Node's socket goes, its descriptor closed: the duplicate keeps the connection, and nothing is sent on it.
    socket.removeAllListeners();
    socket.on('error', () => undefined);
    socket.destroy();
    return fd;
  }

  /** The linked client's release of the pair (JsClientEnd.releasePair): a duplicate of the descriptor when this end is
   * idle (ReadyForQuery 'I'), between whole messages, plaintext, with nothing unsent and no reply awaited; the end is
   * then gone without a report (the client end detaches itself). Null otherwise, and nothing changed. */
  releaseLinked(): number | null {
    const socket = this.socket;
    if (this.closed || this.resetDone !== null || this.captured !== null) return null;
    if (!this.frames.atBoundary || this.txStatus !== TxStatus.Idle || !fdPassing) return null;
    return dupOf(socket);
  }

  /** After releaseLinked: Node's socket goes, its descriptor closed (the duplicate keeps the connection). */
  dropReleased(): void {
    this.closed = true;
    this.client = null;
    this.socket.removeAllListeners();
    this.socket.on('error', () => undefined);
    this.socket.destroy();
  }

  private dropClient(): void {
    const c = this.client;
    this.client = null;
    c?.serverGone(this);
  }

  private readonly onSocketClose = (): void => {
    this.dropClient();
    if (this.closed) return;
    this.closed = true;
    this.events.onClose(this.reason, this.frames.atBoundary, false, this.toldClient && this.frames.atBoundary);
  };

  counts(): RelayCounts {
    return {
      transactions: this.transactions,
      queries: this.queries,
      errors: 0,
      bytesSent: this.sent,
      bytesReceived: this.received,
      txStatus: this.txStatus,
      syncs: 0,
      unsynced: false,
      xactTimeUs: 0,
      queryAgeUs: 0,
      xactAgeUs: 0,
    };
  }
}

/** A duplicate of a plaintext socket's descriptor with nothing left to write, or null. */
export function dupOf(socket: net.Socket): number | null {
  if (!fdPassing || socket.destroyed || socket.writableLength > 0) return null;
  if ((socket as net.Socket & { encrypted?: boolean }).encrypted === true) return null;
  const raw = (socket as net.Socket & { _handle?: { fd?: number } | null })._handle?.fd;
  if (typeof raw !== 'number' || raw < 0) return null;
  try {
    return fdPassing.fdDup(raw);
  } catch {
    return null;
  }
}
