// What the pooler learns from a client's messages: sync points still waiting for ReadyForQuery, extended
// messages not yet followed by Sync, COPY IN, Terminate; it decides when a server is between transactions.
import { FrontendMessage, TxStatus } from '../protocol/codes.js';

export class TransactionTracker {
  /** Sync points (Query, Sync, FunctionCall) sent whose ReadyForQuery has not come back. */
  syncs = 0;
  /** Extended-protocol messages sent after the last Sync. */
  unsynced = false;
  /** The server answered CopyInResponse and the client has not ended the copy: its Syncs are ignored. */
  copyIn = false;
  /** Offset of a Terminate in the chunk being scanned, or -1. */
  terminateAt = -1;
  /** Queries (Query and Execute messages) the client has sent. */
  queryCount = 0;
  /** When the oldest unanswered sync point was sent (performance.now()). */
  private syncStart = 0;
  /** A transaction is under way: its first sync point was sent and its ending ReadyForQuery has not come. */
  private xactOpen = false;
  /** When the transaction under way began (its first sync point, or the link to a server after it). */
  private xactStart = 0;

  /** FrameStream handler for the client's messages (only Terminate arrives whole). */
  /** The chunk being scanned (set by the session before each feed): a message arriving in another buffer
   * started in an earlier chunk, whose bytes were already forwarded. */
  chunk: Buffer | null = null;

  readonly onMessage = (type: number, buf: Buffer, start: number): void => {
    // Messages after a Terminate in the same read never reach the server (the session forwards up to it).
    if (this.terminateAt >= 0) return;
    switch (type) {
      case FrontendMessage.Query:
        this.queryCount++;
        this.syncPoint();
        break;
      case FrontendMessage.Sync:
        if (!this.copyIn) this.syncPoint();
        this.unsynced = false;
        break;
      case FrontendMessage.FunctionCall:
        this.syncPoint();
        break;
      case FrontendMessage.Execute:
        this.queryCount++;
        this.unsynced = true;
        break;
      case FrontendMessage.Parse:
      case FrontendMessage.Bind:
      case FrontendMessage.Describe:
      case FrontendMessage.Close:
      case FrontendMessage.Flush:
        this.unsynced = true;
        break;
      case FrontendMessage.CopyDone:
      case FrontendMessage.CopyFail:
        this.copyIn = false;
        break;
      case FrontendMessage.Terminate:
        // A Terminate whose header began in the previous chunk left those bytes on the server: it is in the
        // middle of a message and must not be pooled.
        if (buf !== this.chunk) this.unsynced = true;
        if (this.terminateAt < 0) this.terminateAt = buf === this.chunk ? start : 0;
        break;
      case FrontendMessage.CopyData:
        break;
      default:
        // A type PostgreSQL does not take after login: it answers FATAL and closes. Until a Sync is answered
        // the server's state is unknown, so it must not go back to the pool.
        this.unsynced = true;
        break;
    }
  };

  /** When the oldest unanswered sync point was sent (performance.now()); meaningful while `syncs` > 0. */
  get syncStartedAt(): number {
    return this.syncStart;
  }

  /** When the transaction under way began (performance.now()), or -1 when none is. */
  get xactStartedAt(): number {
    return this.xactOpen ? this.xactStart : -1;
  }

  /** A server was linked at `now`: sync points in flight, and the transaction they began, are timed from here. */
  restartClock(now: number): void {
    if (this.syncs > 0) this.syncStart = now;
    if (this.xactOpen) this.xactStart = now;
  }

  private syncPoint(): void {
    if (this.syncs++ !== 0) return;
    this.syncStart = performance.now();
    // A transaction starts with the first message after the last one ended, not when that one ended: the client's
    // idle time between transactions (a session-mode client, a pair kept linked) is not transaction time.
    if (!this.xactOpen) {
      this.xactOpen = true;
      this.xactStart = this.syncStart;
    }
  }

  /** The transaction ended (ReadyForQuery with the server between transactions) at `now`: its milliseconds. */
  endTransaction(now: number): number {
    this.xactOpen = false;
    return now - this.xactStart;
  }

  /** A ReadyForQuery arrived at `now`: returns the milliseconds since the sync point it answers. */
  readyForQuery(now: number): number {
    if (this.syncs > 0) this.syncs--;
    const ms = now - this.syncStart;
    this.syncStart = now;
    return ms;
  }

  /** True when a server with this transaction status has nothing of this client's in flight. */
  between(status: number): boolean {
    return status === TxStatus.Idle && this.syncs === 0 && !this.unsynced;
  }
}
