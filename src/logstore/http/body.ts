// Reads small JSON request bodies (search API) with a size limit.
import type { IncomingMessage } from 'node:http';
import { ErrorCode, HttpError } from './errors.js';

export const MAX_JSON_BODY = 16 * 1024 * 1024;

export async function readJsonBody(req: IncomingMessage, limit = MAX_JSON_BODY): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > limit) throw new HttpError(413, ErrorCode.BodyTooLarge, `the request body is larger than ${limit} bytes`);
    chunks.push(chunk as Buffer);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (text.trim() === '') return {};
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (err) {
    throw new HttpError(400, ErrorCode.BadJson, `the request body is not valid JSON: ${(err as Error).message}`);
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new HttpError(400, ErrorCode.BadJson, 'the request body must be a JSON object');
  return v as Record<string, unknown>;
}
