// The store API's messages (proto/logstore/store.proto) as the service's handlers and its clients (cluster/) see
// them: what a proxy sends and what a store answers.
import type { HitList } from '../../search/packed-hits.js';
import type { ShardStatus } from '../../storage/shard.js';
import type { PbAggPartial, PbAggQuery, PbDoc } from '../convert.js';

export interface BulkRequest {
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
export interface BulkResponse {
  ids: Buffer;
  errors: { index: number; type: string; reason: string; status: number }[];
  kept: number[];
}

export interface SearchRequest {
  query: string;
  from: number;
  to: number;
  limit: number;
  order: 'DESC' | 'ASC';
  aggs: PbAggQuery[];
  hist_interval: number;
  with_total: boolean;
  packed_hits: boolean;
  timeout_ms?: number;
}
export interface FetchRequest {
  ids: string[];
  fields: string[];
  fields_except: boolean;
  has_fields: boolean;
}
/** hits: the packed bytes, or (for a Session, whose reply encoder writes them in place) the merged list itself. */
export interface SearchResponse {
  total: number;
  docs: PbDoc[];
  hits: Buffer | HitList;
  aggs: PbAggPartial[];
  hist: { ts: number; count: number }[];
  fractions_read: number;
  timed_out?: boolean;
  damaged_fractions?: string[];
}
/** Trailing metadata of a store's Fetch stream: StoreFetchResponse.damaged_fractions, comma-separated. */
export const DAMAGED_TRAILER = 'x-damaged-fractions';

/** The documents found; `damaged_fractions` as in store.proto's StoreFetchResponse. */
export interface FetchResponse {
  docs: PbDoc[];
  damaged_fractions: string[];
}
export interface StatusResponse {
  shards: ShardStatus[];
  inflight_bulks: number;
}

/** ForgetRequest.batches: a proxy's batch named by what its BulkRequest carried. */
export interface BatchKey {
  id_shard: number;
  id_counter: number;
  offs_count: number;
  now: number;
  docs_bytes: number;
}
export interface ForgetRequest {
  ids: Buffer;
  batches: BatchKey[];
}
