// A bulk request end to end: stream (gunzip) -> parser -> batches to shards -> Elasticsearch-shaped response.
import type { Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import type { IngestResult } from '../storage/shard.js';
import { type Batch, BulkParser, type BulkItems } from './bulk-parser.js';

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

export interface BulkOutcome {
  items: BulkItems;
  errors: boolean;
  took: number;
}

function applyResult(items: BulkItems, batch: Batch, res: IngestResult): void {
  const failed = new Map(res.errors.map(([i, type, reason]) => [i, { type, reason }]));
  batch.items.forEach((item, i) => {
    const f = failed.get(i);
    if (f) items.errors.set(item, { status: 400, ...f });
    else items.ids[item] = res.ids.slice(i * 24, i * 24 + 24);
  });
}

/** Reads the whole body in a streaming way; resolves once every stored document is durable. */
export async function runBulk(body: Readable, target: BulkTarget, opts: BulkOptions): Promise<BulkOutcome> {
  const started = Date.now();
  const outstanding = new Set<Promise<void>>();
  const parser = new BulkParser({
    maxDocSize: opts.maxDocSize,
    defaultIndex: opts.defaultIndex,
    batchBytes: opts.batchBytes ?? 1024 * 1024,
    onBatch(batch) {
      const itemsRef = parser.items;
      const p: Promise<void> = target.ingest(batch.buf, batch.offs).then(
        (res) => applyResult(itemsRef, batch, res),
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
  return { items: parser.items, errors: parser.items.errors.size > 0, took: Date.now() - started };
}

/**
 * The Elasticsearch bulk response, built as text so a million items cost no object graph. Items carry what
 * shippers read (status, error, _id, result); `_shards` is left out, as `filter_path` would.
 */
export function bulkResponseJson(out: BulkOutcome): string {
  const parts: string[] = [`{"took":${out.took},"errors":${out.errors},"items":[`];
  const { ops, indexes, ids, errors } = out.items;
  for (let i = 0; i < ops.length; i++) {
    const sep = i ? ',' : '';
    const e = errors.get(i);
    const idx = JSON.stringify(indexes[i]);
    if (e) parts.push(`${sep}{"${ops[i]}":{"_index":${idx},"_id":null,"status":${e.status},"error":${JSON.stringify({ type: e.type, reason: e.reason })}}}`);
    else parts.push(`${sep}{"${ops[i]}":{"_index":${idx},"_id":"${ids[i]}","_version":1,"result":"created","status":201}}`);
  }
  parts.push(']}');
  return parts.join('');
}
