// takeover-clients.ts: a moved client's frame reads back as it was written (the wire format docs/pooler.md describes).
import { describe, expect, it } from 'vitest';
import { decodeMoved, encodeMoved, type MovedClient } from '../../../src/pooler/takeover-clients.js';

describe('moved client frames', () => {
  it('round-trips every field, binary texts and pending bytes included', () => {
    const m: MovedClient = {
      database: 'app',
      user: 'md5user',
      applicationName: 'räksmörgås',
      protocol32: true,
      connectedAt: 1_700_000_000_123,
      cancelPid: 0x4000_0007,
      cancelSecret: Buffer.from([0xde, 0xad, 0xbe, 0xef]),
      params: [
        ['timezone', 'Asia/Tokyo'],
        ['search_path', '"$user", public'],
      ],
      startup: [['application_name', 'räksmörgås']],
      statements: [
        { name: 's1', query: Buffer.from([0x73, 0xff, 0x00, 0x31]), types: Buffer.from([0, 1, 0, 0, 0, 23]) },
      ],
      pending: Buffer.from('Q\0\0\0\rselect 1\0'),
    };
    const frame = encodeMoved(9, m);
    expect(frame.readUInt32BE(0)).toBe(frame.length - 4);
    const back = decodeMoved(frame.subarray(4));
    expect(back.id).toBe(9);
    expect(back.client).toEqual(m);
  });

  it('refuses a header that does not fit its frame', () => {
    const frame = encodeMoved(1, {
      database: 'd',
      user: 'u',
      applicationName: '',
      protocol32: false,
      connectedAt: 0,
      cancelPid: 1,
      cancelSecret: Buffer.alloc(4),
      params: [],
      startup: [],
      statements: [],
      pending: Buffer.alloc(0),
    });
    expect(() => decodeMoved(frame.subarray(4, 10))).toThrow(/longer than its frame/);
  });
});
