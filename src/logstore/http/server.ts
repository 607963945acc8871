// The log store's HTTP servers: the API (bulk ingest, probes, search API) and the debug listener.
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { HttpContext } from '../context.js';
import { ErrorCode, HttpError, httpStatus, sendError, sendJson } from './errors.js';
import { LogstoreError } from '../errors.js';
import { bulk, license, probe, rootInfo } from './es-routes.js';
import * as api from './search-routes.js';
import { readJsonBody } from '../es/body.js';
import { STUCK_GRACE_MS, statusOf } from '../api/operations.js';
import { esRoute } from '../es/router.js';

type Handler = (ctx: HttpContext, req: IncomingMessage, res: ServerResponse) => Promise<number>;

/** POST routes besides api.JSON_ROUTES (/search, /complex-search, /aggregate, /histogram, /fetch). */
const POST_ROUTES: Record<string, Handler> = {
  '/export': api.exportDocs,
};
const GET_ROUTES: Record<string, Handler> = { '/mappings': api.mappings, '/status': api.status };
const PROBE =
  /^\/(_ilm|_index_template|_template|_component_template|_ingest|_nodes|_cluster|_xpack|_data_stream)(\/|$)/;
const INDEX_BULK = /^\/([^/_][^/]*)\/_bulk$/;
const ASYNC_ONE = /^\/async-search\/([^/]+)(\/cancel)?$/;

/** POST /async-search, GET /async-search, GET|DELETE /async-search/{id}, POST /async-search/{id}/cancel. */
async function asyncSearch(
  ctx: HttpContext,
  req: IncomingMessage,
  res: ServerResponse,
  path: string,
  method: string,
): Promise<number> {
  const searches = ctx.asyncSearches;
  if (path === '/async-search') {
    if (method === 'POST') {
      sendJson(res, 200, { search_id: searches.start(await readJsonBody(req)) });
      return 200;
    }
    if (method !== 'GET')
      throw new HttpError(
        405,
        ErrorCode.MethodNotAllowed,
        `${method} ${path}: use POST to start a search, GET to list them`,
      );
    req.resume();
    sendJson(res, 200, { searches: searches.list() });
    return 200;
  }
  const m = ASYNC_ONE.exec(path)!;
  const id = decodeURIComponent(m[1]!);
  req.resume();
  if (m[2]) {
    if (method !== 'POST') throw new HttpError(405, ErrorCode.MethodNotAllowed, `${method} ${path}: use POST`);
    searches.cancel(id);
    sendJson(res, 200, { search_id: id, canceled: true });
  } else if (method === 'GET') {
    const { info, response } = searches.get(id);
    sendJson(res, 200, {
      ...info,
      response: { ...response, docs: response.docs.map((h) => JSON.parse(h.json) as unknown) },
    });
  } else if (method === 'DELETE') {
    searches.delete(id);
    sendJson(res, 200, { search_id: id, deleted: true });
  } else throw new HttpError(405, ErrorCode.MethodNotAllowed, `${method} ${path}: use GET or DELETE`);
  return 200;
}

/** `query`: the URL's text after `?` (parsed only by the Elasticsearch routes that read parameters). */
async function dispatch(
  ctx: HttpContext,
  req: IncomingMessage,
  res: ServerResponse,
  path: string,
  query: string,
): Promise<[string, number]> {
  const method = req.method ?? 'GET';
  if (path === '/') {
    req.resume();
    rootInfo(req, res, method === 'HEAD');
    return ['/', 200];
  }
  if (path === '/_license' || path === '/_xpack/license') {
    req.resume();
    license(req, res);
    return ['/_license', 200];
  }
  // /_cluster/health is answered (es/router.ts); the rest of /_cluster/* stays a probe.
  if (PROBE.test(path) && !path.startsWith('/_cluster/health')) {
    probe(req, res);
    return ['probe', 200];
  }
  const indexBulk = INDEX_BULK.exec(path);
  if (path === '/_bulk' || indexBulk) {
    if (method !== 'POST' && method !== 'PUT')
      throw new HttpError(405, ErrorCode.MethodNotAllowed, `${method} ${path}: use POST`);
    return ['/_bulk', await bulk(ctx, req, res, indexBulk ? decodeURIComponent(indexBulk[1]!) : 'logs')];
  }
  if (path === '/async-search' || ASYNC_ONE.test(path))
    return ['/async-search', await asyncSearch(ctx, req, res, path, method)];
  // POST to a JSON route is served before dispatch (createApiServer); any other method is this 405.
  if (api.JSON_ROUTES[path]) throw new HttpError(405, ErrorCode.MethodNotAllowed, `${method} ${path}: use POST`);
  const post = POST_ROUTES[path];
  if (post) {
    if (method !== 'POST') throw new HttpError(405, ErrorCode.MethodNotAllowed, `${method} ${path}: use POST`);
    return [path, await post(ctx, req, res)];
  }
  const get = GET_ROUTES[path];
  if (get) {
    if (method !== 'GET') throw new HttpError(405, ErrorCode.MethodNotAllowed, `${method} ${path}: use GET`);
    req.resume();
    return [path, await get(ctx, req, res)];
  }
  const es = await esRoute(ctx, req, res, path, new URLSearchParams(query));
  if (es) return es;
  throw new HttpError(404, ErrorCode.NotFound, `no route ${method} ${path}`);
}

