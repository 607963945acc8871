// Small random values (cancel keys, md5 salts) cut from a pre-filled pool: one getrandom per 4 KB
// instead of one per login, which showed in profiles of reconnect-heavy load.
import { randomFillSync } from 'node:crypto';

const POOL_SIZE = 4096;
const pool = Buffer.allocUnsafe(POOL_SIZE);
let offset = POOL_SIZE;

/** `n` (at most 256) cryptographically random bytes, copied out of the pool. */
export function randomBytesPooled(n: number): Buffer {
  if (n > 256) throw new RangeError('randomBytesPooled is for small values');
  if (offset + n > POOL_SIZE) {
    randomFillSync(pool);
    offset = 0;
  }
  const out = Buffer.from(pool.subarray(offset, offset + n));
  offset += n;
  return out;
}
