// Query execution over fractions, shared by single mode and store mode: evaluate the plan per fraction, count,
// aggregate, bucket by time and keep the best hits (packed as bytes for the trip out of the shard's thread).
import { idTime } from '../doc-time.js';
import { postings as P } from '../../native/index.js';
import type { FieldsPipe } from '../query/ast.js';
import type { Plan } from '../query/plan.js';
import {
  type AggPartial,
  type AggSpec,
  aggregateFraction,
  emptyPartial,
  mergePartials,
} from '../aggregate/aggregate.js';
import type { DocRun, FractionView, TimeOrder } from '../storage/fraction-view.js';
import { HIT_BYTES } from '../../native/hit-writer.js';
import { lowerBound } from '../../native/postings.js';
import { Deadline, NO_DEADLINE, SearchTimedOut } from './deadline.js';
import { type Universe, evaluate, universeSize } from './evaluate.js';
import { applyPipes, hitJson } from './hit-json.js';
import { HitWriter, type PackedHits, type ShardHit } from './packed-hits.js';

export type { PackedHits, ShardHit };

/** Decodes stored bytes without copying them first. */
function utf8(b: Uint8Array): string {
  return Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('utf8');
}

export interface ShardQuery {
  plan: Plan;
  from: number;
  to: number;
  /** offset + size: how many of the best documents to return. */
  limit: number;
  order: 'desc' | 'asc';
  aggs?: AggSpec[];
  histInterval?: number;
  pipes?: FieldsPipe[];
  /** false: the total may count only the fractions read; fractions that cannot hold a better hit are skipped. */
  withTotal?: boolean;
  /**
   * Ids of documents to leave out (storage/forgotten.ts: a proxy's batch stored here and then by another
   * shard), those whose time is in [from, to]; absent when none.
   */
  forgotten?: string[];
  /**
   * Epoch milliseconds after which the search stops where it stands and answers what it found, timedOut
   * (search.timeout); absent: no deadline.
   */
  deadline?: number;
}

/**
 * One of the best hits so far. Its id (a hex string) is made only when a tie on time needs it or the hit is written.
 * A hit of a part run elsewhere (RunPart) has no view: it is hit `local` of `packed`, written already.
 */
interface Cand {
  time: number;
  id: string | null;
  view: FractionView | null;
  local: number;
  packed?: PackedHits;
}

const idOf = (c: Cand) => (c.id ??= c.view!.id(c.local));

/**
 * One fraction's part of a search, run by another thread: the active fraction, which only its shard thread can
 * read, while the sealed ones are read elsewhere (storage/search-worker.ts). executeQuery takes it in the place
 * the fraction's time bounds give it among the others, as if it had read the fraction itself there: the same
 * order of totals, aggregation partials, histogram buckets and hits, and the same skipping without a total.
 */
export interface RunPart {
  minTime: number;
  maxTime: number;
  /** executeQuery over that fraction alone (it must not have timed out). */
  result: ShardQueryResult;
}

function isRunPart(v: FractionView | RunPart): v is RunPart {
  return (v as RunPart).result !== undefined;
}

export interface ShardQueryResult {
  total: number;
  hits: PackedHits;
  aggs: AggPartial[];
  hist: [ts: number, count: number][];
  fractionsRead: number;
  /** The deadline passed: fractions were left unread, so total, aggregations and hits are partial. */
  timedOut?: boolean;
  /** Sealed fractions left out because they were found damaged (and quarantined) while this query read them. */
  damaged?: string[];
}

/** The `k` newest (or oldest) of `matches` in a fraction whose ids are not time-ordered: a bounded heap. */
export function topByTime(view: FractionView, matches: Uint32Array, k: number, desc: boolean): number[] {
  // Keys are oriented so that "better" is larger; the heap root is the worst kept one.
  const key = (local: number) => (desc ? view.time(local) : -view.time(local));
  const heap: number[] = [];
  const less = (a: number, b: number) => key(a) < key(b) || (key(a) === key(b) && (desc ? a < b : a > b));
  for (let i = 0; i < matches.length; i++) {
    const x = matches[i]!;
    if (heap.length < k) {
      heap.push(x);
      for (let c = heap.length - 1; c > 0;) {
        const p = (c - 1) >> 1;
        if (!less(heap[c]!, heap[p]!)) break;
        [heap[c], heap[p]] = [heap[p]!, heap[c]!];
        c = p;
      }
    } else if (k > 0 && less(heap[0]!, x)) {
      heap[0] = x;
      for (let p = 0; ;) {
        const l = 2 * p + 1;
        const r = l + 1;
        let m = p;
        if (l < heap.length && less(heap[l]!, heap[m]!)) m = l;
        if (r < heap.length && less(heap[r]!, heap[m]!)) m = r;
        if (m === p) break;
        [heap[m], heap[p]] = [heap[p]!, heap[m]!];
        p = m;
      }
    }
  }
  return heap.sort((a, b) => (less(a, b) ? 1 : less(b, a) ? -1 : 0));
}

