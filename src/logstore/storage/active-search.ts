// A search's part over the active fraction, run by its shard thread in slices, so that writes to the shard run
// between them (Shard.queryActive): the active fraction changes with every write, so only that thread may read it,
// and a task there is not preempted. The slices scan the dictionaries the plan needs (wildcards, free text,
// ranges: the part whose cost has no bound but search.timeout) a few hundred tokens at a time; the rest of the
// search (lists, aggregations, hits) then runs in one go over what the scans found.
//
// The search answers as of its start, whatever is written between slices: it reads the fraction through an
// ActivePrefix, the documents held when it started. The fraction only grows (documents are appended, never changed
// or renumbered); its posting lists are read from the segments inverted at the start (segments are never changed
// once made), so a document or a token added later is in none of them. A seal between slices leaves the fraction
// object as it was (the shard keeps its dictionary until the search ends); a whole batch is applied by one task,
// so a slice never sees half of one.
import { postings as P } from '../../native/index.js';
import type { Plan } from '../query/plan.js';
import { type ShardQuery, type ShardQueryResult, executeQuery } from '../search/execute.js';
import { type ScanLeaf, isScanLeaf, scanOf, union } from '../search/evaluate.js';
import { type ActiveFraction, firstAtLeast } from './active-fraction.js';
import type { Column, DocRef, FractionView, TimeOrder } from './fraction-view.js';
import type { Segment } from './invert.js';
import type { FieldTokens } from './sort-tokens.js';

/** Dictionary tokens matched between two readings of the clock (a token costs well under a microsecond to a few). */
const SCAN_CHUNK = 256;
/** Matched tokens whose lists are merged at a time. */
const UNION_CHUNK = 1024;

/** The active fraction as it was when a search started: its first `docCount` documents. */
export class ActivePrefix implements FractionView {
  readonly name: string;
  readonly docCount: number;
  readonly minTime: number;
  readonly maxTime: number;
  readonly timeOrdered: boolean;
  /** The posting lists of those documents (ActiveIndex.segmentsNow). */
  readonly segments: Segment[];
  /** Scans done in slices (ActiveSearch): their union, or null when the deadline passed during one. */
  readonly scans = new Map<Plan, Uint32Array | null>();
  private order: { order: Uint32Array; times: Float64Array; rank: Uint32Array } | null = null;

  constructor(readonly frac: ActiveFraction) {
    this.name = frac.name;
    this.docCount = frac.docCount;
    this.minTime = frac.minTime;
    this.maxTime = frac.maxTime;
    this.timeOrdered = frac.timeOrdered;
    this.segments = frac.index.segmentsNow();
  }

  /** Documents were added since the start (else every call goes to the fraction itself). */
  private get grown(): boolean {
    return this.frac.docCount !== this.docCount;
  }

  private get times(): Float64Array {
    return this.frac.times.subarray(0, this.docCount);
  }

  scanned(leaf: Plan): Uint32Array | null | undefined {
    return this.scans.get(leaf);
  }

  timeRange(from: number, to: number): [number, number] | null {
    if (!this.grown) return this.frac.timeRange(from, to);
    if (!this.timeOrdered) return null;
    const lo = firstAtLeast(this.times, from, false);
    return [lo, Math.max(lo, firstAtLeast(this.times, to, true))];
  }

  universe(from: number, to: number): Uint32Array {
    if (!this.grown) return this.frac.universe(from, to);
    const n = this.docCount;
    if (from <= this.minTime && to >= this.maxTime) return P.rangeOfIds(0, n);
    if (this.timeOrdered)
      return P.rangeOfIds(firstAtLeast(this.times, from, false), firstAtLeast(this.times, to, true));
    const { order, lo, hi } = this.byTime(from, to)!;
    return order.slice(lo, hi).sort();
  }

