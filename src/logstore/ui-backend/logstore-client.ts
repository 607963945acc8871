// The UI backend's gRPC client of the log store's public API (api.proto): round-robin over clients.logstore_addrs,
// failover to the next address, retries of idempotent calls with backoff, and one time budget per request
// (clients.logstore_timeout) after which the caller gets a 504, never a hang.
import * as grpc from '@grpc/grpc-js';
import type { Logger } from 'pino';
import type { LogstoreUiConfig } from '../../config/logstore-ui.js';
import { services } from '../grpc/proto.js';
import { UiError } from './errors.js';
import type { UiMetrics } from './metrics.js';

export interface PbQuery {
  query: string;
  from: string;
  to: string;
  explain?: boolean;
}
export interface PbDocument {
  id: string;
  data: Buffer;
  time: string;
}
export interface PbAggQuery {
  field: string;
  group_by: string;
  func: string;
  quantiles: number[];
  interval: string;
}
export interface PbAggBucket {
  key: string;
  value: number;
  not_exists: number;
  quantiles: number[];
  ts: string;
}
export interface PbAggregation {
  buckets: PbAggBucket[];
  not_exists: number;
}
export interface PbHistogram {
  buckets: { ts: string; doc_count: number }[];
}
export interface PbError {
  code: string;
  message: string;
}

export interface ComplexSearchRequest {
  query: PbQuery;
  size: number;
  offset: number;
  with_total: boolean;
  order: 'ORDER_DESC' | 'ORDER_ASC';
  aggs: PbAggQuery[];
  hist_interval: string;
}

export interface ComplexSearchResponse {
  total: number;
  docs: PbDocument[];
  aggs: PbAggregation[];
  hist: PbHistogram | null;
  error: PbError | null;
  partial_response: boolean;
}

export interface AggregationResponse {
  total: number;
  aggs: PbAggregation[];
  error: PbError | null;
  partial_response: boolean;
}
export interface HistogramResponse {
  total: number;
  hist: PbHistogram | null;
  error: PbError | null;
  partial_response: boolean;
}
export interface MappingResponse {
  auto: boolean;
  fields: { name: string; types: string[] }[];
}
export interface StatusResponse {
  mode: string;
  docs: number;
  raw_bytes: number;
  disk_bytes: number;
  shards: number;
  oldest_time: string;
  newest_time: string;
  stores: { addr: string; shard: number; ok: boolean; error: string; docs: number }[];
}

type GrpcClient = grpc.Client & Record<string, unknown>;
type Unary = (
  req: unknown,
  meta: grpc.Metadata,
  opts: grpc.CallOptions,
  cb: (err: grpc.ServiceError | null, res: unknown) => void,
) => void;
type ServerStream = (
  req: unknown,
  meta: grpc.Metadata,
  opts: grpc.CallOptions,
) => grpc.ClientReadableStream<PbDocument>;

const BACKOFF_MS = 50;

/** Codes worth another address: the peer is down, refused, reset the stream, or is out of breath. */
function retryable(code: grpc.status | undefined): boolean {
  return (
    code === grpc.status.UNAVAILABLE ||
    code === grpc.status.INTERNAL ||
    code === grpc.status.UNKNOWN ||
    code === grpc.status.CANCELLED
  );
}

/** A log-store failure as the UI backend's error (400 for its own refusals, 502 down, 504 slow). */
export function upstreamError(err: unknown, addr: string, timeoutMs: number): UiError {
  const e = err as grpc.ServiceError;
  switch (e?.code) {
    case grpc.status.DEADLINE_EXCEEDED:
      return new UiError(
        'logstore_timeout',
        `the log store (${addr}) did not answer within clients.logstore_timeout (${timeoutMs} ms)`,
        { addr },
      );
    case grpc.status.INVALID_ARGUMENT:
      return new UiError('logstore_rejected', e.details || e.message, { addr });
    case grpc.status.NOT_FOUND:
      return new UiError('not_found', e.details || e.message, { addr });
    case grpc.status.RESOURCE_EXHAUSTED:
      return new UiError('too_many_requests', `the log store is busy: ${e.details || e.message}`, { addr });
    default:
      return new UiError(
        'logstore_unavailable',
        `the log store (${addr}) failed: ${e?.details || e?.message || String(err)}`,
        { addr, grpc_code: e?.code },
      );
  }
}

