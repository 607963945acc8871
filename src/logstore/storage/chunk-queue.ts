// The documents of one ingest chunk, queued for the shard's write-ahead file and active fraction (shard.ts).
import { WAL_HEADER } from './wal.js';

/** Documents parsed, written and indexed at a time within a batch. */
export const INGEST_CHUNK = 256;

const EMPTY = Buffer.alloc(0);

/**
 * The documents of one chunk waiting for the write-ahead file and the active fraction, in typed arrays: no object,
 * view or boxed number per document (those were most of a shard thread's young garbage, and with its small young
 * generation they were copied by scavenges before their flush).
 */
export class ChunkQueue {
  count = 0;
  /** Bytes of the write-ahead records queued (header and document). */
  walBytes = 0;
  readonly time = new Float64Array(INGEST_CHUNK);
  readonly counter = new Float64Array(INGEST_CHUNK);
  /** Where the document's bytes are: buffer, offset in it, length. */
  readonly buf: Buffer[] = [];
  readonly start = new Int32Array(INGEST_CHUNK);
  readonly len = new Int32Array(INGEST_CHUNK);
  /** The parsed document, or null when it is number `scan[i]` of the batch the native indexer scanned. */
  readonly doc: (Record<string, unknown> | null)[] = [];
  readonly scan = new Int32Array(INGEST_CHUNK);

  push(
    time: number,
    counter: number,
    buf: Buffer,
    start: number,
    len: number,
    doc: Record<string, unknown> | null,
    scan: number,
  ): void {
    const k = this.count++;
    this.time[k] = time;
    this.counter[k] = counter;
    this.buf[k] = buf;
    this.start[k] = start;
    this.len[k] = len;
    this.doc[k] = doc;
    this.scan[k] = scan;
    this.walBytes += WAL_HEADER + len;
  }

  /** Drops the queued documents (and the references to their buffers and parsed objects). */
  clear(): void {
    this.buf.fill(EMPTY, 0, this.count);
    this.doc.fill(null, 0, this.count);
    this.count = 0;
    this.walBytes = 0;
  }
}
