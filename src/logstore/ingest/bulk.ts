// A bulk request end to end: stream (gunzip) -> parser -> batches to shards -> Elasticsearch-shaped response.
import type { Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import type { IngestResult } from '../storage/shard.js';
import { BulkParser, type BulkItems } from './bulk-parser.js';

export interface BulkTarget {
  ingest(buf: Uint8Array, offs: Int32Array): Promise<IngestResult>;
}

export interface BulkOptions {
  maxDocSize: number;
  defaultIndex: string;
  gzip: boolean;
  /** Batches of one bulk in flight at once before the body stops being read. */
  maxOutstanding: number;
  batchBytes?: number;
}

export class BulkBodyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BulkBodyError';
  }
}

/** The items of one batch and, once the shard stored them, their ids (24 ASCII bytes each). */
export interface IdRun {
  items: number[];
  ids: Uint8Array | null;
}

export interface BulkOutcome {
  items: BulkItems;
  /** One run per batch, in item order. */
  runs: IdRun[];
  errors: boolean;
  took: number;
}

function applyResult(items: BulkItems, run: IdRun, res: IngestResult): void {
  for (const [i, type, reason] of res.errors) items.errors.set(run.items[i]!, { status: 400, type, reason });
  run.ids = res.ids;
}

/** Reads the whole body in a streaming way; resolves once every stored document is durable. */
export async function runBulk(body: Readable, target: BulkTarget, opts: BulkOptions): Promise<BulkOutcome> {
  const started = Date.now();
  const outstanding = new Set<Promise<void>>();
  const runs: IdRun[] = [];
  const parser = new BulkParser({
    maxDocSize: opts.maxDocSize,
    defaultIndex: opts.defaultIndex,
    batchBytes: opts.batchBytes ?? 1024 * 1024,
    onBatch(batch) {
      const itemsRef = parser.items;
      const run: IdRun = { items: batch.items, ids: null };
      runs.push(run);
      const p: Promise<void> = target.ingest(batch.buf, batch.offs).then(
        (res) => applyResult(itemsRef, run, res),
        (err: Error) => {
          for (const item of batch.items) itemsRef.errors.set(item, { status: 500, type: 'storage_exception', reason: `the shard failed to store the batch: ${err.message}` });
        },
      ).finally(() => outstanding.delete(p));
      outstanding.add(p);
    },
  });
  const stream: Readable = opts.gzip ? body.pipe(createGunzip()) : body;
  if (opts.gzip) body.once('error', (err) => stream.destroy(err));
  try {
    for await (const chunk of stream) {
      parser.push(chunk as Buffer);
      while (outstanding.size >= opts.maxOutstanding) await Promise.race(outstanding);
    }
    parser.end();
  } catch (err) {
    await Promise.allSettled(outstanding);
    if ((err as NodeJS.ErrnoException).code?.startsWith('Z_')) throw new BulkBodyError(`the gzip body does not decompress: ${(err as Error).message}`);
    throw err;
  }
  while (outstanding.size) await Promise.race(outstanding);
  return { items: parser.items, runs, errors: parser.items.errors.size > 0, took: Date.now() - started };
}

const CREATED_TAIL = Buffer.from('","_version":1,"result":"created","status":201}}');

/**
 * The Elasticsearch bulk response, built as bytes: one template per (action, index) with each id copied in,
 * so a million items cost no strings and no object graph. Items carry what shippers read (status, error,
 * _id, result); `_shards` is left out, as `filter_path` would.
 */
export function bulkResponse(out: BulkOutcome): Buffer {
  const { ops, indexes, errors } = out.items;
  const n = ops.length;
  const heads = new Map<string, Buffer>();
  let lastOp = '';
  let lastIndex = '';
  let lastHead: Buffer = Buffer.alloc(0);
  const headOf = (i: number): Buffer => {
    if (ops[i] === lastOp && indexes[i] === lastIndex) return lastHead;
    const key = `${ops[i]}\0${indexes[i]}`;
    let h = heads.get(key);
    if (!h) heads.set(key, (h = Buffer.from(`{"${ops[i]}":{"_index":${JSON.stringify(indexes[i])},"_id":"`)));
    lastOp = ops[i]!;
    lastIndex = indexes[i]!;
    lastHead = h;
    return h;
  };
  const errText = new Map<number, Buffer>();
  for (const [i, e] of errors) {
    errText.set(i, Buffer.from(`{"${ops[i]}":{"_index":${JSON.stringify(indexes[i])},"_id":null,"status":${e.status},"error":${JSON.stringify({ type: e.type, reason: e.reason })}}}`));
  }
  const open = Buffer.from(`{"took":${out.took},"errors":${out.errors},"items":[`);
  let size = open.length + 2 + Math.max(0, n - 1);
  for (let i = 0; i < n; i++) size += errText.get(i)?.length ?? headOf(i).length + 24 + CREATED_TAIL.length;
  const buf = Buffer.allocUnsafe(size);
  let pos = open.copy(buf, 0);
  let r = 0;
  let j = 0;
  for (let i = 0; i < n; i++) {
    if (i) buf[pos++] = 0x2c;
    const err = errText.get(i);
    if (err) {
      pos += err.copy(buf, pos);
      continue;
    }
    while (r < out.runs.length && (j >= out.runs[r]!.items.length || out.runs[r]!.items[j]! < i)) {
      if (j >= out.runs[r]!.items.length) { r++; j = 0; } else j++;
    }
    const run = out.runs[r]!;
    const ids = run.ids!;
    pos += headOf(i).copy(buf, pos);
    const at = 24 * j;
    for (let k = 0; k < 24; k++) buf[pos + k] = ids[at + k]!;
    pos += 24;
    pos += CREATED_TAIL.copy(buf, pos);
  }
  buf[pos++] = 0x5d;
  buf[pos++] = 0x7d;
  return buf;
}
