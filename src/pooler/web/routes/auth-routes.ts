// GET /api/auth/config and the /api/sso/* endpoints the console's sign-in flow uses.
import type { FastifyInstance } from 'fastify';
import { SSO_COOKIE } from '../auth/resolve.js';
import type { WebContext } from '../context.js';
import { sendError } from '../errors.js';

/** A same-origin path (`/pools?x=1`), never an absolute URL or `//host` (no open redirect). */
export function safeReturnPath(v: unknown): string {
  return typeof v === 'string' && v.startsWith('/') && !v.startsWith('//') && !v.startsWith('/\\') && !/[\r\n]/.test(v)
    ? v
    : '/';
}

export function registerAuthRoutes(app: FastifyInstance, ctx: WebContext): void {
  const open = { config: { access: 'none' as const } };
  app.get('/api/auth/config', open, async (req) => {
    const web = ctx.control.config.web;
    const auth = req.tp.auth;
    const body: Record<string, unknown> = {
      sso_enabled: ctx.sso.usable,
      sso_admin_groups_configured: web.sso_admin_groups.length > 0,
      role: auth.role === 'rejected' ? 'none' : auth.role,
      username: auth.role === 'admin' || auth.role === 'sso' ? auth.user : null,
      ui_anonymous: web.ui_anonymous,
    };
    if (ctx.sso.usable && web.sso_proxy_url) body['sso_proxy_url'] = web.sso_proxy_url;
    if (ctx.sso.state === 'failed') body['sso_config_error'] = ctx.sso.error;
    return body;
  });

  // The session behind the SSO token the request carries: who, which role, until when.
  app.get('/api/sso/session', open, async (req, reply) => {
    const auth = req.tp.auth;
    if (!ctx.sso.usable) return sendError(reply, 'not_found', 'sso is not enabled');
    if (auth.source !== 'sso' || (auth.role !== 'sso' && auth.role !== 'admin')) {
      const reason = auth.ssoFailure ?? 'no_token';
      return sendError(reply, 'unauthorized', 'no valid sso token', { reason });
    }
    return { username: auth.user, role: auth.role, exp: auth.exp ?? null };
  });

  // Starts the browser flow: 302 to <sso_proxy_url>?redirect_to=<this origin + return path>.
  app.get<{ Querystring: { return_to?: string } }>('/api/sso/login', open, async (req, reply) => {
    const url = ctx.control.config.web.sso_proxy_url;
    if (!ctx.sso.usable || !url) return sendError(reply, 'not_found', 'sso sign-in is not configured');
    const origin = `${req.tp.peer.secure ? 'https' : req.protocol}://${req.host}`;
    const target = new URL(url);
    target.searchParams.set('redirect_to', origin + safeReturnPath(req.query.return_to));
    return reply.redirect(target.toString(), 302);
  });

  // Clears the cookie carrier (for sidecars and proxies that set it); the console itself stores no cookie.
  app.post('/api/sso/logout', open, async (_req, reply) => {
    reply.header('set-cookie', `${SSO_COOKIE}=; Path=/; Max-Age=0; HttpOnly; SameSite=Lax`);
    return { ok: true, message: 'signed out' };
  });
}
