// Read-only /api endpoints: the pooler's snapshot formatted as its SHOW tables (column names of reference/pooler.md).
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { WebContext } from '../context.js';
import { sendError } from '../errors.js';
import { ClientsQueryError, queryClients } from '../clients-query.js';
import { ClientRates } from '../client-rates.js';
import { withActivity } from '../activity.js';
import { OverviewHistory } from '../overview-history.js';
import { maskConfigRows, toRows, type Row } from '../show-rows.js';
import { NotConfiguredError, UnknownShowError } from '../../admin/show.js';
import { statementTable } from '../../admin/show-prepared.js';
import type { ClientSnapshot, StatementSnapshot } from '../../snapshot.js';

/** API path -> SHOW name, for the endpoints that return a SHOW table as it is. */
const SHOW_ENDPOINTS: Record<string, string> = {
  '/api/pools': 'POOLS',
  '/api/pools_extended': 'POOLS_EXTENDED',
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
  '/api/apps': 'APPS',
  '/api/errors': 'ERRORS',
};

/** Rows of a SHOW. A SHOW the pooler lacks is a bug here, not an empty list: it throws. */
export function showRows(ctx: WebContext, name: string): Row[] {
  return toRows(ctx.control.show(name));
}

/** Answers a SHOW mirror: its rows, or 404 `not_configured` for a feature this configuration does not use. */
function showReply(ctx: WebContext, name: string, reply: FastifyReply): Row[] | FastifyReply {
  try {
    return showRows(ctx, name);
  } catch (err) {
    if (err instanceof NotConfiguredError)
      return sendError(reply, 'not_configured', err.message, { feature: err.what.toLowerCase() });
    if (err instanceof UnknownShowError) return sendError(reply, 'internal', err.message);
    throw err;
  }
}

const TOP_LIMIT = 20;
const TOP_LIMIT_MAX = 1000;
/** Length of SQL previews on /api/top/queries (spec: about 120 characters). */
export const SQL_PREVIEW_CHARS = 120;

/** /api/top/clients?by=: the sort key, from the snapshot's client. */
const TOP_CLIENT_KEYS: Record<string, (c: ClientSnapshot) => number> = {
  transactions: (c) => c.transactions,
  queries: (c) => c.queries,
  time: (c) => c.xactTimeUs,
  bytes: (c) => c.bytesReceived + c.bytesSent,
  errors: (c) => c.errors,
};

function withoutQuery(rows: Row[]): Row[] {
  return rows.map(({ query: _query, ...rest }) => rest);
}

function statementsOf(ctx: WebContext): readonly StatementSnapshot[] {
  return ctx.control.snapshot({ statements: true }).statements!;
}

function preview(q: string): string {
  return q.length > SQL_PREVIEW_CHARS ? `${q.slice(0, SQL_PREVIEW_CHARS)}…` : q;
}

/** `limit` query parameter: a whole number from 1 to TOP_LIMIT_MAX; null when malformed. */
function parseLimit(v: string | undefined): number | null {
  if (v === undefined) return TOP_LIMIT;
  if (!/^\d+$/.test(v)) return null;
  const n = Number(v);
  return n >= 1 && n <= TOP_LIMIT_MAX ? n : null;
}

