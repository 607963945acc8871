// What the public API (HTTP and gRPC) runs on: the local store in single mode, the cluster of stores in proxy mode.
import type { BatchMeta, BulkTarget } from './ingest/bulk.js';
import type { FieldsPipe } from './query/ast.js';
import type { ShardHit, ShardQuery } from './search/execute.js';
import type { MergedQueryResult } from './search/merge.js';
import type { ShardStatus } from './storage/shard.js';
import type { Store } from './store.js';

/** Some shards failed and others answered: the answer holds what arrived. */
export interface PartialInfo {
  failedShards: number;
  shards: number;
  message: string;
  /** Damaged fractions left out (`shard-<n>/<fraction>`, quarantined); the shards holding them count as failed. */
  skippedFractions?: string[];
}

/** An answer that left damaged fractions out, marked partial (the seq-db PARTIAL_RESPONSE shape at the edge). */
export function markDamaged<T extends MergedQueryResult>(r: T, shards: number): T & { partial?: PartialInfo } {
  if (!r.damaged?.length) return r;
  return { ...r, partial: damagedPartial(r.damaged, shards) };
}

/** The partial mark of an answer without the damaged fractions `damaged` (`shard-<n>/<fraction>`). */
export function damagedPartial(damaged: string[], shards: number): PartialInfo {
  const failedShards = new Set(damaged.map((d) => d.split('/')[0])).size;
  return {
    failedShards,
    shards,
    message: `damaged fractions left out (quarantined): ${damaged.join(', ')}`,
    skippedFractions: damaged,
  };
}

export interface QueryAnswer extends MergedQueryResult {
  partial?: PartialInfo;
}

/** A query as the API received it: the planned query plus its text (stores plan the text themselves). */
export interface SearchTask extends ShardQuery {
  text: string;
}

export interface FetchAnswer {
  hits: ShardHit[];
  partial?: PartialInfo;
}

/** One store of a cluster as the proxy sees it. */
export interface StoreState {
  addr: string;
  shard: number;
  ok: boolean;
  error: string;
  docs: number;
  /** The write circuit breaker of the store's shard: open while the shard is skipped for writes (proxy mode). */
  breaker?: 'closed' | 'open';
  /** Batches the proxy holds for this replica, which missed them (cluster.write_quorum): 0 when up to date. */
  behind?: number;
}

export interface BackendStatus {
  /** The local shards of this process, or of one answering replica per cluster shard. */
  shards: ShardStatus[];
  stores: StoreState[];
  inflightBulks?: number;
}

export interface LogBackend extends BulkTarget {
  readonly mode: 'single' | 'store' | 'proxy';
  /** Batches of one bulk worth sending at once (local shards, or cluster shards). */
  readonly shardCount: number;
  query(q: SearchTask): Promise<QueryAnswer>;
  /** The answer when it is at hand without waiting (single mode, sealed data), else null (use query). */
  querySync?(q: SearchTask): QueryAnswer | null;
  fetch(ids: string[], pipes: FieldsPipe[]): Promise<FetchAnswer>;
  status(): Promise<BackendStatus>;
}

/** Single mode: the process's own store. */
export class LocalBackend implements LogBackend {
  /** `store`: store mode's debug listener reads its /status through this too (no HTTP API there). */
  constructor(
    readonly store: Store,
    readonly mode: 'single' | 'store' = 'single',
  ) {}

  get shardCount(): number {
    return this.store.shardCount;
  }

  ingest(buf: Uint8Array, offs: Int32Array, meta?: BatchMeta) {
    return this.store.ingest(buf, offs, undefined, undefined, meta);
  }

  route(id: string): number {
    return this.store.route(id);
  }

  async query(q: SearchTask): Promise<QueryAnswer> {
    return markDamaged(await this.store.query(q), this.store.shardCount);
  }

  querySync(q: SearchTask): QueryAnswer | null {
    const r = this.store.querySync(q);
    return r && markDamaged(r, this.store.shardCount);
  }

  async fetch(ids: string[], pipes: FieldsPipe[]): Promise<FetchAnswer> {
    const { hits, damaged } = await this.store.fetch(ids, pipes);
    return damaged ? { hits, partial: damagedPartial(damaged, this.store.shardCount) } : { hits };
  }

  async status(): Promise<BackendStatus> {
    return { shards: await this.store.status(), stores: [] };
  }
}
