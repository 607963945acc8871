// Piscina entry point of one shard's search thread: reads the sealed fractions of a search (immutable files, pinned
// by the shard thread for as long as the search runs) so that the shard thread, which takes the writes, only reads
// the active fraction (Shard.queryActive, in slices). A search then holds back a write to its shard for one slice of
// its active part at most. A search with nothing in the shard's active fraction skips the shard thread: this thread
// lists the sealed fractions itself (querySealed), counted in the shard state so that their files stay.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { workerData } from 'node:worker_threads';
import { move, transferableSymbol, valueSymbol } from 'piscina';
import { type RunPart, type ShardQuery, type ShardQueryResult, executeQuery } from '../search/execute.js';
import { FractionDamagedError } from './fraction-files.js';
import { COLUMN_MEMORY } from './column-memory.js';
import { SealedFraction } from './sealed-fraction.js';
import { SealedReader } from './sealed-reader.js';
import { ShardStateReader } from './shard-state.js';

export interface SearchWorkerData {
  /** The shard's directory. */
  dir: string;
  /** search.column_memory: bytes of columns this thread's sealed fractions may keep. */
  columnMemory?: number;
  /** The shard's state (shard-state.ts): lets this thread list the sealed fractions itself (querySealed). */
  state?: SharedArrayBuffer;
}

/** How often fractions kept open are checked for removal (retention, quarantine), to close their files. */
const SWEEP_MS = 1000;

const { dir, columnMemory, state } = workerData as SearchWorkerData;
if (columnMemory !== undefined) COLUMN_MEMORY.bytes = columnMemory;

/**
 * The shard's sealed fractions this thread has read, kept open (their times, ids, dictionaries and a few blocks,
 * as the shard thread kept them when it read them itself). A fraction's files never change; one dropped by
 * retention or quarantined is closed by the sweep once its directory is gone (pinned, it stays while read).
 */
const open = new Map<string, SealedFraction>();

function fraction(name: string): SealedFraction {
  let f = open.get(name);
  if (!f) open.set(name, (f = new SealedFraction(path.join(dir, name))));
  return f;
}

function forget(): void {
  for (const f of open.values()) f.close();
  open.clear();
}

/** The shard's catalog as this thread lists it for querySealed, over the fractions this thread keeps open. */
const lister = state ? new SealedReader(dir, new ShardStateReader(state), { get: fraction, forget }) : null;

setInterval(() => {
  for (const [name, f] of open) {
    if (existsSync(f.dir)) continue;
    f.close();
    open.delete(name);
  }
}, SWEEP_MS).unref();

export interface SealedTask {
  q: ShardQuery;
  /** The sealed fractions to read (pinned), in the shard's order. */
  names: string[];
  /** The active fraction's part, run by the shard thread. */
  part?: RunPart;
}

/** A search thread's answer to a SealedTask: the shard's answer, or why a fraction could not be read. */
export type SealedAnswer = ShardQueryResult | { unreadable: string };

/**
 * The shard's answer: the sealed fractions read here with the active part in its place. When a fraction turns out
 * damaged or missing, its error (search/read-plan.ts logs it and has the shard thread answer the whole search,
 * quarantining the fraction).
 */
export function query(task: SealedTask) {
  let result: ShardQueryResult;
  try {
    result = executeQuery(
      task.names.map((n) => fraction(n)),
      task.q,
      task.part,
    );
  } catch (err) {
    if (!(err instanceof FractionDamagedError) && (err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    forget();
    const unreadable: SealedAnswer = { unreadable: (err as Error).message };
    return unreadable;
  }
  return move({ [transferableSymbol]: [result.hits.json.buffer], [valueSymbol]: result } as never);
}

/**
 * A search over the sealed fractions alone, listed here (search/read-plan.ts counted it in the shard state first:
 * what the shard thread drops meanwhile keeps its files): the shard's answer, or `{ listed: false }` when the shard
 * thread must take part after all (the active fraction holds documents in the range, the shard is changing, a
 * fraction in the range is quarantined, or one could not be read: the pinned path finds out and quarantines).
 */
export function querySealed(task: { q: ShardQuery }) {
  if (!lister) return { listed: false };
  let result: ShardQueryResult;
  try {
    // (The catalog busy or unreadable here: the shard thread lists.)
    const views = lister.list(task.q);
    if (!views) return { listed: false };
    result = executeQuery(views, task.q);
  } catch (err) {
    if (!(err instanceof FractionDamagedError) && (err as NodeJS.ErrnoException).code !== 'ENOENT' && !isSqlite(err))
      throw err;
    lister.failed();
    return { listed: false };
  }
  return move({ [transferableSymbol]: [result.hits.json.buffer], [valueSymbol]: result } as never);
}

function isSqlite(err: unknown): boolean {
  return (err as Error)?.name === 'SqliteError';
}

export function close() {
  forget();
  lister?.close();
  return true;
}