/**
 * The `k` newest (or oldest) of `matches` through a fraction's time order, best first. Few matches: their
 * positions in that order, sorted (a typed-array sort, no comparator). Many: the positions marked in a bitmap,
 * read from the newest (oldest) end until `k` are found, which stops early as matches are dense.
 */
export function topByRank(t: TimeOrder, matches: Uint32Array, k: number, desc: boolean): Uint32Array {
  const n = Math.min(k, matches.length);
  const out = new Uint32Array(n);
  if (matches.length < 4096) {
    const pos = new Uint32Array(matches.length);
    for (let i = 0; i < matches.length; i++) pos[i] = t.rank[matches[i]!]!;
    pos.sort();
    for (let i = 0; i < n; i++) out[i] = t.order[pos[desc ? pos.length - 1 - i : i]!]!;
    return out;
  }
  const marked = new Uint8Array(t.order.length);
  for (let i = 0; i < matches.length; i++) marked[t.rank[matches[i]!]!] = 1;
  let o = 0;
  if (desc)
    for (let p = t.order.length - 1; o < n; p--) {
      if (marked[p]) out[o++] = t.order[p]!;
    }
  else
    for (let p = 0; o < n; p++) {
      if (marked[p]) out[o++] = t.order[p]!;
    }
  return out;
}

/**
 * Runs a query over fractions (those that overlap [from, to]): matches, total, aggregation partials, histogram
 * and the best `limit` hits, packed. Single mode and store mode both reach it through a Shard.
 */
