// SHOW PREPARED_STATEMENTS, SHOW INTERNER [N] and RESET INTERNER: the prepared-statement caches of every pool, formatted
// from the snapshot's statements (snapshot.ts).
import type { Cell, ShowTable } from '../control.js';
import type { Pool } from '../pool.js';
import type { PoolerSnapshot, StatementSnapshot } from '../snapshot.js';

function statementsOf(s: PoolerSnapshot): readonly StatementSnapshot[] {
  if (!s.statements) throw new Error('snapshot taken without its statements');
  return s.statements;
}

/** One row per statement: pool, hash, the pooler's name on servers, the text, uses, protocol or sql, then completed
 * executions and their total time (us), then its uses (Parse or Bind) that found it prepared on the server and those
 * that had to prepare it. */
export function statementTable(statements: readonly StatementSnapshot[]): ShowTable {
  const rows: Cell[][] = statements.map((s) => [
    s.pool,
    s.hash,
    s.name,
    s.query,
    s.countUsed,
    s.kind,
    s.executions,
    s.execTimeUs,
    s.cacheHits,
    s.cacheMisses,
  ]);
  return {
    columns: [
      'pool',
      'hash',
      'name',
      'query',
      'count_used',
      'kind',
      'executions',
      'total_time_us',
      'cache_hits',
      'cache_misses',
    ],
    rows,
  };
}

export function preparedStatements(s: PoolerSnapshot): ShowTable {
  return statementTable(statementsOf(s));
}

/** Without `top`: entries and bytes of text by kind. With it: the `top` largest entries (hash, kind, bytes, idle_ms, query). */
export function interner(s: PoolerSnapshot, top?: number): ShowTable {
  const statements = statementsOf(s);
  if (top === undefined) {
    const byKind = new Map<string, { entries: number; bytes: number }>([
      ['protocol', { entries: 0, bytes: 0 }],
      ['sql', { entries: 0, bytes: 0 }],
    ]);
    for (const st of statements) {
      const k = byKind.get(st.kind)!;
      k.entries++;
      k.bytes += st.bytes;
    }
    return { columns: ['kind', 'entries', 'bytes'], rows: [...byKind].map(([kind, k]) => [kind, k.entries, k.bytes]) };
  }
  const largest = [...statements].sort((a, b) => b.bytes - a.bytes).slice(0, top);
  return {
    columns: ['hash', 'kind', 'bytes', 'idle_ms', 'query'],
    rows: largest.map((st) => [st.hash, st.kind, st.bytes, st.idleMs, st.query]),
  };
}

/** RESET INTERNER: every pool forgets the texts no client and no server holds; returns how many went. */
export function resetInterner(pools: Iterable<Pool>): number {
  let n = 0;
  for (const pool of pools) n += pool.interner?.resetIdle() ?? 0;
  return n;
}
