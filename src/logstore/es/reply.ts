// Elasticsearch JSON answers: `?filter_path=` shapes every success body as Elasticsearch shapes it (its REST
// layer filters each JSON response it builds; error bodies are built unfiltered, so errors are never shaped).
import type { IncomingMessage, ServerResponse } from 'node:http';
import { type FilterPath, filterPart, filterValue, parseFilterPath } from './filter-path.js';

const JSON_TYPE = 'application/json; charset=utf-8';

/** `finished`: called once node:http has handed the whole answer to the socket ('finish'). */
export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  extraHeaders?: Record<string, string>,
  finished?: () => void,
): void {
  const text = typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body);
  const length = Buffer.byteLength(text);
  res.writeHead(
    status,
    extraHeaders
      ? { 'content-type': JSON_TYPE, 'content-length': length, ...extraHeaders }
      : { 'content-type': JSON_TYPE, 'content-length': length },
  );
  if (finished) res.end(text, finished);
  else res.end(text);
}

export const ES_HEADERS = { 'x-elastic-product': 'Elasticsearch' } as const;

/** The request's `filter_path`, or null when it filters nothing. */
export function requestFilter(req: IncomingMessage): FilterPath | null {
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  if (q < 0 || !url.includes('filter_path', q)) return null;
  return parseFilterPath(new URLSearchParams(url.slice(q + 1)).get('filter_path'));
}

/** `body` shaped by `filter`; a root array (a _cat answer in JSON) stays an array. */
export function filtered(body: unknown, filter: FilterPath | null): unknown {
  if (!filter) return body;
  if (Array.isArray(body)) return filterPart(body, filter) ?? [];
  return filterValue(body, filter);
}

/** Sends an Elasticsearch success answer, shaped by the request's `filter_path`. */
export function sendEsJson(
  req: IncomingMessage,
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  sendJson(res, status, filtered(body, requestFilter(req)), { ...ES_HEADERS, ...headers });
}

/** An Elasticsearch error answer (never shaped by filter_path); `close`: the connection closes after it. */
export function esError(res: ServerResponse, status: number, type: string, reason: string, close = false): void {
  sendJson(
    res,
    status,
    { error: { root_cause: [{ type, reason }], type, reason }, status },
    { ...ES_HEADERS, ...(close ? { connection: 'close' } : {}) },
  );
}
