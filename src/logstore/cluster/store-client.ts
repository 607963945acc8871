// A proxy's client of one store (store.proto): every request carries a deadline (cluster.request_timeout) and
// the channel keeps itself alive with pings, so a dead or hung store fails its requests instead of holding them.
// Searches, fetches and status go over one Session call (session-client.ts); bulks are unary calls.
import type { ScratchPool } from '../search/scratch.js';
import os from 'node:os';
import * as grpc from '@grpc/grpc-js';
import { keepaliveOptions, services } from '../grpc/proto.js';
import { type SessionKind, SessionClient } from './session-client.js';
import type { PbAggPartial, PbAggQuery, PbDoc } from '../grpc/convert.js';
import type { ShardStatus } from '../storage/shard.js';
import { type BatchKey, DAMAGED_TRAILER, type FetchResponse } from '../grpc/store/messages.js';

export interface StoreBulkRequest {
  docs: Uint8Array;
  offs: number[] | Int32Array;
  /** offs as little-endian int32 pairs (see offsBytes); offs is then empty. */
  offs_le: Uint8Array;
  now: number;
  assign_ids: boolean;
  id_shard: number;
  id_counter: number;
  client_ids: string[];
  has_client_id: Uint8Array;
  create: Uint8Array;
}

export interface StoreBulkResponse {
  ids: Buffer;
  errors: { index: number; type: string; reason: string; status: number }[];
  kept: number[];
}

export interface StoreSearchRequest {
  query: string;
  from: number;
  to: number;
  limit: number;
  order: 'DESC' | 'ASC';
  aggs: PbAggQuery[];
  hist_interval: number;
  with_total: boolean;
  /** Ask for the hits packed (StoreSearchResponse.hits). */
  packed_hits?: boolean;
  /** How long the store may search (0: its own search.timeout alone). */
  timeout_ms?: number;
}

export interface StoreSearchResponse {
  total: number;
  docs: PbDoc[];
  aggs: PbAggPartial[];
  hist: { ts: number; count: number }[];
  fractions_read: number;
  /** Damaged fractions the store left out; absent or empty from a store that predates them. */
  damaged_fractions?: string[];
  /** The packed hits (search/packed-wire.ts); empty from a store that predates them or when not asked for. */
  hits: Uint8Array;
  /** The store's search passed its deadline: what it answers is partial. */
  timed_out?: boolean;
}

export interface StoreFetchRequest {
  ids: string[];
  fields: string[];
  fields_except: boolean;
  has_fields: boolean;
}

export interface StoreStatusResponse {
  shards: ShardStatus[];
  inflight_bulks: number;
}

/** (start, length) pairs as the little-endian bytes of BulkRequest.offs_le (the array's own bytes on such a host). */
export function offsBytes(offs: Int32Array): Uint8Array {
  if (os.endianness() === 'LE') return new Uint8Array(offs.buffer, offs.byteOffset, offs.byteLength);
  const out = Buffer.allocUnsafe(offs.byteLength);
  offs.forEach((v, i) => out.writeInt32LE(v, 4 * i));
  return out;
}

type Unary = (
  req: unknown,
  meta: grpc.Metadata,
  opts: grpc.CallOptions,
  cb: (err: grpc.ServiceError | null, res: unknown) => void,
) => void;

export class StoreClient {
  private readonly client: grpc.Client & Record<string, unknown>;
  readonly session: SessionClient;

  constructor(
    readonly addr: string,
    private readonly timeoutMs: number,
    keepalive: { time: number; timeout: number },
  ) {
    const Ctor = services().store;
    this.client = new Ctor(
      addr,
      grpc.credentials.createInsecure(),
      keepaliveOptions(keepalive.time, keepalive.timeout),
    ) as grpc.Client & Record<string, unknown>;
    this.session = new SessionClient(this.client, timeoutMs);
  }

  /** A request over the session; over the unary call `unary` when the store has no Session method. */
  private async viaSession<T>(kind: SessionKind, body: unknown, unary: () => Promise<T>): Promise<T> {
    if (!this.session.unsupported) {
      try {
        return await this.session.request<T>(kind, body);
      } catch (err) {
        if ((err as grpc.ServiceError).code !== grpc.status.UNIMPLEMENTED) throw err;
      }
    }
    return unary();
  }

