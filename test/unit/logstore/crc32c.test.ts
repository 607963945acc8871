// CRC-32C: the published check values, continuation over split input, and a bitwise reference on random bytes.
import { describe, expect, it } from 'vitest';
import { crc32c } from '../../../src/logstore/storage/crc32c.js';
import { mulberry32 } from '../../helpers/prng.js';

/** One bit at a time, straight from the definition (reflected polynomial 0x82F63B78). */
function reference(buf: Uint8Array): number {
  let c = 0xffffffff;
  for (const b of buf) {
    c ^= b;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1;
  }
  return (c ^ 0xffffffff) >>> 0;
}

describe('crc32c', () => {
  it('gives the check values of RFC 3720 (iSCSI) and of the CRC catalogue', () => {
    expect(crc32c(Buffer.from('123456789'))).toBe(0xe3069283);
    expect(crc32c(Buffer.alloc(32, 0))).toBe(0x8a9136aa);
    expect(crc32c(Buffer.alloc(32, 0xff))).toBe(0x62a8ab43);
    expect(crc32c(Buffer.from(Array.from({ length: 32 }, (_, i) => i)))).toBe(0x46dd794e);
    expect(crc32c(Buffer.alloc(0))).toBe(0);
  });

  it('matches the bitwise definition at every length and alignment, and continues across any split', () => {
    const r = mulberry32(7);
    const buf = Buffer.from(Array.from({ length: 300 }, () => (r() * 256) | 0));
    for (let start = 0; start < 9; start++) {
      for (let end = start; end <= buf.length; end += 1 + (end % 13)) {
        const want = reference(buf.subarray(start, end));
        expect(crc32c(buf, start, end)).toBe(want);
        const mid = (start + end) >>> 1;
        expect(crc32c(buf, mid, end, crc32c(buf, start, mid))).toBe(want);
      }
    }
  });

  it('changes when any one bit of the input changes', () => {
    const buf = Buffer.from('{"message":"a log line","level":"info"}');
    const base = crc32c(buf);
    for (let i = 0; i < buf.length * 8; i++) {
      buf[i >> 3]! ^= 1 << (i & 7);
      expect(crc32c(buf)).not.toBe(base);
      buf[i >> 3]! ^= 1 << (i & 7);
    }
  });
});
