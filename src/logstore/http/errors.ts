// The log store's errors over HTTP: the status of each code (errors.ts), and the JSON error bodies.
import type { ServerResponse } from 'node:http';
import { ErrorCode, LogstoreError } from '../errors.js';
import { sendJson } from '../es/reply.js';

export { ErrorCode } from '../errors.js';
export { sendJson } from '../es/reply.js';

/** The HTTP status of each code (one each: the catalog's codes never share a status with another meaning). */
export const HTTP_STATUS: Readonly<Record<ErrorCode, number>> = {
  [ErrorCode.BadRequest]: 400,
  [ErrorCode.BadJson]: 400,
  [ErrorCode.QuerySyntax]: 400,
  [ErrorCode.FieldNotIndexed]: 400,
  [ErrorCode.QueryTooComplex]: 400,
  [ErrorCode.TooManyBulks]: 429,
  [ErrorCode.BodyTooLarge]: 413,
  [ErrorCode.NotFound]: 404,
  [ErrorCode.MethodNotAllowed]: 405,
  [ErrorCode.Upstream]: 502,
  [ErrorCode.TooManyAsyncSearches]: 429,
  [ErrorCode.SearchTimeout]: 504,
  [ErrorCode.BatchForgotten]: 409,
  [ErrorCode.Internal]: 500,
};

/** A refusal raised by a route, with its HTTP status. */
export class HttpError extends LogstoreError {
  constructor(
    readonly status: number,
    code: ErrorCode,
    message: string,
    extra: Record<string, unknown> = {},
  ) {
    super(code, message, extra);
    this.name = 'HttpError';
  }
}

/** The HTTP status a log-store error is answered with. */
export function httpStatus(err: LogstoreError): number {
  return err instanceof HttpError ? err.status : HTTP_STATUS[err.code];
}

/** Search-API error body: {error: {code, message, ...}} (seq-db shape, plus type/reason like Elasticsearch). */
export function sendError(res: ServerResponse, err: LogstoreError, extraHeaders: Record<string, string> = {}): void {
  const status = httpStatus(err);
  sendJson(
    res,
    status,
    { error: { code: err.code, message: err.message, type: err.code, reason: err.message, ...err.extra }, status },
    extraHeaders,
  );
}
