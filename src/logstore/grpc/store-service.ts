// The store API (store.proto) served over a local Store: what proxies call, in store mode and in single mode.
import os from 'node:os';
import * as grpc from '@grpc/grpc-js';
import type { Logger } from 'pino';
import { BadRequest, ErrorCode, LogstoreError, Overloaded } from '../errors.js';
import { hitData } from '../api/operations.js';
import type { MappingSpec } from '../mapping.js';
import type { FieldsPipe } from '../query/ast.js';
import { MAX_QUERY_DEPTH, QueryBudget } from '../query/limits.js';
import { parseQuery } from '../query/parser.js';
import { planQuery } from '../query/plan.js';
import type { ShardQuery } from '../search/execute.js';
import { HitList } from '../search/packed-hits.js';
import { encodeHits } from '../search/packed-wire.js';
import type { Store } from '../store.js';
import type { BatchMeta } from '../ingest/bulk.js';
import type { BulkBudget } from '../ingest/bulk-budget.js';
import type { IngestResult } from '../storage/shard.js';
import { type PbDoc, aggFromPb, partialToPb } from './convert.js';
import { grpcError } from './grpc-status.js';
import {
  DAMAGED_TRAILER,
  type FetchRequest,
  type SearchRequest,
  type StoreOps,
  storeSession,
} from './store-session.js';
import { failStream } from './stream-status.js';

interface BulkRequest {
  docs: Buffer;
  offs: number[];
  offs_le: Buffer;
  now: number;
  assign_ids: boolean;
  id_shard: number;
  id_counter: number;
  client_ids: string[];
  has_client_id: Buffer;
  create: Buffer;
}
interface BulkResponse {
  ids: Buffer;
  errors: { index: number; type: string; reason: string; status: number }[];
  kept: number[];
}

/** Resolves a unary call from a promise: the value, or the error as a gRPC status. */
function unary<Req, Res>(log: Logger, fn: (req: Req) => Promise<Res>): grpc.handleUnaryCall<Req, Res> {
  return (call, cb) => {
    fn(call.request).then(
      (res) => cb(null, res),
      (err: unknown) => {
        const st = grpcError(err);
        if (st.code === grpc.status.INTERNAL) log.error({ err, method: call.getPath() }, 'store call failed');
        cb(st);
      },
    );
  };
}

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

/** Search, Fetch and Status over the local store: what the unary calls and a Session's requests run. */
export function storeOps(store: Store, mapping: MappingSpec, inflight: { bulks: number }): StoreOps {
  return {
    async search(req) {
      // A proxy prints an Elasticsearch query it accepted as seq-ql, where one bool level may take up to three
      // levels (parentheses around and / or, a not): room for that, and still a limit.
      const parsed = parseQuery(req.query, new QueryBudget(4 * MAX_QUERY_DEPTH));
      const q: ShardQuery = {
        plan: planQuery(parsed, mapping),
        from: req.from,
        to: req.to,
        limit: req.limit,
        order: req.order === 'ASC' ? 'asc' : 'desc',
        aggs: req.aggs.map(aggFromPb),
        histInterval: req.hist_interval,
        pipes: parsed.pipes,
        withTotal: req.with_total,
        // The proxy's deadline; the store's own search.timeout applies too (Store takes the sooner).
        ...(req.timeout_ms ? { deadline: Date.now() + req.timeout_ms } : {}),
      };
      const r = await store.query(q);
      const docs: PbDoc[] = [];
      // A proxy that asks for packed hits gets one byte string; an older one a message per document.
      if (!req.packed_hits) for (let i = 0; i < r.hits.length; i++) docs.push(r.hits.doc(i));
      return {
        total: r.total,
        docs,
        hits: req.packed_hits ? r.hits : Buffer.alloc(0),
        aggs: r.aggs.map(partialToPb),
        hist: [...r.hist].map(([ts, count]) => ({ ts, count })),
        fractions_read: r.fractionsRead,
        timed_out: r.timedOut === true,
        damaged_fractions: r.damaged ?? [],
      };
    },
    async fetch(req) {
      const pipes: FieldsPipe[] = req.has_fields
        ? [{ kind: 'fields', except: req.fields_except, names: req.fields }]
        : [];
      const { hits, damaged } = await store.fetch(req.ids, pipes);
      return {
        docs: hits.map((h) => ({ id: h.id, data: Buffer.from(hitData(h)), time: h.time })),
        damaged_fractions: damaged ?? [],
      };
    },
    async status() {
      return { shards: await store.status(), inflight_bulks: inflight.bulks };
    },
  };
}

/** Batches remembered per store so that a proxy's retry of one (same ids) is not stored twice: at most this many,
 * and at most RECENT_BYTES of their answers (24 bytes of id a document: ~1.4 M documents, several seconds of a
 * proxy's retries at full speed). */
const RECENT_BATCHES = 4096;
export const RECENT_BYTES = 32 * 1024 * 1024;

