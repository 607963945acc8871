// Read-only /api endpoints mirroring the admin console's SHOW commands (column names of reference/pooler.md).
import type { FastifyInstance } from 'fastify';
import type { WebContext } from '../context.js';
import { sendError } from '../errors.js';
import { ClientsQueryError, queryClients } from '../clients-query.js';
import { maskConfigRows, numberOf, toRows, type Row } from '../show-rows.js';

/** API path -> SHOW name, for the endpoints that return a SHOW table as it is. */
const SHOW_ENDPOINTS: Record<string, string> = {
  '/api/pools': 'POOLS',
  '/api/servers': 'SERVERS',
  '/api/connections': 'CONNECTIONS',
  '/api/stats': 'STATS',
  '/api/databases': 'DATABASES',
  '/api/users': 'USERS',
  '/api/log_level': 'LOG_LEVEL',
  '/api/sockets': 'SOCKETS',
  '/api/auth_query': 'AUTH_QUERY',
  '/api/pool_coordinator': 'POOL_COORDINATOR',
  '/api/pool_scaling': 'POOL_SCALING',
  '/api/interner': 'INTERNER',
};

/** SHOW names the pooler core answers today; the others are asked for but may not exist yet. */
const CORE_SHOWS = new Set(['POOLS', 'POOLS_EXTENDED', 'CLIENTS', 'SERVERS', 'STATS', 'DATABASES', 'USERS', 'CONFIG', 'VERSION', 'LISTS', 'LOG_LEVEL', 'CONNECTIONS', 'SOCKETS', 'PREPARED_STATEMENTS', 'INTERNER', 'INTERNER_TOP']);

/** Rows of a SHOW; an empty list when the pooler has no such table yet (never invented rows). */
export function showRows(ctx: WebContext, name: string): Row[] {
  if (CORE_SHOWS.has(name)) return toRows(ctx.control.show(name));
  try {
    return toRows(ctx.control.show(name));
  } catch (err) {
    ctx.log.debug({ show: name, error: (err as Error).message }, 'SHOW not provided by the pooler yet; answering no rows');
    return [];
  }
}

const TOP_LIMIT = 20;
/** Length of SQL previews on /api/top/queries (spec: about 120 characters). */
export const SQL_PREVIEW_CHARS = 120;

function withoutQuery(rows: Row[]): Row[] {
  return rows.map(({ query: _query, ...rest }) => rest);
}

function byDesc(rows: Row[], col: string): Row[] {
  return [...rows].sort((a, b) => numberOf(b[col]) - numberOf(a[col]));
}

/** Client rows grouped by application_name. */
export function appRows(clients: Row[]): Row[] {
  const apps = new Map<string, Row>();
  for (const c of clients) {
    const name = String(c['application_name'] ?? '');
    const a = apps.get(name) ?? { application_name: name, clients: 0, cl_active: 0, cl_idle: 0, cl_waiting: 0, transaction_count: 0, query_count: 0, error_count: 0 };
    a['clients'] = numberOf(a['clients']) + 1;
    const state = String(c['state'] ?? '');
    const stateCol = state === 'active' ? 'cl_active' : state === 'waiting' ? 'cl_waiting' : 'cl_idle';
    a[stateCol] = numberOf(a[stateCol]) + 1;
    for (const col of ['transaction_count', 'query_count', 'error_count']) a[col] = numberOf(a[col]) + numberOf(c[col]);
    apps.set(name, a);
  }
  return byDesc([...apps.values()], 'clients');
}

export function registerReadRoutes(app: FastifyInstance, ctx: WebContext): void {
  const pub = { config: { access: 'public' as const } };
  const personal = { config: { access: 'personal' as const } };
  for (const [path, show] of Object.entries(SHOW_ENDPOINTS)) app.get(path, pub, async () => showRows(ctx, show));
  app.get<{ Querystring: Record<string, unknown> }>('/api/clients', pub, async (req, reply) => {
    try {
      const page = queryClients(showRows(ctx, 'CLIENTS'), req.query);
      return reply.header('x-total-count', String(page.total)).send(page.rows);
    } catch (err) {
      if (err instanceof ClientsQueryError) return sendError(reply, 'bad_request', err.message);
      throw err;
    }
  });
  app.get('/api/overview', pub, async () => ctx.control.overview());
  app.get('/api/config', pub, async () => maskConfigRows(showRows(ctx, 'CONFIG')));
  // SQL text is personal data: the public list leaves out `query`; /api/prepared/text/{hash} serves it to Sso.
  app.get('/api/prepared', pub, async () => withoutQuery(showRows(ctx, 'PREPARED_STATEMENTS')));
  app.get('/api/top/prepared', pub, async () => withoutQuery(byDesc(showRows(ctx, 'PREPARED_STATEMENTS'), 'count_used')).slice(0, TOP_LIMIT));
  app.get('/api/top/clients', pub, async () => byDesc(showRows(ctx, 'CLIENTS'), 'query_count').slice(0, TOP_LIMIT));
  app.get('/api/apps', pub, async () => appRows(showRows(ctx, 'CLIENTS')));
  app.get('/api/events', pub, async () => showRows(ctx, 'EVENTS'));
  app.get('/api/interner/top', personal, async () => showRows(ctx, 'INTERNER_TOP'));
  app.get('/api/top/queries', personal, async () =>
    byDesc(showRows(ctx, 'PREPARED_STATEMENTS'), 'count_used').slice(0, TOP_LIMIT).map((r) => {
      const q = String(r['query'] ?? '');
      return { ...r, query: q.length > SQL_PREVIEW_CHARS ? `${q.slice(0, SQL_PREVIEW_CHARS)}…` : q };
    }));
  app.get<{ Params: { hash: string } }>('/api/prepared/text/:hash', personal, async (req, reply) => {
    const row = showRows(ctx, 'PREPARED_STATEMENTS').find((r) => String(r['hash']) === req.params.hash);
    if (!row) return sendError(reply, 'not_found', `no prepared statement with hash ${req.params.hash}`);
    return { hash: row['hash'], query: row['query'] ?? null };
  });
}
