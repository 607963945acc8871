// The write-ahead file: records survive reopening, a torn tail or a changed record ends replay (reported and set
// aside), format 2 files are rewritten as format 3, another format is refused.
import {
  appendFileSync,
  existsSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  QUARANTINE_DIR,
  WAL_HEADER,
  WAL_MAGIC,
  WAL_MAGIC_V2,
  Wal,
  WalFormatError,
  type WalReplay,
  encodeWalInto,
  encodeWalRecords,
  type WalRecord,
} from '../../../src/logstore/storage/wal.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'tidepool-wal-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function replayAll(file: string): { time: number; counter: number; doc: string }[] {
  return replayWith(file).docs;
}

function replayWith(file: string): { docs: { time: number; counter: number; doc: string }[]; result: WalReplay } {
  const wal = new Wal(file);
  const docs: { time: number; counter: number; doc: string }[] = [];
  const result = wal.replay((r) => docs.push({ time: r.time, counter: r.counter, doc: Buffer.from(r.doc).toString() }));
  wal.close();
  return { docs, result };
}

const recs: WalRecord[] = [1, 2, 3, 4].map((i) => ({
  time: 1_700_000_000_000 + i,
  counter: 40 + i,
  doc: Buffer.from(`{"n":${i},"msg":"record ${i}"}`),
}));
const want = recs.map((r) => ({ time: r.time, counter: r.counter, doc: Buffer.from(r.doc).toString() }));

describe('Wal', () => {
  it('replays what was appended, and cuts a torn tail at every possible length', () => {
    const recs: WalRecord[] = [1, 2, 3].map((i) => ({
      time: 1_700_000_000_000 + i,
      counter: 40 + i,
      doc: Buffer.from(`{"n":${i}}`),
    }));
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

  it('stops at a record whose bytes changed, wherever the change is, and reports what it dropped', () => {
    const bytes = encodeWalRecords(recs);
    const second = WAL_HEADER + recs[0]!.doc.length;
    const third = second + WAL_HEADER + recs[1]!.doc.length;
    // Every byte of the second record: its length, checksum, time, counter and document.
    for (let i = second; i < third; i++) {
      const f = path.join(dir, `flip-${i}.wal`);
      new Wal(f).close();
      const bad = Buffer.from(bytes);
      bad[i]! ^= 0x10;
      appendFileSync(f, bad);
      const { docs, result } = replayWith(f);
      expect(docs).toEqual(want.slice(0, 1));
      expect(result.records).toBe(1);
      expect(result.loss).toMatchObject({ offset: WAL_MAGIC.length + second, bytes: bytes.length - second });
      expect(['checksum', 'length', 'cut']).toContain(result.loss!.reason);
      // A changed time, counter or document leaves the length whole: the records after it are counted.
      if (i >= second + 8) expect(result.loss).toMatchObject({ reason: 'checksum', records: 3 });
      // The dropped bytes are kept for inspection, the file cut after the last good record.
      expect(readFileSync(result.loss!.savedTo!)).toEqual(bad.subarray(second));
      expect(statSync(f).size).toBe(WAL_MAGIC.length + second);
      expect(replayWith(f).result.loss).toBeNull();
    }
  });

  it('reports a file cut in half: the whole records before the cut are replayed', () => {
    const f = path.join(dir, 'half.wal');
    const w = new Wal(f);
    for (const r of recs) w.append(encodeWalRecords([r]));
    w.close();
    const size = statSync(f).size;
    const half = Math.floor(size / 2);
    writeFileSync(f, readFileSync(f).subarray(0, half));
    const { docs, result } = replayWith(f);
    const whole = want.filter((_, i) => WAL_MAGIC.length + encodeWalRecords(recs.slice(0, i + 1)).length <= half);
    expect(docs).toEqual(whole);
    expect(result.loss).toMatchObject({
      reason: 'cut',
      bytes: half - WAL_MAGIC.length - encodeWalRecords(recs.slice(0, whole.length)).length,
      records: 1,
    });
    expect(readdirSync(path.join(dir, QUARANTINE_DIR)).some((e) => e.startsWith('half.wal.'))).toBe(true);
  });

  it('rewrites a format 2 file (no checksums) as format 3 with the same records, then appends to it', () => {
    const f = path.join(dir, 'v2.wal');
    const v2 = recs.map((r) => {
      const b = Buffer.alloc(20 + r.doc.length);
      b.writeUInt32LE(16 + r.doc.length, 0);
      b.writeDoubleLE(r.time, 4);
      b.writeDoubleLE(r.counter, 12);
      b.set(r.doc, 20);
      return b;
    });
    // The last record cut short, as a crash leaves it.
    writeFileSync(f, Buffer.concat([WAL_MAGIC_V2, ...v2.slice(0, 3), v2[3]!.subarray(0, 10)]));
    const { docs, result } = replayWith(f);
    expect(docs).toEqual(want.slice(0, 3));
    expect(result.loss).toMatchObject({ reason: 'cut', bytes: 10 });
    expect(readFileSync(f).subarray(0, 8)).toEqual(WAL_MAGIC);
    expect(existsSync(`${f}.convert.tmp`)).toBe(false);
    const w = new Wal(f);
    w.append(encodeWalRecords([recs[3]!]));
    w.close();
    expect(replayWith(f)).toEqual({ docs: want, result: { records: 4, loss: null } });
  });

  it('refuses a file of another format instead of misreading it', () => {
    const f = path.join(dir, 'old.wal');
    writeFileSync(f, Buffer.from('0123456789abcdef0123456789'));
    expect(() => new Wal(f)).toThrow(WalFormatError);
    expect(statSync(f).size).toBe(26);
  });
});
