// Elasticsearch JSON answers: `?filter_path=` shapes every success body as Elasticsearch shapes it (its REST
// layer filters each JSON response it builds; error bodies are built unfiltered, so errors are never shaped).
import type { IncomingMessage, ServerResponse } from 'node:http';
import { sendJson } from '../http/errors.js';
import { type FilterPath, filterPart, filterValue, parseFilterPath } from './filter-path.js';

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
export function sendEsJson(req: IncomingMessage, res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  sendJson(res, status, filtered(body, requestFilter(req)), { ...ES_HEADERS, ...headers });
}
