// The admin verbs on pools (PAUSE, RESUME, RECONNECT, KILL): which pools they select, what they do, their event.
import { SqlState } from '../protocol/codes.js';
import type { ClientSession } from './client-session.js';
import { PoolNotFoundError } from './control.js';
import type { EventRing } from './events.js';
import type { Pool } from './pool.js';

/** What the verbs act on: the pooler's pools, its logged-in clients, and its event ring. */
export interface VerbTarget {
  readonly pools: ReadonlyMap<string, Pool>;
  readonly clients: Iterable<ClientSession>;
  readonly events: EventRing;
  /** The native relay's held logins (native-logins.ts). */
  readonly nativeLogins?: { materializeHeld(): void };
}

/** The live pools of `database` and `user` (each optional); naming one that has none is PoolNotFoundError. */
export function selectPools(t: VerbTarget, database?: string, user?: string): Pool[] {
  const out: Pool[] = [];
  for (const p of t.pools.values()) {
    if (p.retired) continue;
    if (database !== undefined && p.settings.database !== database) continue;
    if (user !== undefined && p.settings.user !== user) continue;
    out.push(p);
  }
  if (!out.length && (database !== undefined || user !== undefined)) {
    throw new PoolNotFoundError(user !== undefined ? `${user}@${database ?? '*'}` : `database ${database}`);
  }
  return out;
}

function label(p: Pool): string {
  return `${p.settings.database}/${p.settings.user}`;
}

function names(verb: string, pools: Pool[]): string {
  return `${verb} ${pools.map((p) => p.name).join(', ') || '(no pools)'}`;
}

/** What PAUSE did at once: checkouts of the selected pools stopped, `running` transactions (session-mode sessions)
 * still hold a server of them. */
export interface PauseStarted {
  message: string;
  running: number;
  pools: Pool[];
}

/** PAUSE without waiting (the web API): checkouts stop now; the answer says how many transactions still run. */
export function startPause(t: VerbTarget, database?: string, user?: string): PauseStarted {
  const pools = selectPools(t, database, user);
  let running = 0;
  for (const p of pools) {
    const active = p.pause();
    running += active;
    t.events.add(
      'pause',
      label(p),
      `PAUSE: new checkouts stop; ${active} running transaction${active === 1 ? '' : 's'} finish${active === 1 ? 'es' : ''}`,
    );
  }
  return { message: names('PAUSE', pools), running, pools };
}

/** PAUSE as the admin console runs it (PgBouncer's semantics): resolves when no selected pool has a transaction running. */
export async function pausePools(t: VerbTarget, database?: string, user?: string): Promise<string> {
  const started = startPause(t, database, user);
  await Promise.all(started.pools.map((p) => p.quiet()));
  return started.message;
}

export function resumePools(t: VerbTarget, database?: string, user?: string): string {
  const pools = selectPools(t, database, user);
  for (const p of pools) {
    p.resume();
    t.events.add('resume', label(p), 'RESUME: checkouts allowed again');
  }
  return names('RESUME', pools);
}

export function reconnectPools(t: VerbTarget, database?: string, user?: string): string {
  const pools = selectPools(t, database, user);
  for (const p of pools) {
    p.reconnect();
    t.events.add('reconnect', label(p), 'RECONNECT: idle servers closed, active ones closed when they come back');
  }
  return names('RECONNECT', pools);
}

/** KILL: drops every client and server of the database; its pools stay paused until RESUME. */
export function killDatabase(t: VerbTarget, database: string): string {
  const pools = selectPools(t, database);
  // Relay-only clients become sessions first, so they are counted and killed with the others.
  t.nativeLogins?.materializeHeld();
  for (const p of pools) p.settle();
  let killed = 0;
  for (const c of t.clients) if (c.pool && pools.includes(c.pool)) killed++;
  t.events.add(
    'kill',
    null,
    `KILL ${database}: ${killed} clients and every server of ${pools.length} pools closed; the pools stay paused until RESUME`,
  );
  for (const p of pools) {
    p.paused = true;
    p.failWaiters(`database "${database}" was killed by the administrator`, SqlState.AdminShutdown);
    for (const c of [...t.clients]) if (c.pool === p) c.kill(`database "${database}" was killed by the administrator`);
    p.closeAll('kill');
  }
  return `KILL ${database}`;
}
