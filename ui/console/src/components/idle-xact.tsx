// Idle in transaction on the cards: "N idle in transaction (oldest X)" in the warning colour, nothing when N is 0.
// The pooler counts these clients and servers in active too (SHOW POOLS' cl_active); the cards and by-state charts
// show them apart, so their parts add up to the total.
import { count, millis, num } from '../format';

/** How many of `active` are idle in transaction (0 when the pooler does not say). */
export function idleXact(v: unknown): number {
  const n = num(v);
  return n !== null && n > 0 ? n : 0;
}

/** Active minus the idle-in-transaction ones: what runs (or waits on PostgreSQL) now. */
export function running(active: unknown, idleInTransaction: unknown): number {
  return Math.max(0, (num(active) ?? 0) - idleXact(idleInTransaction));
}

export function IdleXactLine(props: { n: unknown; oldestMs?: unknown; testId?: string }) {
  const n = idleXact(props.n);
  if (n === 0) return null;
  const oldest = num(props.oldestMs);
  return (
    <span className="idle-xact" data-testid={props.testId}>
      {count(n)} idle in transaction{oldest !== null && oldest > 0 ? ` (oldest ${millis(oldest)})` : ''}
    </span>
  );
}
