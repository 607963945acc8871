// Builds the pooler's web app (fastify): /metrics, the /api/* endpoints and the console; started by server.ts.
import path from 'node:path';
import { packageRoot, packageVersion } from '../../shared/package-root.js';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { PoolerControl } from '../control.js';
import { AccessLog } from './access-log.js';
import { formatPeer, resolvePeer, TrustedProxies } from './auth/proxy.js';
import { authorize, resolveAuth, type Access } from './auth/resolve.js';
import { SsoRuntime } from './auth/sso.js';
import type { WebContext } from './context.js';
import { sendError } from './errors.js';
import { LogTap } from './log-tap.js';
import { renderPoolerMetrics } from './pooler-metrics.js';
import { registerAdminRoutes } from './routes/admin-routes.js';
import { registerAuthRoutes } from './routes/auth-routes.js';
import { registerLogsRoutes } from './routes/logs-routes.js';
import { registerProcessRoutes } from './routes/process-routes.js';
import { registerReadRoutes } from './routes/read-routes.js';
import { registerStaticRoutes, type StaticSite } from './routes/static-routes.js';
import { WebMetrics } from './web-metrics.js';

export const WEB_TARGET = 'pooler::web';
/** Largest request body accepted (admin actions carry a few dozen bytes). */
export const BODY_LIMIT = 16 * 1024;
export const UI_GATE_MESSAGE = 'web.ui = true ignored: admin_password is default/empty';

export interface WebAppOptions {
  /** Built console directory (index.html, assets/); default: ui/dist/console of this package. */
  staticDir?: string;
  /** Log tap idle time before it deactivates (default 2 minutes). */
  tapIdleMs?: number;
}

export const DEFAULT_STATIC_DIR = path.join(packageRoot, 'ui', 'dist', 'console');

/** Whether the console and /api/* are served: `ui = true` and a non-default admin password (startup gate). */
export function consoleEnabled(control: PoolerControl): boolean {
  const { web, general } = control.config;
  return web.ui && general.admin_password !== '' && general.admin_password !== 'admin';
}

const isApi = (url: string) => url === '/api' || url.startsWith('/api/');

