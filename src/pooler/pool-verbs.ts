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

export async function pausePools(t: VerbTarget, database?: string, user?: string): Promise<string> {
  const pools = selectPools(t, database, user);
  for (const p of pools) t.events.add('pause', label(p), 'PAUSE: new checkouts stop; running transactions finish');
  await Promise.all(pools.map((p) => p.pause()));
  return names('PAUSE', pools);
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
  for (const p of pools) p.settle();
  let killed = 0;
  for (const c of t.clients) if (c.pool && pools.includes(c.pool)) killed++;
  t.events.add('kill', null, `KILL ${database}: ${killed} clients and every server of ${pools.length} pools closed; the pools stay paused until RESUME`);
  for (const p of pools) {
    p.paused = true;
    p.failWaiters(`database "${database}" was killed by the administrator`, SqlState.AdminShutdown);
    for (const c of [...t.clients]) if (c.pool === p) c.kill(`database "${database}" was killed by the administrator`);
    p.closeAll('kill');
  }
  return `KILL ${database}`;
}
