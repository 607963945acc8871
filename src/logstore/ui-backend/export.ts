// POST /api/v1/export: every match as JSON lines or CSV, streamed from the log store's Export stream with bounded
// memory (the gRPC stream is read only as fast as the client takes the bytes), at most max_parallel_export_requests at once.
import type * as grpc from '@grpc/grpc-js';
import { UiError, badRequest, limitExceeded } from './errors.js';
import type { LogstoreClient, PbDocument } from './logstore-client.js';
import type { UiMetrics } from './metrics.js';
import { type Body, intOf, queryOf } from './requests.js';
import type { UiEnv } from './operations.js';

export interface ExportEnv extends UiEnv {
  client: LogstoreClient;
  metrics: UiMetrics;
  avgDocSize: number;
  running: { exports: number };
}

export interface ExportPlan {
  format: 'jsonl' | 'csv';
  contentType: string;
  filename: string;
  /** Streams the export through `write` (which resolves once the bytes may be followed by more). */
  run(write: (chunk: Buffer) => Promise<void>): Promise<void>;
}

/** Documents per write: the chunk the client gets at once is about this many times logstore_avg_doc_size. */
const DOCS_PER_CHUNK = 64;

function pick(data: unknown, field: string): unknown {
  if (typeof data !== 'object' || data === null) return undefined;
  const obj = data as Record<string, unknown>;
  if (field in obj) return obj[field];
  let v: unknown = obj;
  for (const part of field.split('.')) {
    if (typeof v !== 'object' || v === null) return undefined;
    v = (v as Record<string, unknown>)[part];
  }
  return v;
}

/** One CSV cell (RFC 4180): quoted when it holds a comma, quote, CR or LF. */
export function csvCell(v: unknown): string {
  if (v === undefined || v === null) return '';
  const s = typeof v === 'object' ? JSON.stringify(v) : String(v);
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

const META: Record<string, (d: PbDocument) => unknown> = { _id: (d) => d.id, _time: (d) => d.time };

function lineOf(format: 'jsonl' | 'csv', fields: string[], d: PbDocument): string {
  const text = Buffer.from(d.data).toString('utf8');
  if (format === 'jsonl' && fields.length === 0)
    return `{"id":${JSON.stringify(d.id)},"time":${JSON.stringify(d.time)},"data":${text}}\n`;
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (err) {
    if (!(err instanceof SyntaxError)) throw err;
    data = text;
  }
  if (format === 'csv') return `${fields.map((f) => csvCell(META[f] ? META[f](d) : pick(data, f))).join(',')}\r\n`;
  const kept: Record<string, unknown> = {};
  for (const f of fields) {
    const v = pick(data, f);
    if (v !== undefined) kept[f] = v;
  }
  return `${JSON.stringify({ id: d.id, time: d.time, data: kept })}\n`;
}

/** Validates an export body and takes one of the parallel-export slots; run() gives it back. */
export function planExport(env: ExportEnv, b: Body): ExportPlan {
  const query = queryOf(b);
  const max = env.limits.max_export_limit;
  const limit = intOf(b.limit, 'limit', max);
  if (limit > max) throw limitExceeded('max_export_limit', max, limit, 'limit');
  const format = b.format ?? 'jsonl';
  if (format !== 'jsonl' && format !== 'csv')
    throw badRequest(`format must be "jsonl" or "csv"; found ${JSON.stringify(format)}`, { field: 'format' });
  if (
    b.fields !== undefined &&
    (!Array.isArray(b.fields) || !b.fields.every((f) => typeof f === 'string' && f !== ''))
  ) {
    throw badRequest('fields must be a list of field names', { field: 'fields' });
  }
  const fields = (b.fields as string[] | undefined) ?? [];
  if (format === 'csv' && fields.length === 0)
    throw badRequest("a CSV export needs fields: the columns, in order (_id and _time name the event's id and time)", {
      field: 'fields',
    });
  const parallel = env.limits.max_parallel_export_requests;
  if (env.running.exports >= parallel) {
    env.metrics.limitRejections.inc({ limit: 'max_parallel_export_requests' });
    throw new UiError(
      'too_many_requests',
      `${parallel} exports are running: max_parallel_export_requests (${parallel})`,
      { limit: 'max_parallel_export_requests', value: parallel },
    );
  }
  env.running.exports++;
  env.metrics.exports.set(env.running.exports);
  let released = false;
  const release = () => {
    if (released) return;
    released = true;
    env.running.exports--;
    env.metrics.exports.set(env.running.exports);
  };
  const chunkBytes = Math.max(4096, env.avgDocSize * DOCS_PER_CHUNK);
  return {
    format,
    contentType: format === 'csv' ? 'text/csv; charset=utf-8' : 'application/x-ndjson; charset=utf-8',
    filename: `export-${new Date().toISOString().replace(/[:.]/g, '-')}.${format}`,
    async run(write) {
      let stream: grpc.ClientReadableStream<PbDocument> | null = null;
      try {
        const opened = await env.client.openExport(query, limit);
        stream = opened.stream;
        let parts: string[] = format === 'csv' ? [`${fields.map(csvCell).join(',')}\r\n`] : [];
        let bytes = 0;
        let count = 0;
        const flush = async () => {
          if (!parts.length) return;
          const chunk = Buffer.from(parts.join(''));
          parts = [];
          bytes = 0;
          await write(chunk);
        };
        const add = async (d: PbDocument) => {
          const line = lineOf(format, fields, d);
          parts.push(line);
          bytes += line.length;
          count++;
          if (bytes >= chunkBytes) await flush();
        };
        if (opened.first) await add(opened.first);
        const early = (stream as { earlyError?: Error }).earlyError;
        if (early) throw early;
        const it = stream[Symbol.asyncIterator]() as AsyncIterator<PbDocument>;
        for (;;) {
          // Only the wait for the log store is timed; a slow reader holds the stream paused, which is fine.
          let timedOut = false;
          const timer = setTimeout(() => {
            timedOut = true;
            stream!.cancel();
          }, env.client.timeoutMs);
          let n: IteratorResult<PbDocument>;
          try {
            n = await it.next();
          } catch (err) {
            if (timedOut)
              throw new UiError(
                'logstore_timeout',
                `the log store sent nothing for clients.logstore_timeout (${env.client.timeoutMs} ms) during the export`,
              );
            throw err;
          } finally {
            clearTimeout(timer);
          }
          if (n.done) break;
          await add(n.value);
        }
        await flush();
        env.metrics.exportedDocs.inc({ format }, count);
      } finally {
        stream?.cancel();
        release();
      }
    },
  };
}
