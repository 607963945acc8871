// The write-ahead file: records survive reopening, a torn tail is cut, another format is refused.
import { appendFileSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { WAL_HEADER, Wal, WalFormatError, encodeWalInto, encodeWalRecords, type WalRecord } from '../../../src/logstore/storage/wal.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'tidepool-wal-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function replayAll(file: string): { time: number; counter: number; doc: string }[] {
  const wal = new Wal(file);
  const out: { time: number; counter: number; doc: string }[] = [];
  wal.replay((r) => out.push({ time: r.time, counter: r.counter, doc: Buffer.from(r.doc).toString() }));
  wal.close();
  return out;
}

describe('Wal', () => {
  it('replays what was appended, and cuts a torn tail at every possible length', () => {
    const recs: WalRecord[] = [1, 2, 3].map((i) => ({ time: 1_700_000_000_000 + i, counter: 40 + i, doc: Buffer.from(`{"n":${i}}`) }));
    const whole = path.join(dir, 'whole.wal');
    const w = new Wal(whole);
    w.append(encodeWalRecords(recs.slice(0, 2)));
    w.append(encodeWalRecords(recs.slice(2)));
    w.close();
    const want = recs.map((r) => ({ time: r.time, counter: r.counter, doc: Buffer.from(r.doc).toString() }));
    expect(replayAll(whole)).toEqual(want);
    const bytes = encodeWalRecords(recs);
    for (let cut = 0; cut < bytes.length; cut++) {
      const f = path.join(dir, `torn-${cut}.wal`);
      new Wal(f).close();
      appendFileSync(f, bytes.subarray(0, cut));
      const got = replayAll(f);
      expect(want.slice(0, got.length)).toEqual(got);
      expect(got.length).toBeLessThan(3);
      // The cut tail is gone: appending after it gives whole records again.
      const w2 = new Wal(f);
      w2.append(encodeWalRecords([recs[2]!]));
      w2.close();
      expect(replayAll(f).at(-1)).toEqual(want[2]);
    }
  });

  it('encodeWalInto writes the bytes encodeWalRecords writes, for short and long documents inside larger buffers', () => {
    const batch = Buffer.from(`xx{"a":1}yy${JSON.stringify({ msg: 'z'.repeat(300) })}zz`);
    const short = { start: 2, len: 7 };
    const long = { start: 11, len: batch.length - 13 };
    const recs: WalRecord[] = [
      { time: 1_700_000_000_123, counter: 2 ** 41 + 5, doc: batch.subarray(short.start, short.start + short.len) },
      { time: 1_700_000_000_124.5, counter: 7, doc: batch.subarray(long.start, long.start + long.len) },
      { time: 0, counter: 0, doc: batch.subarray(0, 0) },
    ];
    const want = encodeWalRecords(recs);
    const out = Buffer.alloc(want.length + 3, 0xee);
    let pos = 3;
    pos = encodeWalInto(out, pos, recs[0]!.time, recs[0]!.counter, batch, short.start, short.len);
    pos = encodeWalInto(out, pos, recs[1]!.time, recs[1]!.counter, batch, long.start, long.len);
    pos = encodeWalInto(out, pos, 0, 0, batch, 0, 0);
    expect(pos).toBe(out.length);
    expect(out.subarray(3)).toEqual(want);
    expect(want.length).toBe(3 * WAL_HEADER + short.len + long.len);
  });

  it('refuses a file of another format instead of misreading it', () => {
    const f = path.join(dir, 'old.wal');
    writeFileSync(f, Buffer.from('0123456789abcdef0123456789'));
    expect(() => new Wal(f)).toThrow(WalFormatError);
    expect(statSync(f).size).toBe(26);
  });
});