export class LogstoreClient {
  private readonly clients: { addr: string; client: GrpcClient }[];
  private next = 0;
  readonly timeoutMs: number;
  private readonly retries: number;

  constructor(
    config: LogstoreUiConfig['clients'],
    private readonly log: Logger,
    private readonly metrics: UiMetrics,
  ) {
    const Ctor = services().api;
    const ka = config.grpc_keepalive_params;
    const options: grpc.ChannelOptions = {
      'grpc.keepalive_time_ms': ka.time,
      'grpc.keepalive_timeout_ms': ka.timeout,
      'grpc.keepalive_permit_without_calls': ka.permit_without_stream ? 1 : 0,
      'grpc.http2.max_pings_without_data': 0,
      // A log store that comes back is reached again within seconds (grpc-js's default backoff grows to minutes).
      'grpc.initial_reconnect_backoff_ms': 250,
      'grpc.max_reconnect_backoff_ms': 2000,
      'grpc.max_receive_message_length': 256 * 1024 * 1024,
    };
    this.clients = config.logstore_addrs.map((addr) => ({
      addr,
      client: new Ctor(addr, grpc.credentials.createInsecure(), options) as GrpcClient,
    }));
    this.timeoutMs = config.logstore_timeout;
    this.retries = config.request_retries;
  }

  get addrs(): string[] {
    return this.clients.map((c) => c.addr);
  }

  /** The addresses to try for one request: round-robin start, then the others in order (failover). */
  private order(): { addr: string; client: GrpcClient }[] {
    const start = this.next++ % this.clients.length;
    return [...this.clients.slice(start), ...this.clients.slice(0, start)];
  }

  /**
   * Runs `attempt` against one address after another: an idempotent call is retried (request_retries times, on
   * the next address, 50 ms backoff doubling) while it fails as unavailable and the budget lasts.
   */
  private async withRetries<T>(
    method: string,
    idempotent: boolean,
    attempt: (c: GrpcClient, deadline: number) => Promise<T>,
  ): Promise<T> {
    const deadline = Date.now() + this.timeoutMs;
    const targets = this.order();
    const tries = idempotent ? this.retries + 1 : 1;
    let lastErr: unknown;
    let lastAddr = targets[0]!.addr;
    for (let i = 0; i < tries; i++) {
      const target = targets[i % targets.length]!;
      lastAddr = target.addr;
      const started = process.hrtime.bigint();
      try {
        const res = await attempt(target.client, deadline);
        this.metrics.logstoreCalls.inc({ method, result: 'ok' });
        this.metrics.logstoreDuration.observe({ method }, Number(process.hrtime.bigint() - started) / 1e9);
        return res;
      } catch (err) {
        lastErr = err;
        const code = (err as grpc.ServiceError).code;
        this.metrics.logstoreCalls.inc({ method, result: grpc.status[code] ?? 'error' });
        if (!retryable(code) || i + 1 >= tries) break;
        const wait = BACKOFF_MS * 2 ** i;
        if (Date.now() + wait >= deadline) break;
        this.metrics.retries.inc({ method });
        this.log.warn(
          { method, addr: target.addr, code: grpc.status[code], error: (err as grpc.ServiceError).details },
          'log-store call failed; retrying on the next address',
        );
        await new Promise((r) => setTimeout(r, wait));
      }
    }
    // A budget spent while waiting to retry is a timeout too.
    if (Date.now() >= deadline && retryable((lastErr as grpc.ServiceError)?.code)) {
      throw new UiError(
        'logstore_timeout',
        `the log store did not answer within clients.logstore_timeout (${this.timeoutMs} ms)`,
        { addr: lastAddr },
      );
    }
    throw upstreamError(lastErr, lastAddr, this.timeoutMs);
  }

