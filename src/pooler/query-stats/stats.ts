// Simple-protocol query statistics of the process: the table size (general.query_stats_size), pool ids, and the rows of both relays' tables for /api/top/queries.
import { jsQueryStats } from './recorder.js';
import type { QueryStatsRow } from './table.js';

/** The native relay's table (relay/native.ts), passed in by the caller so this file imports no relay; null when no
 * native relay runs in the process. */
export interface NativeQueryTable {
  queryStatsSize(n: number): void;
  queryStats(): QueryStatsRow[];
}

const poolIds = new Map<string, number>();
const poolNames: string[] = [''];

/** A pool's id in the tables (stable for the process's life, so a pool RELOAD re-creates keeps its rows). */
export function poolQueryId(name: string): number {
  let id = poolIds.get(name);
  if (id === undefined) {
    id = poolNames.length;
    poolNames.push(name);
    poolIds.set(name, id);
  }
  return id;
}

/** At most `n` fingerprints in each relay's table (0: recording off); a new size empties the tables. */
export function setQueryStatsSize(n: number, native: NativeQueryTable | null): void {
  jsQueryStats.resize(n);
  native?.queryStatsSize(n);
}

export function queryStatsOn(): boolean {
  return jsQueryStats.on;
}

export interface SimpleQueryRow {
  pool: string;
  /** 16 hex digits of the fingerprint's FNV-1a 64 hash. */
  hash: string;
  /** The normalized text, at most QUERY_TEXT_MAX bytes. */
  text: string;
  count: number;
  timeUs: number;
}

/** Fingerprints with at least one completed query, from the native relay's table and the JavaScript relay's. */
export function simpleQueryRows(native: NativeQueryTable | null): SimpleQueryRow[] {
  const rows = [...(native?.queryStats() ?? []), ...jsQueryStats.rows()];
  return rows.map((r) => ({
    pool: poolNames[r.pool] ?? '',
    hash: r.hash,
    text: r.text,
    count: r.count,
    timeUs: Math.round(r.timeUs),
  }));
}
