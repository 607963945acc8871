// Write-ahead file of an active fraction: records appended and fsynced before a bulk is acknowledged.
// File: an 8-byte magic with the format version, then records: u32 length of the rest, u32 CRC-32C (of the length
// and of everything after the checksum), f64 time, f64 id counter (the id is time + shard + counter), document
// bytes. Replay stops at the first record that is cut short or fails its checksum; what follows is set aside.
// Format 2 (no checksum) is still read: it is rewritten as format 3 when opened.
import {
  closeSync,
  fdatasyncSync,
  fstatSync,
  ftruncateSync,
  mkdirSync,
  openSync,
  readSync,
  renameSync,
  statfsSync,
  writeSync,
} from 'node:fs';
import path from 'node:path';
import { crc32c } from './crc32c.js';
import { fsyncDir, writeFileDurable } from './fraction-files.js';

const HEADER = 4 + 4 + 8 + 8;
/** Bytes of a record before its document. */
export const WAL_HEADER = HEADER;
const V2_HEADER = 4 + 8 + 8;

/** First bytes of every write-ahead file: name and format version, so another format is never misread. */
export const WAL_MAGIC = Buffer.from('TPWAL\0\0\x03', 'latin1');
/** Format 2: the same records without their checksum (tidepool before 3). */
export const WAL_MAGIC_V2 = Buffer.from('TPWAL\0\0\x02', 'latin1');

/** Where damaged fractions and cut write-ahead tails are set aside, beside a shard's fractions. */
export const QUARANTINE_DIR = 'quarantine';

/** Free bytes below which an SQLite I/O error is taken for a full disk (SQLite does not say why a write failed). */
const SQLITE_FULL_ROOM = 1 << 20;

/**
 * Whether `err` says the disk (or the process's file size limit, or a quota) has no room for a write: ENOSPC,
 * EFBIG, EDQUOT, SQLite's SQLITE_FULL, or an SQLite I/O error (SQLITE_IOERR_*) while the filesystem of `dir` has
 * less than 1 MiB free for this process.
 */
export function isDiskFull(err: unknown, dir?: string): boolean {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  if (code === 'ENOSPC' || code === 'EFBIG' || code === 'EDQUOT' || code === 'SQLITE_FULL') return true;
  if (dir === undefined || typeof code !== 'string' || !code.startsWith('SQLITE_IOERR')) return false;
  try {
    const st = statfsSync(dir);
    return st.bavail * st.bsize < SQLITE_FULL_ROOM;
  } catch {
    return false;
  }
}

export class WalFormatError extends Error {
  constructor(readonly file: string) {
    super(
      `${file}: not a tidepool write-ahead file of format 2 or 3 (bad header); move it away to start, its documents are not replayed`,
    );
    this.name = 'WalFormatError';
  }
}

export interface WalRecord {
  time: number;
  counter: number;
  doc: Uint8Array;
}

/** Bytes replay could not use: from `offset` to the end of the file. */
export interface WalLoss {
  offset: number;
  bytes: number;
  /** 'cut': the last record runs past the end of the file; 'checksum': a record's bytes changed; 'length': a length no record can have. */
  reason: 'cut' | 'checksum' | 'length';
  /** Records lost, at least: the bad one and the whole, valid records found after it (none can be counted past
   *  the end of a file that was cut short). */
  records: number;
  /** The file the dropped bytes were copied to, or null when copying failed. */
  savedTo: string | null;
}

export interface WalReplay {
  records: number;
  loss: WalLoss | null;
}

/** The record's checksum: its length field, then everything after the checksum field. */
function recordCrc(buf: Uint8Array, pos: number, end: number): number {
  return crc32c(buf, pos + 8, end, crc32c(buf, pos, pos + 4));
}

/** Encodes records into one buffer, so a batch is one write and one fsync. */
export function encodeWalRecords(records: WalRecord[]): Buffer {
  let size = 0;
  for (const r of records) size += HEADER + r.doc.length;
  const out = Buffer.allocUnsafe(size);
  let pos = 0;
  for (const r of records) pos = encodeWalInto(out, pos, r.time, r.counter, r.doc, 0, r.doc.length);
  return out;
}

