// Bulk (store.proto): stores a proxy's batch, within limits.bulk_memory; a proxy's retry of a batch (same ids) is
// answered again from the batches remembered, and a batch the proxy forgot before it arrived is refused.
import os from 'node:os';
import type * as grpc from '@grpc/grpc-js';
import type { Logger } from 'pino';
import { BadRequest, ErrorCode, LogstoreError, Overloaded } from '../../errors.js';
import type { BatchMeta } from '../../ingest/bulk.js';
import type { BulkBudget } from '../../ingest/bulk-budget.js';
import type { IngestResult } from '../../storage/shard.js';
import type { Store } from '../../store.js';
import type { BulkRequest, BulkResponse } from './messages.js';
import { type RecentBatches, type RefusedBatches, batchKey } from './recent-batches.js';
import { unary } from './unary.js';

/** The (start, length) pairs of a batch: offs_le when set (little-endian int32s), else the repeated offs. */
function offsOf(req: BulkRequest): Int32Array {
  if (req.offs_le.length === 0) return Int32Array.from(req.offs);
  if (req.offs_le.length % 8 !== 0) throw new BadRequest('offs_le must hold (start, length) pairs of 4-byte integers');
  const out = new Int32Array(req.offs_le.length >>> 2);
  if (os.endianness() === 'LE') new Uint8Array(out.buffer).set(req.offs_le);
  else for (let i = 0; i < out.length; i++) out[i] = req.offs_le.readInt32LE(4 * i);
  return out;
}

/**
 * A batch's bytes for a shard thread, which is given their ArrayBuffer. grpc-js assembles every received message
 * in a buffer of its own (Buffer.concat of its frames) and the decoder's `docs` is a view into it, so a message
 * past Buffer.poolSize (never from the shared pool) is handed over as it is, with no copy; its few other bytes
 * (the message's other fields) stay with the batch. A smaller one may share a pool buffer: it is copied.
 */
function shardBytes(docs: Buffer): Uint8Array {
  return docs.buffer.byteLength > Buffer.poolSize
    ? new Uint8Array(docs.buffer, docs.byteOffset, docs.length)
    : new Uint8Array(docs);
}

/**
 * Stores a proxy's batch. Documents with client ids go to the local shard of their id's hash (whose thread checks
 * for ids stored already), so a batch of them is split across this store's shards, each document keeping the
 * counter, and so the id, the proxy gave it; the answers are put back in the batch's order.
 */
async function ingestBatch(store: Store, req: BulkRequest, pairs: Int32Array): Promise<IngestResult> {
  const n = pairs.length >>> 1;
  const now = req.now > 0 ? req.now : Date.now();
  const assign = req.assign_ids ? { shard: req.id_shard, counter: req.id_counter } : undefined;
  const hasIds = req.has_client_id.length === n && req.has_client_id.includes(1);
  // No client ids: the whole batch goes to one shard as it came (one copy of its bytes, which the shard thread
  // is then given: the decoded buffer may share its memory with other messages).
  if (!hasIds) return store.ingest(shardBytes(req.docs), pairs, now, assign);
  const idOf = (i: number) => (req.has_client_id[i] ? (req.client_ids[i] ?? '') : null);
  const groups = new Map<number, number[]>();
  for (let i = 0; i < n; i++) {
    const g = idOf(i) !== null ? store.route(idOf(i)!) : -1;
    const list = groups.get(g);
    if (list) list.push(i);
    else groups.set(g, [i]);
  }
  const ids = Buffer.alloc(24 * n, 0x20);
  const out: IngestResult = { ids, errors: [], kept: [] };
  await Promise.all(
    [...groups].map(async ([shard, members]) => {
      // The batch is moved to a shard thread: it gets an ArrayBuffer of its own (the decoded one may be shared).
      let size = 0;
      for (const i of members) size += pairs[2 * i + 1]!;
      const buf = new Uint8Array(size);
      const offs = new Int32Array(2 * members.length);
      let at = 0;
      members.forEach((i, k) => {
        const start = pairs[2 * i]!;
        const len = pairs[2 * i + 1]!;
        buf.set(req.docs.subarray(start, start + len), at);
        offs[2 * k] = at;
        offs[2 * k + 1] = len;
        at += len;
      });
      const meta: BatchMeta = {
        shard,
        ids: members.map(idOf),
        create: Uint8Array.from(members, (i) => req.create[i] ?? 0),
      };
      const sub = assign ? { ...assign, counters: members.map((i) => assign.counter + i) } : undefined;
      const r = await store.ingest(buf, offs, now, sub, meta);
      members.forEach((i, k) => ids.set(r.ids.subarray(24 * k, 24 * k + 24), 24 * i));
      for (const [k, type, reason, status] of r.errors) out.errors.push([members[k]!, type, reason, status]);
      for (const k of r.kept ?? []) out.kept!.push(members[k]!);
    }),
  );
  out.errors.sort((a, b) => a[0] - b[0]);
  out.kept!.sort((a, b) => a - b);
  return out;
}

/**
 * The Bulk handler. `budget`: limits.bulk_memory, shared with the HTTP API in single mode. A batch that does not fit
 * is refused with RESOURCE_EXHAUSTED before anything of it is stored (the proxy answers its items 429, which shippers
 * retry).
 */
export function bulkHandler(
  store: Store,
  log: Logger,
  inflight: { bulks: number },
  budget: BulkBudget,
  recent: RecentBatches,
  refused: RefusedBatches,
): grpc.handleUnaryCall<BulkRequest, BulkResponse> {
  const bulk = async (req: BulkRequest): Promise<BulkResponse> => {
    const pairs = offsOf(req);
    const n = pairs.length >>> 1;
    if (pairs.length % 2 !== 0) throw new BadRequest('offs must hold (start, length) pairs');
    for (let i = 0; i < n; i++) {
      const start = pairs[2 * i]!;
      const len = pairs[2 * i + 1]!;
      if (start < 0 || len < 0 || start + len > req.docs.length)
        throw new BadRequest(`document ${i} lies outside the docs bytes`);
    }
    const bytes = req.docs.length;
    if (!budget.take(bytes)) {
      throw new Overloaded(
        `rejected execution: batches in flight hold limits.bulk_memory (${budget.limit} bytes) of this store; retry later`,
      );
    }
    inflight.bulks++;
    try {
      const r = await ingestBatch(store, req, pairs);
      return {
        ids: Buffer.from(r.ids.buffer, r.ids.byteOffset, r.ids.byteLength),
        errors: r.errors.map(([index, type, reason, status]) => ({ index, type, reason, status: status ?? 400 })),
        kept: r.kept ?? [],
      };
    } finally {
      inflight.bulks--;
      budget.giveBatch(bytes);
    }
  };
  return unary(log, (req: BulkRequest) => {
    if (!req.assign_ids) return bulk(req);
    // A proxy that timed out resends the same batch (same ids): it is stored once and answered again.
    const key = batchKey({
      id_shard: req.id_shard,
      id_counter: req.id_counter,
      offs_count: req.offs.length + req.offs_le.length / 4,
      now: req.now,
      docs_bytes: req.docs.length,
    });
    // The proxy gave up on this batch before it got here (its items failed, or it moved): not stored.
    if (refused.has(key))
      return Promise.reject(
        new LogstoreError(
          ErrorCode.BatchForgotten,
          'this batch was forgotten before it arrived (the proxy gave up on it); not stored',
        ),
      );
    let p = recent.get(key);
    if (!p) {
      p = bulk(req);
      // A refused or failed batch is forgotten: its retry is stored.
      recent.add(key, p);
    }
    return p;
  });
}
