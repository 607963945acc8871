// Unsigned LEB128 varints as the sealed-fraction files write them (sealed arrays, posting lists, the dictionary).

/** Writes a non-negative integer below 2^53 at out[p]; returns the end. */
export function putVarint(out: Uint8Array, p: number, v: number): number {
  while (v >= 0x80) {
    out[p++] = (v % 0x80) | 0x80;
    v = Math.floor(v / 0x80);
  }
  out[p++] = v;
  return p;
}

/** putVarint for a value below 2^32 (ids, lengths): shifts instead of divisions. */
export function putVarint32(out: Uint8Array, p: number, v: number): number {
  while (v >= 0x80) {
    out[p++] = (v & 0x7f) | 0x80;
    v >>>= 7;
  }
  out[p++] = v;
  return p;
}
