// The JavaScript relay's pins (as PinAtEnd in native/relay-stream.cc): session state a client's texts named (state-scan.ts) that keeps its pair linked.
import { StateScan } from '../session-state/state-scan.js';

/** The client end's mode: its pair splits at the end of each transaction while true. */
export interface PairMode {
  transactionMode: boolean;
}

export class PinWatch {
  private readonly scan = new StateScan();
  /** The kinds reported with onPin (the pair stays linked once one is). */
  private pinned = 0;

  /** `mask`: the kinds that cannot move (ClientOptions.pinMask); `onPin` hears the kinds the client holds now. */
  constructor(
    private readonly mask: number,
    private readonly onPin: (kinds: number) => void,
  ) {}

  /** A pair a takeover moved here pinned (ClientEnd.restorePins): pinned for `kinds` as on the process it came from. */
  restore(kinds: number, pair: PairMode): void {
    const k = kinds & this.mask;
    if (k === 0) return;
    this.pinned = k;
    pair.transactionMode = false;
  }

  /** The kinds the client is pinned for now (0: none). */
  get kinds(): number {
    return this.pinned;
  }

  /** Every client read. */
  feed(chunk: Buffer): void {
    this.scan.feed(chunk);
  }

  /** At a transaction's end: true while the pair stays linked for session state the client holds; a client whose
   * texts cleared every kind it held is split again from here. */
  atEnd(pair: PairMode): boolean {
    const both = this.scan.take();
    const named = both & this.mask;
    const cleared = (both >>> 8) & this.mask;
    if (this.pinned === 0) {
      if (!pair.transactionMode || named === 0) return !pair.transactionMode;
      // Session state that must stay with this server: the pair is kept, as in session mode.
      pair.transactionMode = false;
      this.pinned = named;
      this.onPin(named);
      return true;
    }
    const remaining = (this.pinned & ~cleared) | named;
    if (remaining !== this.pinned) {
      this.pinned = remaining;
      this.onPin(remaining);
    }
    if (remaining !== 0) return true;
    pair.transactionMode = true;
    return false;
  }
}
