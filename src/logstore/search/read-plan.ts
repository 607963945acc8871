// Which fractions of a search are read by which thread: the one place that decides it. A plain time-range search
// over sealed fractions only is read on the calling (HTTP) thread, every shard's fractions together; another search
// that finds nothing of its range in a shard's active fraction goes straight to the shard's search thread, which
// lists the sealed fractions itself; otherwise the shard thread reads its active fraction and pins the sealed ones,
// which the shard's search thread reads; a damaged or missing fraction there sends the whole search back to the shard
// thread. Every read that fails is logged.
import { Piscina } from 'piscina';
import type { Logger } from 'pino';
import type { SealedFraction } from '../storage/sealed-fraction.js';
import { SealedReader } from '../storage/sealed-reader.js';
import { ShardStateReader } from '../storage/shard-state.js';
import type { ActiveAnswer, ActiveStep } from '../storage/shard.js';
import type { SealedAnswer, SealedTask, SearchWorkerData } from '../storage/search-worker.js';
import { type ShardQuery, type ShardQueryResult, executeQuery } from './execute.js';

/** Whether the calling thread may run `q` itself: a time range in time order, nothing to count per document. */
export function readsOnlyTimeRange(q: ShardQuery): boolean {
  return q.plan.op === 'all' && !q.aggs?.length && !(q.histInterval && q.histInterval > 0);
}

/**
 * `q` read on this thread over the sealed fractions of `readers` (one shard's, or every shard's together: one pass
 * then picks the best `limit` hits of all), or null when a shard thread must answer: not a plain time range, a
 * reader steps aside (active fraction in range, fractions changing), a read fails, or a shard changed meanwhile.
 * `shards` names the readers' shards in the log.
 */
export function readSealed(
  readers: readonly SealedReader[],
  q: ShardQuery,
  log?: Logger,
  shards: readonly number[] = readers.map((_, i) => i),
): ShardQueryResult | null {
  if (!readsOnlyTimeRange(q)) return null;
  const reads: { gen: number; views: SealedFraction[] }[] = [];
  for (const [k, r] of readers.entries()) {
    let read;
    try {
      read = r.begin(q);
    } catch (err) {
      log?.warn({ err, shard: shards[k] }, "could not list a shard's sealed fractions here; its thread answers");
      r.failed();
      return null;
    }
    if (!read) return null;
    reads.push(read);
  }
  let result: ShardQueryResult;
  try {
    result = executeQuery(
      reads.flatMap((r) => r.views),
      q,
    );
  } catch (err) {
    log?.warn({ err, shards }, 'a read of sealed fractions here failed; the shard threads answer');
    for (const r of readers) r.failed();
    return null;
  }
  let settled = true;
  for (const [k, r] of readers.entries()) settled = r.settle(reads[k]!.gen) && settled;
  return settled ? result : null;
}

/** What the read plan asks of the shard threads (Store runs them). */
export interface ShardThreads {
  /** Runs a search task on shard i's thread, counted as pending so that writes go to a thread not searching. */
  run<T>(i: number, q: ShardQuery, name: 'query' | 'queryActive'): Promise<T>;
  /** Runs the next slice of a search's active part on shard i's thread (Shard.queryActiveMore), counted as run(). */
  more(i: number, id: number): Promise<ActiveAnswer>;
  /** Gives the fractions a search pinned (ActiveStep.sealed.pin) back to shard i's thread. */
  unpin(i: number, pin: number): Promise<unknown>;
  /** Has shard i's thread remove the dropped fractions the searches that listed them themselves kept. */
  sweep(i: number): Promise<unknown>;
}

export interface ReadPlanOptions {
  /** Per shard: its directory and the state its thread shares (storage/shard-state.ts). */
  shards: { dir: string; state: SharedArrayBuffer }[];
  /** The search threads' entry (storage/search-worker.js), asked for at a shard's first search over sealed fractions. */
  searchWorker: () => string;
  /** Young generation of a search thread's heap, in MB. */
  youngGenerationMb: number;
  /** search.column_memory: bytes of columns a search thread's sealed fractions may keep. */
  columnMemory?: number;
  log?: Logger;
}

export class ReadPlan {
  /** Per shard: the calling thread's reader of its sealed fractions (plain time-range searches skip the hop). */
  readonly sealedReaders: SealedReader[];
  /**
   * Per shard: its search thread (made at its first search over sealed fractions), which reads the sealed
   * fractions of the shard's searches while the shard thread goes on taking writes (storage/search-worker.ts).
   */
  private readonly searchPools: (Piscina | null)[];
  /** Per shard: its state, which counts the searches its search thread lists the sealed fractions for. */
  private readonly states: ShardStateReader[];
  private readonly log: Logger | undefined;
  /** Searches a search thread answered from the fractions it listed itself, and those sent on to the shard thread. */
  listedReads = 0;
  listedFallbacks = 0;

  constructor(
    private readonly opts: ReadPlanOptions,
    private readonly threads: ShardThreads,
  ) {
    this.states = opts.shards.map((s) => new ShardStateReader(s.state));
    this.sealedReaders = opts.shards.map((s, i) => new SealedReader(s.dir, this.states[i]!));
    this.searchPools = opts.shards.map(() => null);
    this.log = opts.log;
  }

