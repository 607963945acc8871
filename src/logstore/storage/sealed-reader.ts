// A reader of one shard's sealed fractions (immutable files) outside the shard thread: the HTTP thread's, for the
// plain time-range searches search/read-plan.ts sends there when the shard's active fraction holds nothing in the
// range (the shard state's generation guards every read: settle), and a search thread's, which lists the fractions of
// any search with nothing in the active fraction itself (list: counted in the shard state, the files stay).
import path from 'node:path';
import Database from 'better-sqlite3';
import type { ShardQuery } from '../search/execute.js';
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

/** Where a reader's fractions come from when it does not keep its own (a search thread's open fractions). */
export interface FractionSource {
  get(name: string): SealedFraction;
  /** Closes every fraction (after a read that failed). */
  forget(): void;
}

export class SealedReader {
  private db: Database.Database | null = null;
  private rows: SealedRow[] = [];
  /** The generation `rows` were read at (-1: to be read). */
  private rowsGen = -1;
  /** Time ranges of quarantined fractions: a search over one is answered by the shard thread, which marks it partial. */
  private setAside: SealedRow[] = [];
  private readonly open = new Map<string, SealedFraction>();
  /** Reads settled here, and reads that failed and went to the shard thread (for tests). */
  answered = 0;
  fallbacks = 0;

  constructor(
    private readonly dir: string,
    private readonly state: ShardStateReader,
    private readonly source?: FractionSource,
  ) {}

  /**
   * The sealed fractions of [q.from, q.to] as the shard has them now, for a search counted by the shard state's
   * enterRead() before this call (the shard thread keeps the files of what it drops while the count is above 0, so
   * no settle is needed); null when the shard thread must answer, as begin(). Throws as begin().
   */
  list(q: ShardQuery): SealedFraction[] | null {
    const read = this.begin(q);
    // Listed while the shard changed: the list may mix two states.
    if (read === null || this.state.generation() !== read.gen) return null;
    return read.views;
  }

  /**
   * The sealed fractions in [q.from, q.to] and the generation they were listed at; null when the shard thread must
   * answer (the active fraction overlaps the range, the shard is changing, or a fraction there is quarantined).
   * Throws when the catalog or a fraction cannot be read: call failed() then. After reading the fractions, call
   * settle(gen), or failed() when the read threw.
   */
  begin(q: ShardQuery): { gen: number; views: SealedFraction[] } | null {
    const gen = this.state.generation();
    if ((gen & 1) === 1 || this.state.activeOverlaps(q.from, q.to)) return null;
    if (gen !== this.rowsGen) this.reload(gen);
    if (this.setAside.some((r) => r.max_time >= q.from && r.min_time <= q.to)) return null;
    return {
      gen,
      views: this.rows.filter((r) => r.max_time >= q.from && r.min_time <= q.to).map((r) => this.fraction(r.name)),
    };
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
    this.rowsGen = gen;
    if (this.source) return;
    const names = new Set(this.rows.map((r) => r.name));
    for (const [name, frac] of this.open) {
      if (names.has(name)) continue;
      frac.close();
      this.open.delete(name);
    }
  }

  private fraction(name: string): SealedFraction {
    if (this.source) return this.source.get(name);
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
    this.source?.forget();
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
