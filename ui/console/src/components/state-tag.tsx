// A client's or server's state as a coloured tag: the API's `activity` (idle in transaction told apart), else SHOW's state.
import type { Row } from '../api';

export function activityOf(r: Row): string {
  const a = r['activity'];
  return typeof a === 'string' && a !== '' ? a : String(r['state'] ?? '');
}

/** The order the pooler's `sort=activity` uses: what an operator looks for first. */
const ORDER = ['active', 'waiting', 'idle in transaction', 'idle'];

export function activityRank(r: Row): number {
  const i = ORDER.indexOf(activityOf(r));
  return i < 0 ? ORDER.length : i;
}

export function StateTag(props: { row: Row }) {
  const a = activityOf(props.row);
  return <span className={`state-tag ${a.replaceAll(' ', '-')}`}>{a}</span>;
}
