// SHOW PREPARED_STATEMENTS, SHOW INTERNER [N] and RESET INTERNER: the prepared-statement caches of every pool, from the pools' interners.
import type { Cell, ShowTable } from '../control.js';
import type { Pool } from '../pool.js';
import type { Statement } from '../prepared/interner.js';
import { isSql } from '../prepared/sql-commands.js';

const kindOf = (s: Statement): string => (isSql(s) ? 'sql' : 'protocol');

function* statements(pools: Iterable<Pool>): Generator<[Pool, Statement]> {
  for (const pool of pools) {
    if (!pool.interner) continue;
    // Pairs the native relay keeps linked (parked) hold the uses its lane answered until they split: split them now.
    pool.settle();
    for (const s of pool.interner.statements()) yield [pool, s];
  }
}

/** One row per statement a pool holds: pool, hash, the pooler's name on servers, the text, uses, protocol or sql, then
 * completed executions and their total time (us), then its uses (Parse or Bind) that found it prepared on the server and those that had to prepare it. */
export function preparedStatements(pools: Iterable<Pool>): ShowTable {
  const rows: Cell[][] = [];
  for (const [pool, s] of statements(pools)) rows.push([pool.name, s.hash, s.name, s.query.toString('utf8'), s.countUsed, kindOf(s), s.executions, Math.round(s.execTimeUs), s.cacheHits, s.cacheMisses]);
  return { columns: ['pool', 'hash', 'name', 'query', 'count_used', 'kind', 'executions', 'total_time_us', 'cache_hits', 'cache_misses'], rows };
}

/** Without `top`: entries and bytes of text by kind. With it: the `top` largest entries (hash, kind, bytes, idle_ms, query). */
export function interner(pools: Iterable<Pool>, top?: number): ShowTable {
  if (top === undefined) {
    const byKind = new Map<string, { entries: number; bytes: number }>([['protocol', { entries: 0, bytes: 0 }], ['sql', { entries: 0, bytes: 0 }]]);
    for (const [, s] of statements(pools)) {
      const k = byKind.get(kindOf(s))!;
      k.entries++;
      k.bytes += s.query.length + s.types.length;
    }
    return { columns: ['kind', 'entries', 'bytes'], rows: [...byKind].map(([kind, k]) => [kind, k.entries, k.bytes]) };
  }
  const now = Date.now();
  const all = [...statements(pools)].map(([, s]) => s).sort((a, b) => b.query.length + b.types.length - (a.query.length + a.types.length));
  const rows: Cell[][] = all.slice(0, top).map((s) => [s.hash, kindOf(s), s.query.length + s.types.length, s.lastUsed ? now - s.lastUsed : 0, s.query.toString('utf8')]);
  return { columns: ['hash', 'kind', 'bytes', 'idle_ms', 'query'], rows };
}

/** RESET INTERNER: every pool forgets the texts no client and no server holds; returns how many went. */
export function resetInterner(pools: Iterable<Pool>): number {
  let n = 0;
  for (const pool of pools) n += pool.interner?.resetIdle() ?? 0;
  return n;
}