export function registerReadRoutes(app: FastifyInstance, ctx: WebContext): void {
  const pub = { config: { access: 'public' as const } };
  const personal = { config: { access: 'personal' as const } };
  const clientRates = new ClientRates();
  for (const [path, show] of Object.entries(SHOW_ENDPOINTS))
    app.get(path, pub, async (_req, reply) => showReply(ctx, show, reply));
  app.get<{ Querystring: Record<string, unknown> }>('/api/clients', pub, async (req, reply) => {
    try {
      const snap = ctx.control.snapshot();
      const rows = withActivity(toRows(ctx.control.show('CLIENTS', snap)), snap.clients);
      const page = queryClients(clientRates.annotate(rows, Date.now()), req.query);
      return reply.header('x-total-count', String(page.total)).send(page.rows);
    } catch (err) {
      if (err instanceof ClientsQueryError) return sendError(reply, 'bad_request', err.message);
      throw err;
    }
  });
  // SHOW SERVERS with `activity` and `xact_age_ms` (activity.ts).
  app.get('/api/servers', pub, async () => {
    const snap = ctx.control.snapshot();
    return withActivity(toRows(ctx.control.show('SERVERS', snap)), snap.servers);
  });
  app.get('/api/overview', pub, async () => ctx.control.overview());
  // One pool's errors by SQLSTATE: [{ sqlstate, count }], most first; 404 for a pool the pooler does not have.
  app.get<{ Params: { database: string; user: string } }>(
    '/api/pools/:database/:user/errors',
    pub,
    async (req, reply) => {
      const { database, user } = req.params;
      const pool = ctx.control.snapshot().pools.find((p) => p.database === database && p.user === user);
      if (!pool) return sendError(reply, 'not_found', `no pool ${database}/${user}`);
      return pool.errorsBySqlState;
    },
  );
  // The overview's last 15 minutes, sampled in the pooler every 2 s whether or not a console polls (overview-history.ts).
  const history = new OverviewHistory(() => ctx.control.overview());
  history.start();
  app.addHook('onClose', async () => history.stop());
  app.get('/api/overview/history', pub, async () => ({ interval_ms: history.intervalMs, samples: history.list() }));
  app.get('/api/config', pub, async () => maskConfigRows(showRows(ctx, 'CONFIG')));
  app.get('/api/events', pub, async () => showRows(ctx, 'EVENTS'));
  // Where the console links to the pooler's records in the log explorer (RELOAD applies it).
  app.get('/api/links', pub, async () => ({ explorer_url: ctx.control.config.logs.explorer_url || null }));
  // SQL text is personal data: the public list leaves out `query`; /api/prepared/text/{hash} serves it to Sso.
  app.get('/api/prepared', pub, async () => withoutQuery(showRows(ctx, 'PREPARED_STATEMENTS')));
  app.get('/api/top/prepared', pub, async () => {
    const top = [...statementsOf(ctx)].sort((a, b) => b.countUsed - a.countUsed).slice(0, TOP_LIMIT);
    return withoutQuery(toRows(statementTable(top)));
  });
  app.get<{ Querystring: { by?: string; limit?: string } }>('/api/top/clients', pub, async (req, reply) => {
    const by = req.query.by ?? 'transactions';
    const key = Object.hasOwn(TOP_CLIENT_KEYS, by) ? TOP_CLIENT_KEYS[by]! : null;
    if (!key) return sendError(reply, 'bad_request', `by must be one of ${Object.keys(TOP_CLIENT_KEYS).join(', ')}`);
    const limit = parseLimit(req.query.limit);
    if (limit === null)
      return sendError(reply, 'bad_request', `limit must be a whole number from 1 to ${TOP_LIMIT_MAX}`);
    // One snapshot: SHOW CLIENTS rows are its clients in order; the key and the admin flag are read from the client.
    const snap = ctx.control.snapshot();
    const rows = toRows(ctx.control.show('CLIENTS', snap));
    return snap.clients
      .flatMap((c, i) => (c.admin ? [] : [{ ...rows[i]!, by, value: key(c) }]))
      .sort((a, b) => b.value - a.value)
      .slice(0, limit);
  });
  app.get('/api/interner/top', personal, async () => showRows(ctx, 'INTERNER_TOP'));
  // Statements whose text the pooler keeps (prepared_statements in transaction mode) and simple-protocol queries by
  // fingerprint (kind 'simple': literals replaced by ?, query-stats/), by completed executions or by their total time.
  app.get<{ Querystring: { by?: string; limit?: string } }>('/api/top/queries', personal, async (req, reply) => {
    const by = req.query.by ?? 'count';
    if (by !== 'count' && by !== 'time') return sendError(reply, 'bad_request', 'by must be count or time');
    const limit = parseLimit(req.query.limit);
    if (limit === null)
      return sendError(reply, 'bad_request', `limit must be a whole number from 1 to ${TOP_LIMIT_MAX}`);
    // One snapshot: the prepared statements and the simple-protocol fingerprints counted at the same moment.
    const snap = ctx.control.snapshot({ statements: true, queries: true });
    const rows = snap.statements!.map((s) => ({
      hash: s.hash,
      preview: preview(s.query),
      count: s.executions,
      total_time_us: s.execTimeUs,
      avg_time_us: s.executions ? Math.round(s.execTimeUs / s.executions) : 0,
      pool: s.pool,
      kind: s.kind as string,
      count_used: s.countUsed,
    }));
    for (const q of snap.queries!) {
      rows.push({
        hash: q.hash,
        preview: preview(q.text),
        count: q.count,
        total_time_us: q.timeUs,
        avg_time_us: Math.round(q.timeUs / q.count),
        pool: q.pool,
        kind: 'simple',
        count_used: q.count,
      });
    }
    const key = by === 'count' ? (r: { count: number }) => r.count : (r: { total_time_us: number }) => r.total_time_us;
    // Ties in a stable order (pool, then hash), so a page that polls does not shuffle equal rows.
    return rows
      .sort(
        (a, b) =>
          key(b) - key(a) ||
          b.count_used - a.count_used ||
          a.pool.localeCompare(b.pool) ||
          a.hash.localeCompare(b.hash),
      )
      .slice(0, limit);
  });
  app.get<{ Params: { hash: string } }>('/api/prepared/text/:hash', personal, async (req, reply) => {
    const hash = req.params.hash;
    const snap = ctx.control.snapshot({ statements: true, queries: true });
    const statement = snap.statements!.find((s) => s.hash === hash);
    if (statement) return { hash, query: statement.query };
    // A simple-protocol fingerprint of /api/top/queries: its normalized text (never the literals).
    const simple = snap.queries!.find((q) => q.hash === hash);
    if (simple) return { hash, query: simple.text };
    return sendError(reply, 'not_found', `no prepared statement with hash ${hash}`);
  });
}
