// Basic credentials: parsing and comparison of both parts.
import { describe, expect, it } from 'vitest';
import { basicMatches, parseBasic } from '../../../../src/pooler/web/auth/basic.js';

const header = (s: string) => `Basic ${Buffer.from(s).toString('base64')}`;

describe('Basic', () => {
  it('parses user:password, keeping colons in the password', () => {
    expect(parseBasic(header('admin:se:cret'))).toEqual({ username: 'admin', password: 'se:cret' });
    expect(parseBasic('Bearer abc')).toBeNull();
    expect(parseBasic(header('nocolon'))).toBeNull();
    expect(parseBasic(undefined)).toBeNull();
  });
  it('needs both parts right, and never matches an empty configured password', () => {
    expect(basicMatches({ username: 'admin', password: 's3cret' }, 'admin', 's3cret')).toBe(true);
    expect(basicMatches({ username: 'admin', password: 's3creT' }, 'admin', 's3cret')).toBe(false);
    expect(basicMatches({ username: 'admim', password: 's3cret' }, 'admin', 's3cret')).toBe(false);
    expect(basicMatches({ username: 'admin', password: '' }, 'admin', '')).toBe(false);
  });
  it('compares fixed-length digests with timingSafeEqual (no early exit on length or prefix)', async () => {
    const src = await import('node:fs').then((fs) =>
      fs.readFileSync(new URL('../../../../src/pooler/web/auth/basic.ts', import.meta.url), 'utf8'),
    );
    expect(src).toMatch(/timingSafeEqual\(digest\(given\.username\), digest\(username\)\)/);
    expect(src).toMatch(/timingSafeEqual\(digest\(given\.password\), digest\(password\)\)/);
  });
});
