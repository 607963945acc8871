// Follows message boundaries across the chunks of one byte stream without buffering whole messages,
// except the few types a consumer asks to see whole.
import { scanFrames } from '../native/index.js';
import { scanFramesTs } from '../native/framing.js';

/**
 * Called once per message. `complete` is true when buf[start, start + 1 + len) holds the whole message
 * (always the case for types the consumer wants whole); otherwise only its 5-byte header is known.
 */
export type MessageHandler = (type: number, buf: Buffer, start: number, len: number, complete: boolean) => void;

const SCAN_CAP = 128;
/** The first messages of a chunk are scanned in TypeScript, the rest (if any) by the addon: an N-API
 * call costs about ten messages' worth of the JIT-compiled loop (bench/results/framing.md). */
const TS_FIRST_CAP = 16;

export class FrameStream {
  /** Bytes of the current message that are still to come and need no look. */
  private skip = 0;
  /** The start of an incomplete message (or header) that must be seen whole. */
  private carry: Buffer | null = null;
  private readonly out = new Int32Array(2 + SCAN_CAP * 3);
  private readonly outFirst = this.out.subarray(0, 2 + TS_FIRST_CAP * 3);
  /** Set when a length below 4 or above the limit was seen; the stream is then unusable. */
  badLength = -1;

  constructor(
    private readonly maxMessageSize: number,
    /** Bitmap (by type byte) of messages to deliver whole. */
    private readonly whole: Uint8Array,
    private readonly onMessage: MessageHandler,
  ) {}

  /** True when no message is partly consumed: a good place to switch the stream's owner. */
  get atBoundary(): boolean {
    return this.skip === 0 && this.carry === null;
  }

  /** Bytes of an incomplete header (or whole-type message) held for the next chunk; 0 when none. When no more than
   * the last chunk's length, they are that chunk's last bytes. */
  get carried(): number {
    return this.carry === null ? 0 : this.carry.length;
  }

  /** Consumes one chunk; returns false when the stream carries an invalid length (see badLength). */
  feed(chunk: Buffer): boolean {
    let pos = 0;
    const end = chunk.length;
    if (this.skip > 0) {
      const n = this.skip < end ? this.skip : end;
      this.skip -= n;
      pos = n;
      if (pos === end) return true;
    }
    if (this.carry !== null) {
      pos = this.resolveCarry(chunk, pos);
      if (pos < 0) return false;
      if (pos >= end) return true;
    }
    const out = this.out;
    for (let first = true; ; first = false) {
      const count = first
        ? scanFramesTs(chunk, pos, end, this.outFirst, this.maxMessageSize)
        : scanFrames(chunk, pos, end, out, this.maxMessageSize);
      for (let i = 0, t = 2; i < count; i++, t += 3) this.onMessage(out[t]!, chunk, out[t + 1]!, out[t + 2]!, true);
      pos = out[0]!;
      if (out[1] !== 0) {
        this.badLength = chunk.readUInt32BE(pos + 1);
        return false;
      }
      if (count < (first ? TS_FIRST_CAP : SCAN_CAP)) break;
    }
    if (pos < end) {
      if (end - pos >= 5) {
        const type = chunk[pos]!;
        const len = chunk.readUInt32BE(pos + 1);
        if (this.whole[type]) this.carry = Buffer.from(chunk.subarray(pos, end));
        else {
          this.onMessage(type, chunk, pos, len, false);
          this.skip = 1 + len - (end - pos);
        }
      } else this.carry = Buffer.from(chunk.subarray(pos, end));
    }
    return true;
  }

  /** Completes the carried message from `chunk`; returns the next position, or -1 on a bad length. */
  private resolveCarry(chunk: Buffer, pos: number): number {
    const end = chunk.length;
    let c = this.carry!;
    if (c.length < 5) {
      const take = Math.min(5 - c.length, end - pos);
      c = Buffer.concat([c, chunk.subarray(pos, pos + take)]);
      pos += take;
      if (c.length < 5) {
        this.carry = c;
        return pos;
      }
    }
    const type = c[0]!;
    const len = c.readUInt32BE(1);
    if (len < 4 || len > this.maxMessageSize) {
      this.badLength = len;
      return -1;
    }
    const total = 1 + len;
    if (!this.whole[type]) {
      this.carry = null;
      // The header with as much of the body as this chunk holds, as for a message whose header is not cut: a consumer
      // that reads the body (a Query's text) sees it here, and what is not here comes in the next chunks.
      const rest = total - c.length;
      const n = Math.min(rest, end - pos);
      const seen = n > 0 ? Buffer.concat([c, chunk.subarray(pos, pos + n)]) : c;
      this.onMessage(type, seen, 0, len, seen.length >= total);
      this.skip = rest - n;
      return pos + n;
    }
    const take = Math.min(total - c.length, end - pos);
    if (take > 0) c = Buffer.concat([c, chunk.subarray(pos, pos + take)]);
    pos += take;
    if (c.length < total) {
      this.carry = c;
      return pos;
    }
    this.carry = null;
    this.onMessage(type, c, 0, len, true);
    return pos;
  }
}

/** A type bitmap for FrameStream from message type bytes. */
export function typeSet(...types: number[]): Uint8Array {
  const m = new Uint8Array(256);
  for (const t of types) m[t] = 1;
  return m;
}

/** Every type: deliver all messages whole (login phases, the admin console). */
export const ALL_TYPES: Uint8Array = new Uint8Array(256).fill(1);
