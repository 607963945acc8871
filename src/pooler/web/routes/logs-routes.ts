// GET /api/logs: the in-memory log tap (Sso), activated by the first request. GET /api/logs/history: the last hour of
// the same records from the log store they are shipped to ([logs] ship_to), with the same filters.
import type { FastifyInstance } from 'fastify';
import { type HistoryQuery, readHistory } from '../log-history.js';
import { isTapLevel, type TapQuery } from '../log-tap.js';
import type { WebContext } from '../context.js';
import { sendError } from '../errors.js';

const MAX_LIMIT = 5000;

export function registerLogsRoutes(app: FastifyInstance, ctx: WebContext): void {
  app.get<{ Querystring: Record<string, string | undefined> }>(
    '/api/logs',
    { config: { access: 'personal' } },
    async (req, reply) => {
      if (ctx.tap.capacity === 0) return sendError(reply, 'not_found', 'log tap disabled');
      const q: TapQuery = {};
      const { since, level, limit } = req.query;
      if (since !== undefined) {
        if (!/^\d{1,15}$/.test(since)) return sendError(reply, 'bad_request', '"since" must be a sequence number');
        q.since = Number(since);
      }
      if (level !== undefined) {
        if (!isTapLevel(level))
          return sendError(reply, 'bad_request', '"level" must be one of trace, debug, info, warn, error, fatal');
        q.level = level;
      }
      if (limit !== undefined) {
        if (!/^\d{1,6}$/.test(limit) || Number(limit) < 1 || Number(limit) > MAX_LIMIT)
          return sendError(reply, 'bad_request', `"limit" must be 1..${MAX_LIMIT}`);
        q.limit = Number(limit);
      }
      if (typeof req.query['q'] === 'string' && req.query['q'] !== '') q.q = req.query['q'];
      ctx.tap.touch();
      return { active: ctx.tap.active, entries: ctx.tap.read(q) };
    },
  );

  app.get<{ Querystring: Record<string, string | undefined> }>(
    '/api/logs/history',
    { config: { access: 'personal' } },
    async (req, reply) => {
      const logs = ctx.control.config.logs;
      if (logs.ship_to === '')
        return sendError(reply, 'not_configured', 'log shipping is off ([logs] ship_to): no history to read');
      const { level, limit, access } = req.query;
      const q: HistoryQuery = { windowMs: HISTORY_WINDOW_MS, limit: HISTORY_LIMIT };
      if (level !== undefined && level !== '') {
        if (!isTapLevel(level))
          return sendError(reply, 'bad_request', '"level" must be one of trace, debug, info, warn, error, fatal');
        q.level = level;
      }
      if (access !== undefined && access !== '') {
        if (access !== 'hide' && access !== 'only')
          return sendError(reply, 'bad_request', '"access" must be hide or only');
        q.access = access;
      }
      if (limit !== undefined) {
        if (!/^\d{1,5}$/.test(limit) || Number(limit) < 1 || Number(limit) > HISTORY_LIMIT)
          return sendError(reply, 'bad_request', `"limit" must be 1..${HISTORY_LIMIT}`);
        q.limit = Number(limit);
      }
      if (typeof req.query['q'] === 'string' && req.query['q'] !== '') q.q = req.query['q'];
      try {
        return { window_ms: HISTORY_WINDOW_MS, ...(await readHistory(logs.ship_to, q, logs.ship_timeout)) };
      } catch (err) {
        return sendError(reply, 'upstream', (err as Error).message);
      }
    },
  );
}

/** The history's reach: the last hour, at most this many records (the newest). */
const HISTORY_WINDOW_MS = 3_600_000;
const HISTORY_LIMIT = 2000;
