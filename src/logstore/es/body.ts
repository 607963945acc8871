// Reads small JSON request bodies (the search API and Elasticsearch's) with a size limit.
import type { IncomingMessage } from 'node:http';
import { ErrorCode, LogstoreError } from '../errors.js';

export const MAX_JSON_BODY = 16 * 1024 * 1024;

function parseJsonObject(text: string): Record<string, unknown> {
  if (text.trim() === '') return {};
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (err) {
    throw new LogstoreError(ErrorCode.BadJson, `the request body is not valid JSON: ${(err as Error).message}`);
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v))
    throw new LogstoreError(ErrorCode.BadJson, 'the request body must be a JSON object');
  return v as Record<string, unknown>;
}

/**
 * The body as a JSON object ({} when empty). Read with 'data' events (no async iterator per request; a search body
 * is one chunk). Past `limit` bytes the rest is drained unread and the answer is 413 (its connection then closes).
 */
export function readJsonBody(req: IncomingMessage, limit = MAX_JSON_BODY): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) =>
    readJsonBodyThen(req, limit, (err, body) => (err ? reject(err) : resolve(body!))),
  );
}

/** readJsonBody with a callback, for the search routes' path, which takes no promise when the answer is at hand. */
export function readJsonBodyThen(
  req: IncomingMessage,
  limit: number,
  then: (err: Error | null, body?: Record<string, unknown>) => void,
): void {
  let first: Buffer | null = null;
  let more: Buffer[] | null = null;
  let size = 0;
  const done = () => {
    req.off('data', onData);
    req.off('end', onEnd);
    req.off('error', onError);
    req.off('close', onClose);
  };
  const onData = (chunk: Buffer) => {
    size += chunk.length;
    if (size > limit) {
      done();
      req.resume();
      then(new LogstoreError(ErrorCode.BodyTooLarge, `the request body is larger than ${limit} bytes`));
      return;
    }
    if (first === null) first = chunk;
    else (more ??= [first]).push(chunk);
  };
  const onEnd = () => {
    done();
    const buf = more ? Buffer.concat(more) : first;
    let body: Record<string, unknown>;
    try {
      body = parseJsonObject(buf ? buf.toString('utf8') : '');
    } catch (err) {
      then(err as Error);
      return;
    }
    then(null, body);
  };
  const onError = (err: Error) => {
    done();
    then(err);
  };
  const onClose = () => onError(new Error('the connection closed before the request body was read'));
  req.on('data', onData);
  req.on('end', onEnd);
  req.on('error', onError);
  req.on('close', onClose);
}
