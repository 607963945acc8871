// Evaluates a query plan over one fraction: posting-list intersections (and), unions (or), differences (not).
import { postings as P } from '../../native/index.js';
import { lowerBound } from '../../native/postings.js';
import { EXISTS_FIELD } from '../mapping.js';
import type { Plan } from '../query/plan.js';
import { compileGlob, globMatches } from '../query/glob.js';
import type { FractionView } from '../storage/fraction-view.js';
import { type Deadline, NO_DEADLINE } from './deadline.js';

function union(lists: Uint32Array[], universe: number): Uint32Array {
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

function rangeAccept(p: Extract<Plan, { op: 'range' }>): (tok: string) => boolean {
  if (p.numeric) {
    const lo = p.lo === null ? -Infinity : Number(p.lo);
    const hi = p.hi === null ? Infinity : Number(p.hi);
    return (tok) => {
      if (tok === '' || !/^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/.test(tok)) return false;
      const v = Number(tok);
      return (p.loIncl ? v >= lo : v > lo) && (p.hiIncl ? v <= hi : v < hi);
    };
  }
  return (tok) =>
    (p.lo === null || (p.loIncl ? tok >= p.lo : tok > p.lo)) &&
    (p.hi === null || (p.hiIncl ? tok <= p.hi : tok < p.hi));
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
    case 'pattern': {
      const glob = compileGlob(plan.segments);
      const prefix = plan.segments[0] || undefined;
      const lists = view.postingsWhere(plan.field, (t) => (deadline.tick(), globMatches(glob, t)), prefix);
      return within(union(lists, view.docCount), universe, view);
    }
    case 'anyField': {
      const glob = compileGlob(plan.segments);
      const accept = (t: string) => (deadline.tick(), globMatches(glob, t));
      const lists: Uint32Array[] = [];
      for (const field of view.fields()) if (field !== EXISTS_FIELD) lists.push(...view.postingsWhere(field, accept));
      return within(union(lists, view.docCount), universe, view);
    }
    case 'range': {
      const inRange = rangeAccept(plan);
      const accept = (t: string) => (deadline.tick(), inRange(t));
      const lists =
        plan.numeric || plan.lo === null
          ? view.postingsWhere(plan.field, accept)
          : view.postingsWhere(plan.field, accept, plan.lo, plan.hi ?? '\uffff');
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