  /**
   * The whole answer on this thread, when every shard can give its part from its sealed fractions, read once over
   * all the shards' fractions together: one pass picks the best `limit` hits of all, so only those are written (one
   * run per shard wrote `limit` hits each, and the merge dropped all but `limit` of them). Null otherwise: the
   * shards answer (shard()).
   */
  here(q: ShardQuery): ShardQueryResult | null {
    if (this.sealedReaders.length < 2) return null;
    return readSealed(this.sealedReaders, q, this.log);
  }

  /**
   * Shard i's answer: from this thread's sealed reader when it can; else the shard thread reads the active fraction
   * and pins the sealed ones (one task, one moment of the shard), and the shard's search thread reads those with
   * the active part in its place, so that the shard thread takes writes meanwhile. A damaged or missing fraction
   * there: the shard thread answers the whole search (quarantining it), as it did before search threads.
   */
  async shard(i: number, q: ShardQuery): Promise<ShardQueryResult> {
    const here = readSealed([this.sealedReaders[i]!], q, this.log, [i]);
    if (here) return here;
    const listed = await this.fromSearchThread(i, q);
    if (listed) return listed;
    let next = await this.threads.run<ActiveAnswer>(i, q, 'queryActive');
    // The active part in slices, each queued behind the writes that came during the last (shard-queue.ts).
    while ('more' in next) next = await this.threads.more(i, next.more);
    const step: ActiveStep = next;
    if (!step.sealed) return step.result;
    const { pin, names } = step.sealed;
    let answer: SealedAnswer;
    try {
      const task: SealedTask = { q, names, ...(step.part ? { part: { ...step.part, result: step.result } } : {}) };
      answer = (await this.searchPool(i).run(task, {
        name: 'query',
        transferList: task.part ? [task.part.result.hits.json.buffer as ArrayBuffer] : [],
      })) as SealedAnswer;
    } finally {
      this.threads
        .unpin(i, pin)
        .catch((err: unknown) =>
          this.log?.warn({ err, shard: i, pin }, "could not give a search's pinned fractions back"),
        );
    }
    if ('unreadable' in answer) {
      this.log?.warn(
        { err: answer.unreadable, shard: i },
        'the search thread could not read a sealed fraction; the shard thread answers the search',
      );
      return this.threads.run<ShardQueryResult>(i, q, 'query');
    }
    return step.damaged ? { ...answer, damaged: step.damaged } : answer;
  }

  /**
   * Shard i's answer from its search thread alone, which lists the sealed fractions itself, when nothing of the range
   * is in the active fraction: no task on the shard thread (two hops fewer, and none queued behind writes). Null when
   * the shard thread must take part (the search thread found the active fraction in range after all, the shard
   * changing, a fraction quarantined or unreadable). Counted in the shard state while it runs, so that the shard
   * thread keeps the files of fractions it drops meanwhile; the last such search to end has it remove them.
   */
  private async fromSearchThread(i: number, q: ShardQuery): Promise<ShardQueryResult | null> {
    const state = this.states[i]!;
    const gen = state.generation();
    if ((gen & 1) === 1 || state.activeOverlaps(q.from, q.to)) return null;
    state.enterRead();
    let answer: ShardQueryResult | { listed: false };
    try {
      answer = (await this.searchPool(i).run({ q }, { name: 'querySealed' })) as ShardQueryResult | { listed: false };
    } finally {
      if (state.leaveRead())
        this.threads
          .sweep(i)
          .catch((err: unknown) => this.log?.warn({ err, shard: i }, 'could not remove the dropped fractions'));
    }
    if ('listed' in answer) {
      this.listedFallbacks++;
      return null;
    }
    this.listedReads++;
    return answer;
  }

  private searchPool(i: number): Piscina {
    const data: SearchWorkerData = { dir: this.opts.shards[i]!.dir, state: this.opts.shards[i]!.state };
    if (this.opts.columnMemory !== undefined) data.columnMemory = this.opts.columnMemory;
    return (this.searchPools[i] ??= new Piscina({
      filename: this.opts.searchWorker(),
      minThreads: 1,
      maxThreads: 1,
      // Kept: it holds the fractions it read open (a thread ended by piscina would leave their files open).
      idleTimeout: 2 ** 31 - 1,
      concurrentTasksPerWorker: 1,
      workerData: data,
      resourceLimits: { maxYoungGenerationSizeMb: this.opts.youngGenerationMb },
    }));
  }

  /** Closes this thread's readers (before the shard threads close: nothing is read of a closing shard here). */
  closeReaders(): void {
    for (const r of this.sealedReaders) r.close();
  }

  /** Closes the search threads that were started. */
  async close(): Promise<void> {
    const searching = this.searchPools.filter((p) => p !== null);
    await Promise.allSettled(searching.map((p) => p.run({}, { name: 'close' })));
    await Promise.allSettled(searching.map((p) => p.destroy()));
  }
}
