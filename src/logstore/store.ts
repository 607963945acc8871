// The store: one single-thread piscina pool per shard; routes batches and fans queries out, then merges.
// Single mode puts it behind HTTP; store mode puts the same object behind gRPC.
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { packageRoot } from '../shared/package-root.js';
import { Piscina } from 'piscina';
import type { Logger } from 'pino';
import type { LogstoreConfig } from '../config/logstore.js';
import type { MappingSpec } from './mapping.js';
import type { FieldsPipe } from './query/ast.js';
import type { IdAssign, IngestResult, ShardStatus } from './storage/shard.js';
import type { ShardHit, ShardQuery, ShardQueryResult } from './search/execute.js';
import { type MergedQueryResult, mergeFetched, mergeQueryResults } from './search/merge.js';
import type { ShardWorkerData } from './storage/shard-worker.js';
import type { BatchMeta } from './ingest/bulk.js';
import { routeClientId } from './storage/client-ids.js';
import { fixMmapThreshold } from '../native/malloc-tune.js';
import { newShardState } from './storage/shard-state.js';
import type { SealedReader } from './storage/sealed-reader.js';
import { ReadPlan } from './search/read-plan.js';
import { ForgottenIds } from './storage/forgotten.js';
import { ShardTaskQueue } from './storage/shard-queue.js';

