// Splits one direction of a connection into messages for a rewriter: chosen types arrive whole, the others as byte pieces that can be passed on as they come.

/** `whole`: the whole message (header included) of a type asked for whole. `piece`: bytes of another type's message; `first` marks the piece holding its header. */
export interface SplitterSink {
  whole(type: number, msg: Buffer): void;
  piece(type: number, bytes: Buffer, first: boolean): void;
}

export class MessageSplitter {
  /** Bytes of a header or of a whole-type message still being collected. */
  private partial: Buffer | null = null;
  /** Type and bytes still to come of a passed-through message. */
  private passType = 0;
  private passLeft = 0;
  /** Set when a length below 4 or above the limit was seen; the stream is then unusable. */
  badLength = -1;

  constructor(
    private readonly maxMessageSize: number,
    /** Bitmap by type byte of the messages delivered whole. */
    private readonly wholeTypes: Uint8Array,
    private readonly sink: SplitterSink,
  ) {}

  /** True when no message is partly consumed. */
  get atBoundary(): boolean {
    return this.partial === null && this.passLeft === 0;
  }

  /** Consumes a chunk; false on an invalid length (nothing from that message on is delivered). Whole messages are copies; pieces are views of `chunk`. */
  feed(chunk: Buffer): boolean {
    let pos = 0;
    const end = chunk.length;
    while (pos < end) {
      if (this.passLeft > 0) {
        const n = Math.min(this.passLeft, end - pos);
        this.passLeft -= n;
        this.sink.piece(this.passType, chunk.subarray(pos, pos + n), false);
        pos += n;
        continue;
      }
      if (this.partial !== null) {
        pos = this.continuePartial(chunk, pos);
        if (pos < 0) return false;
        continue;
      }
      if (end - pos < 5) {
        this.partial = Buffer.from(chunk.subarray(pos, end));
        return true;
      }
      const type = chunk[pos]!;
      const len = chunk.readUInt32BE(pos + 1);
      if (len < 4 || len > this.maxMessageSize) {
        this.badLength = len;
        return false;
      }
      const total = 1 + len;
      if (this.wholeTypes[type]) {
        if (end - pos >= total) {
          this.sink.whole(type, Buffer.from(chunk.subarray(pos, pos + total)));
          pos += total;
        } else {
          this.partial = Buffer.from(chunk.subarray(pos, end));
          pos = end;
        }
      } else {
        const n = Math.min(total, end - pos);
        this.passType = type;
        this.passLeft = total - n;
        this.sink.piece(type, chunk.subarray(pos, pos + n), true);
        pos += n;
      }
    }
    return true;
  }

  /** Adds to the collected header or whole message; returns the next position, or -1 on a bad length. */
  private continuePartial(chunk: Buffer, pos: number): number {
    let p = this.partial!;
    if (p.length < 5) {
      const take = Math.min(5 - p.length, chunk.length - pos);
      p = Buffer.concat([p, chunk.subarray(pos, pos + take)]);
      pos += take;
      if (p.length < 5) {
        this.partial = p;
        return pos;
      }
      const len = p.readUInt32BE(1);
      if (len < 4 || len > this.maxMessageSize) {
        this.badLength = len;
        return -1;
      }
      if (!this.wholeTypes[p[0]!]) {
        // A passed-through type: hand on the header now, the body as it comes.
        this.partial = null;
        this.passType = p[0]!;
        this.passLeft = 1 + len - 5;
        this.sink.piece(this.passType, p, true);
        return pos;
      }
    }
    const total = 1 + p.readUInt32BE(1);
    const take = Math.min(total - p.length, chunk.length - pos);
    if (take > 0) p = Buffer.concat([p, chunk.subarray(pos, pos + take)]);
    pos += take;
    if (p.length < total) {
      this.partial = p;
      return pos;
    }
    this.partial = null;
    this.sink.whole(p[0]!, p);
    return pos;
  }
}
