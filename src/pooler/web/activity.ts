// The API's `activity` of a client or server: its SHOW state, told apart from 'idle in transaction' (a ReadyForQuery
// said 'T' or 'E' and nothing is in flight), which SHOW CLIENTS and SHOW SERVERS count as active.
import type { ClientSnapshot, ServerSnapshot } from '../snapshot.js';
import type { Row } from './show-rows.js';

export const IDLE_IN_TRANSACTION = 'idle in transaction';

/** Order of `sort=activity` on /api/clients: what an operator looks for first, then idle, then anything else. */
export const ACTIVITY_ORDER: readonly string[] = ['active', 'waiting', IDLE_IN_TRANSACTION, 'idle'];

export function activityOf(c: ClientSnapshot | ServerSnapshot): string {
  return c.idleInTransaction ? IDLE_IN_TRANSACTION : c.state;
}

/** SHOW rows (one per snapshot entry, in order) with `activity` and `xact_age_ms` added. */
export function withActivity(rows: readonly Row[], of: readonly (ClientSnapshot | ServerSnapshot)[]): Row[] {
  return rows.map((r, i) => {
    const c = of[i]!;
    return { ...r, activity: activityOf(c), xact_age_ms: c.xactAgeMs };
  });
}

export function activityRank(v: unknown): number {
  const i = ACTIVITY_ORDER.indexOf(String(v));
  return i < 0 ? ACTIVITY_ORDER.length : i;
}
