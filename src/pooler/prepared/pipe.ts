// A linked client and server seen through the statement rewriter: bytes in from either side, rewritten bytes out, one write per side and chunk.
import { typeSet } from '../../protocol/frame-stream.js';
import { MessageSplitter } from '../../protocol/message-splitter.js';
import { FrontendMessage } from '../../protocol/codes.js';
import { wholeMessages } from './lane.js';
import { REWRITER_WHOLE_TYPES, type RewriteSink, type StatementRewriter } from './rewriter.js';

/** Where the pipe writes: each call gets what one chunk produced, in order. */
export interface PipeSink {
  toServer(bufs: Buffer[]): void;
  toClient(bufs: Buffer[]): void;
}

/** Client messages the rewriter sees whole: all but CopyData, which can be large and is passed on in pieces. */
const CLIENT_WHOLE = (() => {
  const t = new Uint8Array(256).fill(1);
  t[FrontendMessage.CopyData] = 0;
  return t;
})();
const SERVER_WHOLE = typeSet(...REWRITER_WHOLE_TYPES);

export class PreparedPipe implements RewriteSink {
  private readonly client: MessageSplitter;
  private readonly server: MessageSplitter;
  private serverOut: Buffer[] = [];
  private clientOut: Buffer[] = [];

  constructor(
    readonly rewriter: StatementRewriter,
    maxMessageSize: number,
    private readonly sink: PipeSink,
  ) {
    this.client = new MessageSplitter(maxMessageSize, CLIENT_WHOLE, {
      whole: (type, msg) => rewriter.clientMessage(type, msg, this),
      piece: (_type, bytes) => this.serverOut.push(Buffer.from(bytes)),
    });
    this.server = new MessageSplitter(1 << 30, SERVER_WHOLE, {
      whole: (type, msg) => rewriter.serverMessage(type, msg, this),
      piece: (_type, bytes) => this.clientOut.push(bytes),
    });
  }

  toServer(buf: Buffer): void {
    this.serverOut.push(buf);
  }

  toClient(buf: Buffer): void {
    this.clientOut.push(buf);
  }

  /** Bytes from the client; false on an invalid message length (see `clientBadLength`). */
  clientBytes(chunk: Buffer): boolean {
    const ok = this.client.feed(chunk);
    // The pooler's own replies (a cached ParseComplete) go out with the server's next reply when one is owed: one
    // write and one wake-up of the client instead of two. Nothing waits when the server owes nothing.
    this.flush(this.rewriter.awaitingServer);
    return ok;
  }

  /** Bytes from the server; false when it sent an invalid length. Pieces passed to the client are views of `chunk`. */
  serverBytes(chunk: Buffer): boolean {
    const ok = this.server.feed(chunk);
    this.flush();
    return ok;
  }

  expectEarlierReplies(n: number): void {
    this.rewriter.expectEarlierReplies(n);
  }

  /** The native lane's table for the linked server (null while anything is partly through or owed). */
  laneTable(): Buffer | null {
    return this.client.atBoundary && this.server.atBoundary ? this.rewriter.laneTable() : null;
  }

  laneUsed(counts: Float64Array, n: number, at = 0): void {
    this.rewriter.laneUsed(counts, n, at);
  }

  /** Whole messages the native lane sent and did not see answered: the rewriter takes them over (see adoptSent). */
  adoptSent(bytes: Buffer, delivered: number, status: number): void {
    this.rewriter.adoptSent(wholeMessages(bytes), delivered, status, this);
    this.flush(this.rewriter.awaitingServer);
  }

  get clientBadLength(): number {
    return this.client.badLength;
  }

  /** No message of either side is partly through, and the client is owed nothing. */
  get atBoundary(): boolean {
    return this.client.atBoundary && this.server.atBoundary && this.rewriter.settled;
  }

  private flush(holdClient = false): void {
    // Writes triggered by one side can go to both (a held message is released by a server reply).
    if (this.serverOut.length > 0) {
      const out = this.serverOut;
      this.serverOut = [];
      this.sink.toServer(out);
    }
    if (this.clientOut.length > 0 && !holdClient) {
      const out = this.clientOut;
      this.clientOut = [];
      this.sink.toClient(out);
    }
  }
}
