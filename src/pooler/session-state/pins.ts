// What becomes of a server whose transaction-mode client was pinned to it (session state that cannot move) when that client leaves: cleaned and pooled, or closed.
import { StateKind, stateKindNames } from './state-scan.js';

/** Every kind a text may name; SQL PREPARE only where the rewriter does not own it (prepared/sql-commands.ts). */
export function pinMaskFor(rewritesStatements: boolean): number {
  const all = StateKind.Listen | StateKind.AdvisoryLock | StateKind.TempTable | StateKind.HoldCursor | StateKind.SqlPrepare | StateKind.Load;
  return rewritesStatements ? all & ~StateKind.SqlPrepare : all;
}

export type CheckIn =
  | { readonly action: 'clean'; readonly query: string }
  | { readonly action: 'close'; readonly reason: string };

/**
 * The server of a pinned client that left between transactions: LOAD cannot be undone (the library stays loaded in
 * the backend), so that server is closed; anything else is cleaned by one simple Query whose replies no client sees
 * (the relay swallows them, NotificationResponses included), and the server is pooled when it succeeds. The query
 * cleans every kind, not only those the scan named: a client's functions may have taken more than its texts say.
 */
export function checkIn(kinds: number): CheckIn {
  if ((kinds & StateKind.Load) !== 0) return { action: 'close', reason: 'its client used LOAD, which cannot be undone' };
  const parts = ['UNLISTEN *', 'SELECT pg_advisory_unlock_all()', 'CLOSE ALL', 'DISCARD TEMP'];
  if ((kinds & StateKind.SqlPrepare) !== 0) parts.push('DEALLOCATE ALL');
  return { action: 'clean', query: parts.join('; ') };
}

export { stateKindNames };
