// The log store's error catalog: stable codes and the domain errors that carry them; HTTP (http/errors.ts) and gRPC (grpc/grpc-status.ts) choose their status at the edge.

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

/** A refusal or failure the log store answers its caller with: a stable code, a message, and fields the JSON error
 * body carries besides them. Code never matches on the message. */
export class LogstoreError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly extra: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = 'LogstoreError';
  }
}

/** The request cannot be served as sent (a store refused it as the caller's fault, or its input is malformed). */
export class BadRequest extends LogstoreError {
  constructor(message: string) {
    super(ErrorCode.BadRequest, message);
    this.name = 'BadRequest';
  }
}

/** Stores are over their limits.bulk_memory: the writer should retry later (a bulk item's es_rejected_execution_exception). */
export class Overloaded extends LogstoreError {
  constructor(message: string) {
    super(ErrorCode.TooManyBulks, message);
    this.name = 'Overloaded';
  }
}

/** Every shard (or every store) asked failed: nothing can be answered. */
export class UpstreamFailed extends LogstoreError {
  constructor(message: string) {
    super(ErrorCode.Upstream, message);
    this.name = 'UpstreamFailed';
  }
}

/** Whether `err` says the stores are over their memory limits (retry later), whichever error carried it. */
export function isOverload(err: unknown): boolean {
  return err instanceof LogstoreError && err.code === ErrorCode.TooManyBulks;
}
