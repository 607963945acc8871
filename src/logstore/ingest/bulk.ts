// A bulk request end to end: stream (gunzip) -> parser -> batches to shards -> Elasticsearch-shaped response.
import type { Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import type { IngestResult } from '../storage/shard.js';
import { BulkParser, type BulkItems, type ItemError } from './bulk-parser.js';

/** What travels with a batch besides its bytes: where it must go, and its documents' client ids. */
export interface BatchMeta {
  /** The shard the batch must be stored by, or -1 (any). */
  shard: number;
  ids: (string | null)[] | null;
  create: Uint8Array | null;
}

export interface BulkTarget {
  ingest(buf: Uint8Array, offs: Int32Array, meta?: BatchMeta): Promise<IngestResult>;
  /** The shard of a client id (absent: documents with ids are not routed). */
  route?(id: string): number;
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

/** One item of a bulk outcome: its status, its id (client or generated; null when none) and result or error. */
export function itemOutcome(out: BulkOutcome, i: number): { status: number; id: string | null; result: 'created' | 'noop' | null; error: ItemError | null } {
  const error = out.items.errors.get(i) ?? null;
  let id = out.items.ids[i] ?? null;
  if (error) return { status: error.status, id, result: null, error };
  if (id === null) {
    for (const run of out.runs) {
      const j = run.items.indexOf(i);
      if (j >= 0 && run.ids) id = Buffer.from(run.ids.buffer, run.ids.byteOffset + 24 * j, 24).toString('latin1');
    }
  }
  const kept = out.items.kept.has(i);
  return { status: kept ? 200 : 201, id, result: kept ? 'noop' : 'created', error: null };
}

function applyResult(items: BulkItems, run: IdRun, res: IngestResult): void {
  for (const [i, type, reason, status] of res.errors) items.errors.set(run.items[i]!, { status: status ?? 400, type, reason });
  if (res.kept) for (const i of res.kept) items.kept.add(run.items[i]!);
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
    ...(target.route ? { route: (id: string) => target.route!(id) } : {}),
    onBatch(batch) {
      const itemsRef = parser.items;
      const run: IdRun = { items: batch.items, ids: null };
      runs.push(run);
      const meta: BatchMeta | undefined = batch.shard >= 0 || batch.ids ? { shard: batch.shard, ids: batch.ids, create: batch.create } : undefined;
      const p: Promise<void> = target.ingest(batch.buf, batch.offs, meta).then(
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

/**
 * Reads a bulk that will not be stored (the store is overloaded) and answers each item that would have been
 * tried with 429 es_rejected_execution_exception, as an Elasticsearch node whose write queue is full: clients
 * retry exactly those items (the Elasticsearch bulk helper, Logstash, Beats, Vector, Fluent Bit).
 */
export async function rejectBulk(body: Readable, opts: Pick<BulkOptions, 'maxDocSize' | 'defaultIndex' | 'gzip'>, reason: string): Promise<BulkOutcome> {
  const started = Date.now();
  const parser = new BulkParser({ maxDocSize: opts.maxDocSize, defaultIndex: opts.defaultIndex, batchBytes: 0, discard: true, onBatch: () => undefined });
  const stream: Readable = opts.gzip ? body.pipe(createGunzip()) : body;
  if (opts.gzip) body.once('error', (err) => stream.destroy(err));
  try {
    for await (const chunk of stream) parser.push(chunk as Buffer);
    parser.end();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code?.startsWith('Z_')) throw new BulkBodyError(`the gzip body does not decompress: ${(err as Error).message}`);
    throw err;
  }
  const { items } = parser;
  for (let i = 0; i < items.ops.length; i++) {
    if (!items.errors.has(i)) items.errors.set(i, { status: 429, type: 'es_rejected_execution_exception', reason });
  }
  return { items, runs: [], errors: items.ops.length > 0, took: Date.now() - started };
}

const CREATED_TAIL = Buffer.from('","_version":1,"result":"created","status":201}}');
const KEPT_TAIL = Buffer.from('","_version":1,"result":"noop","status":200}}');
/** Whether an id goes into a JSON string as it is (no quote, backslash or control character). */
function plainId(id: string): boolean {
  for (let i = 0; i < id.length; i++) {
    const c = id.charCodeAt(i);
    if (c < 0x20 || c === 0x22 || c === 0x5c) return false;
  }
  return true;
}

/**
 * The Elasticsearch bulk response, built as bytes: one template per (action, index) with each id copied in,
 * so a million items cost no object graph. Items carry what shippers read (status, error, _id, result);
 * `_shards` is left out, as `filter_path` would. A client `_id` is answered as sent; a failed item without
 * one carries `"_id": null` (nothing was stored, so there is no id).
 */
export function bulkResponse(out: BulkOutcome): Buffer {
  const { ops, indexes, ids: clientIds, errors, kept } = out.items;
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
    errText.set(i, Buffer.from(`{"${ops[i]}":{"_index":${JSON.stringify(indexes[i])},"_id":${JSON.stringify(clientIds[i] ?? null)},"status":${e.status},"error":${JSON.stringify({ type: e.type, reason: e.reason })}}}`));
  }
  /** A client id as it goes between the quotes. */
  const idText = (id: string) => (plainId(id) ? id : JSON.stringify(id).slice(1, -1));
  // Where each stored item's generated id is: its batch (run) and its place in it.
  const runOf = new Int32Array(n).fill(-1);
  const posOf = new Int32Array(n);
  for (let r = 0; r < out.runs.length; r++) {
    const items = out.runs[r]!.items;
    for (let j = 0; j < items.length; j++) {
      runOf[items[j]!] = r;
      posOf[items[j]!] = j;
    }
  }
  const open = Buffer.from(`{"took":${out.took},"errors":${out.errors},"items":[`);
  let size = open.length + 2 + Math.max(0, n - 1);
  for (let i = 0; i < n; i++) {
    const e = errText.get(i);
    if (e) size += e.length;
    else {
      const id = clientIds[i];
      size += headOf(i).length + (id == null ? 24 : Buffer.byteLength(idText(id))) + Math.max(CREATED_TAIL.length, KEPT_TAIL.length);
    }
  }
  const buf = Buffer.allocUnsafe(size);
  let pos = open.copy(buf, 0);
  for (let i = 0; i < n; i++) {
    if (i) buf[pos++] = 0x2c;
    const err = errText.get(i);
    if (err) {
      pos += err.copy(buf, pos);
      continue;
    }
    pos += headOf(i).copy(buf, pos);
    const id = clientIds[i];
    if (id != null) {
      pos += buf.write(idText(id), pos);
      pos += (kept.has(i) ? KEPT_TAIL : CREATED_TAIL).copy(buf, pos);
      continue;
    }
    const ids = out.runs[runOf[i]!]!.ids!;
    const at = 24 * posOf[i]!;
    for (let k = 0; k < 24; k++) buf[pos + k] = ids[at + k]!;
    pos += 24;
    pos += CREATED_TAIL.copy(buf, pos);
  }
  buf[pos++] = 0x5d;
  buf[pos++] = 0x7d;
  return buf.subarray(0, pos);
}
