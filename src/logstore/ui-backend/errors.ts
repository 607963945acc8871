// The UI backend's error catalog: stable codes with their HTTP status and gRPC code; bodies are {error: {code, message, ...}}.
import * as grpc from '@grpc/grpc-js';

export const UI_ERRORS = {
  bad_request: { status: 400, grpc: grpc.status.INVALID_ARGUMENT },
  /** A seq-ql syntax error; carries position, expected, found. */
  query_syntax: { status: 400, grpc: grpc.status.INVALID_ARGUMENT },
  /** A handlers.logstore_api limit was passed; carries limit (the key) and value (its setting). */
  limit_exceeded: { status: 400, grpc: grpc.status.INVALID_ARGUMENT },
  not_found: { status: 404, grpc: grpc.status.NOT_FOUND },
  /** max_parallel_export_requests exports (or tail.max_streams tails) are running. */
  too_many_requests: { status: 429, grpc: grpc.status.RESOURCE_EXHAUSTED },
  /** The log store refused the request (its own validation). */
  logstore_rejected: { status: 400, grpc: grpc.status.INVALID_ARGUMENT },
  /** No log store answered (down, refusing connections, failing). */
  logstore_unavailable: { status: 502, grpc: grpc.status.UNAVAILABLE },
  /** The log store did not answer within clients.logstore_timeout. */
  logstore_timeout: { status: 504, grpc: grpc.status.DEADLINE_EXCEEDED },
  /** The disk under the UI backend's own files (saved queries) is full: nothing was written. 507 Insufficient Storage. */
  disk_full: { status: 507, grpc: grpc.status.RESOURCE_EXHAUSTED },
  internal: { status: 500, grpc: grpc.status.INTERNAL },
} as const;

export type UiErrorCode = keyof typeof UI_ERRORS;

export class UiError extends Error {
  constructor(
    readonly code: UiErrorCode,
    message: string,
    readonly extra: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = 'UiError';
  }

  get status(): number {
    return UI_ERRORS[this.code].status;
  }

  body(): { error: Record<string, unknown>; status: number } {
    return { error: { code: this.code, message: this.message, ...this.extra }, status: this.status };
  }
}

export function badRequest(message: string, extra: Record<string, unknown> = {}): UiError {
  return new UiError('bad_request', message, extra);
}

/** The 400 of a passed limit: names the limit and its configured value. */
export function limitExceeded(limit: string, value: number, asked: number, what: string): UiError {
  return new UiError('limit_exceeded', `${what} ${asked} is over ${limit} (${value})`, {
    limit,
    value,
    requested: asked,
  });
}

/** Any thrown value as a UiError (unknown errors are internal). */
export function asUiError(err: unknown): UiError {
  if (err instanceof UiError) return err;
  return new UiError('internal', (err as Error)?.message ?? String(err));
}

/** A UiError as a gRPC status for the UI backend's own gRPC API (the extra fields travel as JSON metadata). */
export function uiGrpcStatus(err: UiError): Partial<grpc.StatusObject> {
  const metadata = new grpc.Metadata();
  metadata.set('tidepool-error', JSON.stringify(err.body().error));
  return { code: UI_ERRORS[err.code].grpc, details: err.message, metadata };
}
