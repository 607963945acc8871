// Piscina entry point of one log-store shard (a single-thread pool, so the shard's memory stays here).
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';
import { workerData } from 'node:worker_threads';
import { move, transferableSymbol, valueSymbol } from 'piscina';
import { trimMalloc } from '../../native/malloc-tune.js';
import { LogHub } from '../../shared/logger.js';
import type { FieldsPipe } from '../query/ast.js';
import type { ShardQuery } from '../search/execute.js';
import { type ActiveAnswer, type IdAssign, type IngestIds, Shard, type ShardOptions } from './shard.js';
import { ShardStateWriter } from './shard-state.js';
import { COLUMN_MEMORY } from './column-memory.js';

export interface ShardWorkerData extends ShardOptions {
  logLevel: string;
  /** search.column_memory: bytes of columns this thread's sealed fractions may keep. */
  columnMemory?: number;
  logFormat: 'logfmt' | 'json';
  /** Shared with the HTTP thread (shard-state.ts): every task that changes the fractions runs inside begin/end. */
  state?: SharedArrayBuffer;
}

// A sealed active fraction leaves its whole index (hundreds of MB) as garbage; V8 would let the heap grow to a
// multiple of it before a full collection, so the worker collects right before each seal (the parsing garbage,
// up to as much again as the fraction) and right after it (the fraction), and then gives the malloc pages
// freed (the fraction's typed arrays) back to the kernel: glibc keeps them resident otherwise, and the
// process grew by tens of MB from one seal to the next. V8 frees array buffers on a background thread after a
// collection, so the trim is done once more a moment later.
v8.setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
const collect = (): void => {
  gc();
  trimMalloc();
  setTimeout(trimMalloc, 100).unref();
};

const data = workerData as ShardWorkerData;
if (data.columnMemory !== undefined) COLUMN_MEMORY.bytes = data.columnMemory;
const hub = new LogHub({ level: data.logLevel as 'info', format: data.logFormat });
const state = data.state ? new ShardStateWriter(data.state) : null;
state?.begin();
const shard = new Shard(data, hub.get(`logstore::shard::${data.shard}`), gc);
state?.end(shard.activeBounds());
if (state) shard.allowListedReads(state);

/** Runs `fn`, which changes the shard's fractions, with the HTTP thread's reads of them held off. */
function changing<T>(fn: () => T): T {
  state?.begin();
  try {
    return fn();
  } finally {
    state?.end(shard.activeBounds());
  }
}

export function ingest(task: { buf: Uint8Array; offs: Int32Array; now?: number; assign?: IdAssign; meta?: IngestIds }) {
  const seals = shard.seals;
  const result = changing(() => shard.ingest(task.buf, task.offs, task.now ?? Date.now(), task.assign, task.meta));
  if (shard.seals !== seals) collect();
  return result;
}

/**
 * Runs a read, which quarantines a sealed fraction it finds damaged: the generation then moves on, so the HTTP
 * thread's reader lists the fractions again (and discards a read it made meanwhile).
 */
function reading<T>(fn: () => T): T {
  const before = shard.quarantines;
  try {
    return fn();
  } finally {
    if (shard.quarantines !== before) {
      state?.begin();
      state?.end(shard.activeBounds());
    }
  }
}

/** The hits' bytes are moved to the HTTP thread, not copied. */
export function query(task: ShardQuery) {
  const result = reading(() => shard.query(task));
  return move({ [transferableSymbol]: [result.hits.json.buffer], [valueSymbol]: result } as never);
}

/** The step's hits' bytes are moved to the HTTP thread; { more } goes as it is. */
function answer(a: ActiveAnswer) {
  if ('more' in a) return a;
  return move({ [transferableSymbol]: [a.result.hits.json.buffer], [valueSymbol]: a } as never);
}

/**
 * A search's step here (Shard.queryActive): the active fraction's part, the sealed fractions pinned for a search
 * thread; or { more: id } when the active part has slices left, each run by queryActiveMore.
 */
export function queryActive(task: ShardQuery) {
  return answer(reading(() => shard.queryActive(task)));
}

export function queryActiveMore(task: { more: number }) {
  return answer(reading(() => shard.queryActiveMore(task.more)));
}

export function unpin(task: { pin: number }) {
  shard.unpin(task.pin);
  return true;
}

/** The last search that listed the sealed fractions itself ended while dropped fractions waited for it. */
export function sweepDropped() {
  shard.sweepDropped();
  return true;
}

export function fetch(task: { ids: string[]; pipes?: FieldsPipe[] }) {
  return reading(() => shard.fetch(task.ids, task.pipes));
}

export function idShards() {
  return shard.idShards();
}

export function status() {
  return shard.status();
}

export function seal() {
  changing(() => shard.seal());
  collect();
  return shard.status();
}

export function retention() {
  return changing(() => shard.applyRetention());
}

export function close() {
  // Left odd: the HTTP thread reads nothing of a closed shard.
  state?.begin();
  shard.close();
  return true;
}
