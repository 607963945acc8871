// The HTTP thread's own reader of one shard's sealed fractions (immutable files): plain time-range searches
// (no filter, aggregation or histogram) are answered here without a hop to the shard thread, when the shard's
// active fraction holds nothing in the range. The shard state's generation guards every read.
import path from 'node:path';
import Database from 'better-sqlite3';
import { type ShardQuery, type ShardQueryResult, executeQuery } from '../search/execute.js';
import { SealedFraction } from './sealed-fraction.js';
import type { ShardStateReader } from './shard-state.js';
import { quarantinedRows } from './quarantine.js';

/** Sealed fractions kept open per shard on the HTTP thread (each holds its times, ids and a few blocks). */
const OPEN_FRACTIONS = 8;

interface SealedRow {
  name: string;
  min_time: number;
  max_time: number;
}

/** Whether the HTTP thread may run `q` itself: a time range in time order, nothing to count per document. */
export function readsOnlyTimeRange(q: ShardQuery): boolean {
  return q.plan.op === 'all' && !q.aggs?.length && !(q.histInterval && q.histInterval > 0);
}

export class SealedReader {
  private db: Database.Database | null = null;
  private rows: SealedRow[] = [];
  /** The generation `rows` were read at (-1: to be read). */
  private rowsGen = -1;
  /** Time ranges of quarantined fractions: a search over one is answered by the shard thread, which marks it partial. */
  private setAside: SealedRow[] = [];
  private readonly open = new Map<string, SealedFraction>();
  /** Queries answered here, and reads that failed and went to the shard thread (for tests). */
  answered = 0;
  fallbacks = 0;

  constructor(
    private readonly dir: string,
    private readonly state: ShardStateReader,
  ) {}

  /** The shard's answer from its sealed fractions, or null when the shard thread must answer it. */
  query(q: ShardQuery): ShardQueryResult | null {
    const read = this.begin(q);
    if (!read) return null;
    let result: ShardQueryResult;
    try {
      result = executeQuery(read.views, q);
    } catch {
      this.failed();
      return null;
    }
    return this.settle(read.gen) ? result : null;
  }

  /**
   * The sealed fractions `q` reads in this shard and the generation they were listed at; null when the shard
   * thread must answer (not a plain time range, the active fraction overlaps it, the shard is changing, or the
   * catalog could not be read). After reading them, call settle(gen), or failed() when the read threw.
   */
  begin(q: ShardQuery): { gen: number; views: SealedFraction[] } | null {
    if (!readsOnlyTimeRange(q)) return null;
    const gen = this.state.generation();
    if ((gen & 1) === 1 || this.state.activeOverlaps(q.from, q.to)) return null;
    try {
      if (gen !== this.rowsGen) this.reload(gen);
      if (this.setAside.some((r) => r.max_time >= q.from && r.min_time <= q.to)) return null;
      return {
        gen,
        views: this.rows.filter((r) => r.max_time >= q.from && r.min_time <= q.to).map((r) => this.fraction(r.name)),
      };
    } catch {
      this.failed();
      return null;
    }
  }

  /** After a read begun at `gen`: true when the shard did not change meanwhile (the answer stands). */
  settle(gen: number): boolean {
    this.trim();
    if (this.state.generation() !== gen) {
      this.rowsGen = -1;
      return false;
    }
    this.answered++;
    return true;
  }

  /** A read that threw (a fraction dropped by retention under us, the catalog busy): the shard thread answers. */
  failed(): void {
    this.fallbacks++;
    this.forget();
  }

  /** Reads the sealed fractions from the shard's catalog, in name order (the shard's own order). */
  private reload(gen: number): void {
    this.db ??= new Database(path.join(this.dir, 'catalog.db'), { readonly: true, fileMustExist: true });
    this.rows = this.db
      .prepare("SELECT name, min_time, max_time FROM fractions WHERE state = 'sealed' ORDER BY name")
      .all() as SealedRow[];
    this.setAside = quarantinedRows(this.dir);
    const names = new Set(this.rows.map((r) => r.name));
    for (const [name, frac] of this.open) {
      if (names.has(name)) continue;
      frac.close();
      this.open.delete(name);
    }
    this.rowsGen = gen;
  }

  private fraction(name: string): SealedFraction {
    let frac = this.open.get(name);
    if (frac) this.open.delete(name);
    else frac = new SealedFraction(path.join(this.dir, name));
    this.open.set(name, frac);
    return frac;
  }

  /** Closes the least recently used fractions past OPEN_FRACTIONS (after a query: none is in use then). */
  private trim(): void {
    for (const [name, f] of this.open) {
      if (this.open.size <= OPEN_FRACTIONS) break;
      f.close();
      this.open.delete(name);
    }
  }

  /** Drops every open fraction and the cached list (after a failed read: the next query starts afresh). */
  private forget(): void {
    for (const f of this.open.values()) f.close();
    this.open.clear();
    this.rowsGen = -1;
  }

  close(): void {
    for (const f of this.open.values()) f.close();
    this.open.clear();
    this.db?.close();
    this.db = null;
  }
}
