// Evaluates a query plan over one fraction: posting-list intersections (and), unions (or), differences (not).
import { postings as P } from '../../native/index.js';
import { lowerBound } from '../../native/postings.js';
import { EXISTS_FIELD } from '../mapping.js';
import { type Plan, rangeNumber } from '../query/plan.js';
import { compileGlob, globMatches } from '../query/glob.js';
import type { FractionView } from '../storage/fraction-view.js';
import type { NumericBounds } from '../storage/numeric-column.js';
import { type Deadline, NO_DEADLINE, SearchTimedOut } from './deadline.js';

/** The ids in any of `lists` (each ascending), ascending; `universe` is the fraction's document count. */
export function union(lists: Uint32Array[], universe: number): Uint32Array {
  if (lists.length === 0) return new Uint32Array(0);
  if (lists.length === 1) return lists[0]!;
  let total = 0;
  for (const l of lists) total += l.length;
  // A bitmap costs the whole universe; a few short lists merge pairwise for less.
  if (lists.length <= 8 && total * 8 < universe) {
    let acc = lists[0]!;
    for (let i = 1; i < lists.length; i++) acc = P.unionPostings(acc, lists[i]!);
    return acc;
  }
  return P.unionManyPostings(lists, universe);
}

/** A numeric range's bounds as numbers (-Infinity, Infinity when open). */
function numericBounds(p: Extract<Plan, { op: 'range' }>): NumericBounds {
  return {
    lo: p.lo === null ? -Infinity : Number(p.lo),
    hi: p.hi === null ? Infinity : Number(p.hi),
    loIncl: p.loIncl,
    hiIncl: p.hiIncl,
  };
}

function rangeAccept(p: Extract<Plan, { op: 'range' }>): (tok: string) => boolean {
  if (p.numeric) {
    const { lo, hi } = numericBounds(p);
    return (tok) => {
      const v = rangeNumber(tok);
      return (p.loIncl ? v >= lo : v > lo) && (p.hiIncl ? v <= hi : v < hi);
    };
  }
  return (tok) =>
    (p.lo === null || (p.loIncl ? tok >= p.lo : tok > p.lo)) &&
    (p.hi === null || (p.hiIncl ? tok <= p.hi : tok < p.hi));
}

/** A plan leaf that scans dictionaries: what a scan of its fields accepts, and the narrowing of sealed scans. */
export type ScanLeaf = Extract<Plan, { op: 'pattern' | 'anyField' | 'range' }>;

export function isScanLeaf(p: Plan): p is ScanLeaf {
  return p.op === 'pattern' || p.op === 'anyField' || p.op === 'range';
}

/**
 * The dictionary scan of a leaf over `view`: the fields it reads (every field but `_exists_` for anyField), which
 * tokens it accepts, and the prefix / upper bound a sorted dictionary may narrow the scan to.
 */
export function scanOf(
  plan: ScanLeaf,
  view: FractionView,
): { fields: string[]; accept: (token: string) => boolean; prefix?: string; upTo?: string } {
  switch (plan.op) {
    case 'pattern': {
      const glob = compileGlob(plan.segments);
      return { fields: [plan.field], accept: (t) => globMatches(glob, t), prefix: plan.segments[0] || undefined };
    }
    case 'anyField': {
      const glob = compileGlob(plan.segments);
      return { fields: view.fields().filter((f) => f !== EXISTS_FIELD), accept: (t) => globMatches(glob, t) };
    }
    case 'range': {
      const accept = rangeAccept(plan);
      return plan.numeric || plan.lo === null
        ? { fields: [plan.field], accept }
        : { fields: [plan.field], accept, prefix: plan.lo, upTo: plan.hi ?? '\uffff' };
    }
  }
}

/** The ids a query may match: a list, or the id range [lo, hi) of a time-ordered fraction (never built). */
export type Universe = Uint32Array | { lo: number; hi: number };

export function universeSize(u: Universe): number {
  return u instanceof Uint32Array ? u.length : Math.max(0, u.hi - u.lo);
}

function materialize(u: Universe): Uint32Array {
  return u instanceof Uint32Array ? u : P.rangeOfIds(u.lo, u.hi);
}

/** ids ∩ universe: a slice when the universe is an id range (free for the whole fraction), else an intersection. */
function within(ids: Uint32Array, universe: Universe, view: FractionView): Uint32Array {
  if (universe instanceof Uint32Array)
    return universe.length === view.docCount ? ids : P.intersectPostings(ids, universe);
  if (universe.lo <= 0 && universe.hi >= view.docCount) return ids;
  return ids.subarray(lowerBound(ids, universe.lo), lowerBound(ids, universe.hi));
}

/**
 * Matching local ids of `plan`, ascending; `universe` (the ids in the time range) bounds "all" and "not".
 * Dictionary scans and every step through the plan tick `deadline` (SearchTimedOut once it has passed).
 */
export function evaluate(
  plan: Plan,
  view: FractionView,
  universe: Universe,
  deadline: Deadline = NO_DEADLINE,
): Uint32Array {
  deadline.tick();
  switch (plan.op) {
    case 'all':
      return materialize(universe);
    case 'none':
      return new Uint32Array(0);
    case 'token':
      return within(view.postings(plan.field, plan.token), universe, view);
    case 'pattern':
    case 'anyField':
    case 'range': {
      // Scanned already (the active fraction's scans run in slices: storage/active-search.ts); null: past the deadline.
      const done = view.scanned?.(plan);
      if (done === null) throw new SearchTimedOut();
      if (done) return within(done, universe, view);
      if (plan.op === 'range' && plan.numeric && view.numericRange) {
        const from = universe instanceof Uint32Array ? (universe[0] ?? 0) : universe.lo;
        const to = universe instanceof Uint32Array ? (universe[universe.length - 1] ?? -1) + 1 : universe.hi;
        const r = view.numericRange(plan.field, numericBounds(plan), from, to, () => deadline.tick());
        return within(r instanceof Uint32Array ? r : union(r, view.docCount), universe, view);
      }
      const scan = scanOf(plan, view);
      const accept = (t: string) => (deadline.tick(), scan.accept(t));
      const lists: Uint32Array[] = [];
      for (const field of scan.fields)
        for (const l of view.postingsWhere(field, accept, scan.prefix, scan.upTo)) lists.push(l);
      return within(union(lists, view.docCount), universe, view);
    }
    case 'and': {
      // Cheap exact terms first shrink the set the others intersect with.
      const items = [...plan.items].sort((a, b) => weight(a) - weight(b));
      let acc: Universe = universe;
      for (const it of items) {
        if (universeSize(acc) === 0) break;
        acc =
          it.op === 'not'
            ? P.differencePostings(materialize(acc), evaluate(it.inner, view, acc, deadline))
            : evaluate(it, view, acc, deadline);
      }
      return materialize(acc);
    }
    case 'or':
      return union(
        plan.items.map((it) => evaluate(it, view, universe, deadline)),
        view.docCount,
      );
    case 'not':
      return P.differencePostings(materialize(universe), evaluate(plan.inner, view, universe, deadline));
  }
}

function weight(p: Plan): number {
  switch (p.op) {
    case 'token':
      return 0;
    case 'and':
      return 1;
    case 'or':
      return 2;
    case 'pattern':
    case 'range':
      return 3;
    case 'anyField':
      return 4;
    default:
      return 4;
  }
}
