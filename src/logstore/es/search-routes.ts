// Elasticsearch _search and _count over the store: the query DSL (or ?q=) translated to seq-ql, hits in
// Elasticsearch's shape ({hits: {total, hits: [{_index, _id, _source, sort}]}}).
import type { IncomingMessage, ServerResponse } from 'node:http';
import { parseDuration } from '../../config/units.js';
import { TIME_FIELDS, idTime } from '../doc-time.js';
import type { FieldsPipe } from '../query/ast.js';
import { QueryLimitError } from '../query/limits.js';
import { QueryFieldError, planQuery, type Plan } from '../query/plan.js';
import { UnprintableFieldError, queryText } from '../query/print.js';
import { readJsonBody } from './body.js';
import type { HttpContext } from '../context.js';
import type { PartialInfo } from '../backend.js';
import { esError } from './reply.js';
import { sendEsJson } from './reply.js';
import { DslError } from './query-nodes.js';
import { translateQuery } from './query-dsl.js';
import { translateQueryString } from './query-string.js';

/** Request keys read, or accepted and ignored (scoring, versions: a log store has neither). */
const KNOWN = new Set([
  'query',
  'size',
  'from',
  'sort',
  '_source',
  'track_total_hits',
  'timeout',
  'track_scores',
  'version',
  'seq_no_primary_term',
  'post_filter',
]);
const TIME = new Set<string>(TIME_FIELDS);

interface Parsed {
  plan: Plan;
  /** The same query as seq-ql (what a proxy sends its stores). */
  text: string;
  from: number;
  to: number;
  pipes: FieldsPipe[];
}

class BadSearch extends Error {
  constructor(
    message: string,
    readonly type = 'parsing_exception',
  ) {
    super(message);
  }
}

function bad(message: string): never {
  throw new BadSearch(message);
}

/** The query of a _search or _count: the body's `query` (plus post_filter), or ?q= with df and default_operator. */
function parseQuery(ctx: HttpContext, body: Record<string, unknown>, params: URLSearchParams): Parsed {
  try {
    let t;
    const q = params.get('q');
    if (q !== null) {
      const op = (params.get('default_operator') ?? 'or').toLowerCase();
      t = {
        root: translateQueryString(q, { defaultField: params.get('df'), defaultOperator: op === 'and' ? 'and' : 'or' }),
        from: -8.64e15,
        to: 8.64e15,
      };
    } else {
      const query =
        body.post_filter === undefined
          ? body.query
          : { bool: { filter: [body.query ?? { match_all: {} }, body.post_filter] } };
      t = translateQuery(query, ctx.mapping);
    }
    const pipes = sourcePipes(body._source ?? params.get('_source') ?? undefined);
    return {
      plan: planQuery({ root: t.root, pipes }, ctx.mapping),
      text: queryText({ root: t.root, pipes }),
      from: t.from,
      to: t.to,
      pipes,
    };
  } catch (err) {
    if (err instanceof DslError) bad(err.message);
    if (err instanceof UnprintableFieldError) bad(err.message);
    if (err instanceof QueryFieldError) bad(`field [${err.field}] is not indexed (the mapping does not list it)`);
    // Elasticsearch answers too_many_clauses past indices.query.bool.max_clause_count; past the depth, an
    // illegal argument naming indices.query.bool.max_nested_depth. Ours name the log store's limits.
    if (err instanceof QueryLimitError)
      throw new BadSearch(err.message, err.limit === 'max_clauses' ? 'too_many_clauses' : 'illegal_argument_exception');
    throw err;
  }
}

/** `_source` filters as `| fields` pipes; an include list keeps `_id` too (it answers the hit's _id). */
function sourcePipes(src: unknown): FieldsPipe[] {
  return sourceFilter(src).map((p) => (p.except ? p : { ...p, names: [...p.names, '_id'] }));
}

