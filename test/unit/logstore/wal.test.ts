// The write-ahead file: records survive reopening, a torn tail is cut, another format is refused.
import { appendFileSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Wal, WalFormatError, encodeWalRecords, type WalRecord } from '../../../src/logstore/storage/wal.js';

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

  it('refuses a file of another format instead of misreading it', () => {
    const f = path.join(dir, 'old.wal');
    writeFileSync(f, Buffer.from('0123456789abcdef0123456789'));
    expect(() => new Wal(f)).toThrow(WalFormatError);
    expect(statSync(f).size).toBe(26);
  });
});
