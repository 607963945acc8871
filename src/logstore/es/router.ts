// Routes of the Elasticsearch surface beyond _bulk and the probes: _cat/health, _cluster/health, _refresh, _count, _search,
// single-document writes, PUT and HEAD /<index>. Answers null when the path is not one of them.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { HttpContext } from '../context.js';
import { BadRequest, ErrorCode, LogstoreError } from '../errors.js';
import { writeDoc } from './doc-routes.js';
import { catHealth, clusterHealth, headIndex, putIndex, refresh } from './index-routes.js';
import { count, getDoc, search } from './search-routes.js';

function methods(method: string, path: string, allowed: string[]): void {
  if (!allowed.includes(method))
    throw new LogstoreError(ErrorCode.MethodNotAllowed, `${method} ${path}: use ${allowed.join(' or ')}`);
}

export async function esRoute(
  ctx: HttpContext,
  req: IncomingMessage,
  res: ServerResponse,
  path: string,
  params: URLSearchParams,
): Promise<[string, number] | null> {
  const method = req.method ?? 'GET';
  if (path === '/_cluster/health' || path.startsWith('/_cluster/health/')) {
    methods(method, path, ['GET']);
    return ['/_cluster/health', clusterHealth(ctx, req, res)];
  }
  if (path === '/_cat/health') {
    methods(method, path, ['GET']);
    req.resume();
    return ['/_cat/health', catHealth(ctx, req, res, params)];
  }
  let parts: string[];
  try {
    parts = path
      .split('/')
      .slice(1)
      .map((p) => decodeURIComponent(p));
  } catch (err) {
    throw new BadRequest(`the path ${JSON.stringify(path)} is not valid percent-encoding (${(err as Error).message})`);
  }
  // /_refresh, /_count, /_search, or /<indices>/_refresh|_count|_search
  const [first, second, third] = parts;
  const op =
    parts.length === 1
      ? first
      : parts.length === 2 && (!first!.startsWith('_') || first === '_all')
        ? second
        : undefined;
  const target = parts.length === 2 && first !== '_all' ? first! : '_all';
  if (op === '_refresh') {
    methods(method, path, ['GET', 'POST']);
    req.resume();
    return ['/_refresh', refresh(ctx, req, res)];
  }
  if (op === '_count') {
    methods(method, path, ['GET', 'POST']);
    return ['/_count', await count(ctx, req, res, params)];
  }
  if (op === '_search') {
    methods(method, path, ['GET', 'POST']);
    return ['/_search', await search(ctx, req, res, target, params)];
  }
  if (first === undefined || first === '' || first.startsWith('_')) return null;
  if (parts.length === 1) {
    if (method === 'PUT') return ['/<index>', putIndex(req, res, first)];
    if (method === 'HEAD') return ['/<index>', headIndex(req, res, first)];
    return null;
  }
  if (second === '_doc' && parts.length === 2) {
    methods(method, path, ['POST']);
    return [
      '/<index>/_doc',
      await writeDoc(ctx, req, res, first, null, params.get('op_type') === 'create' ? 'create' : 'index'),
    ];
  }
  if (second === '_doc' && parts.length === 3 && third !== undefined && (method === 'GET' || method === 'HEAD')) {
    return ['/<index>/_doc/<id>', await getDoc(ctx, req, res, first, third)];
  }
  if ((second === '_doc' || second === '_create') && parts.length === 3 && third !== undefined) {
    methods(method, path, ['GET', 'PUT', 'POST']);
    const create = second === '_create' || params.get('op_type') === 'create';
    return [`/<index>/${second}/<id>`, await writeDoc(ctx, req, res, first, third, create ? 'create' : 'index')];
  }
  return null;
}
