// GET /api/logs: the in-memory log tap (Sso), activated by the first request.
import type { FastifyInstance } from 'fastify';
import { isTapLevel, type TapQuery } from '../log-tap.js';
import type { WebContext } from '../context.js';
import { sendError } from '../errors.js';

const MAX_LIMIT = 5000;

export function registerLogsRoutes(app: FastifyInstance, ctx: WebContext): void {
  app.get<{ Querystring: Record<string, string | undefined> }>('/api/logs', { config: { access: 'personal' } }, async (req, reply) => {
    if (ctx.tap.capacity === 0) return sendError(reply, 'not_found', 'log tap disabled');
    const q: TapQuery = {};
    const { since, level, limit } = req.query;
    if (since !== undefined) {
      if (!/^\d{1,15}$/.test(since)) return sendError(reply, 'bad_request', '"since" must be a sequence number');
      q.since = Number(since);
    }
    if (level !== undefined) {
      if (!isTapLevel(level)) return sendError(reply, 'bad_request', '"level" must be one of trace, debug, info, warn, error, fatal');
      q.level = level;
    }
    if (limit !== undefined) {
      if (!/^\d{1,6}$/.test(limit) || Number(limit) < 1 || Number(limit) > MAX_LIMIT) return sendError(reply, 'bad_request', `"limit" must be 1..${MAX_LIMIT}`);
      q.limit = Number(limit);
    }
    if (typeof req.query['q'] === 'string' && req.query['q'] !== '') q.q = req.query['q'];
    ctx.tap.touch();
    return { active: ctx.tap.active, entries: ctx.tap.read(q) };
  });
}
