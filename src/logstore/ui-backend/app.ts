// Builds the UI backend's HTTP app (fastify): the /api/v1 API over the log store, saved queries, the explorer bundle.
import type { ServerResponse } from 'node:http';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { UiError, asUiError, badRequest } from './errors.js';
import { type ExportEnv, planExport } from './export.js';
import { upstreamError } from './logstore-client.js';
import * as ops from './operations.js';
import { patterns } from './patterns.js';
import { queryText, rfc3339 } from './requests.js';
import { type SavedQueries, userOf } from './saved-queries.js';
import { registerExplorer } from './static-site.js';
import { Tail, tailLimitError } from './tail.js';

export interface UiAppEnv extends ExportEnv {
  log: Logger;
  saved: SavedQueries;
  tail: { pollMs: number; maxStreams: number; open: number };
  staticDir: string;
  /** `links.console_url`: where an opened record's pool links to (empty: nowhere). */
  consoleUrl?: string;
}

/** Largest JSON body (a search with its aggregations, a saved query's view). */
export const BODY_LIMIT = 256 * 1024;

function sendUiError(reply: FastifyReply, err: UiError): FastifyReply {
  return reply.code(err.status).type('application/json; charset=utf-8').send(err.body());
}

function isCli(req: FastifyRequest): boolean {
  return String(req.headers['x-tidepool-client'] ?? '').toLowerCase() === 'cli';
}

/** Writes to a raw response, resolving once it may take more (backpressure), failing when the client went away. */
function writer(res: ServerResponse): (chunk: Buffer) => Promise<void> {
  return (chunk) =>
    new Promise((resolve, reject) => {
      if (res.destroyed) return reject(new Error('the client closed the connection'));
      if (res.write(chunk)) return resolve();
      const done = () => {
        res.off('drain', done);
        res.off('close', done);
        if (res.destroyed && res.writableNeedDrain) reject(new Error('the client closed the connection'));
        else resolve();
      };
      res.once('drain', done);
      res.once('close', done);
    });
}