export function executeQuery(overlapping: FractionView[], q: ShardQuery, part?: RunPart): ShardQueryResult {
  const desc = q.order !== 'asc';
  // Newest fractions first (oldest first for "asc"), so that without a total the rest can be skipped. A part run
  // elsewhere comes last before the sort, where Shard.views puts the active fraction.
  const all: (FractionView | RunPart)[] = part ? [...overlapping, part] : overlapping;
  const views = all.sort((a, b) => (desc ? b.maxTime - a.maxTime : a.minTime - b.minTime));
  const aggs = (q.aggs ?? []).map(() => emptyPartial());
  const hist = new Map<number, number>();
  let total = 0;
  let read = 0;
  let cands: Cand[] = [];
  const byId = (a: Cand, b: Cand) => {
    const x = idOf(a);
    const y = idOf(b);
    return x > y ? 1 : x < y ? -1 : 0;
  };
  const better = (a: Cand, b: Cand) => (desc ? b.time - a.time || byId(b, a) : a.time - b.time || byId(a, b));
  const take = (view: FractionView, picked: ArrayLike<number>, inOrder = view.timeOrdered) => {
    if (inOrder) {
      // Both lists are in order: a merge keeps the best `limit`, making a candidate only of a pick that stays
      // (the same order as the stable sort below: on a full tie the earlier candidate first).
      const old = cands;
      const out: Cand[] = [];
      let i = 0;
      let j = 0;
      let pick: Cand | null = null;
      while (out.length < q.limit) {
        if (!pick && j < picked.length) {
          const local = picked[j]!;
          pick = { time: view.time(local), id: null, view, local };
        }
        if (i < old.length && (!pick || better(old[i]!, pick) <= 0)) out.push(old[i++]!);
        else if (pick) {
          out.push(pick);
          pick = null;
          j++;
        } else break;
      }
      cands = out;
      return;
    }
    const fresh = cands.length === 0;
    for (let i = 0; i < picked.length; i++) {
      const local = picked[i]!;
      cands.push({ time: view.time(local), id: null, view, local });
    }
    // Hits of one fraction come in order already (time-ordered ids, or picked through the fraction's time order).
    if (!fresh || !inOrder) cands.sort(better);
    if (cands.length > q.limit) cands = cands.slice(0, q.limit);
  };
  /** The best `limit` of the documents lo .. hi - 1 of a time-ordered fraction: its newest or oldest ones. */
  const takeRange = (view: FractionView, lo: number, hi: number) => {
    const k = Math.min(q.limit, hi - lo);
    if (k <= 0) return;
    const picked = new Uint32Array(k);
    for (let i = 0; i < k; i++) picked[i] = desc ? hi - 1 - i : lo + i;
    take(view, picked);
  };
  /** As take(), for hits already made candidates (a part run elsewhere), in order. */
  const takeCands = (picked: Cand[]) => {
    const old = cands;
    const out: Cand[] = [];
    let i = 0;
    let j = 0;
    while (out.length < q.limit) {
      if (i < old.length && (j >= picked.length || better(old[i]!, picked[j]!) <= 0)) out.push(old[i++]!);
      else if (j < picked.length) out.push(picked[j++]!);
      else break;
    }
    cands = out;
  };
  const counting = q.withTotal !== false || !!q.aggs?.length || !!(q.histInterval && q.histInterval > 0);
  const forgotten = q.forgotten?.length ? q.forgotten : null;
  // "Everything in the time range" on time-ordered ids is an id range: nothing to materialize.
  const plain = q.plan.op === 'all' && !q.aggs?.length && !(q.histInterval && q.histInterval > 0);
  const deadline = q.deadline === undefined ? NO_DEADLINE : new Deadline(q.deadline);
  // No aggregation or histogram: only the total and the best hits are asked of a fraction's matches.
  const simple = !q.aggs?.length && !(q.histInterval && q.histInterval > 0);
  let timedOut = false;
  for (const view of views) {
    // A fraction's matches are counted only once it is evaluated whole: a deadline passing inside
    // evaluate() leaves nothing of that fraction behind.
    try {
      deadline.check();
    } catch (err) {
      if (!(err instanceof SearchTimedOut)) throw err;
      timedOut = true;
      break;
    }
    if (!counting && cands.length >= q.limit) {
      const worst = cands[cands.length - 1];
      if (q.limit === 0 || (worst && (desc ? view.maxTime < worst.time : view.minTime > worst.time))) continue;
    }
    if (isRunPart(view)) {
      const r = view.result;
      read += r.fractionsRead;
      total += r.total;
      q.aggs?.forEach((_, i) => mergePartials(aggs[i]!, r.aggs[i]!));
      for (const [ts, c] of r.hist) hist.set(ts, (hist.get(ts) ?? 0) + c);
      const n = r.hits.times.length;
      if (n > 0) {
        const picked: Cand[] = [];
        for (let i = 0; i < n; i++)
          picked.push({
            time: r.hits.times[i]!,
            id: r.hits.ids.slice(24 * i, 24 * i + 24),
            view: null,
            local: i,
            packed: r.hits,
          });
        takeCands(picked);
      }
      continue;
    }
    read++;
    // A fraction holding forgotten documents takes the general path, which leaves them out of the matches.
    const gone = forgotten ? forgottenLocals(view, forgotten) : null;
    const range = plain && !gone ? view.timeRange(q.from, q.to) : null;
    if (range) {
      const [lo, hi] = range;
      total += hi - lo;
      takeRange(view, lo, hi);
      continue;
    }
    const sorted = plain || !view.timeOrdered ? view.byTime?.(q.from, q.to) : null;
    if (plain && sorted && !gone) {
      const { order, lo, hi } = sorted;
      total += hi - lo;
      const k = Math.min(q.limit, hi - lo);
      if (k > 0) take(view, desc ? order.slice(hi - k, hi).reverse() : order.subarray(lo, lo + k), true);
      continue;
    }
    const ids = view.timeRange(q.from, q.to);
    const universe: Universe = ids ? { lo: ids[0], hi: ids[1] } : view.universe(q.from, q.to);
    if (universeSize(universe) === 0) continue;
    // Everything in an id range (aggregations or a histogram over "*"): the range itself, never a list of its ids
    // (at 10 M documents those lists were most of an aggregation's time and garbage).
    if (q.plan.op === 'all' && !gone && view.timeOrdered && !(universe instanceof Uint32Array)) {
      const { lo, hi } = universe;
      total += hi - lo;
      q.aggs?.forEach((spec, i) => aggregateFraction(view, { lo, hi }, spec, aggs[i]!));
      if (q.histInterval && q.histInterval > 0) {
        const w = q.histInterval;
        for (let d = lo; d < hi; d++) {
          const ts = Math.floor(view.time(d) / w) * w;
          hist.set(ts, (hist.get(ts) ?? 0) + 1);
        }
      }
      takeRange(view, lo, hi);
      continue;
    }
    // A field's tokens ("status:in(500,400,403)") on a sealed fraction where a document holds at most one token of
    // it: the lists are disjoint, so the total adds their lengths in the id range and the best hits are merged from
    // their ends; no union of the lists is made.
    const disjoint =
      simple && !gone && view.timeOrdered && !(universe instanceof Uint32Array) ? disjointIn(q.plan, view) : null;
    if (disjoint) {
      const { lo, hi } = universe as { lo: number; hi: number };
      // The whole fraction: the dictionary's counts make the total, and the lists are read only when the fraction
      // may hold one of the best hits (at 10 M documents most fractions are counted without a read).
      const counted = lo <= 0 && hi >= view.docCount && view.postingsCount !== undefined;
      if (counted) {
        let n = 0;
        for (const token of disjoint.tokens) n += view.postingsCount!(disjoint.field, token);
        total += n;
        const worst = cands.length >= q.limit ? cands[cands.length - 1] : undefined;
        const beaten = q.limit <= 0 || (worst && (desc ? view.maxTime < worst.time : view.minTime > worst.time));
        if (n === 0 || beaten) continue;
      }
      const lists: Uint32Array[] = [];
      let n = 0;
      for (const token of disjoint.tokens) {
        const l = view.postings(disjoint.field, token);
        const part = l.subarray(lowerBound(l, lo), lowerBound(l, hi));
        if (part.length === 0) continue;
        lists.push(part);
        n += part.length;
      }
      if (!counted) total += n;
      if (q.limit > 0 && n > 0) take(view, bestOfDisjoint(lists, Math.min(q.limit, n), desc));
      continue;
    }
    let evaluated: Uint32Array;
    try {
      evaluated = evaluate(q.plan, view, universe, deadline);
    } catch (err) {
      if (!(err instanceof SearchTimedOut)) throw err;
      timedOut = true;
      break;
    }
    const matches = gone ? P.differencePostings(evaluated, gone) : evaluated;
    total += matches.length;
    q.aggs?.forEach((spec, i) => aggregateFraction(view, matches, spec, aggs[i]!));
    if (q.histInterval && q.histInterval > 0) {
      const w = q.histInterval;
      for (let i = 0; i < matches.length; i++) {
        const ts = Math.floor(view.time(matches[i]!) / w) * w;
        hist.set(ts, (hist.get(ts) ?? 0) + 1);
      }
    }
    if (q.limit <= 0 || matches.length === 0) continue;
    let picked: ArrayLike<number>;
    if (view.timeOrdered) {
      const k = Math.min(q.limit, matches.length);
      picked = desc ? matches.slice(matches.length - k).reverse() : matches.subarray(0, k);
    } else if (sorted) {
      take(view, topByRank(sorted, matches, q.limit, desc), true);
      continue;
    } else picked = topByTime(view, matches, q.limit, desc);
    take(view, picked);
  }
  const result: ShardQueryResult = {
    total,
    hits: writeCands(cands, q.pipes ?? []),
    aggs,
    hist: [...hist],
    fractionsRead: read,
  };
  if (timedOut) result.timedOut = true;
  return result;
}

