// takeover-clients.ts: a moved client's or server's frame reads back as it was written (the wire format docs/pooler.md
// describes).
import { describe, expect, it } from 'vitest';
import { decodeFrame, decodeMoved, encodeMoved, type MovedClient } from '../../../src/pooler/takeover-clients.js';
import { encodeServer, type MovedServer } from '../../../src/pooler/takeover-servers.js';

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

describe('moved server frames', () => {
  const m: MovedServer = {
    database: 'app',
    user: 'md5user',
    target: '127.0.0.1:5432/app',
    serverUser: 'md5user',
    backendPid: 4242,
    backendSecret: Buffer.from([1, 2, 3, 4, 0xff]),
    params: [
      ['TimeZone', 'UTC'],
      ['server_version', '17.2'],
    ],
    applicationName: 'tidepool',
    createdAt: 1_700_000_000_000,
    lastUsed: 1_700_000_005_000,
    values: [['timezone', 'Asia/Tokyo']],
    unknown: ['search_path'],
    statements: [
      {
        name: 'tp_0123456789abcdef',
        query: Buffer.from([0x73, 0xff, 0x00, 0x31]),
        types: Buffer.from([0, 1, 0, 0, 0, 23]),
        settings: 'public\u00001',
        stale: true,
      },
    ],
  };

  it('round-trips every field, and is told from a client frame by its header', () => {
    const frame = encodeServer(12, m);
    expect(frame.readUInt32BE(0)).toBe(frame.length - 4);
    const back = decodeFrame(frame.subarray(4));
    expect(back).toEqual({ id: 12, server: m });
    const client = decodeFrame(
      encodeMoved(3, {
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
      }).subarray(4),
    );
    expect(client.server).toBeUndefined();
    expect(client.client?.database).toBe('d');
  });

  it('a linked client carries its server, its pins and the bytes owed to it, and reads back as a client', () => {
    const linked: MovedClient = {
      database: 'app',
      user: 'md5user',
      applicationName: 'listener',
      protocol32: false,
      connectedAt: 1_700_000_000_000,
      cancelPid: 4242,
      cancelSecret: Buffer.from([9, 8, 7, 6]),
      params: [['timezone', 'UTC']],
      startup: [],
      statements: [],
      pending: Buffer.alloc(0),
      linked: {
        server: m,
        pinned: 1,
        session: false,
        appliedStartup: true,
        // A NotificationResponse PostgreSQL sent that the client was not sent yet.
        toClient: Buffer.from('A\0\0\0\x0f\0\0\x10\x92ch\0x\0'),
      },
    };
    const back = decodeFrame(encodeMoved(5, linked).subarray(4));
    expect(back.server).toBeUndefined();
    expect(back).toEqual({ id: 5, client: linked });
  });

  it('refuses a server header without its backend key', () => {
    const frame = encodeServer(1, m);
    const json = JSON.parse(frame.toString('utf8', 8)) as Record<string, unknown>;
    delete json.backend_pid;
    const body = Buffer.from(JSON.stringify(json));
    const head = Buffer.alloc(4);
    head.writeUInt32BE(body.length, 0);
    expect(() => decodeFrame(Buffer.concat([head, body]))).toThrow(/malformed server header/);
  });
});
