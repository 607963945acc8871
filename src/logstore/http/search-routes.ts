// Search API over HTTP: /search, /complex-search, /aggregate, /histogram, /fetch, /export, /mappings, /status.
// Validation and execution are api/operations.ts (shared with gRPC); this file renders JSON.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { PartialInfo } from '../backend.js';
import {
  type SearchOutcome,
  aggResults,
  histBuckets,
  mappingOf,
  parseSearchBody,
  partialError,
  runAggregate,
  runExport,
  runFetch,
  runHistogram,
  runSearch,
  runSearchSync,
  statusOf,
} from '../api/operations.js';
import { MAX_JSON_BODY, readJsonBody, readJsonBodyThen } from '../es/body.js';
import type { HttpContext } from '../context.js';
import { sendJson } from './errors.js';
import { giveBack } from '../search/scratch.js';

/** `,"error":{...},"partial_response":true` when some shards failed; nothing otherwise. */
function partialTail(p: PartialInfo | undefined): string {
  return p ? `,"error":${JSON.stringify(partialError(p))},"partial_response":true` : '';
}

/**
 * The answer of /search (complex false) or /complex-search to a parsed body: at once when the backend has it at
 * hand (single mode over sealed data), else a promise.
 */
export function searchAnswer(
  ctx: HttpContext,
  body: Record<string, unknown>,
  complex: boolean,
): Buffer | Promise<Buffer> {
  const req = parseSearchBody(ctx, body, complex);
  const now = runSearchSync(ctx, req);
  return now ? searchBytes(now, complex) : runSearch(ctx, req).then((o) => searchBytes(o, complex));
}

function searchBytes({ spec, aggs, hist, r }: SearchOutcome, complex: boolean): Buffer {
  let tail = ']';
  if (complex) {
    tail += `,"aggs":${JSON.stringify(aggResults(aggs, r))}`;
    if (hist) tail += `,"hist":${JSON.stringify({ buckets: histBuckets(r) })}`;
  }
  tail += partialTail(r.partial);
  const answer = r.hits.jsonBytes(spec.offset, spec.offset + spec.size, `{"total":${r.total},"docs":[`, `${tail}}`);
  // The hits' bytes are copied into the answer: nothing reads them any more.
  for (const p of r.hits.parts) giveBack(p.json);
  return answer;
}

export async function aggregateAnswer(ctx: HttpContext, body: Record<string, unknown>): Promise<string> {
  const { aggs, r } = await runAggregate(ctx, body);
  return `{"total":${r.total},"aggs":${JSON.stringify(aggResults(aggs, r))}${partialTail(r.partial)}}`;
}

export async function histogramAnswer(ctx: HttpContext, body: Record<string, unknown>): Promise<string> {
  const r = await runHistogram(ctx, body);
  return `{"total":${r.total},"hist":${JSON.stringify({ buckets: histBuckets(r) })}${partialTail(r.partial)}}`;
}

export async function fetchAnswer(ctx: HttpContext, body: Record<string, unknown>): Promise<string> {
  const { hits, notFound, partial } = await runFetch(ctx, body);
  return `{"docs":[${hits.map((h) => h.json).join(',')}],"not_found":${JSON.stringify(notFound)}${partialTail(partial)}}`;
}

/** The routes whose answer is one JSON body made from the request's JSON body: the answer, or a promise of it (a
 * search answered at once from sealed data needs none). */
export type JsonRoute = (ctx: HttpContext, body: Record<string, unknown>) => Buffer | string | Promise<Buffer | string>;

export const JSON_ROUTES: Record<string, JsonRoute> = {
  '/search': (ctx, body) => searchAnswer(ctx, body, false),
  '/complex-search': (ctx, body) => searchAnswer(ctx, body, true),
  '/aggregate': aggregateAnswer,
  '/histogram': histogramAnswer,
  '/fetch': fetchAnswer,
};

/**
 * Serves a JSON route: reads the body, answers, then calls `ok` (or `fail` with what went wrong). A search answered
 * at once (sealed data in single mode) goes from body to answer with no promise in between.
 */
export function serveJsonRoute(
  ctx: HttpContext,
  req: IncomingMessage,
  res: ServerResponse,
  route: JsonRoute,
  ok: () => void,
  fail: (err: unknown) => void,
): void {
  const send = (answer: Buffer | string) => {
    // A scratch answer (search/scratch.ts) is free again once node:http has handed its last byte to the socket
    // ('finish'); a response cut short never finishes, and its buffer is left to the GC.
    sendJson(res, 200, answer, undefined, Buffer.isBuffer(answer) ? () => giveBack(answer) : undefined);
    ok();
  };
  readJsonBodyThen(req, MAX_JSON_BODY, (err, body) => {
    if (err) return fail(err);
    let answer: Buffer | string | Promise<Buffer | string>;
    try {
      answer = route(ctx, body!);
    } catch (e) {
      return fail(e);
    }
    if (answer instanceof Promise) answer.then(send, fail);
    else send(answer);
  });
}

/** Streams every match as NDJSON, newest first, paging by a time cursor so memory stays bounded. */
/**
 * NDJSON of every match. Damaged fractions are left out, never the whole export: a header counts the fractions
 * quarantined before it started, and a trailer (sent after the last line, so declared up front) names the ones
 * this export found damaged on the way.
 */
export async function exportDocs(ctx: HttpContext, req: IncomingMessage, res: ServerResponse): Promise<number> {
  const body = await readJsonBody(req);
  const quarantined = (await ctx.store.status()).shards.reduce(
    (n, s) => n + (s.problems ?? []).filter((p) => p.kind !== 'wal_tail_dropped').length,
    0,
  );
  const head = {
    'content-type': 'application/x-ndjson; charset=utf-8',
    trailer: SKIPPED_TRAILER,
    ...(quarantined ? { [QUARANTINED_HEADER]: String(quarantined) } : {}),
  };
  let started = false;
  const { skippedFractions } = await runExport(ctx, body, async (hits) => {
    if (!started) {
      res.writeHead(200, head);
      started = true;
    }
    if (!res.write(hits.map((h) => h.json).join('\n') + '\n'))
      await new Promise((resolve) => res.once('drain', resolve));
  });
  if (!started) res.writeHead(200, head);
  if (skippedFractions.length) res.addTrailers({ [SKIPPED_TRAILER]: skippedFractions.join(',') });
  res.end();
  return 200;
}

/** Header of /export: sealed fractions (or other entries) in quarantine when it started, left out of it. */
export const QUARANTINED_HEADER = 'x-tidepool-quarantined';
/** Trailer of /export: the fractions it found damaged and left out (`shard-<n>/<fraction>`, comma-separated). */
export const SKIPPED_TRAILER = 'x-tidepool-skipped-fractions';

export async function mappings(ctx: HttpContext, _req: IncomingMessage, res: ServerResponse): Promise<number> {
  sendJson(res, 200, await mappingOf(ctx));
  return 200;
}

export async function status(ctx: HttpContext, _req: IncomingMessage, res: ServerResponse): Promise<number> {
  sendJson(res, 200, await statusOf(ctx, ctx.inflight.bulks));
  return 200;
}