  private unary<T>(method: string, req: unknown, idempotent = true): Promise<T> {
    return this.withRetries(
      method,
      idempotent,
      (client, deadline) =>
        new Promise<T>((resolve, reject) => {
          (client[method] as Unary).call(client, req, new grpc.Metadata(), { deadline }, (err, res) =>
            err ? reject(err) : resolve(res as T),
          );
        }),
    );
  }

  complexSearch(req: ComplexSearchRequest): Promise<ComplexSearchResponse> {
    return this.unary('ComplexSearch', req);
  }

  aggregation(query: PbQuery, aggs: PbAggQuery[]): Promise<AggregationResponse> {
    return this.unary('GetAggregation', { query, aggs });
  }

  histogram(query: PbQuery, interval: string): Promise<HistogramResponse> {
    return this.unary('GetHistogram', { query, interval });
  }

  mapping(): Promise<MappingResponse> {
    return this.unary('Mapping', {});
  }

  status(): Promise<StatusResponse> {
    return this.unary('Status', {});
  }

  /** Documents by id (a stream, collected; small by construction). `partial`: the log store said some shard it asked
   * did not answer (trailing metadata x-partial-response, x-partial-message), so a missing id may exist; else null. */
  fetch(ids: string[]): Promise<{ docs: PbDocument[]; partial: string | null }> {
    return this.withRetries(
      'Fetch',
      true,
      (client, deadline) =>
        new Promise((resolve, reject) => {
          const docs: PbDocument[] = [];
          let partial: string | null = null;
          const stream = (client.Fetch as ServerStream).call(client, { ids, fields: [] }, new grpc.Metadata(), {
            deadline,
          });
          stream.on('data', (d: PbDocument) => docs.push(d));
          // grpc-js emits 'status' (with the trailers) before 'end'.
          stream.on('status', (st: grpc.StatusObject) => {
            if (st.metadata.get('x-partial-response')[0] === 'true')
              partial = String(st.metadata.get('x-partial-message')[0] ?? 'some shards did not answer');
          });
          stream.on('error', reject);
          stream.on('end', () => resolve({ docs, partial }));
        }),
    );
  }

  /**
   * Opens an export stream once its first document (or its end) arrived, with the usual failover and retries
   * up to that point. The stream has no deadline (an export may be long); the caller cuts it when it is
   * silent for logstore_timeout.
   */
  openExport(
    query: PbQuery,
    size: number,
  ): Promise<{ stream: grpc.ClientReadableStream<PbDocument>; first: PbDocument | null; addr: string }> {
    return this.withRetries(
      'Export',
      true,
      (client, deadline) =>
        new Promise((resolve, reject) => {
          const stream = (client.Export as ServerStream).call(client, { query, size }, new grpc.Metadata(), {});
          const timer = setTimeout(
            () => {
              stream.cancel();
              reject(
                Object.assign(new Error('deadline exceeded'), {
                  code: grpc.status.DEADLINE_EXCEEDED,
                  details: 'no first document in time',
                }),
              );
            },
            Math.max(1, deadline - Date.now()),
          );
          const settle = () => {
            clearTimeout(timer);
            stream.off('data', onData);
            stream.off('error', onError);
            stream.off('end', onEnd);
          };
          const onData = (d: PbDocument) => {
            settle();
            stream.pause();
            // Until the caller listens, a failure is kept on the stream rather than thrown as an unhandled 'error'.
            stream.on('error', (err: Error) => {
              (stream as { earlyError?: Error }).earlyError = err;
            });
            resolve({ stream, first: d, addr: client.getChannel().getTarget() });
          };
          const onError = (err: grpc.ServiceError) => {
            settle();
            reject(err);
          };
          const onEnd = () => {
            settle();
            resolve({ stream, first: null, addr: client.getChannel().getTarget() });
          };
          stream.on('data', onData);
          stream.on('error', onError);
          stream.on('end', onEnd);
        }),
    );
  }

  close(): void {
    for (const c of this.clients) c.client.close();
  }
}