/** A compiled worker beside this module (storage/<name>.js); from TypeScript sources (vitest), the build's copy. */
function workerFile(name = 'shard-worker'): string {
  const here = fileURLToPath(import.meta.url);
  const file = here.endsWith('.js')
    ? path.join(path.dirname(here), 'storage', `${name}.js`)
    : path.join(packageRoot, 'dist', 'src', 'logstore', 'storage', `${name}.js`);
  if (!existsSync(file)) throw new Error(`worker ${file} is missing: run "npm run build"`);
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

/**
 * How long status() waits for a shard thread before it answers that shard's last figures: a thread holds one
 * task at a time, and a search may hold it up to search.timeout.
 */
const STATUS_WAIT_MS = 250;

/** Young generation of a shard worker's heap (V8's default is 3 x 16 MiB semi-spaces on 64-bit). */
const SHARD_YOUNG_GENERATION_MB = 12;

export class Store {
  private readonly pools: Piscina[] = [];
  /** Which fractions of a search are read by which thread: this one, the shard threads, their search threads. */
  private readonly reads: ReadPlan;
  /** Per shard: writes and searches sent to its thread and not answered yet (a write goes to the least busy). */
  private readonly pending: number[] = [];
  /** Per shard: its last status, answered while its thread is busy. */
  private readonly lastStatus: (ShardStatus | null)[] = [];
  /** When the oldest status request a shard thread has not answered yet was made (0: none waiting). */
  private readonly statusAsked: number[] = [];
  private next = 0;
  /**
   * Per shard thread, which id shard bytes (byte 7 of an id) its documents carry: 1 at [b] when some id with
   * byte b may be there, or null (not known: ask it for every id). Read from the threads once they opened their
   * data, then marked before every batch goes out, so it never misses an id a thread holds (dropped fractions
   * leave their bytes marked: a fetch then asks one thread too many, never one too few).
   */
  private readonly idBytes: (Uint8Array | null)[] = [];
  /** Documents left out of every search: copies of proxy batches that another shard stored (Forget). */
  private readonly forgotten: ForgottenIds;
  /** search.timeout in ms (0: none). */
  private readonly searchTimeout: number;

  constructor(cfg: LogstoreConfig, mapping: MappingSpec, log?: Logger) {
    const filename = workerFile();
    this.searchTimeout = cfg.search.timeout;
    this.forgotten = new ForgottenIds(path.join(path.resolve(cfg.storage.data_dir), 'forgotten.ids'));
    // Before the shard threads exist: their arenas then never raise the threshold (see malloc-tune.ts).
    fixMmapThreshold();
    const shards = Math.max(cfg.storage.shards, existingShards(cfg.storage.data_dir));
    if (shards > cfg.storage.shards) {
      log?.warn(
        { configured: cfg.storage.shards, opened: shards },
        'data_dir holds more shards than storage.shards; all of them are opened so no data is hidden',
      );
    }
    const shared: { dir: string; state: SharedArrayBuffer }[] = [];
    for (let i = 0; i < shards; i++) {
      const dir = path.join(path.resolve(cfg.storage.data_dir), `shard-${i}`);
      const state = newShardState();
      shared.push({ dir, state });
      const workerData: ShardWorkerData = {
        dir,
        shard: i,
        mapping,
        state,
        fracSize: cfg.storage.frac_size,
        totalSize: cfg.storage.total_size > 0 ? Math.floor(cfg.storage.total_size / shards) : 0,
        retention: cfg.storage.retention,
        logLevel: cfg.log.level,
        logFormat: cfg.log.format,
        columnMemory: cfg.search.column_memory,
      };
      // A small young generation: a shard's garbage is short-lived (parsed documents), and every megabyte of
      // nursery is resident memory per shard.
      this.pools.push(
        new Piscina({
          filename,
          minThreads: 1,
          maxThreads: 1,
          idleTimeout: 2 ** 31 - 1,
          concurrentTasksPerWorker: 1,
          workerData,
          // Writes before waiting searches: a thread runs one task at a time, and a search may take search.timeout.
          taskQueue: new ShardTaskQueue(),
          resourceLimits: { maxYoungGenerationSizeMb: SHARD_YOUNG_GENERATION_MB },
        }),
      );
      this.pending.push(0);
      this.lastStatus.push(null);
      this.idBytes.push(null);
    }
    this.reads = new ReadPlan(
      {
        shards: shared,
        searchWorker: () => workerFile('search-worker'),
        youngGenerationMb: SHARD_YOUNG_GENERATION_MB,
        columnMemory: cfg.search.column_memory,
        ...(log ? { log } : {}),
      },
      {
        run: (i, q, name) => this.onShardThread(i, q, name),
        more: (i, id) => this.onShardThread(i, { more: id }, 'queryActiveMore'),
        unpin: (i, pin) => this.pools[i]!.run({ pin }, { name: 'unpin' }),
        sweep: (i) => this.pools[i]!.run({}, { name: 'sweepDropped' }),
      },
    );
  }

  /** Per shard: the HTTP thread's reader of its sealed fractions (for tests: how many reads it answered). */
  get sealedReaders(): readonly SealedReader[] {
    return this.reads.sealedReaders;
  }

  /** Shard answers search threads gave from the fractions they listed themselves, and those they sent on (for tests). */
  get listedReads(): { answered: number; fallbacks: number } {
    return { answered: this.reads.listedReads, fallbacks: this.reads.listedFallbacks };
  }

  get shardCount(): number {
    return this.pools.length;
  }

  /** Waits until every shard worker has opened its shard (replayed its write-ahead file). */
  async ready(): Promise<void> {
    await Promise.all(
      this.pools.map(async (p, i) => {
        const bytes = (await p.run({}, { name: 'idShards' })) as number[] | null;
        if (bytes === null) return;
        const marks = new Uint8Array(256);
        for (const b of bytes) marks[b] = 1;
        // Batches sent while the thread was still opening were marked in a table of their own: keep those marks.
        const before = this.idBytes[i];
        if (before) for (let b = 0; b < 256; b++) marks[b] ||= before[b]!;
        this.idBytes[i] = marks;
      }),
    );
    // A first status now: from here on, status() always has figures to show for a busy shard.
    await this.status();
  }

  /** The shard that stores (and checks) every document with client id `id`. */
  route(id: string): number {
    return routeClientId(id, this.pools.length);
  }

  /**
   * Sends a batch (its buffers are moved, not copied) to its routed shard (documents with client ids), or else
   * to the least busy one. A proxy passes `now` and `assign` so that every replica gives each document the
   * same time and id.
   */
  async ingest(
    buf: Uint8Array,
    offs: Int32Array,
    now?: number,
    assign?: IdAssign,
    meta?: BatchMeta,
  ): Promise<IngestResult> {
    let shard = this.next;
    if (meta && meta.shard >= 0) shard = meta.shard;
    else {
      for (let k = 0; k < this.pools.length; k++) {
        const i = (this.next + k) % this.pools.length;
        if (this.pending[i]! < this.pending[shard]!) shard = i;
      }
      this.next = (shard + 1) % this.pools.length;
    }
    this.pending[shard]!++;
    (this.idBytes[shard] ??= new Uint8Array(256))[(assign ? assign.shard : shard) & 0xff] = 1;
    try {
      return (await this.pools[shard]!.run(
        { buf, offs, now, assign, ...(meta ? { meta: { ids: meta.ids, create: meta.create } } : {}) },
        { name: 'ingest', transferList: [buf.buffer as ArrayBuffer, offs.buffer as ArrayBuffer] },
      )) as IngestResult;
    } finally {
      this.pending[shard]!--;
    }
  }

  /**
   * Leaves the documents of `ids` out of every search from now on (a proxy stored their batch on another shard
   * after a replica of this one failed); resolves once that is on disk.
   */
  forget(ids: readonly string[]): Promise<number> {
    return this.forgotten.add(ids);
  }

  /**
   * `q` with its deadline (search.timeout from now, or the caller's when that is sooner: a proxy's, from
   * gRPC) and the forgotten ids of its time range, when there are any.
   */
  private prepared(q: ShardQuery): ShardQuery {
    const mine = this.searchTimeout > 0 ? Date.now() + this.searchTimeout : undefined;
    if (mine !== undefined && !(q.deadline !== undefined && q.deadline <= mine)) q = { ...q, deadline: mine };
    if (q.forgotten || this.forgotten.size === 0) return q;
    const ids = this.forgotten.within(q.from, q.to);
    return ids ? { ...q, forgotten: ids } : q;
  }

  async query(q: ShardQuery): Promise<StoreQueryResult> {
    q = this.prepared(q);
    return this.querySync(q) ?? mergeQueryResults(await this.queryShards(q), q);
  }

  /** The answer when this thread can give it at once (search/read-plan.ts), else null: query() then asks the shards. */
  querySync(q: ShardQuery): StoreQueryResult | null {
    q = this.prepared(q);
    const sealed = this.reads.here(q);
    return sealed ? mergeQueryResults([sealed], q) : null;
  }

  /** Each shard's own answer, unmerged (store mode sends them to a proxy, which merges across stores). */
  async queryShards(q: ShardQuery): Promise<ShardQueryResult[]> {
    q = this.prepared(q);
    return Promise.all(this.pools.map((_, i) => this.reads.shard(i, q)));
  }

  /** A task on shard i's thread, counted as pending so that writes without a routed shard go to a thread not searching. */
  private async onShardThread<T>(
    i: number,
    q: ShardQuery | { more: number },
    name: 'query' | 'queryActive' | 'queryActiveMore',
  ): Promise<T> {
    this.pending[i]!++;
    try {
      return (await this.pools[i]!.run(q, { name })) as T;
    } finally {
      this.pending[i]!--;
    }
  }

  /**
   * Documents by id, in the order asked. Each id goes only to the shard threads whose documents carry its shard
   * byte: in single mode the thread that made it (ids are made per thread), in store mode every thread that
   * stored the proxy shard it names (a proxy's ids carry the cluster shard, not this store's thread).
   */
  async fetch(ids: string[], pipes: FieldsPipe[] = []): Promise<{ hits: ShardHit[]; damaged?: string[] }> {
    const lists = this.pools.map((): string[] => []);
    for (const id of ids) {
      const b = parseInt(id.slice(12, 14), 16);
      for (let i = 0; i < lists.length; i++) {
        const marks = this.idBytes[i];
        if (!marks || !(b >= 0) || marks[b]) lists[i]!.push(id);
      }
    }
    type Part = { hits: ShardHit[]; damaged?: string[] };
    const parts: Part[] = await Promise.all(
      this.pools.map((p, i) =>
        lists[i]!.length ? (p.run({ ids: lists[i], pipes }, { name: 'fetch' }) as Promise<Part>) : { hits: [] },
      ),
    );
    const hits = mergeFetched(
      ids,
      parts.map((p) => p.hits),
    );
    // A damaged fraction counts only while an id it may hold is still missing (a replica thread may have it).
    if (hits.length === ids.length) return { hits };
    const damaged = [...new Set(parts.flatMap((p) => p.damaged ?? []))];
    return damaged.length ? { hits, damaged } : { hits };
  }

  /**
   * Every shard's status. A shard thread that does not answer within STATUS_WAIT_MS (busy with a search) is
   * shown with its last figures, marked stale, so that /status never waits for a search.
   */
  async status(): Promise<ShardStatus[]> {
    return Promise.all(
      this.pools.map(async (p, i) => {
        const since = this.statusAsked[i] || (this.statusAsked[i] = Date.now());
        const asked = (p.run({}, { name: 'status' }) as Promise<ShardStatus>).then((s) => {
          this.statusAsked[i] = 0;
          return (this.lastStatus[i] = s);
        });
        const last = this.lastStatus[i];
        if (!last) return asked;
        let timer: NodeJS.Timeout | undefined;
        const late = new Promise<ShardStatus>((resolve) => {
          timer = setTimeout(() => resolve({ ...last, stale: true, busy_ms: Date.now() - since }), STATUS_WAIT_MS);
        });
        try {
          return await Promise.race([asked, late]);
        } finally {
          clearTimeout(timer);
        }
      }),
    );
  }

  /** Seals every shard's active fraction (used by tests and benchmarks to measure sealed storage). */
  async sealAll(): Promise<ShardStatus[]> {
    return (await Promise.all(this.pools.map((p) => p.run({}, { name: 'seal' })))) as ShardStatus[];
  }

  async applyRetention(): Promise<string[]> {
    return ((await Promise.all(this.pools.map((p) => p.run({}, { name: 'retention' })))) as string[][]).flat();
  }

  async close(): Promise<void> {
    this.reads.closeReaders();
    await Promise.allSettled(this.pools.map((p) => p.run({}, { name: 'close' })));
    await this.reads.close();
    await Promise.allSettled(this.pools.map((p) => p.destroy()));
  }
}
