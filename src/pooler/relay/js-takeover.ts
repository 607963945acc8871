// When the JavaScript relay hands a client to the prepared-statement rewriter: its first message the rewriter must see (prepared/divert.ts), the bytes before it passed on as they are, and the client bytes that wait while the server's stream is inside a message.
import { DIVERT_TYPES, wantsRewrite } from '../prepared/divert.js';
import type { TransactionTracker } from '../transaction-tracker.js';

export class Takeover {
  /** The rewriter has seen nothing of the client yet: its bytes and replies pass straight through. */
  passthrough = true;
  /** The rewriter has both directions (for good). */
  switched = false;
  /** Taken over, not switched yet: client bytes for the rewriter wait here for the server stream's next boundary. */
  held: Buffer[] = [];
  /** Sync points sent before the rewriter's first message whose replies are still to come (they pass it as they are). */
  earlier = 0;
  /** In the chunk being scanned: offset of the rewriter's first message (-1: none) and the sync points before it. */
  private divertAt = -1;
  private divertSyncs = 0;

  constructor(private readonly tx: TransactionTracker) {}

  /** FrameStream's handler for the client while it may pass through: notes the first message the rewriter must see. */
  readonly onFrame = (type: number, buf: Buffer, start: number, len: number): void => {
    const tx = this.tx;
    if (
      this.passthrough &&
      this.divertAt < 0 &&
      tx.terminateAt < 0 &&
      wantsRewrite(type, buf, start, len, buf.length)
    ) {
      // A message whose header began in an earlier chunk went on already: never one of these (see afterScan).
      this.divertAt = buf === tx.chunk ? start : 0;
      this.divertSyncs = tx.syncs;
    }
    tx.onMessage(type, buf, start);
  };

  /** After `chunk` was scanned, with `carried` bytes of a header held for the next chunk: a header whose type byte may
   * engage the rewriter starts the takeover there (the bytes before it go on, the header waits with the rest). */
  afterScan(chunk: Buffer, carried: number): void {
    if (!this.passthrough || this.divertAt >= 0 || carried === 0 || carried > chunk.length) return;
    const at = chunk.length - carried;
    const t = this.tx.terminateAt;
    if (DIVERT_TYPES[chunk[at]!] === 1 && (t < 0 || t > at)) {
      this.divertAt = at;
      this.divertSyncs = this.tx.syncs;
    }
  }

  /** Where in the chunk's first `length` bytes the rewriter's bytes start (`length`: nowhere); from there on it has the client. */
  split(length: number): number {
    const at = this.divertAt;
    if (!this.passthrough || at < 0 || at >= length) return length;
    this.divertAt = -1;
    this.passthrough = false;
    this.earlier = this.divertSyncs;
    return at;
  }

  /** A ReadyForQuery went to the client as it was while bytes wait: one fewer earlier reply for the rewriter. */
  readyPassed(): void {
    if (this.held.length > 0 && this.earlier > 0) this.earlier--;
  }
}
