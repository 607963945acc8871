// Elasticsearch-compatible routes: the probes shippers call before sending, and the bulk API.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { BulkFormatError } from '../ingest/bulk-parser.js';
import { BulkBodyError, bulkResponse, runBulk } from '../ingest/bulk.js';
import type { HttpContext } from './context.js';
import { sendJson } from './errors.js';

export const ES_VERSION = '8.11.0';

export function rootInfo(res: ServerResponse, head: boolean): void {
  const body = JSON.stringify({
    name: 'tidepool', cluster_name: 'tidepool', cluster_uuid: 'tidepool-logstore',
    version: { number: ES_VERSION, build_flavor: 'default', lucene_version: '9.8.0', minimum_wire_compatibility_version: '7.17.0', minimum_index_compatibility_version: '7.0.0' },
    tagline: 'You Know, for Search',
  });
  res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body), 'x-elastic-product': 'Elasticsearch' });
  res.end(head ? undefined : body);
}

export function license(res: ServerResponse): void {
  sendJson(res, 200, { license: { status: 'active', uid: 'tidepool', type: 'basic', issue_date_in_millis: 0 } }, { 'x-elastic-product': 'Elasticsearch' });
}

/** /_ilm/*, /_index_template/*, /_ingest/*, /_nodes/* and similar: an empty answer is enough for shippers. */
export function probe(req: IncomingMessage, res: ServerResponse): void {
  req.resume();
  if (req.method === 'HEAD') {
    res.writeHead(200, { 'x-elastic-product': 'Elasticsearch' });
    res.end();
    return;
  }
  sendJson(res, 200, req.method === 'GET' ? {} : { acknowledged: true }, { 'x-elastic-product': 'Elasticsearch' });
}

function esError(res: ServerResponse, status: number, type: string, reason: string, close = false): void {
  sendJson(res, status, { error: { root_cause: [{ type, reason }], type, reason }, status }, { 'x-elastic-product': 'Elasticsearch', ...(close ? { connection: 'close' } : {}) });
}

export async function bulk(ctx: HttpContext, req: IncomingMessage, res: ServerResponse, index: string): Promise<number> {
  const limit = ctx.config.limits.inflight_bulks;
  if (ctx.inflight.bulks >= limit) {
    ctx.metrics.rejectedBulks.inc();
    // The body is drained, not parsed; the connection closes after the answer.
    esError(res, 429, 'es_rejected_execution_exception', `too many bulk requests in flight (limits.inflight_bulks = ${limit}); retry later`, true);
    req.resume();
    return 429;
  }
  ctx.inflight.bulks++;
  ctx.metrics.inflight.set(ctx.inflight.bulks);
  try {
    const encoding = String(req.headers['content-encoding'] ?? '').toLowerCase();
    if (encoding !== '' && encoding !== 'gzip' && encoding !== 'identity') {
      req.resume();
      esError(res, 400, 'illegal_argument_exception', `unsupported Content-Encoding "${encoding}"; expected gzip or none`);
      return 400;
    }
    const out = await runBulk(req, ctx.store, {
      maxDocSize: ctx.config.limits.max_doc_size, defaultIndex: index, gzip: encoding === 'gzip',
      maxOutstanding: Math.max(2, ctx.store.shardCount * 2),
    });
    const failed = out.items.errors.size;
    ctx.metrics.docs.inc(out.items.ops.length - failed);
    if (failed) ctx.metrics.docErrors.inc(failed);
    sendJson(res, 200, bulkResponse(out), { 'x-elastic-product': 'Elasticsearch' });
    return 200;
  } catch (err) {
    if (err instanceof BulkFormatError || err instanceof BulkBodyError) {
      esError(res, 400, 'illegal_argument_exception', `the body is not NDJSON bulk data: ${err.message}`, true);
      return 400;
    }
    throw err;
  } finally {
    ctx.inflight.bulks--;
    ctx.metrics.inflight.set(ctx.inflight.bulks);
  }
}