/**
 * The field and distinct tokens of a plan that is an or of exact tokens of one field (an in(...)), when `view`
 * knows that a document holds at most one token of that field (its lists are disjoint); else null.
 */
export function disjointIn(plan: Plan, view: FractionView): { field: string; tokens: string[] } | null {
  if (plan.op !== 'or' || !view.singleValued) return null;
  let field: string | null = null;
  const tokens = new Set<string>();
  for (const it of plan.items) {
    if (it.op !== 'token' || (field !== null && it.field !== field)) return null;
    field = it.field;
    tokens.add(it.token);
  }
  if (field === null || !view.singleValued(field)) return null;
  return { field, tokens: [...tokens] };
}

/**
 * The `k` highest (desc) or lowest ids of disjoint ascending lists, best first: a merge from their ends (a few
 * lists: each step compares their heads).
 */
export function bestOfDisjoint(lists: Uint32Array[], k: number, desc: boolean): Uint32Array {
  const out = new Uint32Array(k);
  const at = lists.map((l) => (desc ? l.length - 1 : 0));
  for (let o = 0; o < k; o++) {
    let best = -1;
    let bestId = 0;
    for (let i = 0; i < lists.length; i++) {
      const p = at[i]!;
      const l = lists[i]!;
      if (p < 0 || p >= l.length) continue;
      const id = l[p]!;
      if (best < 0 || (desc ? id > bestId : id < bestId)) {
        best = i;
        bestId = id;
      }
    }
    if (best < 0) return out.subarray(0, o);
    out[o] = bestId;
    at[best] = at[best]! + (desc ? -1 : 1);
  }
  return out;
}