/**
 * Encodes one record (`len` document bytes at `start` of `doc`) into `out` at `pos`, as encodeWalRecords does, and
 * returns the position after it; `out` must have room for WAL_HEADER + len bytes.
 */
export function encodeWalInto(
  out: Buffer,
  pos: number,
  time: number,
  counter: number,
  doc: Uint8Array,
  start: number,
  len: number,
): number {
  out.writeUInt32LE(HEADER - 4 + len, pos);
  out.writeDoubleLE(time, pos + 8);
  out.writeDoubleLE(counter, pos + 16);
  const at = pos + HEADER;
  if (len > 64) out.set(new Uint8Array(doc.buffer, doc.byteOffset + start, len), at);
  else for (let k = 0; k < len; k++) out[at + k] = doc[start + k]!;
  out.writeUInt32LE(recordCrc(out, pos, at + len), pos + 4);
  return at + len;
}

/** Why the record at `pos` of `buf[0, end)` is not whole and valid, or null when it is. */
function badRecord(buf: Buffer, pos: number, end: number): WalLoss['reason'] | null {
  if (pos + HEADER > end) return 'cut';
  const len = buf.readUInt32LE(pos);
  if (len < HEADER - 4) return 'length';
  if (pos + 4 + len > end) return 'cut';
  return recordCrc(buf, pos, pos + 4 + len) === buf.readUInt32LE(pos + 4) ? null : 'checksum';
}

/** Whole, valid records after a bad one (at `pos`), stepping over it by its length when that is plausible. */
function recordsAfter(buf: Buffer, pos: number, end: number): number {
  let n = 0;
  const len = pos + 4 <= end ? buf.readUInt32LE(pos) : 0;
  if (len < HEADER - 4 || pos + 4 + len > end) return 0;
  for (let p = pos + 4 + len; badRecord(buf, p, end) === null; p += 4 + buf.readUInt32LE(p)) n++;
  return n;
}

function readAll(fd: number, size: number): Buffer {
  const buf = Buffer.allocUnsafe(size);
  let got = 0;
  while (got < size) {
    const n = readSync(fd, buf, got, size - got, got);
    if (n === 0) break;
    got += n;
  }
  return buf.subarray(0, got);
}

export class Wal {
  private fd: number;
  private size: number;
  /** Bytes a format-2 file had past its last whole record, found when it was rewritten (replay reports them). */
  private convertLoss: WalLoss | null = null;

  constructor(readonly file: string) {
    this.fd = openSync(file, 'a+');
    this.size = fstatSync(this.fd).size;
    if (this.size < WAL_MAGIC.length) {
      // New, or a crash before the header was whole: no record can follow a partial header.
      ftruncateSync(this.fd, 0);
      this.size = 0;
      this.append(WAL_MAGIC);
      return;
    }
    const head = Buffer.alloc(WAL_MAGIC.length);
    readSync(this.fd, head, 0, head.length, 0);
    if (head.equals(WAL_MAGIC_V2)) this.convertFromV2();
    else if (!head.equals(WAL_MAGIC)) {
      closeSync(this.fd);
      throw new WalFormatError(file);
    }
  }

  /** Rewrites a format-2 file as format 3 (through a temporary file and a rename), so appends never mix formats. */
  private convertFromV2(): void {
    const buf = readAll(this.fd, this.size);
    const recs: WalRecord[] = [];
    let pos = WAL_MAGIC_V2.length;
    while (pos + V2_HEADER <= buf.length) {
      const len = buf.readUInt32LE(pos);
      if (len < 16 || pos + 4 + len > buf.length) break;
      recs.push({
        time: buf.readDoubleLE(pos + 4),
        counter: buf.readDoubleLE(pos + 12),
        doc: buf.subarray(pos + V2_HEADER, pos + 4 + len),
      });
      pos += 4 + len;
    }
    if (pos < buf.length)
      this.convertLoss = {
        offset: pos,
        bytes: buf.length - pos,
        reason: 'cut',
        records: 1,
        savedTo: this.saveTail(buf, pos),
      };
    const tmp = `${this.file}.convert.tmp`;
    writeFileDurable(tmp, Buffer.concat([WAL_MAGIC, encodeWalRecords(recs)]));
    closeSync(this.fd);
    renameSync(tmp, this.file);
    fsyncDir(path.dirname(this.file));
    this.fd = openSync(this.file, 'a+');
    this.size = fstatSync(this.fd).size;
  }

