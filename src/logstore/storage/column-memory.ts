// The memory a thread's open sealed fractions keep in columns (aggregations, range filters): one byte budget
// (search.column_memory) over all of them, the least recently used column dropped past it; it is read again from
// its file when next needed.

/** A column kept by a fraction: its size, and how the fraction forgets it. */
interface Entry {
  bytes: number;
  drop: () => void;
}

/** The budget of this thread, in bytes (search.column_memory; a search thread is given it at its start). */
export const COLUMN_MEMORY = { bytes: 128 * 1024 ** 2 };

/** Kept columns, least recently used first (a Map keeps insertion order: a use moves the entry to the end). */
const kept = new Map<string, Entry>();
let used = 0;

/** Bytes of columns this thread keeps now. */
export function columnBytes(): number {
  return used;
}

/**
 * Counts a column just read under `key` (unique per fraction, kind and field) and drops the least recently used
 * ones until it fits the budget with the rest. The column just read is kept even when it alone is past the budget
 * (its caller holds it anyway); the next charge drops it.
 */
export function chargeColumn(key: string, bytes: number, drop: () => void): void {
  const old = kept.get(key);
  if (old) {
    kept.delete(key);
    used -= old.bytes;
  }
  for (const [k, e] of kept) {
    if (used + bytes <= COLUMN_MEMORY.bytes) break;
    kept.delete(k);
    used -= e.bytes;
    e.drop();
  }
  kept.set(key, { bytes, drop });
  used += bytes;
}

/** Marks a kept column used (it goes to the end of the queue). */
export function touchColumn(key: string): void {
  const e = kept.get(key);
  if (!e) return;
  kept.delete(key);
  kept.set(key, e);
}

/** Forgets one column, without calling its drop (its fraction let it go). */
export function forgetColumn(key: string): void {
  const e = kept.get(key);
  if (!e) return;
  kept.delete(key);
  used -= e.bytes;
}

/** Forgets the columns whose key starts with `prefix` (a fraction closed), without calling their drop. */
export function releaseColumns(prefix: string): void {
  for (const [k, e] of kept) {
    if (!k.startsWith(prefix)) continue;
    kept.delete(k);
    used -= e.bytes;
  }
}