/** The request counter and duration histogram of one route, their label sets looked up once. */
interface RouteMetrics {
  ok: { inc(): void };
  duration: { observe(v: number): void };
}

export function createApiServer(ctx: HttpContext): http.Server {
  const byRoute = new Map<string, RouteMetrics>();
  const metricsOf = (route: string): RouteMetrics => {
    let m = byRoute.get(route);
    if (!m)
      byRoute.set(
        route,
        (m = { ok: ctx.metrics.requests.labels(route, '200'), duration: ctx.metrics.duration.labels(route) }),
      );
    return m;
  };
  const served = (route: string, status: number, started: number) => {
    const m = metricsOf(route);
    if (status === 200) m.ok.inc();
    else ctx.metrics.requests.inc({ route, status: String(status) });
    m.duration.observe((performance.now() - started) / 1e3);
  };
  const failed = (req: IncomingMessage, res: ServerResponse, path: string, err: unknown) => {
    const e =
      err instanceof LogstoreError
        ? err
        : new HttpError(500, ErrorCode.Internal, `internal error: ${(err as Error).message}`);
    if (!(err instanceof LogstoreError)) ctx.log.error({ err, path }, 'request failed');
    const status = httpStatus(e);
    ctx.metrics.requests.inc({ route: 'error', status: String(status) });
    req.resume();
    // A body past its limit is left unread: the connection closes after the answer.
    if (!res.headersSent) sendError(res, e, status === 413 ? { connection: 'close' } : {});
    else res.destroy();
  };
  return http.createServer((req, res) => {
    const started = performance.now();
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    // The search API's JSON routes: body, answer, metrics, with no promise when the answer is at hand.
    const json = req.method === 'POST' ? api.JSON_ROUTES[path] : undefined;
    if (json) {
      api.serveJsonRoute(
        ctx,
        req,
        res,
        json,
        () => served(path, 200, started),
        (err) => failed(req, res, path, err),
      );
      return;
    }
    dispatch(ctx, req, res, path, q < 0 ? '' : url.slice(q + 1)).then(
      ([route, status]) => served(route, status, started),
      (err: unknown) => failed(req, res, path, err),
    );
  });
}

/** /health answers within this even when a store (proxy mode) hangs. */
const HEALTH_WAIT_MS = 2000;

/**
 * The debug /health: `ok`, or `degraded` with one reason a line (always HTTP 200: the process answers; the body says
 * how well): a shard thread busy past search.timeout, storage problems (a write-ahead tail dropped, a fraction
 * quarantined, a full disk), a store down or behind (proxy mode).
 */
export async function healthOf(
  ctx: Pick<HttpContext, 'store' | 'config'>,
): Promise<{ status: 'ok' | 'degraded'; degraded?: string[] }> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<null>((resolve) => {
    timer = setTimeout(() => resolve(null), HEALTH_WAIT_MS);
  });
  const st = await Promise.race([ctx.store.status(), late]).finally(() => clearTimeout(timer));
  if (!st) return { status: 'degraded', degraded: [`the store's status did not answer within ${HEALTH_WAIT_MS} ms`] };
  const limit = (ctx.config.search.timeout || 0) + STUCK_GRACE_MS;
  const reasons: string[] = [];
  for (const s of st.shards) {
    if (s.stale && (s.busy_ms ?? 0) > limit)
      reasons.push(`shard ${s.shard} thread busy for ${s.busy_ms} ms, past search.timeout`);
    for (const p of s.problems ?? []) reasons.push(`shard ${s.shard}: ${p.kind} ${p.name}`);
  }
  for (const s of st.stores) {
    if (!s.ok) reasons.push(`store ${s.addr} is down: ${s.error}`);
    else if ((s.behind ?? 0) > 0) reasons.push(`store ${s.addr} is behind by ${s.behind} batches`);
  }
  return reasons.length ? { status: 'degraded', degraded: reasons } : { status: 'ok' };
}

/** What the debug listener reads: the store's status (local shards or the cluster), metrics, bulks in flight. */
export type DebugContext = Pick<HttpContext, 'store' | 'config' | 'mapping' | 'metrics' | 'inflight'>;

export function createDebugServer(ctx: DebugContext): http.Server {
  return http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    req.resume();
    if (path === '/metrics') {
      ctx.metrics.registry.metrics().then(
        (text) => {
          res.writeHead(200, { 'content-type': ctx.metrics.registry.contentType });
          res.end(text);
        },
        (err: Error) => sendError(res, new HttpError(500, ErrorCode.Internal, err.message)),
      );
      return;
    }
    if (path === '/status') {
      // The HTTP API's /status, here too: store mode has no HTTP API, and this listener is the operator's.
      statusOf(ctx, ctx.inflight.bulks).then(
        (st) => sendJson(res, 200, st),
        (err: Error) => sendError(res, new HttpError(500, ErrorCode.Internal, err.message)),
      );
      return;
    }
    if (path === '/health') {
      healthOf(ctx).then(
        (h) => sendJson(res, 200, { ...h, inflight_bulks: ctx.inflight.bulks }),
        (err: Error) =>
          sendJson(res, 200, {
            status: 'degraded',
            degraded: [`status unavailable: ${err.message}`],
            inflight_bulks: ctx.inflight.bulks,
          }),
      );
      return;
    }
    sendError(
      res,
      new HttpError(404, ErrorCode.NotFound, `no route ${req.method} ${path}; try /metrics, /health or /status`),
    );
  });
}
