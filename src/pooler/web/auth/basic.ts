// HTTP Basic credentials: parsing and a comparison whose time does not depend on where the inputs differ.
import { createHash, timingSafeEqual } from 'node:crypto';

export interface BasicCredentials {
  username: string;
  password: string;
}

/** Parses `Basic <base64(user:password)>`; null when the header is not Basic or is malformed. */
export function parseBasic(authorization: string | undefined): BasicCredentials | null {
  if (!authorization) return null;
  const m = /^Basic\s+([A-Za-z0-9+/=._~-]+)\s*$/i.exec(authorization);
  if (!m) return null;
  const text = Buffer.from(m[1]!, 'base64').toString('utf8');
  const colon = text.indexOf(':');
  if (colon < 0) return null;
  return { username: text.slice(0, colon), password: text.slice(colon + 1) };
}

function digest(s: string): Buffer {
  return createHash('sha256').update(s, 'utf8').digest();
}

/**
 * True when both parts match. Both parts are always compared, over fixed-length digests, so the time
 * depends neither on which part differs nor on the length of the common prefix.
 */
export function basicMatches(given: BasicCredentials, username: string, password: string): boolean {
  const userOk = timingSafeEqual(digest(given.username), digest(username));
  const passOk = timingSafeEqual(digest(given.password), digest(password));
  return userOk && passOk && password !== '';
}
