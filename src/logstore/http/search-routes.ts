// Search API: /search, /complex-search, /aggregate, /histogram, /fetch, /export, /mappings, /status.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { finalizeAgg, type AggSpec } from '../aggregate/aggregate.js';
import { idTime } from '../doc-time.js';
import type { StoreQueryResult } from '../store.js';
import { readJsonBody } from './body.js';
import type { HttpContext } from './context.js';
import { ErrorCode, HttpError, sendJson } from './errors.js';
import { parseAggs, parseInterval, parseQuerySpec, parseSearchSpec } from './search-request.js';

function aggsJson(specs: AggSpec[], r: StoreQueryResult): string {
  return JSON.stringify(specs.map((s, i) => finalizeAgg(s, r.aggs[i]!)));
}

function histJson(r: StoreQueryResult): string {
  const buckets = [...r.hist].sort((a, b) => a[0] - b[0]).map(([ts, c]) => ({ ts: new Date(ts).toISOString(), doc_count: c }));
  return JSON.stringify({ buckets });
}

async function searchLike(ctx: HttpContext, req: IncomingMessage, res: ServerResponse, complex: boolean): Promise<number> {
  const body = await readJsonBody(req);
  const spec = parseSearchSpec(body, ctx.mapping, ctx.config.limits.search_docs);
  const aggs = complex ? parseAggs(body.aggs, ctx.mapping) : [];
  const hist = complex && body.hist !== undefined ? parseInterval((body.hist as Record<string, unknown> | null)?.interval, 'hist.interval') : 0;
  const r = await ctx.store.query({
    plan: spec.plan, from: spec.from, to: spec.to, limit: spec.offset + spec.size, order: spec.order, aggs, histInterval: hist,
    pipes: spec.pipes, withTotal: spec.withTotal,
  });
  let tail = ']';
  if (complex) {
    tail += `,"aggs":${aggsJson(aggs, r)}`;
    if (hist) tail += `,"hist":${histJson(r)}`;
  }
  sendJson(res, 200, r.hits.jsonBytes(spec.offset, spec.offset + spec.size, `{"total":${r.total},"docs":[`, `${tail}}`));
  return 200;
}

export const search = (ctx: HttpContext, req: IncomingMessage, res: ServerResponse) => searchLike(ctx, req, res, false);
export const complexSearch = (ctx: HttpContext, req: IncomingMessage, res: ServerResponse) => searchLike(ctx, req, res, true);

export async function aggregate(ctx: HttpContext, req: IncomingMessage, res: ServerResponse): Promise<number> {
  const body = await readJsonBody(req);
  const spec = parseQuerySpec(body, ctx.mapping);
  const aggs = parseAggs(body.aggs ?? body.agg, ctx.mapping);
  if (aggs.length === 0) throw new HttpError(400, ErrorCode.BadRequest, 'aggs must list at least one aggregation {field, func, group_by, quantiles, interval}');
  const r = await ctx.store.query({ plan: spec.plan, from: spec.from, to: spec.to, limit: 0, order: 'desc', aggs });
  sendJson(res, 200, `{"total":${r.total},"aggs":${aggsJson(aggs, r)}}`);
  return 200;
}

export async function histogram(ctx: HttpContext, req: IncomingMessage, res: ServerResponse): Promise<number> {
  const body = await readJsonBody(req);
  const spec = parseQuerySpec(body, ctx.mapping);
  const interval = parseInterval(body.interval ?? (body.hist as Record<string, unknown> | undefined)?.interval, 'interval');
  const r = await ctx.store.query({ plan: spec.plan, from: spec.from, to: spec.to, limit: 0, order: 'desc', histInterval: interval });
  sendJson(res, 200, `{"total":${r.total},"hist":${histJson(r)}}`);
  return 200;
}

