// Elasticsearch-compatible routes: the probes shippers call before sending, and the bulk API.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { BulkFormatError } from '../ingest/bulk-parser.js';
import { BulkBodyError, BulkTooLargeError, rejectBulk, runBulk } from '../ingest/bulk.js';
import { type ChunkSink, writeBulkResponse } from '../ingest/bulk-response.js';
import { BulkBudget } from '../ingest/bulk-budget.js';
import { parseFilterPath } from '../es/filter-path.js';
import { admitWrite, overloadReason, releaseWrite } from '../es/admission.js';
import type { HttpContext } from '../context.js';
import { esError, filtered, requestFilter, sendEsJson } from '../es/reply.js';

export const ES_VERSION = '8.11.0';

const ROOT_INFO = {
  name: 'tidepool',
  cluster_name: 'tidepool',
  cluster_uuid: 'tidepool-logstore',
  version: {
    number: ES_VERSION,
    build_flavor: 'default',
    lucene_version: '9.8.0',
    minimum_wire_compatibility_version: '7.17.0',
    minimum_index_compatibility_version: '7.0.0',
  },
  tagline: 'You Know, for Search',
};
/** The root answer without `filter_path`, rendered once (shippers and health checks ask for it often). */
const ROOT_BODY = JSON.stringify(ROOT_INFO);

export function rootInfo(req: IncomingMessage, res: ServerResponse, head: boolean): void {
  const filter = requestFilter(req);
  const body = filter ? JSON.stringify(filtered(ROOT_INFO, filter)) : ROOT_BODY;
  res.writeHead(200, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    'x-elastic-product': 'Elasticsearch',
  });
  res.end(head ? undefined : body);
}

export function license(req: IncomingMessage, res: ServerResponse): void {
  sendEsJson(req, res, 200, { license: { status: 'active', uid: 'tidepool', type: 'basic', issue_date_in_millis: 0 } });
}

/** /_ilm/*, /_index_template/*, /_ingest/*, /_nodes/* and similar: an empty answer is enough for shippers. */
export function probe(req: IncomingMessage, res: ServerResponse): void {
  req.resume();
  if (req.method === 'HEAD') {
    res.writeHead(200, { 'x-elastic-product': 'Elasticsearch' });
    res.end();
    return;
  }
  sendEsJson(req, res, 200, req.method === 'GET' ? {} : { acknowledged: true });
}

/** A response as a chunk sink; a client gone away takes everything (nothing more is worth writing). */
export function responseSink(res: ServerResponse): ChunkSink {
  return {
    write: (chunk) => res.destroyed || res.write(chunk),
    drained: () =>
      new Promise<void>((resolve) => {
        if (res.destroyed) return resolve();
        const done = () => {
          res.off('drain', done);
          res.off('close', done);
          resolve();
        };
        res.once('drain', done);
        res.once('close', done);
      }),
  };
}

/**
 * POST /_bulk. Over the in-flight limit a bulk waits in a short FIFO queue; when the queue is full or the
 * wait runs out its items are answered 429 es_rejected_execution_exception inside a 200, as Elasticsearch
 * answers a full write queue, so every Elasticsearch client retries those items by itself.
 */
export async function bulk(
  ctx: HttpContext,
  req: IncomingMessage,
  res: ServerResponse,
  index: string,
): Promise<number> {
  const encoding = String(req.headers['content-encoding'] ?? '').toLowerCase();
  if (encoding !== '' && encoding !== 'gzip' && encoding !== 'identity') {
    req.resume();
    esError(
      res,
      400,
      'illegal_argument_exception',
      `unsupported Content-Encoding "${encoding}"; expected gzip or none`,
    );
    return 400;
  }
  const opts = { maxDocSize: ctx.config.limits.max_doc_size, defaultIndex: index, gzip: encoding === 'gzip' };
  const filter = parseFilterPath(new URL(req.url ?? '/', 'http://x').searchParams.get('filter_path'));
  const admitted = await admitWrite(ctx);
  const budget = (ctx.bulkBudget ??= new BulkBudget(ctx.config.limits.bulk_memory));
  try {
    const out = admitted
      ? await runBulk(req, ctx.store, { ...opts, maxOutstanding: Math.max(2, ctx.store.shardCount * 2), budget })
      : await rejectBulk(req, { ...opts, budget }, overloadReason(ctx));
    const failed = out.items.failed;
    if (admitted) ctx.metrics.docs.inc(out.items.count - failed - out.items.kept.size);
    if (failed) ctx.metrics.docErrors.inc(failed);
    // Written in chunks as the socket takes them (chunked encoding): the answer is never whole in memory.
    res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'x-elastic-product': 'Elasticsearch' });
    try {
      await writeBulkResponse(out, responseSink(res), filter);
    } finally {
      budget.give(out.held ?? 0);
    }
    res.end();
    return 200;
  } catch (err) {
    if (err instanceof BulkTooLargeError) {
      ctx.metrics.rejectedBulks.inc();
      esError(res, 413, 'es_rejected_execution_exception', err.message);
      return 413;
    }
    if (err instanceof BulkFormatError || err instanceof BulkBodyError) {
      esError(res, 400, 'illegal_argument_exception', `the body is not NDJSON bulk data: ${err.message}`, true);
      return 400;
    }
    throw err;
  } finally {
    if (admitted) releaseWrite(ctx);
  }
}
