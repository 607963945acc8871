// MD5 password authentication (PostgreSQL's "md5" method), both as server and as client.
import { createHash, timingSafeEqual } from 'node:crypto';

function md5hex(data: Buffer | string): string {
  return createHash('md5').update(data).digest('hex');
}

/** The 32-hex inner hash md5(password + username), from a plaintext password or an "md5..." secret. */
export function md5Inner(secret: string, username: string): string {
  return /^md5[0-9a-f]{32}$/.test(secret) ? secret.slice(3) : md5hex(secret + username);
}

/** What a client sends in its PasswordMessage for an MD5 challenge. */
export function md5Response(inner: string, salt: Buffer): string {
  return 'md5' + md5hex(Buffer.concat([Buffer.from(inner, 'utf8'), salt]));
}

/** Checks a client's MD5 answer in constant time. */
export function verifyMd5(inner: string, salt: Buffer, answer: string): boolean {
  const expected = Buffer.from(md5Response(inner, salt));
  const got = Buffer.from(answer);
  return got.length === expected.length && timingSafeEqual(got, expected);
}

/** True for a stored md5 secret ("md5" + 32 hex digits); anything else is a plaintext password. */
export function isMd5Secret(s: string): boolean {
  return /^md5[0-9a-f]{32}$/.test(s);
}