/** The local ids of the forgotten documents a fraction holds, ascending, or null when it holds none. */
function forgottenLocals(view: FractionView, ids: readonly string[]): Uint32Array | null {
  const out: number[] = [];
  for (const id of ids) {
    const t = idTime(id);
    if (t === null || t < view.minTime || t > view.maxTime) continue;
    const local = view.find(id);
    if (local >= 0) out.push(local);
  }
  return out.length ? Uint32Array.from(out).sort() : null;
}

/** A run of best hits that are neighbours in one sealed block: cands[at .. at + count), locals stepping by `step`. */
interface HitRun {
  at: number;
  count: number;
  step: 1 | -1;
  run: DocRun;
}

/**
 * The best hits, packed. Without pipes, hits that are neighbours in one sealed block (a time range reads whole
 * stretches of them) are written per run by one native call, into a buffer sized for them up front.
 */
function writeCands(cands: Cand[], pipes: FieldsPipe[]): PackedHits {
  const runs: HitRun[] = [];
  let bytes = 0;
  let alone = 0;
  for (let i = 0; i < cands.length && pipes.length === 0;) {
    const c = cands[i]!;
    const r = c.view?.docRun?.(c.local);
    if (!r || !r.utf8) {
      alone++;
      i++;
      continue;
    }
    const next = cands[i + 1];
    const step: 1 | -1 = next && next.view === c.view && next.local === c.local - 1 ? -1 : 1;
    let n = 1;
    for (; i + n < cands.length; n++) {
      const d = cands[i + n]!;
      const l = c.local + n * step;
      if (d.view !== c.view || d.local !== l || l < r.first || l >= r.end) break;
    }
    const b = c.local - r.first;
    const e = b + (n - 1) * step;
    bytes += r.offsets[Math.max(b, e) + 1]! - r.offsets[Math.min(b, e)]! + HIT_BYTES * n;
    // The object is reused by the view's next call: keep a copy.
    runs.push({
      at: i,
      count: n,
      step,
      run: { raw: r.raw, offsets: r.offsets, first: r.first, end: r.end, utf8: r.utf8, ids: r.ids, times: r.times },
    });
    i += n;
  }
  if (pipes.length) alone = cands.length;
  const w = new HitWriter(cands.length, bytes + alone * 512);
  let k = 0;
  for (let i = 0; i < cands.length;) {
    const run = runs[k];
    if (run && run.at === i) {
      k++;
      if (w.addRun(run.run, cands[i]!.local, run.count, run.step)) {
        i += run.count;
        continue;
      }
    }
    const end = run && run.at === i ? i + run.count : i + 1;
    for (; i < end; i++) {
      const c = cands[i]!;
      if (c.packed) {
        const p = c.packed;
        w.addJson(c.id!, c.time, p.json.subarray(p.offs[c.local]!, p.offs[c.local + 1]!));
        continue;
      }
      const r = c.view!.docRef(c.local);
      if (pipes.length) w.addText(idOf(c), c.time, applyPipes(r.buf.toString('utf8', r.start, r.end), pipes));
      else w.addRef(idOf(c), c.time, r.buf, r.start, r.end, r.utf8 === true);
    }
  }
  return w.finish();
}

/** Documents by id, in the order asked; absent ids are left out. `viewsAt(t)` lists the fractions holding time t. */
export function fetchByIds(ids: string[], pipes: FieldsPipe[], viewsAt: (time: number) => FractionView[]): ShardHit[] {
  const out: ShardHit[] = [];
  for (const id of ids) {
    const t = idTime(id);
    if (t === null) continue;
    for (const view of viewsAt(t)) {
      const local = view.find(id);
      if (local < 0) continue;
      const time = view.time(local);
      out.push({ id, time, json: hitJson(id, time, utf8(view.data([local])[0]!), pipes) });
      break;
    }
  }
  return out;
}
