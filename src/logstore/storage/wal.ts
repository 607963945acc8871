// Write-ahead file of an active fraction: records appended and fsynced before a bulk is acknowledged.
// File: an 8-byte magic with the format version, then records: u32 length of the rest, f64 time, f64 id
// counter (the id is time + shard + counter), document bytes. A torn tail is cut on replay.
import { closeSync, fdatasyncSync, fstatSync, ftruncateSync, openSync, readSync, writeSync } from 'node:fs';
const HEADER = 4 + 8 + 8;
/** Bytes of a record before its document. */
export const WAL_HEADER = HEADER;

/** First bytes of every write-ahead file: name and format version, so another format is never misread. */
export const WAL_MAGIC = Buffer.from('TPWAL\0\0\x02', 'latin1');

export class WalFormatError extends Error {
  constructor(readonly file: string) {
    super(`${file}: not a tidepool write-ahead file of format 2 (bad header); move it away to start, its documents are not replayed`);
    this.name = 'WalFormatError';
  }
}

export interface WalRecord {
  time: number;
  counter: number;
  doc: Uint8Array;
}

/** Encodes records into one buffer, so a batch is one write and one fsync. */
export function encodeWalRecords(records: WalRecord[]): Buffer {
  let size = 0;
  for (const r of records) size += HEADER + r.doc.length;
  const out = Buffer.allocUnsafe(size);
  let pos = 0;
  for (const r of records) {
    out.writeUInt32LE(16 + r.doc.length, pos);
    out.writeDoubleLE(r.time, pos + 4);
    out.writeDoubleLE(r.counter, pos + 12);
    out.set(r.doc, pos + HEADER);
    pos += HEADER + r.doc.length;
  }
  return out;
}

/**
 * Encodes one record (`len` document bytes at `start` of `doc`) into `out` at `pos`, as encodeWalRecords does, and
 * returns the position after it; `out` must have room for WAL_HEADER + len bytes.
 */
export function encodeWalInto(out: Buffer, pos: number, time: number, counter: number, doc: Uint8Array, start: number, len: number): number {
  out.writeUInt32LE(16 + len, pos);
  out.writeDoubleLE(time, pos + 4);
  out.writeDoubleLE(counter, pos + 12);
  pos += HEADER;
  if (len > 64) out.set(new Uint8Array(doc.buffer, doc.byteOffset + start, len), pos);
  else for (let k = 0; k < len; k++) out[pos + k] = doc[start + k]!;
  return pos + len;
}

export class Wal {
  private readonly fd: number;
  private size: number;

  constructor(readonly file: string) {
    this.fd = openSync(file, 'a+');
    this.size = fstatSync(this.fd).size;
    if (this.size < WAL_MAGIC.length) {
      // New, or a crash before the header was whole: no record can follow a partial header.
      ftruncateSync(this.fd, 0);
      this.size = 0;
      this.append(WAL_MAGIC);
    } else {
      const head = Buffer.alloc(WAL_MAGIC.length);
      readSync(this.fd, head, 0, head.length, 0);
      if (!head.equals(WAL_MAGIC)) {
        closeSync(this.fd);
        throw new WalFormatError(file);
      }
    }
  }

  /** Appends and fsyncs; returns only when the bytes are durable. */
  append(bytes: Uint8Array): void {
    this.write(bytes);
    this.sync();
  }

  /** Appends without fsync: the bytes are durable after the next sync(). */
  write(bytes: Uint8Array): void {
    let off = 0;
    while (off < bytes.length) off += writeSync(this.fd, bytes, off, bytes.length - off);
    this.size += bytes.length;
  }

  sync(): void {
    fdatasyncSync(this.fd);
  }

  get bytes(): number {
    return this.size;
  }

  /** Reads every whole record; cuts a torn tail left by a crash in the middle of a write. */
  replay(onRecord: (r: WalRecord, buf: Buffer, docOffset: number) => void): number {
    const buf = Buffer.allocUnsafe(this.size);
    let got = 0;
    while (got < this.size) {
      const n = readSync(this.fd, buf, got, this.size - got, got);
      if (n === 0) break;
      got += n;
    }
    let pos = WAL_MAGIC.length;
    let count = 0;
    while (pos + HEADER <= got) {
      const len = buf.readUInt32LE(pos);
      if (len < 16 || pos + 4 + len > got) break;
      const time = buf.readDoubleLE(pos + 4);
      const counter = buf.readDoubleLE(pos + 12);
      const doc = buf.subarray(pos + HEADER, pos + 4 + len);
      onRecord({ time, counter, doc }, buf, pos + HEADER);
      pos += 4 + len;
      count++;
    }
    if (pos < this.size) {
      ftruncateSync(this.fd, pos);
      fdatasyncSync(this.fd);
      this.size = pos;
    }
    return count;
  }

  close(): void {
    closeSync(this.fd);
  }
}