export async function fetchDocs(ctx: HttpContext, req: IncomingMessage, res: ServerResponse): Promise<number> {
  const body = await readJsonBody(req);
  const ids = body.ids;
  if (!Array.isArray(ids) || !ids.every((x) => typeof x === 'string')) throw new HttpError(400, ErrorCode.BadRequest, 'ids must be a list of document ids');
  if (ids.length > ctx.config.limits.search_docs) throw new HttpError(400, ErrorCode.BadRequest, `at most limits.search_docs (${ctx.config.limits.search_docs}) ids per fetch`);
  const fields = body.fields;
  if (fields !== undefined && (!Array.isArray(fields) || !fields.every((x) => typeof x === 'string'))) throw new HttpError(400, ErrorCode.BadRequest, 'fields must be a list of field names');
  const pipes = fields ? [{ kind: 'fields' as const, except: false, names: fields as string[] }] : [];
  const valid = (ids as string[]).filter((id) => idTime(id) !== null);
  const hits = await ctx.store.fetch(valid, pipes);
  const found = new Set(hits.map((h) => h.id));
  const notFound = (ids as string[]).filter((id) => !found.has(id));
  sendJson(res, 200, `{"docs":[${hits.map((h) => h.json).join(',')}],"not_found":${JSON.stringify(notFound)}}`);
  return 200;
}

/** Streams every match as NDJSON, newest first, paging by a time cursor so memory stays bounded. */
export async function exportDocs(ctx: HttpContext, req: IncomingMessage, res: ServerResponse): Promise<number> {
  const body = await readJsonBody(req);
  const spec = parseQuerySpec(body, ctx.mapping);
  const max = body.size === undefined ? Infinity : Number(body.size);
  if (!(max >= 0)) throw new HttpError(400, ErrorCode.BadRequest, 'size must be a number >= 0');
  const page = 5000;
  res.writeHead(200, { 'content-type': 'application/x-ndjson; charset=utf-8' });
  let to = spec.to;
  let sent = 0;
  let boundary = new Set<string>();
  while (sent < max) {
    const limit = page + boundary.size;
    const r = await ctx.store.query({ plan: spec.plan, from: spec.from, to, limit, order: 'desc', pipes: spec.pipes, withTotal: false });
    const hits = r.hits.slice(0, r.hits.length);
    const fresh = hits.filter((h) => !boundary.has(h.id));
    if (fresh.length === 0) break;
    const lines: string[] = [];
    for (const h of fresh) {
      if (sent >= max) break;
      lines.push(h.json);
      sent++;
    }
    if (!res.write(lines.join('\n') + '\n')) await new Promise((resolve) => res.once('drain', resolve));
    const last = fresh[fresh.length - 1]!.time;
    const next = new Set<string>(to === last ? boundary : []);
    for (const h of hits) if (h.time === last) next.add(h.id);
    boundary = next;
    to = last;
    if (r.hits.length < limit) break;
  }
  res.end();
  return 200;
}

export async function mappings(ctx: HttpContext, _req: IncomingMessage, res: ServerResponse): Promise<number> {
  const mapping: Record<string, string[]> = {};
  if (ctx.mapping.auto) {
    for (const s of await ctx.store.status()) for (const f of s.fields) mapping[f] = ['keyword'];
  }
  for (const [f, types] of Object.entries(ctx.mapping.fields)) mapping[f] = [...types];
  sendJson(res, 200, { auto: ctx.mapping.auto, mapping: Object.fromEntries(Object.entries(mapping).sort(([a], [b]) => (a < b ? -1 : 1))) });
  return 200;
}

export async function status(ctx: HttpContext, _req: IncomingMessage, res: ServerResponse): Promise<number> {
  const shards = await ctx.store.status();
  const all = shards.flatMap((s) => s.fractions);
  const withDocs = all.filter((f) => f.docs > 0);
  sendJson(res, 200, {
    status: 'ok', mode: 'single', shards: shards.length,
    docs: all.reduce((s, f) => s + f.docs, 0),
    raw_bytes: all.reduce((s, f) => s + f.raw_bytes, 0),
    disk_bytes: all.reduce((s, f) => s + f.disk_bytes, 0),
    fractions: { active: all.filter((f) => f.state === 'active').length, sealed: all.filter((f) => f.state === 'sealed').length },
    oldest_time: withDocs.length ? new Date(Math.min(...withDocs.map((f) => f.min_time))).toISOString() : null,
    newest_time: withDocs.length ? new Date(Math.max(...withDocs.map((f) => f.max_time))).toISOString() : null,
    inflight_bulks: ctx.inflight.bulks,
    per_shard: shards.map((s) => ({ shard: s.shard, fractions: s.fractions })),
  });
  return 200;
}
