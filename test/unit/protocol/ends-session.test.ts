// endsSession: an ErrorResponse of severity FATAL or PANIC (read from V, which is never translated, else S) ends the
// session; the relays tell by it whether PostgreSQL told the client why its connection closes.
import { describe, expect, it } from 'vitest';
import { endsSession } from '../../../src/protocol/reader.js';
import { writeErrorResponse } from '../../../src/protocol/writer.js';
import { wireMessage } from '../../helpers/wire.js';

const at = (m: Buffer, before: Buffer = Buffer.alloc(0)) =>
  endsSession(Buffer.concat([before, m]), before.length, m.readUInt32BE(1));
const fields = (...pairs: [string, string][]) =>
  wireMessage('E', Buffer.concat([...pairs.map(([k, v]) => Buffer.from(`${k}${v}\0`)), Buffer.from([0])]));

describe('endsSession', () => {
  it('FATAL and PANIC end the session; ERROR does not', () => {
    expect(
      at(
        writeErrorResponse({
          severity: 'FATAL',
          code: '57P01',
          message: 'terminating connection due to administrator command',
        }),
      ),
    ).toBe(true);
    expect(at(writeErrorResponse({ severity: 'PANIC', code: 'XX000', message: 'x' }))).toBe(true);
    expect(at(writeErrorResponse({ severity: 'ERROR', code: '42601', message: 'syntax error' }))).toBe(false);
  });

  it('reads V before a translated S, and S when there is no V (before PostgreSQL 9.6)', () => {
    expect(at(fields(['S', 'SCHWERWIEGEND'], ['V', 'FATAL'], ['C', '57P01'], ['M', 'x']))).toBe(true);
    expect(at(fields(['S', 'FATAL'], ['V', 'ERROR'], ['C', '42601'], ['M', 'x']))).toBe(false);
    expect(at(fields(['S', 'FATAL'], ['C', '57P01'], ['M', 'x']))).toBe(true);
    expect(at(fields(['C', '57P01'], ['M', 'x']))).toBe(false);
  });

  it('reads the message where it starts in a larger buffer', () => {
    const before = writeErrorResponse({ severity: 'FATAL', code: '57P01', message: 'x' });
    expect(at(writeErrorResponse({ severity: 'ERROR', code: '42601', message: 'y' }), before)).toBe(false);
  });
});
