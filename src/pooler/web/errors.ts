// The web listener's error catalog: stable codes, each with its HTTP status; every error body is {error, message}.
import type { FastifyReply } from 'fastify';

export const WEB_ERRORS = {
  bad_request: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  /** A feature this configuration does not use (/api/auth_query without auth_query). */
  not_configured: 404,
  method_not_allowed: 405,
  payload_too_large: 413,
  unsupported_media_type: 415,
  reload_failed: 422,
  internal: 500,
  /** A server the pooler asked on the caller's behalf failed (the log store behind /api/logs/history). */
  upstream: 502,
} as const;

export type WebErrorCode = keyof typeof WEB_ERRORS;

/** Sends `{"error": code, "message": ...}` (plus `extra` fields) with the code's status. */
export function sendError(
  reply: FastifyReply,
  code: WebErrorCode,
  message: string,
  extra: Record<string, unknown> = {},
): FastifyReply {
  return reply
    .code(WEB_ERRORS[code])
    .type('application/json; charset=utf-8')
    .send({ error: code, message, ...extra });
}
