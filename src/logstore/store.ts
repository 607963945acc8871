// The store: one thread per shard (storage/shard-thread.ts); routes batches and fans queries out, then merges.
// Single mode puts it behind HTTP; store mode puts the same object behind gRPC.
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { packageRoot } from '../shared/package-root.js';
import type { Logger } from 'pino';
import type { LogstoreConfig } from '../config/logstore.js';
import type { MappingSpec } from './mapping.js';
import type { FieldsPipe } from './query/ast.js';
import type { IdAssign, IngestResult, ShardStatus } from './storage/shard.js';
import type { ShardHit, ShardQuery, ShardQueryResult } from './search/execute.js';
import { type MergedQueryResult, mergeFetched, mergeQueryResults } from './search/merge.js';
import type { ShardWorkerData } from './storage/shard-worker.js';
import { ShardThreads } from './storage/shard-thread.js';
import type { BatchMeta } from './ingest/bulk.js';
import { routeClientId } from './storage/client-ids.js';

/** The compiled shard worker beside this module; from TypeScript sources (vitest), the build's copy of it. */
function workerFile(): string {
  const here = fileURLToPath(import.meta.url);
  const file = here.endsWith('.js')
    ? path.join(path.dirname(here), 'storage', 'shard-worker.js')
    : path.join(packageRoot, 'dist', 'src', 'logstore', 'storage', 'shard-worker.js');
  if (!existsSync(file)) throw new Error(`shard worker ${file} is missing: run "npm run build"`);
  return file;
}

/** Number of shard-<n> directories already in data_dir (n + 1 of the highest). */
function existingShards(dataDir: string): number {
  if (!existsSync(dataDir)) return 0;
  let n = 0;
  for (const e of readdirSync(dataDir)) {
    const m = /^shard-(\d+)$/.exec(e);
    if (m) n = Math.max(n, Number(m[1]) + 1);
  }
  return n;
}

export type StoreQueryResult = MergedQueryResult;

/** Young generation of a shard worker's heap (V8's default is 3 x 16 MiB semi-spaces on 64-bit). */
const SHARD_YOUNG_GENERATION_MB = 12;

export class Store {
  private readonly threads: ShardThreads<ShardWorkerData>;
  private readonly pending: number[] = [];
  private next = 0;

  constructor(cfg: LogstoreConfig, mapping: MappingSpec, log?: Logger) {
    const shards = Math.max(cfg.storage.shards, existingShards(cfg.storage.data_dir));
    if (shards > cfg.storage.shards) {
      log?.warn({ configured: cfg.storage.shards, opened: shards }, 'data_dir holds more shards than storage.shards; all of them are opened so no data is hidden');
    }
    const data: ShardWorkerData[] = [];
    for (let i = 0; i < shards; i++) {
      data.push({
        dir: path.join(path.resolve(cfg.storage.data_dir), `shard-${i}`), shard: i, mapping,
        fracSize: cfg.storage.frac_size, totalSize: cfg.storage.total_size > 0 ? Math.floor(cfg.storage.total_size / shards) : 0,
        retention: cfg.storage.retention, logLevel: cfg.log.level, logFormat: cfg.log.format,
      });
      this.pending.push(0);
    }
    // A small young generation: a shard's garbage is short-lived (parsed documents), and every megabyte of
    // nursery is resident memory per shard.
    this.threads = new ShardThreads(workerFile(), data, SHARD_YOUNG_GENERATION_MB, log);
  }

  get shardCount(): number {
    return this.threads.length;
  }

  /** Waits until every shard worker has opened its shard (replayed its write-ahead file). */
  async ready(): Promise<void> {
    await this.threads.all('status', {});
  }

  /** The shard that stores (and checks) every document with client id `id`. */
  route(id: string): number {
    return routeClientId(id, this.threads.length);
  }

  /**
   * Sends a batch (its buffers are moved, not copied) to its routed shard (documents with client ids), or else
   * to the least busy one. A proxy passes `now` and `assign` so that every replica gives each document the
   * same time and id.
   */
  async ingest(buf: Uint8Array, offs: Int32Array, now?: number, assign?: IdAssign, meta?: BatchMeta): Promise<IngestResult> {
    let shard = this.next;
    if (meta && meta.shard >= 0) shard = meta.shard;
    else {
      for (let k = 0; k < this.threads.length; k++) {
        const i = (this.next + k) % this.threads.length;
        if (this.pending[i]! < this.pending[shard]!) shard = i;
      }
      this.next = (shard + 1) % this.threads.length;
    }
    this.pending[shard]!++;
    try {
      return await this.threads.run<IngestResult>(
        shard, 'ingest', { buf, offs, now, assign, ...(meta ? { meta: { ids: meta.ids, create: meta.create } } : {}) },
        buf.buffer === offs.buffer ? [buf.buffer as ArrayBuffer] : [buf.buffer as ArrayBuffer, offs.buffer as ArrayBuffer],
      );
    } finally {
      this.pending[shard]!--;
    }
  }

  async query(q: ShardQuery): Promise<StoreQueryResult> {
    return mergeQueryResults(await this.queryShards(q), q);
  }

  /** Each shard's own answer, unmerged (store mode sends them to a proxy, which merges across stores). */
  async queryShards(q: ShardQuery): Promise<ShardQueryResult[]> {
    return this.threads.all<ShardQueryResult>('query', q);
  }

  async fetch(ids: string[], pipes: FieldsPipe[] = []): Promise<ShardHit[]> {
    return mergeFetched(ids, await this.threads.all<ShardHit[]>('fetch', { ids, pipes }));
  }

  async status(): Promise<ShardStatus[]> {
    return this.threads.all<ShardStatus>('status', {});
  }

  /** Seals every shard's active fraction (used by tests and benchmarks to measure sealed storage). */
  async sealAll(): Promise<ShardStatus[]> {
    return this.threads.all<ShardStatus>('seal', {});
  }

  async applyRetention(): Promise<string[]> {
    return (await this.threads.all<string[]>('retention', {})).flat();
  }

  async close(): Promise<void> {
    await this.threads.allSettled('close', {});
    await this.threads.terminate();
  }
}

