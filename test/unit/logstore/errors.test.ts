// Domain errors (src/logstore/errors.ts) mapped at the edge: the HTTP status and JSON body, and the gRPC status, of each.
import * as grpc from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import {
  BadRequest,
  ErrorCode,
  isOverload,
  LogstoreError,
  Overloaded,
  UpstreamFailed,
} from '../../../src/logstore/errors.js';
import { grpcError } from '../../../src/logstore/grpc/grpc-status.js';
import { HttpError, httpStatus } from '../../../src/logstore/http/errors.js';

describe('log-store errors at the edge', () => {
  it('answers the domain errors of ingest/ and cluster/ with the statuses the routes used', () => {
    const cases: [LogstoreError, number, grpc.status, ErrorCode][] = [
      [new BadRequest('no such field'), 400, grpc.status.INVALID_ARGUMENT, ErrorCode.BadRequest],
      [new Overloaded('rejected execution'), 429, grpc.status.RESOURCE_EXHAUSTED, ErrorCode.TooManyBulks],
      [new UpstreamFailed('every shard failed'), 502, grpc.status.UNAVAILABLE, ErrorCode.Upstream],
      [new LogstoreError(ErrorCode.BatchForgotten, 'forgotten'), 409, grpc.status.ABORTED, ErrorCode.BatchForgotten],
    ];
    for (const [err, http, code, errorCode] of cases) {
      expect(err.code).toBe(errorCode);
      expect(httpStatus(err)).toBe(http);
      expect(grpcError(err)).toEqual({ code, details: err.message });
    }
  });

  it("keeps a route's HttpError status, and maps every code to gRPC as its status did", () => {
    const byStatus: Record<number, grpc.status> = {
      400: grpc.status.INVALID_ARGUMENT,
      413: grpc.status.INVALID_ARGUMENT,
      404: grpc.status.NOT_FOUND,
      429: grpc.status.RESOURCE_EXHAUSTED,
      409: grpc.status.ABORTED,
      502: grpc.status.UNAVAILABLE,
      504: grpc.status.DEADLINE_EXCEEDED,
      405: grpc.status.INTERNAL,
      500: grpc.status.INTERNAL,
    };
    for (const code of Object.values(ErrorCode)) {
      const status = httpStatus(new LogstoreError(code, 'x'));
      expect(httpStatus(new HttpError(status, code, 'x'))).toBe(status);
      expect(grpcError(new LogstoreError(code, 'x')).code).toBe(byStatus[status]);
    }
  });

  it('tells an overload by its code, never by its message', () => {
    expect(isOverload(new Overloaded('anything'))).toBe(true);
    expect(isOverload(new HttpError(429, ErrorCode.TooManyBulks, 'x'))).toBe(true);
    expect(isOverload(new HttpError(429, ErrorCode.TooManyAsyncSearches, 'rejected execution'))).toBe(false);
    expect(isOverload(new Error('rejected execution: over limits.bulk_memory'))).toBe(false);
  });
});
