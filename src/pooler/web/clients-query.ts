// /api/clients query parameters: filter, sort and page SHOW CLIENTS rows on the server (a pure function over rows).
import type { Row } from './show-rows.js';
import { activityRank } from './activity.js';

/** Largest page /api/clients serves in one answer. */
export const CLIENTS_MAX_LIMIT = 100_000;

/** Parameters that select rows by one column (exact match), and the column each reads. */
const EXACT: Record<string, string> = {
  database: 'database',
  user: 'user',
  state: 'state',
  activity: 'activity',
  application_name: 'application_name',
};

export const CLIENTS_QUERY_PARAMS = [
  'pool',
  'database',
  'user',
  'state',
  'activity',
  'application_name',
  'addr',
  'sort',
  'order',
  'offset',
  'limit',
] as const;

export interface ClientsPage {
  /** The requested page of the filtered, sorted rows. */
  rows: Row[];
  /** How many rows pass the filters (before offset and limit): the X-Total-Count header. */
  total: number;
}

export class ClientsQueryError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ClientsQueryError';
  }
}

function count(name: string, v: string, max: number): number {
  if (!/^\d{1,9}$/.test(v) || Number(v) > max) throw new ClientsQueryError(`"${name}" must be an integer 0..${max}`);
  return Number(v);
}

/** Numbers before strings, numbers by value, strings by code unit, null last; bigints arrive as strings of digits. */
function compare(a: Row[string] | undefined, b: Row[string] | undefined): number {
  if (a === b) return 0;
  if (a === null || a === undefined) return 1;
  if (b === null || b === undefined) return -1;
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  if (typeof a === 'boolean' && typeof b === 'boolean') return Number(a) - Number(b);
  const sa = String(a);
  const sb = String(b);
  if (/^\d+$/.test(sa) && /^\d+$/.test(sb) && sa.length !== sb.length) return sa.length - sb.length;
  return sa < sb ? -1 : sa > sb ? 1 : 0;
}

/**
 * Filters, sorts and pages client rows. `pool` is `<database>/<user>`; `database`, `user`, `state` and
 * `application_name` match exactly; `addr` matches a prefix of `host:port` (a host alone selects all its ports);
 * `activity` matches exactly too; `sort` is any column (default `client_id`; `activity` sorts active, waiting,
 * idle in transaction, idle), `order` asc|desc (nulls last either way), ties broken by client_id ascending.
 * Unknown parameters are ignored (the console's `token` carrier travels in queries too); bad values throw
 * ClientsQueryError. Without `limit` every row from `offset` on is returned, as SHOW CLIENTS lists them.
 */
export function queryClients(all: readonly Row[], query: Readonly<Record<string, unknown>>): ClientsPage {
  const q: Record<string, string> = {};
  for (const name of CLIENTS_QUERY_PARAMS) {
    const v = query[name];
    if (v === undefined) continue;
    if (typeof v !== 'string') throw new ClientsQueryError(`"${name}" must be given once`);
    q[name] = v;
  }
  const tests: ((r: Row) => boolean)[] = [];
  if (q['pool'] !== undefined) {
    const slash = q['pool'].indexOf('/');
    if (slash < 0) throw new ClientsQueryError('"pool" must be <database>/<user>');
    const database = q['pool'].slice(0, slash);
    const user = q['pool'].slice(slash + 1);
    tests.push((r) => r['database'] === database && r['user'] === user);
  }
  for (const [param, col] of Object.entries(EXACT)) {
    const v = q[param];
    if (v !== undefined) tests.push((r) => String(r[col] ?? '') === v);
  }
  if (q['addr'] !== undefined && q['addr'] !== '') {
    const prefix = q['addr'];
    tests.push((r) => String(r['addr'] ?? '').startsWith(prefix));
  }
  const sort = q['sort'] ?? 'client_id';
  if (!/^[A-Za-z0-9_.]{1,64}$/.test(sort) || (all.length > 0 && !(sort in all[0]!))) {
    throw new ClientsQueryError(
      `"sort" must be a column of SHOW CLIENTS${all.length > 0 ? ` (${Object.keys(all[0]!).join(', ')})` : ''}`,
    );
  }
  const order = q['order'] ?? 'asc';
  if (order !== 'asc' && order !== 'desc') throw new ClientsQueryError('"order" must be asc or desc');
  const offset = q['offset'] === undefined ? 0 : count('offset', q['offset'], Number.MAX_SAFE_INTEGER);
  const limit = q['limit'] === undefined ? undefined : count('limit', q['limit'], CLIENTS_MAX_LIMIT);

  const rows = tests.length === 0 ? [...all] : all.filter((r) => tests.every((t) => t(r)));
  const sign = order === 'desc' ? -1 : 1;
  // `activity` sorts in ACTIVITY_ORDER (active, waiting, idle in transaction, idle), not by its letters.
  const key = sort === 'activity' ? (r: Row) => activityRank(r['activity']) : (r: Row) => r[sort];
  rows.sort((a, b) => {
    const va = key(a);
    const vb = key(b);
    const nulls = Number(va === null || va === undefined) - Number(vb === null || vb === undefined);
    return nulls || sign * compare(va, vb) || compare(a['client_id'], b['client_id']);
  });
  return { rows: rows.slice(offset, limit === undefined ? undefined : offset + limit), total: rows.length };
}
