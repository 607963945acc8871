// Search API over HTTP: /search, /complex-search, /aggregate, /histogram, /fetch, /export, /mappings, /status.
// Validation and execution are api/operations.ts (shared with gRPC); this file renders JSON.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { PartialInfo } from '../backend.js';
import { aggResults, histBuckets, mappingOf, parseSearchBody, partialError, runAggregate, runExport, runFetch, runHistogram, runSearch, statusOf } from '../api/operations.js';
import { readJsonBody } from './body.js';
import type { HttpContext } from './context.js';
import { sendJson } from './errors.js';
import { giveBack } from '../search/scratch.js';

/** `,"error":{...},"partial_response":true` when some shards failed; nothing otherwise. */
function partialTail(p: PartialInfo | undefined): string {
  return p ? `,"error":${JSON.stringify(partialError(p))},"partial_response":true` : '';
}

async function searchLike(ctx: HttpContext, req: IncomingMessage, res: ServerResponse, complex: boolean): Promise<number> {
  const body = await readJsonBody(req);
  const { spec, aggs, hist, r } = await runSearch(ctx, parseSearchBody(ctx, body, complex));
  let tail = ']';
  if (complex) {
    tail += `,"aggs":${JSON.stringify(aggResults(aggs, r))}`;
    if (hist) tail += `,"hist":${JSON.stringify({ buckets: histBuckets(r) })}`;
  }
  tail += partialTail(r.partial);
  const answer = r.hits.jsonBytes(spec.offset, spec.offset + spec.size, `{"total":${r.total},"docs":[`, `${tail}}`);
  // The hits' bytes are copied into the answer: nothing reads them any more.
  for (const p of r.hits.parts) giveBack(p.json);
  sendJson(res, 200, answer);
  return 200;
}

export const search = (ctx: HttpContext, req: IncomingMessage, res: ServerResponse) => searchLike(ctx, req, res, false);
export const complexSearch = (ctx: HttpContext, req: IncomingMessage, res: ServerResponse) => searchLike(ctx, req, res, true);

export async function aggregate(ctx: HttpContext, req: IncomingMessage, res: ServerResponse): Promise<number> {
  const { aggs, r } = await runAggregate(ctx, await readJsonBody(req));
  sendJson(res, 200, `{"total":${r.total},"aggs":${JSON.stringify(aggResults(aggs, r))}${partialTail(r.partial)}}`);
  return 200;
}

export async function histogram(ctx: HttpContext, req: IncomingMessage, res: ServerResponse): Promise<number> {
  const r = await runHistogram(ctx, await readJsonBody(req));
  sendJson(res, 200, `{"total":${r.total},"hist":${JSON.stringify({ buckets: histBuckets(r) })}${partialTail(r.partial)}}`);
  return 200;
}

export async function fetchDocs(ctx: HttpContext, req: IncomingMessage, res: ServerResponse): Promise<number> {
  const { hits, notFound, partial } = await runFetch(ctx, await readJsonBody(req));
  sendJson(res, 200, `{"docs":[${hits.map((h) => h.json).join(',')}],"not_found":${JSON.stringify(notFound)}${partialTail(partial)}}`);
  return 200;
}

/** Streams every match as NDJSON, newest first, paging by a time cursor so memory stays bounded. */
export async function exportDocs(ctx: HttpContext, req: IncomingMessage, res: ServerResponse): Promise<number> {
  const body = await readJsonBody(req);
  let started = false;
  await runExport(ctx, body, async (hits) => {
    if (!started) {
      res.writeHead(200, { 'content-type': 'application/x-ndjson; charset=utf-8' });
      started = true;
    }
    if (!res.write(hits.map((h) => h.json).join('\n') + '\n')) await new Promise((resolve) => res.once('drain', resolve));
  });
  if (!started) res.writeHead(200, { 'content-type': 'application/x-ndjson; charset=utf-8' });
  res.end();
  return 200;
}

export async function mappings(ctx: HttpContext, _req: IncomingMessage, res: ServerResponse): Promise<number> {
  sendJson(res, 200, await mappingOf(ctx));
  return 200;
}

export async function status(ctx: HttpContext, _req: IncomingMessage, res: ServerResponse): Promise<number> {
  sendJson(res, 200, await statusOf(ctx, ctx.inflight.bulks));
  return 200;
}
