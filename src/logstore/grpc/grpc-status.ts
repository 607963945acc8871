// The gRPC status of an error the log store raised: what the store API and the public API answer a failed call with.
import * as grpc from '@grpc/grpc-js';
import { HttpError } from '../http/errors.js';
import { QueryLimitError } from '../query/limits.js';
import { QuerySyntaxError } from '../query/parser.js';
import { QueryFieldError } from '../query/plan.js';

/** A gRPC status for an error: bad input is INVALID_ARGUMENT with the message; a conflict ABORTED; anything else INTERNAL. */
export function grpcError(err: unknown): Partial<grpc.StatusObject> {
  if (err instanceof QuerySyntaxError || err instanceof QueryFieldError || err instanceof QueryLimitError) return { code: grpc.status.INVALID_ARGUMENT, details: err.message };
  if (err instanceof HttpError) {
    const code = err.status === 400 || err.status === 413 ? grpc.status.INVALID_ARGUMENT
      : err.status === 404 ? grpc.status.NOT_FOUND
        : err.status === 429 ? grpc.status.RESOURCE_EXHAUSTED
          : err.status === 409 ? grpc.status.ABORTED
          : err.status === 502 ? grpc.status.UNAVAILABLE
          : err.status === 504 ? grpc.status.DEADLINE_EXCEEDED : grpc.status.INTERNAL;
    return { code, details: err.message };
  }
  return { code: grpc.status.INTERNAL, details: (err as Error).message };
}

