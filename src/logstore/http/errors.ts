// The log store's HTTP error catalog: stable codes, JSON bodies; code never matches on message text.
import type { ServerResponse } from 'node:http';

export const ErrorCode = {
  BadRequest: 'bad_request',
  BadJson: 'bad_json',
  QuerySyntax: 'query_syntax',
  FieldNotIndexed: 'field_not_indexed',
  /** A query past a limit of query/limits.ts (nesting depth, clause count); the body names it. */
  QueryTooComplex: 'query_too_complex',
  TooManyBulks: 'too_many_bulks',
  BodyTooLarge: 'body_too_large',
  NotFound: 'not_found',
  MethodNotAllowed: 'method_not_allowed',
  /** Every shard of the cluster failed (502), or a store refused the call. */
  Upstream: 'upstream_failed',
  TooManyAsyncSearches: 'too_many_async_searches',
  /** A search stopped at search.timeout (504; gRPC DEADLINE_EXCEEDED). */
  SearchTimeout: 'search_timeout',
  /** A proxy's batch that arrived at a store after the proxy had given up on it (store API, gRPC ABORTED). */
  BatchForgotten: 'batch_forgotten',
  Internal: 'internal',
} as const;
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

export class HttpError extends Error {
  constructor(readonly status: number, readonly code: ErrorCode, message: string, readonly extra: Record<string, unknown> = {}) {
    super(message);
    this.name = 'HttpError';
  }
}

/** `finished`: called once node:http has handed the whole answer to the socket ('finish'). */
export function sendJson(res: ServerResponse, status: number, body: unknown, extraHeaders?: Record<string, string>, finished?: () => void): void {
  const text = typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body);
  const length = Buffer.byteLength(text);
  res.writeHead(status, extraHeaders ? { 'content-type': JSON_TYPE, 'content-length': length, ...extraHeaders } : { 'content-type': JSON_TYPE, 'content-length': length });
  if (finished) res.end(text, finished);
  else res.end(text);
}

const JSON_TYPE = 'application/json; charset=utf-8';

/** Search-API error body: {error: {code, message, ...}} (seq-db shape, plus type/reason like Elasticsearch). */
export function sendError(res: ServerResponse, err: HttpError, extraHeaders: Record<string, string> = {}): void {
  sendJson(res, err.status, { error: { code: err.code, message: err.message, type: err.code, reason: err.message, ...err.extra }, status: err.status }, extraHeaders);
}
