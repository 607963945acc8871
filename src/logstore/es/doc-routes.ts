// Single-document writes as Elasticsearch takes them: POST /<index>/_doc, PUT|POST /<index>/_doc/<id>
// (?op_type=create), PUT|POST /<index>/_create/<id>; the document goes through the bulk path as one item.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import { itemOutcome, runBulk } from '../ingest/bulk.js';
import { MAX_ID_BYTES } from '../ingest/bulk-parser.js';
import { admitWrite, overloadReason, releaseWrite } from './admission.js';
import { esError } from './reply.js';
import type { HttpContext } from '../context.js';
import { sendEsJson } from './reply.js';

/** Reads the body up to `limit` bytes; null when it is longer. */
async function readLimited(req: IncomingMessage, limit: number): Promise<Buffer | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  let over = false;
  for await (const c of req) {
    size += (c as Buffer).length;
    if (size > limit) over = true;
    else chunks.push(c as Buffer);
  }
  return over ? null : Buffer.concat(chunks);
}

/**
 * Stores one document. Over the write limit it waits in the bulk queue like a bulk; rejected, the whole
 * request is answered 429 es_rejected_execution_exception, as Elasticsearch answers a rejected index request
 * (the request is the one item).
 */
export async function writeDoc(
  ctx: HttpContext,
  req: IncomingMessage,
  res: ServerResponse,
  index: string,
  id: string | null,
  op: 'index' | 'create',
): Promise<number> {
  if (id !== null && (id === '' || Buffer.byteLength(id) > MAX_ID_BYTES)) {
    req.resume();
    esError(
      res,
      400,
      'action_request_validation_exception',
      `Validation Failed: 1: id must not be empty or longer than ${MAX_ID_BYTES} bytes;`,
    );
    return 400;
  }
  const raw = await readLimited(req, ctx.config.limits.max_doc_size);
  if (raw === null) {
    esError(
      res,
      413,
      'document_too_large_exception',
      `the document is more than limits.max_doc_size (${ctx.config.limits.max_doc_size}) bytes`,
    );
    return 413;
  }
  let doc: unknown;
  try {
    doc = JSON.parse(raw.toString('utf8'));
  } catch (err) {
    esError(res, 400, 'mapper_parsing_exception', `failed to parse the document: ${(err as Error).message}`);
    return 400;
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) {
    esError(res, 400, 'mapper_parsing_exception', 'the document must be a JSON object');
    return 400;
  }
  // One NDJSON item: the action, then the document on one line (a pretty-printed body has newlines).
  const action = JSON.stringify({ [op]: { _index: index, ...(id !== null ? { _id: id } : {}) } });
  const body = Buffer.from(`${action}\n${JSON.stringify(doc)}\n`);
  if (!(await admitWrite(ctx))) {
    esError(res, 429, 'es_rejected_execution_exception', overloadReason(ctx));
    return 429;
  }
  try {
    const out = await runBulk(Readable.from([body]), ctx.store, {
      maxDocSize: Infinity,
      defaultIndex: index,
      gzip: false,
      maxOutstanding: 1,
    });
    const item = itemOutcome(out, 0);
    if (item.error) {
      ctx.metrics.docErrors.inc();
      esError(res, item.error.status, item.error.type, item.error.reason);
      return item.error.status;
    }
    if (item.result === 'created') ctx.metrics.docs.inc();
    sendEsJson(
      req,
      res,
      item.status,
      {
        _index: index,
        _id: item.id,
        _version: 1,
        result: item.result,
        _shards: { total: 1, successful: item.result === 'created' ? 1 : 0, failed: 0 },
        _seq_no: 0,
        _primary_term: 1,
      },
      {
        ...(item.status === 201
          ? { location: `/${encodeURIComponent(index)}/_doc/${encodeURIComponent(item.id ?? '')}` }
          : {}),
      },
    );
    return item.status;
  } finally {
    releaseWrite(ctx);
  }
}