/** ForgetRequest.batches: a proxy's batch named by what its BulkRequest carried. */
export interface BatchKey {
  id_shard: number;
  id_counter: number;
  offs_count: number;
  now: number;
  docs_bytes: number;
}

/** The key a batch is remembered by: the same for a BulkRequest and for the BatchKey a proxy names it with. */
function batchKey(k: BatchKey): string {
  return `${k.id_shard}/${k.id_counter}/${k.offs_count}/${k.now}/${k.docs_bytes}`;
}

/** Keys of batches forgotten before they arrived (a proxy gave up on them): refused if they do, the last 4 096. */
class RefusedBatches {
  private readonly keys = new Set<string>();

  add(key: string): void {
    this.keys.add(key);
    if (this.keys.size > RECENT_BATCHES) this.keys.delete(this.keys.values().next().value!);
  }

  has(key: string): boolean {
    return this.keys.has(key);
  }
}

/** The answers a store remembers, oldest first, within RECENT_BATCHES and RECENT_BYTES. */
class RecentBatches {
  private readonly entries = new Map<string, { answer: Promise<BulkResponse>; bytes: number }>();
  private bytes = 0;

  get(key: string): Promise<BulkResponse> | undefined {
    return this.entries.get(key)?.answer;
  }

  add(key: string, answer: Promise<BulkResponse>): void {
    const entry = { answer, bytes: 0 };
    this.entries.set(key, entry);
    answer.then(
      (r) => {
        if (this.entries.get(key) !== entry) return;
        entry.bytes = r.ids.length;
        this.bytes += entry.bytes;
        this.trim();
      },
      () => {
        if (this.entries.get(key) === entry) this.delete(key);
      },
    );
    this.trim();
  }

  private delete(key: string): void {
    const e = this.entries.get(key);
    if (!e) return;
    this.entries.delete(key);
    this.bytes -= e.bytes;
  }

  private trim(): void {
    while (this.entries.size > RECENT_BATCHES || this.bytes > RECENT_BYTES)
      this.delete(this.entries.keys().next().value!);
  }
}

/**
 * `budget`: limits.bulk_memory, shared with the HTTP API in single mode. A batch that does not fit is refused with
 * RESOURCE_EXHAUSTED before anything of it is stored (the proxy answers its items 429, which shippers retry).
 */
export function storeHandlers(
  store: Store,
  mapping: MappingSpec,
  log: Logger,
  inflight: { bulks: number },
  budget: BulkBudget,
): grpc.UntypedServiceImplementation {
  const recent = new RecentBatches();
  const refused = new RefusedBatches();
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
  const ops = storeOps(store, mapping, inflight);
  return {
    Bulk: unary(log, (req: BulkRequest) => {
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
    }),

    // The unary answer's hits are encoded here; a Session's reply encoder writes them into the message itself.
    Search: unary(log, async (req: SearchRequest) => {
      const r = await ops.search(req);
      return r.hits instanceof HitList ? { ...r, hits: encodeHits(r.hits) } : r;
    }),

    Fetch: (call: grpc.ServerWritableStream<FetchRequest, PbDoc>) => {
      ops.fetch(call.request).then(
        ({ docs, damaged_fractions }) => {
          for (const d of docs) call.write(d);
          const trailer = new grpc.Metadata();
          if (damaged_fractions.length) trailer.set(DAMAGED_TRAILER, damaged_fractions.join(','));
          call.end(trailer);
        },
        (err: unknown) => failStream(call, grpcError(err)),
      );
    },

    Status: unary(log, ops.status),

    Session: storeSession(ops, log),

    Forget: unary(log, async (req: { ids: Buffer; batches: BatchKey[] }) => {
      const ids = forgetIds(req.ids);
      for (const b of req.batches ?? []) {
        const key = batchKey(b);
        const answer = recent.get(key);
        if (!answer) {
          refused.add(key);
          continue;
        }
        // Taken (perhaps still being stored): its ids once it is stored; a batch that failed stored nothing.
        const r = await answer.catch(() => null);
        if (r) ids.push(...forgetIds(r.ids));
      }
      return { forgotten: await store.forget(ids) };
    }),
  };
}

/** The ids of a ForgetRequest: 24 ASCII bytes each, 24 spaces skipped. */
function forgetIds(bytes: Buffer): string[] {
  if (bytes.length % 24 !== 0) throw new BadRequest(`ids must be 24 bytes each; got ${bytes.length} bytes`);
  const out: string[] = [];
  for (let at = 0; at < bytes.length; at += 24) {
    if (bytes[at] === 0x20) continue;
    const id = bytes.toString('latin1', at, at + 24);
    if (!/^[0-9a-f]{24}$/.test(id))
      throw new BadRequest(`not a document id (24 lowercase hex digits): ${JSON.stringify(id)}`);
    out.push(id);
  }
  return out;
}
