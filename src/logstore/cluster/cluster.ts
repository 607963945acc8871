// Proxy mode's backend: the stores of cluster.hot_stores grouped into shards of hot_replicas. A batch goes to one
// shard and is acknowledged once every replica has it on disk; a query asks one replica of every shard and merges.
import type { Logger } from 'pino';
import type { LogstoreConfig } from '../../config/logstore.js';
import {
  type BackendStatus,
  type FetchAnswer,
  type LogBackend,
  type PartialInfo,
  type QueryAnswer,
  type SearchTask,
  type StoreState,
  damagedPartial,
} from '../backend.js';
import { BadRequest, LogstoreError, Overloaded, UpstreamFailed } from '../errors.js';
import type { FieldsPipe } from '../query/ast.js';
import type { ShardHit, ShardQueryResult } from '../search/execute.js';
import { hitJson } from '../search/hit-json.js';
import { mergeFetched, mergeQueryResults } from '../search/merge.js';
import { HitWriter } from '../search/packed-hits.js';
import { decodeHits } from '../search/packed-wire.js';
import type { IngestResult, ShardStatus } from '../storage/shard.js';
import type { BatchMeta } from '../ingest/bulk.js';
import { routeClientId } from '../storage/client-ids.js';
import { aggToPb, partialFromPb } from '../grpc/convert.js';
import type { BatchKey } from '../grpc/store/messages.js';
import { ScratchPool } from '../search/scratch.js';
import { Breaker } from './breaker.js';
import { ForgetOutbox, type Leftover } from './forget-outbox.js';
import { CatchUp } from './catch-up.js';
import {
  StoreClient,
  type StoreBulkRequest,
  type StoreSearchResponse,
  isCallerError,
  isOverloaded,
  offsBytes,
} from './store-client.js';

interface ShardGroup {
  index: number;
  replicas: StoreClient[];
  breaker: Breaker;
  /** Writes in flight to this shard (least-loaded choice). */
  pending: number;
  /** Replica a read starts with (rotates, so reads spread over replicas). */
  nextRead: number;
}