  /** Copies the bytes replay drops into the shard's quarantine directory; the path, or null when that failed. */
  private saveTail(buf: Buffer, from: number): string | null {
    try {
      const dir = path.join(path.dirname(this.file), QUARANTINE_DIR);
      mkdirSync(dir, { recursive: true });
      const out = path.join(dir, `${path.basename(this.file)}.${from}.${Date.now()}.tail`);
      writeFileDurable(out, buf.subarray(from));
      return out;
    } catch {
      // The copy is for the operator's inspection; a full disk must not stop the shard from opening.
      return null;
    }
  }

  /** Appends and fsyncs; returns only when the bytes are durable. */
  append(bytes: Uint8Array): void {
    this.write(bytes);
    this.sync();
  }

  /**
   * Appends without fsync: the bytes are durable after the next sync(). A write that fails (a full disk) is cut off
   * again, so no part of a record is left for the next append to follow: replay would stop there and drop every
   * record after it.
   */
  write(bytes: Uint8Array): void {
    let off = 0;
    try {
      while (off < bytes.length) off += writeSync(this.fd, bytes, off, bytes.length - off);
    } catch (err) {
      if (off > 0) ftruncateSync(this.fd, this.size);
      throw err;
    }
    this.size += bytes.length;
  }

  sync(): void {
    fdatasyncSync(this.fd);
  }

  /**
   * Cuts the file back to `size` bytes and makes that durable: after an fsync that failed, the bytes written since
   * may or may not be on disk, and a replay must not find them (their documents were answered not stored). The
   * first fsync after the cut can report the failed write-back of the very pages cut off (the kernel reports a
   * write-back error once, to the next fsync), so the cut is made and synced up to three times; it throws only
   * when every try failed.
   */
  truncate(size: number): void {
    let last: unknown;
    for (let t = 0; t < 3; t++) {
      try {
        ftruncateSync(this.fd, size);
        fdatasyncSync(this.fd);
        this.size = size;
        return;
      } catch (err) {
        last = err;
      }
    }
    throw last;
  }

  get bytes(): number {
    return this.size;
  }

  /**
   * Reads every whole, valid record up to the first one that is cut short or fails its checksum; the bytes from
   * there on are copied aside (quarantine/) and cut, so appends continue after the last good record.
   */
  replay(onRecord: (r: WalRecord, buf: Buffer, docOffset: number) => void): WalReplay {
    const buf = readAll(this.fd, this.size);
    const got = buf.length;
    let pos = WAL_MAGIC.length;
    let records = 0;
    let reason: WalLoss['reason'] | null = null;
    while (pos < got && (reason = badRecord(buf, pos, got)) === null) {
      const len = buf.readUInt32LE(pos);
      const doc = buf.subarray(pos + HEADER, pos + 4 + len);
      onRecord({ time: buf.readDoubleLE(pos + 8), counter: buf.readDoubleLE(pos + 16), doc }, buf, pos + HEADER);
      pos += 4 + len;
      records++;
    }
    let loss = this.convertLoss;
    this.convertLoss = null;
    if (pos < this.size) {
      loss = {
        offset: pos,
        bytes: this.size - pos,
        reason: reason ?? 'cut',
        records: 1 + recordsAfter(buf, pos, got),
        savedTo: this.saveTail(buf, pos),
      };
      ftruncateSync(this.fd, pos);
      fdatasyncSync(this.fd);
      this.size = pos;
    }
    return { records, loss };
  }

  close(): void {
    closeSync(this.fd);
  }
}
