// A bulk request end to end: stream (gunzip) -> parser -> batches to shards -> Elasticsearch-shaped response.
import type { Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import type { IngestResult } from '../storage/shard.js';
import { BulkParser, type BulkItems, type ItemError } from './bulk-parser.js';
import type { BulkOutcome } from './bulk-response.js';
import type { BulkBudget } from './bulk-budget.js';
import type { ScratchPool } from '../search/scratch.js';
import { isOverload } from '../errors.js';

export type { BulkOutcome } from './bulk-response.js';

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
  /** Where batch buffers come from (absent: each its own); ingest() gives each batch's buffer back to it. */
  readonly batchPool?: ScratchPool;
}

export interface BulkOptions {
  maxDocSize: number;
  defaultIndex: string;
  gzip: boolean;
  /** Batches of one bulk in flight at once before the body stops being read. */
  maxOutstanding: number;
  batchBytes?: number;
  /** Memory shared by the bulks in flight (limits.bulk_memory); absent: no limit (a single-document write). */
  budget?: BulkBudget;
}

export class BulkBodyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BulkBodyError';
  }
}

/**
 * A bulk with more items than limits.bulk_memory can hold the state of until they are answered (each item,
 * even one answered 429, keeps its action, index and client id until then): the request is refused as a
 * whole (413, as Elasticsearch refuses a body past http.max_content_length) and the rest of it is not read.
 */
export class BulkTooLargeError extends Error {
  constructor(
    readonly items: number,
    limit: number,
  ) {
    super(
      `the bulk has more items (${items} read so far) than limits.bulk_memory (${limit} bytes) can hold the answers of while other bulks are in flight; send smaller bulks`,
    );
    this.name = 'BulkTooLargeError';
  }
}

/** Charges the budget for item state grown since the last call; past its hard limit, the bulk must be cut. */
function itemCharger(
  budget: BulkBudget | undefined,
  items: BulkItems,
): { charge(): BulkTooLargeError | null; readonly charged: number } {
  let charged = 0;
  return {
    charge() {
      if (!budget) return null;
      const now = items.stateBytes;
      if (now <= charged) return null;
      const ok = budget.charge(now - charged);
      charged = now;
      return ok ? null : new BulkTooLargeError(items.count, budget.limit);
    },
    get charged() {
      return charged;
    },
  };
}

/** One item of a bulk outcome: its status, its id (client or generated; null when none) and result or error. */
export function itemOutcome(
  out: BulkOutcome,
  i: number,
): { status: number; id: string | null; result: 'created' | 'noop' | null; error: ItemError | null } {
  const error = out.items.error(i) ?? null;
  let id = out.items.id(i);
  if (error) return { status: error.status, id, result: null, error };
  if (id === null) {
    id = out.items.generated(i);
  }
  const kept = out.items.kept.has(i);
  return { status: kept ? 200 : 201, id, result: kept ? 'noop' : 'created', error: null };
}

/** Takes a shard's answer for a batch into the items: errors, kept ones, and the ids of the stored ones. */
function applyResult(items: BulkItems, batchItems: readonly number[], res: IngestResult): void {
  for (const [i, type, reason, status] of res.errors)
    items.errors.set(batchItems[i]!, { status: status ?? 400, type, reason });
  if (res.kept) for (const i of res.kept) items.kept.add(batchItems[i]!);
  // A failed or kept document's id is 24 spaces; a stored one's is hex digits.
  const anyClientId = items.clientIds.size > 0;
  const ids = res.ids;
  for (let j = 0; j < batchItems.length; j++) {
    if (ids[24 * j] === 0x20) continue;
    const item = batchItems[j]!;
    if (!anyClientId || items.id(item) === null) items.setGenerated(item, ids, 24 * j);
  }
}

