// The pooler as a SCRAM client of PostgreSQL: the keys a plaintext password derives under a role's salt are
// remembered, and the exchange they make still proves the password (and only it) to a SCRAM server.
import { createHmac, pbkdf2Sync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  ScramClient,
  ScramError,
  ScramServer,
  keysFromPassword,
  secretFromPassword,
  type ScramSecret,
} from '../../../src/pooler/auth/scram.js';

/** One whole exchange of a ScramClient proving `password` to a server holding `secret`; throws when it fails. */
function exchange(password: string, secret: ScramSecret): void {
  const client = new ScramClient({ password });
  const server = new ScramServer(secret);
  const serverFirst = server.start(client.first());
  client.verify(server.finish(client.final(serverFirst)));
}

describe('keysFromPassword', () => {
  it('derives ClientKey and ServerKey as RFC 5802 does, and gives the same keys again without deriving them twice', () => {
    const salt = Buffer.from('W22ZaJ0SNY7soEsUEjb6gQ==', 'base64');
    const salted = pbkdf2Sync('pencil', salt, 4096, 32, 'sha256');
    const keys = keysFromPassword('pencil', salt, 4096);
    expect(keys.clientKey).toEqual(createHmac('sha256', salted).update('Client Key').digest());
    expect(keys.serverKey).toEqual(createHmac('sha256', salted).update('Server Key').digest());
    expect(keysFromPassword('pencil', Buffer.from(salt), 4096)).toBe(keys);
  });

  it('a new salt, iteration count or password derives new keys', () => {
    const salt = Buffer.alloc(16, 1);
    const keys = keysFromPassword('pencil', salt, 4096);
    for (const other of [
      keysFromPassword('pencil', Buffer.alloc(16, 2), 4096),
      keysFromPassword('pencil', salt, 4097),
      keysFromPassword('pencil2', salt, 4096),
    ]) {
      expect(other).not.toBe(keys);
      expect(other.clientKey).not.toEqual(keys.clientKey);
    }
  });
});

describe('ScramClient with a plaintext password', () => {
  it('logs in again and again with the remembered keys, and after the role gets a new password (new salt) too', () => {
    const first = secretFromPassword('s3cret', Buffer.alloc(16, 7));
    for (let i = 0; i < 3; i++) exchange('s3cret', first);
    // ALTER ROLE ... PASSWORD: a new salt; the pooler's configuration changed to match.
    exchange('changed', secretFromPassword('changed', Buffer.alloc(16, 8)));
  });

  it('a password PostgreSQL does not hold is refused by the server, remembered keys or not', () => {
    const secret = secretFromPassword('right', Buffer.alloc(16, 9));
    exchange('right', secret);
    expect(() => exchange('wrong', secret)).toThrow(ScramError);
    expect(() => exchange('wrong', secret)).toThrow(ScramError);
  });
});
