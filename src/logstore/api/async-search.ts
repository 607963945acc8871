// Async searches: a complex search over a long time range runs in the background, slice by slice (newest
// first for "desc"), so its progress and what it found so far can be read while it runs; kept for a while after.
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { type AggPartial, emptyPartial, mergePartials } from '../aggregate/aggregate.js';
import type { PartialInfo, QueryAnswer } from '../backend.js';
import { ErrorCode, LogstoreError } from '../errors.js';
import type { ShardHit } from '../search/execute.js';
import { HitWriter, mergeHitList } from '../search/packed-hits.js';
import {
  type ApiEnv,
  type SearchOutcome,
  aggResults,
  histBuckets,
  parseSearchBody,
  partialError,
  whole,
} from './operations.js';

/** Slices of the time range searched one after another: the progress moves by 1/SLICES. */
const SLICES = 8;

export type AsyncStatus = 'in_progress' | 'done' | 'canceled' | 'error';

export interface AsyncSearchInfo {
  search_id: string;
  status: AsyncStatus;
  progress: number;
  started_at: string;
  finished_at: string | null;
  query: string;
  error: string | null;
}

interface Entry {
  info: AsyncSearchInfo;
  req: Omit<SearchOutcome, 'r'>;
  /** What was found so far, merged over the slices done. */
  so: QueryAnswer | null;
  canceled: boolean;
  finishedAt: number;
}

export interface AsyncSearchResult {
  info: AsyncSearchInfo;
  /** A complex-search answer over the slices searched so far. */
  response: {
    total: number;
    docs: ShardHit[];
    aggs: ReturnType<typeof aggResults>;
    hist?: { buckets: ReturnType<typeof histBuckets> };
    error?: { code: 'PARTIAL_RESPONSE'; message: string };
    partial_response?: true;
  };
}

function accumulate(prev: QueryAnswer | null, next: QueryAnswer, req: Omit<SearchOutcome, 'r'>): QueryAnswer {
  if (!prev) return next;
  const limit = req.spec.offset + req.spec.size;
  const desc = req.spec.order !== 'asc';
  // Both lists are in order; re-pack them so the k-way merge (and its duplicate drop) applies.
  const pack = (l: QueryAnswer['hits']) => {
    const w = new HitWriter(l.length);
    for (let i = 0; i < l.length; i++) {
      const h = l.get(i);
      w.addJson(h.id, h.time, Buffer.from(h.json));
    }
    return w.finish();
  };
  const hits = mergeHitList([pack(prev.hits), pack(next.hits)], limit, desc);
  const aggs: AggPartial[] = prev.aggs.map((a, i) => mergePartials(mergePartials(emptyPartial(), a), next.aggs[i]!));
  const hist = new Map(prev.hist);
  for (const [ts, c] of next.hist) hist.set(ts, (hist.get(ts) ?? 0) + c);
  const partial: PartialInfo | undefined = prev.partial ?? next.partial;
  return {
    total: prev.total + next.total,
    hits,
    aggs,
    hist,
    fractionsRead: prev.fractionsRead + next.fractionsRead,
    ...(partial ? { partial } : {}),
  };
}

export class AsyncSearches {
  private readonly entries = new Map<string, Entry>();

  constructor(
    private readonly env: ApiEnv,
    private readonly limits: { max_searches: number; keep: number },
    private readonly log: Logger,
  ) {}

  /** Validates the body (a complex-search body) at once, then searches in the background; returns the id. */
  start(body: Record<string, unknown>): string {
    this.expire();
    const req = parseSearchBody(this.env, body, true);
    if (this.entries.size >= this.limits.max_searches) {
      throw new LogstoreError(
        ErrorCode.TooManyAsyncSearches,
        `too many async searches kept (async_search.max_searches = ${this.limits.max_searches}); delete finished ones or retry later`,
      );
    }
    const id = randomUUID();
    const entry: Entry = {
      info: {
        search_id: id,
        status: 'in_progress',
        progress: 0,
        started_at: new Date().toISOString(),
        finished_at: null,
        query: req.spec.text,
        error: null,
      },
      req,
      so: null,
      canceled: false,
      finishedAt: 0,
    };
    this.entries.set(id, entry);
    this.run(entry).then(
      () => this.finish(entry, entry.canceled ? 'canceled' : 'done', null),
      (err: Error) => {
        if (!(err instanceof LogstoreError)) this.log.error({ err, search_id: id }, 'async search failed');
        this.finish(entry, 'error', err.message);
      },
    );
    return id;
  }