export async function buildUiApp(env: UiAppEnv): Promise<FastifyInstance> {
  const app = Fastify({ logger: false, bodyLimit: BODY_LIMIT, return503OnClosing: true, forceCloseConnections: true });
  const routeOf = (req: FastifyRequest) => req.routeOptions.url ?? 'unmatched';
  app.addHook('onRequest', async (req) => {
    (req as FastifyRequest & { startedAt?: bigint }).startedAt = process.hrtime.bigint();
  });
  app.addHook('onResponse', async (req, reply) => {
    const route = routeOf(req);
    env.metrics.requests.inc({ route, status: String(reply.statusCode) });
    const started = (req as FastifyRequest & { startedAt?: bigint }).startedAt;
    if (started) env.metrics.duration.observe({ route }, Number(process.hrtime.bigint() - started) / 1e9);
  });

  app.setErrorHandler((err: Error & { statusCode?: number }, req, reply) => {
    if (err instanceof UiError) {
      if (err.code === 'limit_exceeded') env.metrics.limitRejections.inc({ limit: String(err.extra.limit) });
      return sendUiError(reply, err);
    }
    const status = err.statusCode ?? 500;
    if (status === 413) return sendUiError(reply, badRequest(`the body is larger than ${BODY_LIMIT} bytes`));
    if (status === 415) return sendUiError(reply, badRequest('send JSON (Content-Type: application/json)'));
    if (status >= 400 && status < 500) return sendUiError(reply, badRequest(err.message));
    env.log.error({ err, method: req.method, url: req.url }, 'request failed');
    return sendUiError(reply, new UiError('internal', 'internal error'));
  });

  const body = (req: FastifyRequest) => ops.asBody(req.body);

  app.get('/api/v1/fields', async () => ops.fields(env));
  app.post('/api/v1/search', async (req) => ops.search(env, body(req), isCli(req)));
  app.get<{ Params: { id: string } }>('/api/v1/events/:id', async (req) => ops.event(env, req.params.id));
  app.post('/api/v1/aggregation', async (req) => ops.aggregation(env, body(req)));
  app.post('/api/v1/aggregation_ts', async (req) => ops.aggregationTs(env, body(req)));
  app.post('/api/v1/histogram', async (req) => ops.histogram(env, body(req)));
  app.post('/api/v1/context', async (req) => ops.context(env, body(req)));
  app.post('/api/v1/patterns', async (req) => patterns(env, body(req)));
  app.get('/api/v1/limits', async () => ops.limits(env));
  app.get('/api/v1/links', async () => ({ console_url: env.consoleUrl || null }));
  app.get('/api/v1/status', async () => ops.status(env));

  app.post('/api/v1/export', async (req, reply) => {
    const plan = planExport(env, body(req));
    const res = reply.raw;
    let started = false;
    const write = writer(res);
    try {
      await plan.run(async (chunk) => {
        if (!started) {
          started = true;
          reply.hijack();
          res.writeHead(200, {
            'content-type': plan.contentType,
            'content-disposition': `attachment; filename="${plan.filename}"`,
            'cache-control': 'no-store',
            'x-content-type-options': 'nosniff',
          });
        }
        await write(chunk);
      });
    } catch (err) {
      // A gRPC status (a numeric code) is the log store failing mid-stream.
      const e =
        err instanceof UiError
          ? err
          : typeof (err as { code?: unknown }).code === 'number'
            ? upstreamError(err, 'the log store', env.client.timeoutMs)
            : asUiError(err);
      // Once bytes were sent the status cannot change: the response is cut so the client sees an incomplete body.
      if (started) {
        env.log.warn({ error: e.message }, 'export cut');
        res.destroy();
        return reply;
      }
      throw e;
    }
    if (!started) {
      reply.hijack();
      res.writeHead(200, {
        'content-type': plan.contentType,
        'content-disposition': `attachment; filename="${plan.filename}"`,
        'cache-control': 'no-store',
      });
    }
    res.end();
    return reply;
  });

  app.get<{ Querystring: { query?: string; since?: string } }>('/api/v1/tail', async (req, reply) => {
    const query = queryText(req.query.query ?? '');
    const since = req.query.since ? Date.parse(rfc3339(req.query.since, 'since')) : Date.now();
    if (env.tail.open >= env.tail.maxStreams) throw tailLimitError(env.tail.maxStreams);
    env.tail.open++;
    env.metrics.tails.set(env.tail.open);
    reply.hijack();
    const res = reply.raw;
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
    });
    res.write(
      `event: open\ndata: ${JSON.stringify({ query, since: new Date(since).toISOString(), poll_ms: env.tail.pollMs })}\n\n`,
    );
    const tail = new Tail(
      env.client,
      { query, since, pollMs: env.tail.pollMs, batch: env.limits.max_search_limit },
      (events) => {
        res.write(events.map((e) => `id: ${e.id}\nevent: event\ndata: ${JSON.stringify(e)}\n\n`).join(''));
      },
      (err) => {
        res.write(`event: error\ndata: ${JSON.stringify(err.body())}\n\n`);
      },
      env.log,
    );
    // A comment line now and then keeps idle proxies from closing the stream.
    const ping = setInterval(() => res.write(': ping\n\n'), 15_000);
    res.on('close', () => {
      clearInterval(ping);
      tail.stop();
      env.tail.open--;
      env.metrics.tails.set(env.tail.open);
    });
    tail.start();
    return reply;
  });

  app.get('/api/v1/saved_queries', async (req) => ({
    saved_queries: env.saved.list(userOf(req.headers['x-tidepool-user'])),
  }));
  app.post('/api/v1/saved_queries', async (req, reply) => {
    const user = userOf(req.headers['x-tidepool-user']);
    const b = body(req);
    if (typeof b.query === 'string') queryText(b.query);
    return reply.code(200).send({ saved_query: env.saved.save(user, b) });
  });
  app.delete<{ Params: { id: string } }>('/api/v1/saved_queries/:id', async (req) => {
    const user = userOf(req.headers['x-tidepool-user']);
    const id = Number(req.params.id);
    if (!Number.isInteger(id) || id <= 0) throw badRequest('a saved query id is a positive integer', { field: 'id' });
    env.saved.remove(user, id);
    return { deleted: id };
  });

  registerExplorer(app, env.staticDir, env.log);
  await app.ready();
  return app;
}