function sourceFilter(src: unknown): FieldsPipe[] {
  if (src === undefined || src === true || src === 'true') return [];
  if (typeof src === 'string') return [{ kind: 'fields', except: false, names: src.split(',').filter(Boolean) }];
  if (Array.isArray(src) && src.every((x) => typeof x === 'string'))
    return [{ kind: 'fields', except: false, names: src as string[] }];
  if (typeof src === 'object' && src !== null && !Array.isArray(src)) {
    const o = src as Record<string, unknown>;
    const pipes: FieldsPipe[] = [];
    const names = (v: unknown) =>
      typeof v === 'string'
        ? [v]
        : Array.isArray(v) && v.every((x) => typeof x === 'string')
          ? (v as string[])
          : bad('_source includes/excludes are lists of field names');
    if (o.includes !== undefined) pipes.push({ kind: 'fields', except: false, names: names(o.includes) });
    if (o.excludes !== undefined) pipes.push({ kind: 'fields', except: true, names: names(o.excludes) });
    return pipes;
  }
  if (src === false || src === 'false') return [];
  return bad('_source is true, false, a list of fields or {includes, excludes}');
}

function intParam(v: unknown, name: string, dflt: number, max: number): number {
  if (v === undefined || v === null) return dflt;
  const n = typeof v === 'string' ? Number(v) : v;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 0 || n > max)
    bad(`${name} must be an integer in [0, ${max}]; found ${JSON.stringify(v)}`);
  return n;
}

/**
 * Elasticsearch's per-request `timeout` (body or ?timeout=) as a deadline; search.timeout still applies when it
 * is sooner (Store and Cluster take the sooner). Absent or -1: none of its own.
 */
function deadlineOf(v: unknown, started: number): number | undefined {
  if (v === undefined || v === null || v === -1 || v === '-1') return undefined;
  const ms = parseDuration(v);
  if (ms === null || ms <= 0)
    bad(`timeout must be a duration such as "500ms", "10s" or "1m"; found ${JSON.stringify(v)}`);
  return started + ms;
}

/** Newest first unless a sort on a time field says asc; other sorts are refused (no scores, no field sorts). */
function order(sort: unknown): 'desc' | 'asc' {
  if (sort === undefined) return 'desc';
  const list = Array.isArray(sort) ? sort : [sort];
  let dir: 'desc' | 'asc' = 'desc';
  for (const s of list) {
    if (s === '_score' || s === '_doc') continue;
    const [field, spec] =
      typeof s === 'string'
        ? [s.split(':')[0]!, s.split(':')[1] ?? 'asc']
        : typeof s === 'object' && s !== null
          ? (Object.entries(s)[0] ?? ['', ''])
          : ['', ''];
    const d = typeof spec === 'string' ? spec : (spec as Record<string, unknown>)?.order;
    if (!TIME.has(field))
      bad(`sort: only the document time (${TIME_FIELDS.join(', ')}) sorts; found ${JSON.stringify(s)}`);
    if (d !== 'asc' && d !== 'desc') bad(`sort order is "asc" or "desc"; found ${JSON.stringify(d)}`);
    dir = d;
  }
  return dir;
}

/** `_shards` of an answer: through a proxy, shards that failed are counted (the answer holds what arrived). */
async function body(req: IncomingMessage): Promise<Record<string, unknown>> {
  return req.method === 'GET' || req.method === 'POST' ? readJsonBody(req) : {};
}

/** Elasticsearch's `_shards`: through a proxy, shards that did not answer are counted as failed. */
function shardsOf(ctx: HttpContext, partial: PartialInfo | undefined) {
  const failed = partial?.failedShards ?? 0;
  return { total: ctx.store.shardCount, successful: ctx.store.shardCount - failed, skipped: 0, failed };
}

function badRequest(res: ServerResponse, err: unknown): number {
  if (err instanceof BadSearch) {
    esError(res, 400, err.type, err.message);
    return 400;
  }
  throw err;
}