/** The shards of a store list: groups of `replicas` consecutive addresses (the count must divide). */
export function shardsOf(stores: readonly string[], replicas: number): string[][] {
  if (stores.length === 0 || stores.length % replicas !== 0) {
    throw new Error(
      `cluster.hot_stores lists ${stores.length} stores, which cluster.hot_replicas (${replicas}) does not divide`,
    );
  }
  const out: string[][] = [];
  for (let i = 0; i < stores.length; i += replicas) out.push(stores.slice(i, i + replicas));
  return out;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function message(err: unknown): string {
  return (err as Error)?.message ?? String(err);
}

export class Cluster implements LogBackend {
  readonly mode = 'proxy' as const;
  private readonly shards: ShardGroup[];
  /** Id counters handed out per batch; random start so two proxies rarely overlap. */
  private counter = Math.floor(Math.random() * 2 ** 39);
  private readonly retries: number;
  /**
   * Batch buffers and the gRPC messages made of them, reused: fresh ones (about 4 MB a 5 000-document bulk)
   * pushed V8 into a full GC every ~15 bulks. At most 16 of up to 2 MiB are kept (32 MiB).
   */
  readonly batchPool = new ScratchPool(16, 2 << 20);
  /** Copies a batch left on shards it moved away from, forgotten there (forget-outbox.ts). */
  private readonly forgets: ForgetOutbox;

  /** Batches replicas missed (write_quorum), sent to them when they answer again. */
  private readonly catchup: CatchUp;
  /** Replicas of a shard that must store a batch when not all of them can (cluster.write_quorum). */
  private readonly quorum: number;

  constructor(
    cfg: LogstoreConfig,
    private readonly log: Logger,
  ) {
    const c = cfg.cluster;
    this.retries = c.write_retries;
    this.quorum = Math.min(c.write_quorum, c.hot_replicas);
    this.catchup = new CatchUp(c.catchup_memory, c.breaker_cooldown, log);
    // A store stops searching a little before the proxy stops waiting for it (its answer still has to travel),
    // so a slow search comes back partial, timed_out, rather than as a failed shard.
    const storeTimeout = Math.max(1, c.request_timeout - Math.min(1000, Math.floor(c.request_timeout / 10)));
    this.storeSearchTimeout = cfg.search.timeout > 0 ? Math.min(cfg.search.timeout, storeTimeout) : storeTimeout;
    this.forgets = new ForgetOutbox(c.breaker_cooldown, log);
    this.shards = shardsOf(c.hot_stores, c.hot_replicas).map((addrs, index) => ({
      index,
      pending: 0,
      nextRead: 0,
      breaker: new Breaker(c.breaker_failures, c.breaker_cooldown),
      replicas: addrs.map(
        (a) => new StoreClient(a, c.request_timeout, { time: c.keepalive_time, timeout: c.keepalive_timeout }),
      ),
    }));
    if (this.shards.length > 256) throw new Error('at most 256 shards: a document id holds its shard in one byte');
  }

  /** StoreSearchRequest.timeout_ms: search.timeout, within what cluster.request_timeout leaves a store. */
  private readonly storeSearchTimeout: number;

  /** Ties between equally loaded shards go to the first at or after this index (then it moves past). */
  private nextTie = 0;

  get shardCount(): number {
    return this.shards.length;
  }

  /** The shard for a new batch: the least loaded of those whose breaker lets writes in (ties in turn, so one
   * sender's bulks, one after another, spread evenly instead of by chance). */
  private pickShard(exclude: Set<number>): ShardGroup | null {
    const open = this.shards.filter((s) => !exclude.has(s.index));
    const allowed = open.filter((s) => s.breaker.available());
    // Shards whose every replica is up to date first: a batch there is stored whole at once.
    const whole = allowed.filter((s) => s.replicas.every((c) => this.catchup.behind(c) === 0));
    const pool = whole.length ? whole : allowed.length ? allowed : open;
    if (pool.length === 0) return null;
    const least = Math.min(...pool.map((s) => s.pending));
    const best = pool.filter((s) => s.pending === least);
    const chosen = best.find((s) => s.index >= this.nextTie) ?? best[0]!;
    this.nextTie = chosen.index + 1;
    chosen.breaker.taken();
    return chosen;
  }

  /** The shard of a client id: every copy of one id goes to one shard, whose stores check it (as single mode). */
  route(id: string): number {
    return routeClientId(id, this.shards.length);
  }

  /**
   * Writes one batch to every replica of one shard. Ids are made here (time of ingest, shard, counter) so every
   * replica stores the same ids; a replica that fails is retried alone, then the batch moves to another shard
   * (with the same ids, so a copy left on the first shard's good replicas is dropped from answers as a duplicate).
   * A batch of documents with client ids stays on the shard its ids route to (only that shard can tell whether
   * an id is stored already): only its missing replicas are retried.
   */
  async ingest(buf: Uint8Array, offs: Int32Array, meta?: BatchMeta): Promise<IngestResult> {
    const n = offs.length >>> 1;
    const routed = meta !== undefined && meta.shard >= 0 && meta.shard < this.shards.length;
    const first = routed ? this.shards[meta.shard]! : this.pickShard(new Set());
    if (!first) throw new Error('no shard configured');
    const ids = meta?.ids ?? null;
    const now = Date.now();
    const idCounter = this.counter;
    let encoded: Buffer;
    try {
      const req: StoreBulkRequest = {
        docs: buf,
        offs: [],
        offs_le: offsBytes(offs),
        now,
        assign_ids: true,
        id_shard: first.index,
        id_counter: idCounter,
        client_ids: ids ? ids.map((x) => x ?? '') : [],
        has_client_id: ids ? Uint8Array.from(ids, (x) => (x === null ? 0 : 1)) : new Uint8Array(0),
        create: meta?.create ?? new Uint8Array(0),
      };
      this.counter = (this.counter + n + 1) % 2 ** 40;
      encoded = StoreClient.encodeBulk(req, this.batchPool);
    } finally {
      // The batch is in the message now (or never will be).
      this.batchPool.give(buf);
    }
    // The batch as a store remembers it (store.proto BatchKey), for a forget of a copy whose ids never came back.
    const key: BatchKey = {
      id_shard: first.index,
      id_counter: idCounter,
      offs_count: offs.length,
      now,
      docs_bytes: buf.length,
    };
    try {
      return await this.sendBatch(first, encoded, routed, key);
    } finally {
      // Every call that sent it has ended (grpc-js framed its own copy of it for each).
      this.batchPool.give(encoded);
    }
  }

  /**
   * One answer for the client from the answers of a shard's replicas. They agree unless a replica could not store
   * some items another one stored (its disk full: per-item 429 or 5xx, "not stored"). Such an item is answered with
   * the refusal, so the client sends it again, and, unless the batch carries client ids, the replicas that stored it
   * forget it (by its id alone, not the batch's key, which would forget the whole batch): the resend gets new ids,
   * so neither a duplicate on the replica that stored it nor replicas that differ is left. With client ids the
   * copies stay: the resend finds them (200 noop) where they are and stores them where they are not.
   */
  private async uneven(s: ShardGroup, answers: Map<number, IngestResult>, routed: boolean): Promise<IngestResult> {
    const all = [...answers.values()];
    const answer = all[0]!;
    if (all.length < 2) return answer;
    const notStored = new Map<number, IngestResult['errors'][number]>();
    for (const a of all)
      for (const e of a.errors) if ((e[3] ?? 400) !== 400 && !notStored.has(e[0])) notStored.set(e[0], e);
    if (notStored.size === 0) return answer;
    const errors = new Map<number, IngestResult['errors'][number]>();
    for (const e of answer.errors) errors.set(e[0], e);
    const ids = new Uint8Array(answer.ids);
    const forget = new Map<number, Uint8Array>();
    for (const [i, e] of notStored) {
      // Stored by the replicas whose answer has its id: take it back from them.
      for (const [r, a] of answers) {
        if (a.ids[24 * i] === 0x20) continue;
        const f = forget.get(r) ?? new Uint8Array(ids.length).fill(0x20);
        f.set(a.ids.subarray(24 * i, 24 * i + 24), 24 * i);
        forget.set(r, f);
      }
      if (!errors.has(i)) errors.set(i, e);
      ids.fill(0x20, 24 * i, 24 * i + 24);
    }
    if (!routed && forget.size > 0) {
      this.log.warn(
        { items: notStored.size, shard: s.index },
        'replicas of a shard differ on a batch (one could not store some items): those items are answered not stored and forgotten where they were stored',
      );
      await Promise.all(
        [...forget].map(async ([r, f]) => {
          try {
            await s.replicas[r]!.forget(f);
          } catch (err) {
            this.log.error(
              { store: s.replicas[r]!.addr, err: message(err) },
              'items one replica could not store stay on another: forgetting them failed',
            );
          }
        }),
      );
    }
    const kept = answer.kept?.filter((k) => !notStored.has(k));
    return {
      ids,
      errors: [...errors.values()].sort((a, b) => a[0] - b[0]),
      ...(kept && kept.length ? { kept } : {}),
    };
  }

  /** ingest()'s attempts: the shard's replicas, their missing ones again, then other shards, up to write_retries. */
  private async sendBatch(first: ShardGroup, encoded: Buffer, routed: boolean, key: BatchKey): Promise<IngestResult> {
    const tried = new Set<number>();
    // Shards the batch left (it moved on, or failed): a copy there (on the replicas that took it, or on one that
    // stored it after its deadline) is forgotten, by the ids any replica answered (every replica makes the same).
    const leftovers: (Leftover & { answer: IngestResult | null; answers: Map<number, IngestResult> })[] = [];
    let known: Uint8Array | null = null;
    let shard: ShardGroup | null = first;
    let acked = new Set<number>();
    let refused = new Set<number>();
    let answer: IngestResult | null = null;
    // Each replica's own answer on the current shard: they may differ item by item (one's disk is full).
    let answers = new Map<number, IngestResult>();
    const errors: string[] = [];
    // Every failure so far was a store refusing the batch for its limits.bulk_memory (RESOURCE_EXHAUSTED): the
    // stores are busy, not broken, so their breakers stay closed and the items are answered 429 (retry later).
    let overloadOnly = true;
    for (let attempt = 0; attempt < this.retries && shard; attempt++) {
      if (attempt > 0) await sleep(Math.min(1000, 50 * 2 ** attempt));
      const s: ShardGroup = shard;
      // A replica that is behind (catch-up.ts) gets the batch after the ones it missed, unless the others alone
      // cannot make the quorum.
      let missing = s.replicas.map((_, i) => i).filter((i) => !acked.has(i));
      const current = missing.filter((i) => this.catchup.behind(s.replicas[i]!) === 0);
      if (acked.size + current.length >= this.quorum) missing = current;
      const deferred = s.replicas.map((_, i) => i).filter((i) => !acked.has(i) && !missing.includes(i));
      s.pending++;
      const results = await Promise.allSettled(missing.map((i) => s.replicas[i]!.bulk(encoded)));
      s.pending--;
      results.forEach((r, k) => {
        if (r.status === 'fulfilled') {
          acked.add(missing[k]!);
          const own: IngestResult = {
            ids: new Uint8Array(r.value.ids),
            errors: r.value.errors.map((e) => [e.index, e.type, e.reason, e.status || 400]),
            ...(r.value.kept.length ? { kept: r.value.kept } : {}),
          };
          answers.set(missing[k]!, own);
          answer ??= own;
        } else {
          errors.push(`${s.replicas[missing[k]!]!.addr}: ${message(r.reason)}`);
          if (isCallerError(r.reason)) throw new BadRequest(message(r.reason));
          if (isOverloaded(r.reason)) refused.add(missing[k]!);
          else {
            overloadOnly = false;
            // Its earlier refusal no longer says it holds none of the batch.
            refused.delete(missing[k]!);
          }
        }
      });
      if (
        acked.size === s.replicas.length ||
        (acked.size + deferred.length === s.replicas.length &&
          acked.size > 0 &&
          this.catchup.fits(encoded, deferred.length))
      ) {
        s.breaker.success();
        this.catchup.add(
          deferred.map((i) => s.replicas[i]!),
          encoded,
        );
        // (`answer` is set in the forEach callback above, which the compiler does not follow.)
        await this.forgets.forget(leftovers, answer!.ids, key);
        return this.uneven(s, answers, routed);
      }
      // The same shard's missing replicas once more; after that, another shard (all of its replicas).
      if (!routed && (attempt >= 1 || acked.size === 0)) {
        if (!overloadOnly) s.breaker.failure();
        known ??= (answer as IngestResult | null)?.ids ?? null;
        leftovers.push({ shard: s, acked, refused, answer, answers });
        tried.add(s.index);
        shard = this.pickShard(tried);
        acked = new Set();
        refused = new Set();
        answer = null;
        answers = new Map();
      }
    }
    if (shard && !tried.has(shard.index)) leftovers.push({ shard, acked, refused, answer, answers });
    // No shard stored it whole: the one whose replicas that answered make the quorum acknowledges it, and its
    // missing replicas are caught up later (catch-up.ts); its copies elsewhere are forgotten as usual.
    const quorate = leftovers
      .filter((l) => l.answer && l.acked.size >= this.quorum)
      .sort((a, b) => b.acked.size - a.acked.size)[0];
    const lacking = quorate ? quorate.shard.replicas.length - quorate.acked.size : 0;
    if (quorate && this.catchup.fits(encoded, lacking)) {
      const g = quorate.shard as ShardGroup;
      this.catchup.add(
        g.replicas.filter((_, i) => !quorate.acked.has(i)),
        encoded,
      );
      await this.forgets.forget(
        leftovers.filter((l) => l !== quorate),
        quorate.answer!.ids,
        key,
      );
      return this.uneven(g, quorate.answers, routed);
    }
    // The loop ended on a shard it had not given up on yet (retries spent on its missing replicas).
    if (shard && !tried.has(shard.index) && !overloadOnly) shard.breaker.failure();
    // The items fail and the client sends them again (new ids): every copy made so far is forgotten. A batch of
    // client ids keeps its copies: the client's resend finds them there (200 noop) and the rest stores it.
    if (!routed) {
      known ??= (answer as IngestResult | null)?.ids ?? null;
      // No replica answered anywhere: the ids (they hold the documents' times) are not known here, so the stores
      // forget the batch by its key (a hung one that stores it after its deadline, or refuses it if it comes later).
      await this.forgets.forget(leftovers, known, key);
    }
    if (overloadOnly && errors.length > 0) {
      throw new Overloaded(
        `rejected execution: every store tried is over its limits.bulk_memory; retry later (${errors.slice(-2).join('; ')})`,
      );
    }
    this.log.warn({ errors }, 'a batch could not be written to every replica of any shard');
    throw new Error(`no shard stored the batch on all of its replicas (${errors.slice(-3).join('; ')})`);
  }

  /** Asks the replicas of one shard in turn until one answers; throws the last error. Replicas that are behind
   * (they lack batches they missed: catch-up.ts) are asked last. */
  private async read<T>(s: ShardGroup, call: (c: StoreClient) => Promise<T>): Promise<T> {
    const start = s.nextRead;
    s.nextRead = (s.nextRead + 1) % s.replicas.length;
    let last: unknown;
    const order = s.replicas.map((_, k) => s.replicas[(start + k) % s.replicas.length]!);
    const current = order.filter((c) => this.catchup.behind(c) === 0);
    for (const c of current.length === order.length
      ? order
      : [...current, ...order.filter((c) => !current.includes(c))]) {
      try {
        return await call(c);
      } catch (err) {
        if (isCallerError(err)) throw new BadRequest(message(err));
        last = new Error(`${c.addr}: ${message(err)}`);
      }
    }
    throw last;
  }

  /** Runs `call` on one replica of every shard: what answered, and a partial-response note for what did not. */
  private async fanOut<T>(call: (c: StoreClient) => Promise<T>): Promise<{ parts: T[]; partial?: PartialInfo }> {
    const settled = await Promise.allSettled(this.shards.map((s) => this.read(s, call)));
    const parts: T[] = [];
    const failed: string[] = [];
    settled.forEach((r, i) => {
      if (r.status === 'fulfilled') parts.push(r.value);
      else {
        if (r.reason instanceof LogstoreError) throw r.reason;
        failed.push(`shard ${i}: ${message(r.reason)}`);
      }
    });
    if (failed.length === this.shards.length) {
      throw new UpstreamFailed(`every shard failed: ${failed.join('; ')}`);
    }
    if (failed.length === 0) return { parts };
    return {
      parts,
      partial: {
        failedShards: failed.length,
        shards: this.shards.length,
        message: `${failed.length} of ${this.shards.length} shards did not answer: ${failed.join('; ')}`,
      },
    };
  }

  async query(q: SearchTask): Promise<QueryAnswer> {
    const { parts, partial } = await this.fanOut((c) =>
      c.search({
        query: q.text,
        from: q.from,
        to: q.to,
        limit: q.limit,
        order: q.order === 'asc' ? 'ASC' : 'DESC',
        aggs: (q.aggs ?? []).map(aggToPb),
        hist_interval: q.histInterval ?? 0,
        with_total: q.withTotal !== false,
        packed_hits: true,
        // A request's own deadline (Elasticsearch's `timeout`) when it is sooner; at least 1 ms (0 means none).
        timeout_ms:
          q.deadline === undefined
            ? this.storeSearchTimeout
            : Math.max(1, Math.min(this.storeSearchTimeout, Math.round(q.deadline - Date.now()))),
      }),
    );
    const merged = mergeQueryResults(parts.map(toShardResult), q);
    const damaged = parts.filter((p) => p.damaged_fractions?.length);
    if (damaged.length === 0) return partial ? { ...merged, partial } : merged;
    // Stores that left damaged fractions out answered partially; with shards that did not answer at all, the answer
    // stays the plain partial one (an export stops on it), else it names the fractions (an export goes on).
    const names = damaged.map((p) => p.damaged_fractions!.join(', ')).join('; ');
    if (partial)
      return {
        ...merged,
        partial: { ...partial, message: `${partial.message}; damaged fractions left out: ${names}` },
      };
    return {
      ...merged,
      partial: {
        failedShards: damaged.length,
        shards: this.shards.length,
        message: `damaged fractions left out (quarantined): ${names}`,
        skippedFractions: damaged.flatMap((p) => p.damaged_fractions!),
      },
    };
  }

  /** The cluster shard an id names (its shard byte), or -1 when it names none of this cluster's shards. */
  private homeOf(id: string): number {
    const b = parseInt(id.slice(12, 14), 16);
    return b >= 0 && b < this.shards.length ? b : -1;
  }

  /**
   * Each id goes only to the shard its id names (the proxy made it with that shard's number: fail-over among
   * that shard's replicas). Ids that name no shard of this cluster (made under another layout, or by a single-mode
   * process) are asked of every shard. An id its shard does not hold is then asked of the other shards: a batch
   * whose write moved to another shard kept the ids of the first. Some shard failing gives what the others
   * answered, marked partial; every shard asked failing is a 502.
   */
  async fetch(ids: string[], pipes: FieldsPipe[]): Promise<FetchAnswer> {
    const pipe = pipes[0];
    const req = { fields: pipe?.names ?? [], fields_except: pipe?.except ?? false, has_fields: !!pipe };
    const found: ShardHit[][] = [];
    const damaged = new Set<string>();
    const failed = new Map<number, string>();
    const asked = new Set<number>();
    const ask = async (lists: string[][]) => {
      await Promise.all(
        lists.map(async (list, i) => {
          if (list.length === 0) return;
          asked.add(i);
          try {
            const { docs, damaged_fractions } = await this.read(this.shards[i]!, (c) => c.fetch({ ...req, ids: list }));
            for (const f of damaged_fractions) damaged.add(f);
            found.push(
              docs.map((d) => ({
                id: d.id,
                time: d.time,
                json: hitJson(d.id, d.time, Buffer.from(d.data).toString('utf8'), []),
              })),
            );
          } catch (err) {
            if (err instanceof LogstoreError) throw err;
            failed.set(i, message(err));
          }
        }),
      );
    };
    const first = this.shards.map((): string[] => []);
    for (const id of ids) {
      const home = this.homeOf(id);
      if (home >= 0) first[home]!.push(id);
      else for (const list of first) list.push(id);
    }
    await ask(first);
    const have = new Set(found.flat().map((h) => h.id));
    const again = this.shards.map((): string[] => []);
    for (const id of ids) {
      const home = this.homeOf(id);
      if (home < 0 || have.has(id) || failed.has(home)) continue;
      again.forEach((list, i) => {
        if (i !== home && !failed.has(i)) list.push(id);
      });
    }
    await ask(again);
    const hits = mergeFetched(ids, found);
    // Stores that left a damaged fraction out which may hold a missing id answered partially (as the search does).
    const skipped = hits.length < ids.length ? [...damaged] : [];
    if (failed.size === 0)
      return skipped.length ? { hits, partial: damagedPartial(skipped, this.shards.length) } : { hits };
    const detail = [...failed]
      .sort((x, y) => x[0] - y[0])
      .map(([i, m]) => `shard ${i}: ${m}`)
      .join('; ');
    if (failed.size === asked.size) throw new UpstreamFailed(`every shard asked failed: ${detail}`);
    const more = skipped.length ? `; damaged fractions left out: ${skipped.join(', ')}` : '';
    return {
      hits,
      partial: {
        failedShards: failed.size,
        shards: this.shards.length,
        message: `${failed.size} of ${this.shards.length} shards did not answer: ${detail}${more}`,
      },
    };
  }

  async status(): Promise<BackendStatus> {
    const stores: StoreState[] = [];
    const shards: ShardStatus[] = [];
    let inflight = 0;
    await Promise.all(
      this.shards.map(async (s) => {
        let counted = false;
        const breaker = s.breaker.open ? ('open' as const) : ('closed' as const);
        await Promise.all(
          s.replicas.map(async (c) => {
            try {
              const st = await c.status();
              const docs = st.shards.reduce((a, x) => a + x.fractions.reduce((b, f) => b + f.docs, 0), 0);
              stores.push({
                addr: c.addr,
                shard: s.index,
                ok: true,
                error: '',
                docs,
                breaker,
                behind: this.catchup.behind(c),
              });
              inflight += st.inflight_bulks;
              // Replicas hold the same documents: one replica per shard is counted.
              if (!counted) {
                counted = true;
                for (const x of st.shards) shards.push({ ...x, shard: s.index });
              }
            } catch (err) {
              stores.push({
                addr: c.addr,
                shard: s.index,
                ok: false,
                error: message(err),
                docs: 0,
                breaker,
                behind: this.catchup.behind(c),
              });
            }
          }),
        );
      }),
    );
    stores.sort((a, b) => a.shard - b.shard || (a.addr < b.addr ? -1 : 1));
    return { shards, stores, inflightBulks: inflight };
  }

  close(): void {
    this.forgets.close();
    this.catchup.close();
    for (const s of this.shards) for (const c of s.replicas) c.close();
  }
}

/**
 * A store's answer as a shard's result. The hits: the packed bytes as they came (the JSON is a view into the
 * message, no hit decoded), or, from an older store that sends a message per document, written out here; the
 * store wrote each document from its hit JSON, which it had made valid UTF-8, so it is not checked again.
 */
export function toShardResult(r: StoreSearchResponse): ShardQueryResult {
  let hits;
  if (r.hits.length > 0) hits = decodeHits(r.hits);
  else {
    const w = new HitWriter(r.docs.length);
    for (const d of r.docs) w.addRef(d.id, d.time, d.data, 0, d.data.length, true);
    hits = w.finish();
  }
  return {
    total: r.total,
    hits,
    aggs: r.aggs.map(partialFromPb),
    hist: r.hist.map((h) => [h.ts, h.count]),
    fractionsRead: r.fractions_read,
    ...(r.timed_out ? { timedOut: true } : {}),
  };
}
