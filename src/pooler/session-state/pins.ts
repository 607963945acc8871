// Pinned servers (transaction mode, session state that cannot move): which kinds pin, and what becomes of the server when its client lets go of it.
import { StateKind, stateKindNames } from './state-scan.js';

/** Every kind a text may name; SQL PREPARE only where the rewriter does not own it (prepared/sql-commands.ts). */
export function pinMaskFor(rewritesStatements: boolean): number {
  const all =
    StateKind.Listen |
    StateKind.AdvisoryLock |
    StateKind.TempTable |
    StateKind.HoldCursor |
    StateKind.SqlPrepare |
    StateKind.Load;
  return rewritesStatements ? all & ~StateKind.SqlPrepare : all;
}

export type CheckIn =
  { readonly action: 'clean'; readonly query: string } | { readonly action: 'close'; readonly reason: string };

/**
 * The server of a pinned client that left between transactions: LOAD cannot be undone (the library stays loaded in
 * the backend), so that server is closed; anything else is cleaned by one simple Query whose replies no client sees
 * (the relay swallows them, NotificationResponses included), and the server is pooled when it succeeds. The query
 * cleans every kind, not only those the scan named: a client's functions may have taken more than its texts say.
 */
export function checkIn(kinds: number): CheckIn {
  if ((kinds & StateKind.Load) !== 0)
    return { action: 'close', reason: 'its client used LOAD, which cannot be undone' };
  const parts = ['UNLISTEN *', 'SELECT pg_advisory_unlock_all()', 'CLOSE ALL', 'DISCARD TEMP'];
  if ((kinds & StateKind.SqlPrepare) !== 0) parts.push('DEALLOCATE ALL');
  return { action: 'clean', query: parts.join('; ') };
}

export { stateKindNames };

/** The client whose server is pinned, as the events name it. */
export interface PinnedClient {
  readonly id: number;
  readonly addr: string;
  readonly pinnedKinds: number;
}

/** What the pool does with a pinned server once its client lets go of it. */
export interface PinnedPool<S> {
  unpin(s: S): void;
  release(s: S, reusable: boolean): void;
  resetAndRelease(s: S, query: string): void;
  retire(s: S, reason: string): void;
}

/** A server as the events name it. */
export interface PinnedServer {
  readonly id: number;
  readonly backendPid: number;
}

/** The client's texts cleared every kind of state it was pinned for (UNLISTEN *, DISCARD ALL...) and the relay split
 * the pair: the server is cleaned all the same (a clean-up that rolled back leaves state behind) and pooled, or closed.
 * Returns the client_unpinned event's message. */
export function releaseUnpinned<S extends PinnedServer>(c: PinnedClient, pool: PinnedPool<S>, s: S): string {
  const kinds = stateKindNames(c.pinnedKinds);
  const verdict = checkIn(c.pinnedKinds);
  pool.unpin(s);
  if (verdict.action === 'clean') pool.resetAndRelease(s, verdict.query);
  else pool.retire(s, verdict.reason);
  return `client ${c.id} (${c.addr}) cleared its session state (${kinds}): server ${s.id} (backend pid ${s.backendPid}) ${verdict.action === 'clean' ? `cleaned with "${verdict.query}"` : `closed, ${verdict.reason}`}`;
}

/** The client of a pinned server left (`s` null: it had lost that server already); `clean`: between transactions and
 * whole messages. The server is cleaned and pooled, or closed. Returns the client_unpinned event's message. */
export function releaseLeftPinned<S extends PinnedServer>(
  c: PinnedClient,
  pool: PinnedPool<S>,
  s: S | null,
  clean: boolean,
): string {
  const kinds = stateKindNames(c.pinnedKinds);
  const who = `client ${c.id} (${c.addr})`;
  if (!s) return `${who} left after losing its pinned server (${kinds})`;
  const verdict = checkIn(c.pinnedKinds);
  const server = `server ${s.id} (backend pid ${s.backendPid})`;
  if (!clean) {
    pool.unpin(s);
    pool.release(s, false);
    return `${who} left mid-transaction: ${server} closed (${kinds})`;
  }
  if (verdict.action === 'close') {
    pool.retire(s, verdict.reason);
    return `${who} left: ${server} closed, ${verdict.reason} (${kinds})`;
  }
  pool.unpin(s);
  pool.resetAndRelease(s, verdict.query);
  return `${who} left: ${server} cleaned with "${verdict.query}" (${kinds})`;
}