export async function buildWebApp(control: PoolerControl, opts: WebAppOptions = {}): Promise<FastifyInstance> {
  const hub = control.logs;
  const log = hub.get(WEB_TARGET);
  const sso = new SsoRuntime(hub.get('pooler::web::sso'));
  const ctx: WebContext = {
    control,
    sso,
    log,
    metrics: new WebMetrics(sso),
    tap: new LogTap(
      hub,
      control.config.web.log_tap_max_entries,
      opts.tapIdleMs === undefined ? {} : { idleMs: opts.tapIdleMs },
    ),
    version: packageVersion,
    staticDir: opts.staticDir ?? DEFAULT_STATIC_DIR,
  };
  const ui = consoleEnabled(control);
  if (control.config.web.ui && !ui) log.warn(UI_GATE_MESSAGE);
  const proxies = (cidrs: readonly string[]) =>
    TrustedProxies.lenient(cidrs, (problem) => log.error({ problem }, 'web.trusted_proxies entry ignored'));
  let trusted = proxies(control.config.web.trusted_proxies);
  if (ui) sso.load(control.config.web);
  let closed = false;
  control.onReload((config) => {
    // PoolerControl has no way to unsubscribe: a closed app just stops listening.
    if (closed) return;
    trusted = proxies(config.web.trusted_proxies);
    ctx.tap.resize(config.web.log_tap_max_entries);
    if (ui) sso.load(config.web);
  });

  const web = control.config.web;
  const headersTimeout = Math.max(1, web.headers_timeout);
  const app = Fastify({
    logger: false,
    // Slowloris: a client sending its headers a byte at a time, or never finishing its body, or holding a socket
    // idle, is closed. Node checks headers and request times every connectionsCheckingInterval (30 s by default):
    // a quarter of headers_timeout, at most a second, keeps the bound close to the setting.
    http: { headersTimeout, connectionsCheckingInterval: Math.min(1000, Math.max(50, Math.floor(headersTimeout / 4))) },
    requestTimeout: Math.max(headersTimeout, web.request_timeout),
    keepAliveTimeout: Math.max(1, web.keep_alive_timeout),
    connectionTimeout: web.idle_timeout,
    bodyLimit: BODY_LIMIT,
    return503OnClosing: true,
    forceCloseConnections: true,
    // Requests refused before routing (a malformed URL): same JSON shape, and still one access line.
    frameworkErrors: (err, req, reply) => {
      req.tp = {
        startedAt: process.hrtime.bigint(),
        peer: resolvePeer(req.raw.socket.remoteAddress, req.raw.socket.remotePort, req.headers, trusted),
        auth: { role: 'rejected', source: 'none', user: null, credentials: false },
        access: 'none',
      };
      reply.raw.once('finish', () => logResponse(req, reply));
      void sendError(reply, 'bad_request', err.message);
    },
  });
  app.addHook('onClose', async () => {
    closed = true;
  });
  const access = new AccessLog(hub);
  app.decorateRequest('tp', null as never);

  app.addHook('onRequest', async (req: FastifyRequest, reply: FastifyReply) => {
    const startedAt = process.hrtime.bigint();
    const path = req.url.split('?')[0]!;
    const peer = resolvePeer(req.raw.socket.remoteAddress, req.raw.socket.remotePort, req.headers, trusted);
    const level: Access = req.routeOptions.config.access ?? (req.is404 ? 'none' : 'public');
    const query = req.query as Record<string, unknown> | undefined;
    const auth = await resolveAuth(
      {
        authorization: req.headers.authorization,
        cookie: req.headers.cookie,
        queryToken: typeof query?.['token'] === 'string' ? query['token'] : undefined,
        secure: peer.secure,
      },
      control.config,
      sso,
      (reason) => ctx.metrics.ssoValidationError(reason),
    );
    req.tp = { startedAt, peer, auth, access: level };
    if (isApi(path)) ctx.metrics.authAttempt(auth.role, auth.source);
    const decision = authorize(auth, level);
    if (decision.allow && level === 'admin' && crossSite(req)) {
      // A cookie carrier travels with cross-site form posts; admin actions only come from our own pages or tools.
      return sendError(reply, 'forbidden', 'cross-site admin request refused');
    }
    if (decision.allow) return;
    if (decision.status === 403) return sendError(reply, 'forbidden', 'admin role required');
    const wantsJson = /application\/json/i.test(req.headers.accept ?? '');
    if (!wantsJson) reply.header('www-authenticate', 'Basic realm="tidepool", charset="UTF-8"');
    return sendError(reply, 'unauthorized', 'authentication required');
  });

  const logResponse = (req: FastifyRequest, reply: FastifyReply): void => {
    const st = req.tp;
    if (!st) return;
    const [pathPart, queryPart] = splitUrl(req.url);
    // Console files and /metrics fetched without credentials are Anonymous whatever ui_anonymous says.
    const role =
      st.auth.role === 'rejected' && !st.auth.credentials && st.access === 'none' && !isApi(pathPart)
        ? 'anonymous'
        : st.auth.role;
    const bytes = Number(reply.getHeader('content-length') ?? 0);
    access.write({
      method: req.method,
      path: pathPart,
      query: queryPart,
      status: reply.statusCode,
      bytes: Number.isFinite(bytes) ? bytes : 0,
      latency_ms: Math.round(Number(process.hrtime.bigint() - st.startedAt) / 1e6),
      peer: formatPeer(st.peer),
      auth_role: role,
      auth_source: role === 'anonymous' ? '-' : st.auth.source === 'none' ? '-' : st.auth.source,
      auth_user: role === 'admin' || role === 'sso' ? (st.auth.user ?? '-') : '-',
    });
    ctx.metrics.request(reply.statusCode, role);
  };
  app.addHook('onResponse', async (req, reply) => logResponse(req, reply));

  app.setErrorHandler((err: Error & { statusCode?: number; code?: string }, req, reply) => {
    const status = err.statusCode ?? 500;
    if (status === 413) return sendError(reply, 'payload_too_large', `request body larger than ${BODY_LIMIT} bytes`);
    if (status === 415) return sendError(reply, 'unsupported_media_type', 'send JSON (Content-Type: application/json)');
    if (status >= 400 && status < 500) return sendError(reply, 'bad_request', err.message);
    log.error(
      { method: req.method, path: splitUrl(req.url)[0], error: err.message, code: err.code },
      'web request failed',
    );
    return sendError(reply, 'internal', 'internal error');
  });

  app.get('/metrics', { config: { access: 'none' } }, async (_req, reply) => {
    const text = (await ctx.metrics.registry.metrics()) + renderPoolerMetrics(control);
    return reply.type(ctx.metrics.registry.contentType).send(text);
  });

  let site: StaticSite | null = null;
  const apiRoutes = new Map<string, Set<string>>();
  if (ui) {
    app.addHook('onRoute', (r) => {
      if (!isApi(r.url)) return;
      const methods = apiRoutes.get(r.url) ?? new Set<string>();
      for (const m of [r.method].flat()) methods.add(m);
      apiRoutes.set(r.url, methods);
    });
    await app.register(async (scope) => {
      registerAuthRoutes(scope, ctx);
      registerReadRoutes(scope, ctx);
      registerProcessRoutes(scope, ctx);
      registerLogsRoutes(scope, ctx);
      registerAdminRoutes(scope, ctx);
      site = registerStaticRoutes(scope, ctx.staticDir, log);
    });
    app.addHook('onClose', async () => ctx.tap.stop());
  }

  app.setNotFoundHandler((req, reply) => {
    const [p] = splitUrl(req.url);
    const get = req.method === 'GET' || req.method === 'HEAD';
    if (isApi(p) || p === '/metrics' || p.startsWith('/assets/')) {
      const allowed = p === '/metrics' ? new Set(['GET', 'HEAD']) : apiRoutes.get(p);
      if (allowed && !allowed.has(req.method)) {
        reply.header('allow', [...allowed].join(', '));
        return sendError(reply, 'method_not_allowed', `${req.method} is not allowed on ${p}`);
      }
      return sendError(reply, 'not_found', `no endpoint ${p}`);
    }
    if (!site) return sendError(reply, 'not_found', 'the console is not enabled on this listener');
    if (!get) {
      reply.header('allow', 'GET, HEAD');
      return sendError(reply, 'method_not_allowed', `${req.method} is not allowed on ${p}`);
    }
    return (site as StaticSite).sendShell(reply, sso.usable ? control.config.web.sso_proxy_url : null);
  });

  await app.ready();
  return app;
}

/** A browser request sent from another site (Sec-Fetch-Site, or an Origin that is not this host). */
function crossSite(req: FastifyRequest): boolean {
  const site = req.headers['sec-fetch-site'];
  if (site === 'cross-site' || site === 'same-site') return true;
  const origin = req.headers.origin;
  if (origin === undefined || origin === 'null') return origin === 'null';
  return !URL.canParse(origin) || new URL(origin).host !== req.headers.host;
}

function splitUrl(url: string): [string, boolean] {
  const q = url.indexOf('?');
  return q < 0 ? [url, false] : [url.slice(0, q), true];
}