/** Reads the whole body in a streaming way; resolves once every stored document is durable. */
export async function runBulk(body: Readable, target: BulkTarget, opts: BulkOptions): Promise<BulkOutcome> {
  const started = Date.now();
  const outstanding = new Set<Promise<void>>();
  const budget = opts.budget;
  const overMemory: ItemError | null = budget
    ? {
        status: 429,
        type: 'es_rejected_execution_exception',
        reason: `rejected execution: bulks in flight hold limits.bulk_memory (${budget.limit} bytes) of batches and item state; retry later`,
      }
    : null;
  const parser = new BulkParser({
    maxDocSize: opts.maxDocSize,
    defaultIndex: opts.defaultIndex,
    batchBytes: opts.batchBytes ?? budget?.batchSize(1024 * 1024) ?? 1024 * 1024,
    ...(target.route ? { route: (id: string) => target.route!(id) } : {}),
    ...(target.batchPool ? { pool: target.batchPool } : {}),
    onBatch(batch) {
      const itemsRef = parser.items;
      const bytes = batch.buf.byteLength;
      if (budget && !budget.take(bytes)) {
        for (const item of batch.items) itemsRef.reject(item, overMemory!);
        target.batchPool?.give(batch.buf);
        return;
      }
      const meta: BatchMeta | undefined =
        batch.shard >= 0 || batch.ids ? { shard: batch.shard, ids: batch.ids, create: batch.create } : undefined;
      const p: Promise<void> = target
        .ingest(batch.buf, batch.offs, meta)
        .then(
          (res) => applyResult(itemsRef, batch.items, res),
          (err: Error) => {
            // Stores over their own limits.bulk_memory (a proxy's cluster): retry later, as for this process's own.
            const e: ItemError = isOverload(err)
              ? { status: 429, type: 'es_rejected_execution_exception', reason: err.message }
              : {
                  status: 500,
                  type: 'storage_exception',
                  reason: `the shard failed to store the batch: ${err.message}`,
                };
            for (const item of batch.items) itemsRef.errors.set(item, e);
          },
        )
        .finally(() => {
          budget?.giveBatch(bytes);
          outstanding.delete(p);
        });
      outstanding.add(p);
    },
  });
  const items = parser.items;
  const state = itemCharger(budget, items);
  const stream: Readable = opts.gzip ? body.pipe(createGunzip()) : body;
  if (opts.gzip) body.once('error', (err) => stream.destroy(err));
  // Past the hard limit the rest of the body is read and dropped (so the client gets the 413 rather than a reset).
  let cut: BulkTooLargeError | null = null;
  try {
    for await (const chunk of stream) {
      if (cut) continue;
      parser.push(chunk as Buffer);
      cut = state.charge();
      // Cut only when the items are what fills the budget: this bulk's own batches are stored first.
      if (cut && outstanding.size) {
        await Promise.allSettled(outstanding);
        if (budget!.used <= budget!.hardLimit) cut = null;
      }
      while (outstanding.size >= opts.maxOutstanding) await Promise.race(outstanding);
      // Over the budget, more of the body (more item state) waits until this bulk's batches in flight are stored.
      while (budget && budget.used > budget.limit && outstanding.size) await Promise.race(outstanding);
    }
    if (cut) throw cut;
    parser.end();
    cut = state.charge();
    if (cut) throw cut;
  } catch (err) {
    await Promise.allSettled(outstanding);
    budget?.give(state.charged);
    if ((err as NodeJS.ErrnoException).code?.startsWith('Z_'))
      throw new BulkBodyError(`the gzip body does not decompress: ${(err as Error).message}`);
    throw err;
  }
  while (outstanding.size) await Promise.race(outstanding);
  // The shards' answers added generated-id pages and errors: charged too, then held until the answer is written.
  budget?.charge(Math.max(0, items.stateBytes - state.charged));
  return { items, errors: items.failed > 0, took: Date.now() - started, held: budget ? items.stateBytes : 0 };
}

/**
 * Reads a bulk that will not be stored (the store is overloaded) and answers each item that would have been
 * tried with 429 es_rejected_execution_exception, as an Elasticsearch node whose write queue is full: clients
 * retry exactly those items (the Elasticsearch bulk helper, Logstash, Beats, Vector, Fluent Bit).
 */
export async function rejectBulk(
  body: Readable,
  opts: Pick<BulkOptions, 'maxDocSize' | 'defaultIndex' | 'gzip' | 'budget'>,
  reason: string,
): Promise<BulkOutcome> {
  const started = Date.now();
  const parser = new BulkParser({
    maxDocSize: opts.maxDocSize,
    defaultIndex: opts.defaultIndex,
    batchBytes: 0,
    discard: true,
    onBatch: () => undefined,
  });
  const state = itemCharger(opts.budget, parser.items);
  const stream: Readable = opts.gzip ? body.pipe(createGunzip()) : body;
  if (opts.gzip) body.once('error', (err) => stream.destroy(err));
  let cut: BulkTooLargeError | null = null;
  try {
    for await (const chunk of stream) {
      if (cut) continue;
      parser.push(chunk as Buffer);
      cut = state.charge();
    }
    if (cut) throw cut;
    parser.end();
    cut = state.charge();
    if (cut) throw cut;
  } catch (err) {
    opts.budget?.give(state.charged);
    if ((err as NodeJS.ErrnoException).code?.startsWith('Z_'))
      throw new BulkBodyError(`the gzip body does not decompress: ${(err as Error).message}`);
    throw err;
  }
  const { items } = parser;
  items.rejectAll({ status: 429, type: 'es_rejected_execution_exception', reason });
  return { items, errors: items.count > 0, took: Date.now() - started, held: state.charged };
}