  private call<T>(method: string, req: unknown): Promise<T> {
    return new Promise((resolve, reject) => {
      (this.client[method] as Unary).call(
        this.client,
        req,
        new grpc.Metadata(),
        { deadline: Date.now() + this.timeoutMs },
        (err, res) => (err ? reject(err) : resolve(res as T)),
      );
    });
  }

  /**
   * Serializes a bulk once, so that every replica is sent the same bytes. With a pool, into one of its buffers
   * (give it back once every call that sends it has ended): the library's serializer writes every field but the
   * documents, which follow as field 1 (a protobuf field may come in any order), copied once.
   */
  static encodeBulk(req: StoreBulkRequest, pool?: ScratchPool): Buffer {
    const serialize = services().store.service.Bulk!.requestSerialize as (r: Partial<StoreBulkRequest>) => Buffer;
    if (!pool) return serialize(req);
    const { docs, ...rest } = req;
    const head = serialize(rest);
    let n = docs.length;
    let lenBytes = 1;
    for (let v = n; v >= 0x80; v >>>= 7) lenBytes++;
    const out = pool.take(head.length + 1 + lenBytes + n);
    head.copy(out, 0);
    let p = head.length;
    out[p++] = (1 << 3) | 2; // field 1 (docs), length-delimited
    for (; n >= 0x80; n >>>= 7) out[p++] = (n & 0x7f) | 0x80;
    out[p++] = n;
    out.set(docs, p);
    return out;
  }

  /** Sends a bulk serialized by encodeBulk(). */
  bulk(encoded: Buffer): Promise<StoreBulkResponse> {
    const def = services().store.service.Bulk!;
    return new Promise((resolve, reject) => {
      this.client.makeUnaryRequest(
        def.path,
        (b: Buffer) => b,
        def.responseDeserialize as (b: Buffer) => StoreBulkResponse,
        encoded,
        new grpc.Metadata(),
        { deadline: Date.now() + this.timeoutMs },
        (err, res) => (err ? reject(err) : resolve(res!)),
      );
    });
  }

  /** Forget (store.proto): `ids` as in BulkResponse.ids (24 bytes an id, spaces for none), and batches by key. */
  async forget(ids: Uint8Array, batches: BatchKey[] = []): Promise<number> {
    return (await this.call<{ forgotten: number }>('Forget', { ids, batches })).forgotten;
  }

  search(req: StoreSearchRequest): Promise<StoreSearchResponse> {
    return this.viaSession('search', req, () => this.call('Search', req));
  }

  status(): Promise<StoreStatusResponse> {
    return this.viaSession('status', {}, () => this.call('Status', {}));
  }

  /** Documents by id; `damaged_fractions`: quarantined fractions that may hold an id not found (older stores: none). */
  async fetch(req: StoreFetchRequest): Promise<FetchResponse> {
    const r = await this.viaSession<FetchResponse>('fetch', req, () => this.fetchStream(req));
    return { docs: r.docs, damaged_fractions: r.damaged_fractions ?? [] };
  }

  /** Fetch as its own server-streaming call (stores without sessions); the damaged fractions come as a trailer. */
  private fetchStream(req: StoreFetchRequest): Promise<FetchResponse> {
    return new Promise((resolve, reject) => {
      const docs: PbDoc[] = [];
      const stream = (
        this.client.Fetch as (r: unknown, m: grpc.Metadata, o: grpc.CallOptions) => grpc.ClientReadableStream<PbDoc>
      ).call(this.client, req, new grpc.Metadata(), { deadline: Date.now() + this.timeoutMs });
      stream.on('data', (d: PbDoc) => docs.push(d));
      stream.on('error', reject);
      // The trailer arrives with the status, which follows the last message.
      stream.on('status', (s: grpc.StatusObject) => {
        if (s.code !== grpc.status.OK) return; // 'error' rejects
        const v = s.metadata.get(DAMAGED_TRAILER)[0];
        resolve({ docs, damaged_fractions: typeof v === 'string' && v ? v.split(',') : [] });
      });
    });
  }

  close(): void {
    this.session.close();
    this.client.close();
  }
}

/** True when a store refused the request itself (bad input): retrying elsewhere gives the same answer. */
export function isCallerError(err: unknown): boolean {
  return (err as grpc.ServiceError)?.code === grpc.status.INVALID_ARGUMENT;
}

/** True when a store refused a batch for its limits.bulk_memory: it is busy, and the batch may be sent again later. */
export function isOverloaded(err: unknown): boolean {
  return (err as grpc.ServiceError)?.code === grpc.status.RESOURCE_EXHAUSTED;
}
