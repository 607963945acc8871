// The gRPC status of an error the log store raised: what the store API and the public API answer a failed call with.
import * as grpc from '@grpc/grpc-js';
import { ErrorCode, LogstoreError } from '../errors.js';
import { QueryLimitError } from '../query/limits.js';
import { QuerySyntaxError } from '../query/parser.js';
import { QueryFieldError } from '../query/plan.js';

/** The gRPC status of each code (the HTTP edge's 400 and 413 are INVALID_ARGUMENT, 405 has no counterpart). */
const GRPC_STATUS: Readonly<Record<ErrorCode, grpc.status>> = {
  [ErrorCode.BadRequest]: grpc.status.INVALID_ARGUMENT,
  [ErrorCode.BadJson]: grpc.status.INVALID_ARGUMENT,
  [ErrorCode.QuerySyntax]: grpc.status.INVALID_ARGUMENT,
  [ErrorCode.FieldNotIndexed]: grpc.status.INVALID_ARGUMENT,
  [ErrorCode.QueryTooComplex]: grpc.status.INVALID_ARGUMENT,
  [ErrorCode.BodyTooLarge]: grpc.status.INVALID_ARGUMENT,
  [ErrorCode.NotFound]: grpc.status.NOT_FOUND,
  [ErrorCode.TooManyBulks]: grpc.status.RESOURCE_EXHAUSTED,
  [ErrorCode.TooManyAsyncSearches]: grpc.status.RESOURCE_EXHAUSTED,
  [ErrorCode.BatchForgotten]: grpc.status.ABORTED,
  [ErrorCode.Upstream]: grpc.status.UNAVAILABLE,
  [ErrorCode.SearchTimeout]: grpc.status.DEADLINE_EXCEEDED,
  [ErrorCode.MethodNotAllowed]: grpc.status.INTERNAL,
  [ErrorCode.Internal]: grpc.status.INTERNAL,
};

/** A gRPC status for an error: bad input is INVALID_ARGUMENT with the message; a conflict ABORTED; anything else INTERNAL. */
export function grpcError(err: unknown): Partial<grpc.StatusObject> {
  if (err instanceof QuerySyntaxError || err instanceof QueryFieldError || err instanceof QueryLimitError)
    return { code: grpc.status.INVALID_ARGUMENT, details: err.message };
  if (err instanceof LogstoreError) return { code: GRPC_STATUS[err.code], details: err.message };
  return { code: grpc.status.INTERNAL, details: (err as Error).message };
}