  private finish(entry: Entry, status: AsyncStatus, error: string | null): void {
    entry.info.status = status;
    entry.info.error = error;
    entry.finishedAt = Date.now();
    entry.info.finished_at = new Date(entry.finishedAt).toISOString();
  }

  private async run(entry: Entry): Promise<void> {
    const { spec, aggs, hist } = entry.req;
    let from = spec.from;
    let to = spec.to;
    // An open range is narrowed to the data held, so that the slices split real time.
    if (from < -8e15 || to > 8e15) {
      const all = (await this.env.store.status()).shards.flatMap((s) => s.fractions).filter((f) => f.docs > 0);
      if (all.length) {
        from = Math.max(from, Math.min(...all.map((f) => f.min_time)));
        to = Math.min(to, Math.max(...all.map((f) => f.max_time)));
      }
    }
    const bounds: [number, number][] = [];
    if (!(to > from) || to - from < SLICES) bounds.push([spec.from, spec.to]);
    else {
      const step = Math.floor((to - from) / SLICES);
      for (let i = 0; i < SLICES; i++)
        bounds.push([i === 0 ? spec.from : from + i * step, i === SLICES - 1 ? spec.to : from + (i + 1) * step - 1]);
      if (spec.order !== 'asc') bounds.reverse();
    }
    for (let i = 0; i < bounds.length; i++) {
      if (entry.canceled) return;
      const [a, b] = bounds[i]!;
      // Each slice has its own search.timeout; one that runs past it ends the search in error.
      const r = whole(
        await this.env.store.query({
          text: spec.text,
          plan: spec.plan,
          from: a,
          to: b,
          limit: spec.offset + spec.size,
          order: spec.order,
          aggs,
          histInterval: hist,
          pipes: spec.pipes,
          withTotal: spec.withTotal,
        }),
      );
      entry.so = accumulate(entry.so, r, entry.req);
      entry.info.progress = (i + 1) / bounds.length;
    }
  }

  get(id: string): AsyncSearchResult {
    this.expire();
    const e = this.entries.get(id);
    if (!e)
      throw new LogstoreError(
        ErrorCode.NotFound,
        `no async search ${JSON.stringify(id)} (finished searches are kept for async_search.keep)`,
      );
    const { spec, aggs, hist } = e.req;
    const so = e.so;
    const docs = so ? so.hits.slice(spec.offset, spec.offset + spec.size) : [];
    const response: AsyncSearchResult['response'] = {
      total: so?.total ?? 0,
      docs,
      aggs: so ? aggResults(aggs, so) : aggs.map(() => ({ buckets: [], not_exists: 0 })),
    };
    if (hist) response.hist = { buckets: so ? histBuckets(so) : [] };
    if (so?.partial) {
      response.error = partialError(so.partial);
      response.partial_response = true;
    }
    return { info: { ...e.info }, response };
  }

  cancel(id: string): void {
    const e = this.entries.get(id);
    if (!e) throw new LogstoreError(ErrorCode.NotFound, `no async search ${JSON.stringify(id)}`);
    e.canceled = true;
  }

  delete(id: string): void {
    const e = this.entries.get(id);
    if (!e) throw new LogstoreError(ErrorCode.NotFound, `no async search ${JSON.stringify(id)}`);
    e.canceled = true;
    this.entries.delete(id);
  }

  list(): AsyncSearchInfo[] {
    this.expire();
    return [...this.entries.values()].map((e) => ({ ...e.info }));
  }

  private expire(now = Date.now()): void {
    for (const [id, e] of this.entries)
      if (e.finishedAt && now - e.finishedAt > this.limits.keep) this.entries.delete(id);
  }
}
