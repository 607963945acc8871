// File names and small helpers shared by the sealed-fraction writer and reader.
import { closeSync, fsyncSync, openSync, writeSync } from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';

/**
 * 2: checksums (CRC-32C) in meta.json: of meta.json itself (`check`), of every file read whole (`files`), of each
 * document block (the 4th number of `blocks`) and of each POSTINGS_CHUNK bytes of postings.bin. Format 1 fractions
 * (no checksums) are still read; their damage shows only as a decompression error.
 * 3: numeric columns (num-<i>.bin, see numeric-column.ts, listed in `numeric`), read by aggregations. Format 2
 * fractions have none and aggregate from their keyword columns and dictionary.
 * 4: smaller files: document blocks column-wise (doc-columns.ts), times and id tails as varints of differences (the
 * ids' time half is the time), posting-list offsets as varint lengths and counts (sealed-arrays.ts), dense posting
 * lists as runs or bitmaps (dense-postings.ts), keyword columns as byte planes, the dictionary front-coded
 * (token-dict.ts). Formats 1-3 are still read as they were written.
 * 5: a document block's value that is byte for byte its keyword column's token of the document refers to the column
 * (doc-columns.ts, block version 2): the reader takes the token from the column and the dictionary. Formats 1-4 are
 * still read as they were written.
 */
export const FRACTION_FORMAT = 5;

/** Bytes of postings.bin per checksum: a posting list read verifies the chunks it touches, once per open fraction. */
export const POSTINGS_CHUNK = 64 * 1024;

/** Length and CRC-32C of a file of a sealed fraction. */
export interface FileCheck {
  bytes: number;
  crc: number;
}

/** A sealed fraction whose files are missing, cut or changed: it is quarantined, never read again. */
export class FractionDamagedError extends Error {
  constructor(
    readonly dir: string,
    readonly file: string,
    readonly detail: string,
  ) {
    super(`sealed fraction ${path.basename(dir)} is damaged: ${file}: ${detail}`);
    this.name = 'FractionDamagedError';
  }

  get fraction(): string {
    return path.basename(this.dir);
  }
}

export interface FractionMeta {
  format: number;
  name: string;
  docCount: number;
  minTime: number;
  maxTime: number;
  rawBytes: number;
  /** [file offset, compressed length, first local id, CRC-32C of the compressed bytes (format 2)] of each document block. */
  blocks: [number, number, number, number?][];
  /** Fields of dict.bin, in order; columns lists those that carry a keyword column. */
  fields: string[];
  columns: string[];
  /** Field names documents had (the `_exists_` tokens), so opening a fraction reads no dictionary;
   *  absent from fractions sealed before it was added (their readers load the dictionary instead). */
  seen?: string[];
  /** Documents with a client `_id` (client-ids.bin exists when > 0); absent from older fractions. */
  clientIds?: number;
  /** The shard bytes its ids carry (see ActiveFraction.idShards); absent from older fractions (any byte). */
  idShards?: number[];
  /** Format 2: each file read whole (times, ids, dict, offsets, columns, client ids), and postings.bin and docs.bin. */
  files?: Record<string, FileCheck>;
  /** Format 2: CRC-32C of each POSTINGS_CHUNK bytes of postings.bin. */
  postingsChunks?: number[];
  /** Format 3: fields with a numeric column, num-<i>.bin for the i-th (absent before: none). */
  numeric?: string[];
  /** Format 2: CRC-32C of meta.json written without this field (JSON.stringify of the rest, in its order). */
  check?: number;
}

export const FILES = {
  meta: 'meta.json',
  docs: 'docs.bin',
  times: 'times.bin',
  ids: 'ids.bin',
  dict: 'dict.bin',
  offsets: 'offsets.bin',
  postings: 'postings.bin',
  clientIds: 'client-ids.bin',
  column: (i: number) => `col-${i}.bin`,
  numeric: (i: number) => `num-${i}.bin`,
};

/** Raw bytes per compressed document block. */
export const BLOCK_BYTES = 128 * 1024;

/**
 * Brotli quality of document blocks (format 4, column-wise): 4 (2 before issue 39's disk work; readers take any). On
 * the bench's http_logs documents in blocks of 128 KiB of documents, bytes a document and CPU to compress a block,
 * per document (bench/logstore-doc-encoding.ts and a loop over 23 blocks, best of 5): quality 2 16.0 bytes (0.104x of
 * the raw NDJSON) in 0.26 us, 3 15.8 in 0.33, 4 15.2 in 0.46, 5 14.2 (0.091x) in 0.75; rows as formats 1-3 wrote them
 * at quality 1, 26.4 (0.170x) in 0.32. Making the columns costs 0.5-0.6 us a document on top. Ingest of 1 M documents
 * (`--ingest-only`, alternated, 3 rounds, loaded host): 4 took 1% more CPU than 2 for 0.86 bytes a document less,
 * 5 took 10-14% more (6 rounds) for 1.9 less, over the 10% the seal may grow (bench/results/logstore-format4.md). Decompressing
 * costs the same at 2, 4 and 5. Keyword columns stay at 0 (the four
 * columns in 15 ms against 56 at 2, 1.16 MB against 1.03). Not for ids, times and the dictionary: quality 0 leaves
 * them 40-90% larger.
 */
export const DOC_QUALITY = 4;
export const COLUMN_QUALITY = 0;
/** offsets.bin: quality 1 is faster and smaller than 2 there (8 against 13 ms, 669 against 718 KB). */
export const OFFSETS_QUALITY = 1;

/**
 * Brotli quality 2 by default. Measured on a 128 MiB http_logs fraction: the large dictionary, id, time
 * and offset files compress 3-7x faster than at quality 4 at the same size or smaller (quality 4's hash
 * chains are slow on multi-megabyte inputs). Readers do not depend on the quality.
 */
export function compress(buf: Uint8Array, quality = 2): Buffer {
  return zlib.brotliCompressSync(buf, {
    params: {
      [zlib.constants.BROTLI_PARAM_QUALITY]: quality,
      [zlib.constants.BROTLI_PARAM_LGWIN]: 22,
      [zlib.constants.BROTLI_PARAM_SIZE_HINT]: buf.length,
    },
  });
}

export function decompress(buf: Uint8Array): Buffer {
  return zlib.brotliDecompressSync(buf);
}

/** Writes a whole file and fsyncs it. */
export function writeFileDurable(file: string, data: Uint8Array): void {
  const fd = openSync(file, 'w');
  try {
    let off = 0;
    while (off < data.length) off += writeSync(fd, data, off, data.length - off);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

export function fsyncDir(dir: string): void {
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

export function bytesOf(a: ArrayBufferView): Uint8Array {
  return new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
}

/** A typed array over a fresh, aligned copy of decompressed bytes. */
export function u32Of(buf: Buffer): Uint32Array {
  const copy = new Uint8Array(buf.length);
  copy.set(buf);
  return new Uint32Array(copy.buffer, 0, buf.length >>> 2);
}

export function f64Of(buf: Buffer): Float64Array {
  const copy = new Uint8Array(buf.length);
  copy.set(buf);
  return new Float64Array(copy.buffer, 0, buf.length >>> 3);
}
