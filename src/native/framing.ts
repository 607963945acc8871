// TypeScript twin of native/framing.cc: finds complete PostgreSQL messages in a byte range.

/** Status written to out[1]: the message at out[0] has a length < 4 or past the limit. */
export const SCAN_BAD_LENGTH = 1;

/**
 * Scans buf[offset, end) for complete messages (type byte + int32 length that counts itself).
 * out[0] receives the offset of the first incomplete message (or of the message with a bad length),
 * out[1] the status (0 ok, SCAN_BAD_LENGTH), and out[2 + 3i ..] one (type, start, length) triple per
 * complete message. Returns the number of triples written; scanning stops when `out` is full.
 */
export function scanFramesTs(buf: Uint8Array, offset: number, end: number, out: Int32Array, maxMessageSize: number): number {
  const cap = ((out.length - 2) / 3) | 0;
  let count = 0;
  let status = 0;
  let pos = offset;
  while (count < cap && end - pos >= 5) {
    const mlen = ((buf[pos + 1]! << 24) >>> 0) + (buf[pos + 2]! << 16) + (buf[pos + 3]! << 8) + buf[pos + 4]!;
    if (mlen < 4 || mlen > maxMessageSize) {
      status = SCAN_BAD_LENGTH;
      break;
    }
    if (end - pos < 1 + mlen) break;
    const t = 2 + count * 3;
    out[t] = buf[pos]!;
    out[t + 1] = pos;
    out[t + 2] = mlen;
    pos += 1 + mlen;
    count++;
  }
  out[0] = pos;
  out[1] = status;
  return count;
}