  /** The fraction's (time, id) order with the documents added since the start left out (computed once). */
  byTime(from: number, to: number): TimeOrder | null {
    if (this.timeOrdered) return null;
    if (!this.grown && !this.order) return this.frac.byTime(from, to);
    if (!this.order) {
      const full = this.frac.byTime(-Infinity, Infinity)!;
      const n = this.docCount;
      const order = new Uint32Array(n);
      const times = new Float64Array(n);
      const rank = new Uint32Array(n);
      let k = 0;
      for (let p = 0; p < full.order.length; p++) {
        const local = full.order[p]!;
        if (local >= n) continue;
        order[k] = local;
        times[k] = this.frac.time(local);
        rank[local] = k++;
      }
      this.order = { order, times, rank };
    }
    const { order, times, rank } = this.order;
    const lo = firstAtLeast(times, from, false);
    return { order, rank, lo, hi: Math.max(lo, firstAtLeast(times, to, true)) };
  }

  postings(field: string, token: string): Uint32Array {
    return this.frac.index.postings(field, token, this.segments);
  }

  postingsWhere(field: string, accept: (token: string) => boolean): Uint32Array[] {
    return this.frac.index.postingsWhere(field, accept, this.segments);
  }

  tokenLists(field: string): { tokens: string[]; lists: Uint32Array[] } {
    return this.frac.index.tokenLists(field, this.segments);
  }

  /** The column's ordinals of these documents (a value first seen later has an ordinal none of them uses). */
  column(field: string): Column | null {
    const c = this.frac.column(field);
    if (!c || !this.grown) return c;
    const ords =
      c.ords instanceof Uint32Array ? c.ords.subarray(0, this.docCount) : Array.from(c.ords).slice(0, this.docCount);
    return { tokens: c.tokens, ords, missing: c.missing };
  }

  time(local: number): number {
    return this.frac.time(local);
  }

  /** The times of these documents (aggregations by time bucket read them as the fraction's own do). */
  timeArray(): Float64Array {
    return this.times;
  }

  id(local: number): string {
    return this.frac.id(local);
  }

  find(id: string): number {
    const local = this.frac.find(id);
    return local < this.docCount ? local : -1;
  }

  data(locals: readonly number[]): Uint8Array[] {
    return this.frac.data(locals);
  }

  docRef(local: number): DocRef {
    return this.frac.docRef(local);
  }

  fields(): string[] {
    return this.frac.fields();
  }
}

/** One dictionary scan of the plan: its fields, read a range and a chunk at a time, and the token ids it matched. */
interface Scan {
  leaf: ScanLeaf;
  fields: string[];
  accept: (token: string) => boolean;
  /** The field being read (fields[f]), its range r, and where in it: token i, at character `at` of its text. */
  f: number;
  r: number;
  i: number;
  at: number;
  matched: number[];
  /** Lists merged so far (matched[0 .. merged)), a union per UNION_CHUNK tokens. */
  merged: number;
  parts: Uint32Array[];
}

/** A field's dictionary as a search reads it: ranges of DICT_RANGE.bytes places (or more), copied out when first read. */
interface Dict {
  /** Where places ended at the search's first read of the field: tokens past it came later (their lists are empty). */
  end: number;
  step: number;
  ranges: (FieldTokens | undefined)[];
}

/**
 * Places (key bytes, for the addon's dictionaries) of one copy of a field's dictionary: a field of 300 000 tokens of
 * 64 bytes took 0.4 s to copy out whole on a loaded machine. A range is a 16th of the dictionary when that is more
 * (each copy walks the field's whole hash table to pick the range's tokens). An object: tests make the ranges small.
 */
export const DICT_RANGE = { bytes: 1 << 20 };

/**
 * A search's part over the active fraction, run in slices (step) and then answered (result): executeQuery over
 * the fraction as it was at the start, with the dictionary scans done by the slices.
 */
export class ActiveSearch {
  readonly view: ActivePrefix;
  private readonly scans: Scan[] = [];
  private next = 0;
  /** Dictionaries copied out for this search, range by range (several leaves often scan the same field). */
  private readonly dicts = new Map<string, Dict | null>();
  private readonly deadline: number;