export async function search(
  ctx: HttpContext,
  req: IncomingMessage,
  res: ServerResponse,
  index: string,
  params: URLSearchParams,
): Promise<number> {
  const started = Date.now();
  const b = await body(req);
  try {
    const extra = Object.keys(b).filter((k) => !KNOWN.has(k));
    if (extra.length)
      bad(
        `unsupported search keys [${extra.join(', ')}]; the log store reads query, size, from, sort (by time), _source and post_filter (aggregations: POST /aggregate)`,
      );
    const q = parseQuery(ctx, b, params);
    const max = ctx.config.limits.search_docs;
    const size = intParam(b.size ?? params.get('size'), 'size', 10, max);
    const from = intParam(b.from ?? params.get('from'), 'from', 0, max);
    if (size + from > max) bad(`from + size must be at most limits.search_docs (${max}); found ${size + from}`);
    const dir = order(b.sort ?? params.get('sort') ?? undefined);
    const deadline = deadlineOf(b.timeout ?? params.get('timeout'), started);
    const r = await ctx.store.query({
      text: q.text,
      plan: q.plan,
      from: q.from,
      to: q.to,
      limit: from + size,
      order: dir,
      pipes: q.pipes,
      withTotal: true,
      ...(deadline === undefined ? {} : { deadline }),
    });
    const noSource = b._source === false || params.get('_source') === 'false';
    const hits = r.hits.slice(from, from + size).map((h) => {
      const hit = JSON.parse(h.json) as { id: string; data: Record<string, unknown> };
      const { _id: clientId, ...source } = hit.data;
      return {
        _index: index,
        _id: typeof clientId === 'string' ? clientId : hit.id,
        _score: null,
        ...(noSource ? {} : { _source: source }),
        sort: [h.time],
      };
    });
    sendEsJson(req, res, 200, {
      // A search stopped at search.timeout answers what it found, as Elasticsearch does past a timeout.
      took: Date.now() - started,
      timed_out: r.timedOut === true,
      _shards: shardsOf(ctx, r.partial),
      hits: { total: { value: r.total, relation: 'eq' }, max_score: null, hits },
    });
    return 200;
  } catch (err) {
    return badRequest(res, err);
  }
}

export async function count(
  ctx: HttpContext,
  req: IncomingMessage,
  res: ServerResponse,
  params: URLSearchParams,
): Promise<number> {
  const b = await body(req);
  try {
    const extra = Object.keys(b).filter((k) => k !== 'query');
    if (extra.length) bad(`unsupported _count keys [${extra.join(', ')}]; _count reads query`);
    const q = parseQuery(ctx, b, params);
    const r = await ctx.store.query({
      text: q.text,
      plan: q.plan,
      from: q.from,
      to: q.to,
      limit: 0,
      order: 'desc',
      withTotal: true,
    });
    sendEsJson(req, res, 200, {
      count: r.total,
      ...(r.timedOut ? { timed_out: true } : {}),
      _shards: shardsOf(ctx, r.partial),
    });
    return 200;
  } catch (err) {
    return badRequest(res, err);
  }
}

/**
 * GET /<index>/_doc/<id>: Elasticsearch's get. The id is a document's client `_id` (found by a term query on `_id`,
 * which the mapping must index, as `auto` does) or the store's own id; found: 200 with `_source`, else 404
 * `found: false`. The store keeps one copy per `_id` (a repeated `index` is a noop), so `_version` is always 1.
 */
export async function getDoc(
  ctx: HttpContext,
  req: IncomingMessage,
  res: ServerResponse,
  index: string,
  id: string,
): Promise<number> {
  req.resume();
  let found: { id: string; data: Record<string, unknown> } | null = null;
  if (idTime(id) !== null) {
    const [h] = await ctx.store.fetch([id], []).then((a) => a.hits);
    if (h) found = JSON.parse(h.json) as { id: string; data: Record<string, unknown> };
  }
  if (!found) {
    let q: Parsed | null = null;
    try {
      q = parseQuery(ctx, { query: { term: { _id: id } } }, new URLSearchParams());
    } catch (err) {
      // `_id` is not indexed: nothing can be found by it.
      if (!(err instanceof BadSearch)) throw err;
    }
    if (q) {
      const r = await ctx.store.query({
        text: q.text,
        plan: q.plan,
        from: q.from,
        to: q.to,
        limit: 1,
        order: 'desc',
        pipes: q.pipes,
        withTotal: false,
      });
      const h = r.hits.length > 0 ? r.hits.get(0) : null;
      if (h) found = JSON.parse(h.json) as { id: string; data: Record<string, unknown> };
    }
  }
  if (!found) {
    sendEsJson(req, res, 404, { _index: index, _id: id, found: false });
    return 404;
  }
  const { _id: clientId, ...source } = found.data;
  sendEsJson(req, res, 200, {
    _index: index,
    _id: typeof clientId === 'string' ? clientId : found.id,
    _version: 1,
    _seq_no: 0,
    _primary_term: 1,
    found: true,
    _source: source,
  });
  return 200;
}
