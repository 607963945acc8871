// POST /api/admin/{pause,resume,reconnect,reload}: the admin console verbs for one user@database pool.
import type { FastifyInstance, FastifyReply } from 'fastify';
import { ConfigError } from '../../../config/pooler.js';
import { PoolNotFoundError } from '../../control.js';
import type { WebContext } from '../context.js';
import { sendError } from '../errors.js';

interface PoolTarget {
  database: string;
  user: string;
}

function poolTarget(body: unknown): PoolTarget | string {
  if (body === null || typeof body !== 'object' || Array.isArray(body))
    return 'body must be a JSON object {"database": "...", "user": "..."}';
  const { database, user } = body as Record<string, unknown>;
  if (typeof database !== 'string' || database === '') return '"database" must be a non-empty string';
  if (typeof user !== 'string' || user === '') return '"user" must be a non-empty string';
  return { database, user };
}

export function registerAdminRoutes(app: FastifyInstance, ctx: WebContext): void {
  const admin = { config: { access: 'admin' as const } };
  const action = (
    name: 'pause' | 'resume' | 'reconnect',
    run: (t: PoolTarget) => Record<string, unknown> & { message: string },
  ) =>
    app.post(`/api/admin/${name}`, admin, async (req, reply) => {
      const target = poolTarget(req.body);
      if (typeof target === 'string') return sendError(reply, 'bad_request', target);
      try {
        const answer = run(target);
        ctx.log.info(
          { action: name, database: target.database, user: target.user, by: req.tp.auth.user ?? '-' },
          `web admin action ${name}`,
        );
        return { ok: true, ...answer };
      } catch (err) {
        return actionError(reply, err);
      }
    });
  // Answers as soon as checkouts have stopped (not when the pool is quiet, as the admin console's PAUSE does): a
  // transaction left open must not hold the request, and the console polls sv_active for the rest.
  action('pause', (t) => ({ ...ctx.control.pauseNow(t.database, t.user), state: 'paused' }));
  action('resume', (t) => ({ message: ctx.control.resume(t.database, t.user), state: 'running' }));
  action('reconnect', (t) => ({ message: ctx.control.reconnect(t.database, t.user) }));
  app.post('/api/admin/reload', admin, async (req, reply) => {
    try {
      const message = await ctx.control.reload();
      ctx.log.info({ action: 'reload', by: req.tp.auth.user ?? '-' }, 'web admin action reload');
      return { ok: true, message };
    } catch (err) {
      if (err instanceof ConfigError) return sendError(reply, 'reload_failed', err.message);
      return actionError(reply, err);
    }
  });
}

function actionError(reply: FastifyReply, err: unknown): FastifyReply {
  if (err instanceof PoolNotFoundError) return sendError(reply, 'not_found', err.message);
  throw err;
}