  constructor(
    frac: ActiveFraction,
    readonly q: ShardQuery,
  ) {
    this.view = new ActivePrefix(frac);
    this.deadline = q.deadline ?? Infinity;
    const seen = new Set<Plan>();
    const walk = (p: Plan): void => {
      if (isScanLeaf(p)) {
        if (seen.has(p)) return;
        seen.add(p);
        const { fields, accept } = scanOf(p, this.view);
        this.scans.push({ leaf: p, fields, accept, f: 0, r: 0, i: 0, at: 0, matched: [], merged: 0, parts: [] });
      } else if (p.op === 'and' || p.op === 'or') p.items.forEach(walk);
      else if (p.op === 'not') walk(p.inner);
    };
    // A plain "everything in the range" (no aggregation, no histogram) reads no dictionary.
    walk(q.plan);
  }

  /** A field's dictionary for this search (null: no token), its end fixed at the first read. */
  private dictionary(field: string): Dict | null {
    let d = this.dicts.get(field);
    if (d === undefined) {
      const at = this.view.frac.index.dictionaryIn(field, 0, 0);
      d = at ? { end: at.end, step: Math.max(DICT_RANGE.bytes, Math.ceil(at.end / 16)), ranges: [] } : null;
      this.dicts.set(field, d);
    }
    return d;
  }

  /** Range r of a field's dictionary, copied out at its first read. */
  private range(field: string, d: Dict, r: number): FieldTokens {
    let t = d.ranges[r];
    if (!t) {
      const from = r * d.step;
      t = d.ranges[r] = this.view.frac.index.dictionaryIn(field, from, Math.min(d.end, from + d.step))!.tokens;
    }
    return t;
  }

  /**
   * Scans until `until` (epoch ms; at least one chunk of work) or every scan is done: true when done. Past the
   * search's deadline every scan left is marked so (evaluate() then stops the search as it would have).
   */
  step(until: number): boolean {
    for (;;) {
      const s = this.scans[this.next];
      if (!s) return true;
      const now = Date.now();
      if (now > this.deadline) {
        for (; this.next < this.scans.length; this.next++) this.view.scans.set(this.scans[this.next]!.leaf, null);
        return true;
      }
      this.chunk(s);
      if (Date.now() >= until && this.next < this.scans.length) return false;
    }
  }

  /** One chunk of scan `s`: dictionary tokens, or lists of matched tokens to merge; moves to the next scan at its end. */
  private chunk(s: Scan): void {
    const view = this.view;
    if (s.f < s.fields.length) {
      const field = s.fields[s.f]!;
      const d = this.dictionary(field);
      if (!d || s.r * d.step >= d.end) {
        s.f++;
        s.r = 0;
        return;
      }
      const { text, lens, ids } = this.range(field, d, s.r);
      const end = Math.min(lens.length, s.i + SCAN_CHUNK);
      let at = s.at;
      for (let i = s.i; i < end; i++) {
        const len = lens[i]!;
        if (s.accept(text.slice(at, at + len))) s.matched.push(ids[i]!);
        at += len;
      }
      s.i = end;
      s.at = at;
      if (end === lens.length) {
        s.r++;
        s.i = 0;
        s.at = 0;
      }
      return;
    }
    const index = view.frac.index;
    if (s.merged < s.matched.length) {
      const end = Math.min(s.matched.length, s.merged + UNION_CHUNK);
      const lists: Uint32Array[] = [];
      for (let k = s.merged; k < end; k++) lists.push(index.listOf(s.matched[k]!, view.segments));
      s.parts.push(union(lists, view.docCount));
      s.merged = end;
      if (end < s.matched.length) return;
    }
    view.scans.set(s.leaf, union(s.parts, view.docCount));
    this.next++;
  }

  /** The part's answer (after step() returned true): executeQuery over the fraction as it was at the start. */
  result(): ShardQueryResult {
    return executeQuery([this.view], this.q);
  }
}
