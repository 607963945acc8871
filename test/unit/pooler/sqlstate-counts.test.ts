// Errors by SQLSTATE in a pool's stats block: the encoding the native relay shares, the slots, and `other` past them.
import { describe, expect, it } from 'vitest';
import {
  countSqlState,
  decodeSqlState,
  encodeSqlState,
  PoolStats,
  SQLSTATE_SLOTS,
  sqlStateCounts,
} from '../../../src/pooler/stats.js';
import { sqlStateOf } from '../../../src/protocol/reader.js';
import { writeErrorResponse } from '../../../src/protocol/writer.js';

describe('errors by SQLSTATE', () => {
  it('encodes five of 0-9, A-Z as base 36 plus 1, and nothing else', () => {
    for (const code of ['00000', '22012', '42P01', '08006', 'ZZZZZ', 'XX000'])
      expect(decodeSqlState(encodeSqlState(code))).toBe(code);
    expect(encodeSqlState('00000')).toBe(1);
    for (const bad of [null, '', '2201', '220123', '42p01', '42_01']) expect(encodeSqlState(bad)).toBe(0);
  });

  it('counts per code, most first, ties by code; past the slots and unreadable codes go to other', () => {
    const { block } = new PoolStats();
    countSqlState(block, '42P01');
    countSqlState(block, '22012');
    countSqlState(block, '22012');
    countSqlState(block, null);
    expect(sqlStateCounts(block)).toEqual([
      { sqlstate: '22012', count: 2 },
      { sqlstate: '42P01', count: 1 },
      { sqlstate: 'other', count: 1 },
    ]);
    for (let i = 0; i < SQLSTATE_SLOTS + 3; i++) countSqlState(block, `P${String(i).padStart(4, '0')}`);
    const counts = sqlStateCounts(block);
    expect(counts).toHaveLength(SQLSTATE_SLOTS + 1);
    expect(counts.find((c) => c.sqlstate === 'other')).toEqual({ sqlstate: 'other', count: 1 + 3 + 2 });
  });

  it('reads field C of an ErrorResponse, null when it has none or is cut before it', () => {
    const m = writeErrorResponse({ severity: 'ERROR', code: '22012', message: 'division by zero' });
    expect(sqlStateOf(m, 0, m.readUInt32BE(1))).toBe('22012');
    const before = Buffer.from('xyz');
    expect(sqlStateOf(Buffer.concat([before, m]), 3, m.readUInt32BE(1))).toBe('22012');
    expect(sqlStateOf(m.subarray(0, 12), 0, m.readUInt32BE(1))).toBeNull();
  });
});
