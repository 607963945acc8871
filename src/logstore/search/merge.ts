// Merges the answers of many shards (local shard threads in single mode, stores in a cluster) into one:
// hits by time (duplicate ids dropped), totals summed, aggregation partials and histogram buckets merged.
import { type AggPartial, type AggSpec, emptyPartial, mergePartials } from '../aggregate/aggregate.js';
import type { ShardHit, ShardQueryResult } from './execute.js';
import { type HitList, mergeHitList } from './packed-hits.js';

export interface MergedQueryResult {
  total: number;
  hits: HitList;
  aggs: AggPartial[];
  hist: Map<number, number>;
  fractionsRead: number;
  /** Some part passed the search deadline (search.timeout): the answer holds what was found before it. */
  timedOut?: boolean;
  /** Fractions the parts left out as damaged (see ShardQueryResult.damaged). */
  damaged?: string[];
}

export function mergeQueryResults(
  parts: ShardQueryResult[],
  q: { limit: number; order: 'desc' | 'asc'; aggs?: AggSpec[] },
): MergedQueryResult {
  const hits = mergeHitList(
    parts.map((p) => p.hits),
    q.limit,
    q.order !== 'asc',
  );
  const aggs = (q.aggs ?? []).map((_, i) => parts.reduce((acc, p) => mergePartials(acc, p.aggs[i]!), emptyPartial()));
  const hist = new Map<number, number>();
  for (const p of parts) for (const [ts, c] of p.hist) hist.set(ts, (hist.get(ts) ?? 0) + c);
  let total = 0;
  let fractionsRead = 0;
  for (const p of parts) {
    total += p.total;
    fractionsRead += p.fractionsRead;
  }
  // Copies of one document the merge saw are counted once (copies past the returned window cannot be seen).
  const merged: MergedQueryResult = { total: Math.max(0, total - hits.dropped), hits, aggs, hist, fractionsRead };
  if (parts.some((p) => p.timedOut)) merged.timedOut = true;
  const damaged = parts.flatMap((p) => p.damaged ?? []);
  if (damaged.length) merged.damaged = damaged;
  return merged;
}

/** Hits found by several shards, in the order of `ids` (absent ones left out); replicas' copies count once. */
export function mergeFetched(ids: string[], parts: ShardHit[][]): ShardHit[] {
  const byId = new Map<string, ShardHit>();
  for (const part of parts) for (const h of part) if (!byId.has(h.id)) byId.set(h.id, h);
  return ids.flatMap((id) => (byId.has(id) ? [byId.get(id)!] : []));
}
