// CRC-32C (Castagnoli), the checksum of write-ahead records and sealed-fraction blocks (slicing-by-8 tables).
// Node 20's zlib has no crc32; CRC-32C is the one storage formats use (iSCSI, ext4, LevelDB/RocksDB) and it is
// the same polynomial a hardware instruction computes, should the native addon take it over later.

const POLY = 0x82f63b78; // reflected 0x1EDC6F41

/** TABLE[k * 256 + b]: the CRC of byte b followed by k zero bytes (slicing-by-8 reads 8 bytes per step). */
const TABLE = (() => {
  const t = new Int32Array(8 * 256);
  for (let b = 0; b < 256; b++) {
    let c = b;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ POLY : c >>> 1;
    t[b] = c;
  }
  for (let b = 0; b < 256; b++) {
    let c = t[b]!;
    for (let k = 1; k < 8; k++) {
      c = t[c & 0xff]! ^ (c >>> 8);
      t[k * 256 + b] = c;
    }
  }
  return t;
})();

/**
 * CRC-32C of `buf[start, end)` as an unsigned 32-bit number; `prev` continues a CRC over bytes before these
 * (crc32c(a ++ b) === crc32c(b, 0, b.length, crc32c(a))).
 */
export function crc32c(buf: Uint8Array, start = 0, end = buf.length, prev = 0): number {
  const t = TABLE;
  let c = ~prev;
  let i = start;
  for (; i + 8 <= end; i += 8) {
    const lo = c ^ (buf[i]! | (buf[i + 1]! << 8) | (buf[i + 2]! << 16) | (buf[i + 3]! << 24));
    c =
      t[1792 + (lo & 0xff)]! ^
      t[1536 + ((lo >>> 8) & 0xff)]! ^
      t[1280 + ((lo >>> 16) & 0xff)]! ^
      t[1024 + (lo >>> 24)]! ^
      t[768 + buf[i + 4]!]! ^
      t[512 + buf[i + 5]!]! ^
      t[256 + buf[i + 6]!]! ^
      t[buf[i + 7]!]!;
  }
  for (; i < end; i++) c = t[(c ^ buf[i]!) & 0xff]! ^ (c >>> 8);
  return ~c >>> 0;
}
