// The UI backend's gRPC API (proto/logstore/ui.proto): each call becomes the /api/v1 body it mirrors and runs the same operation.
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import type { Logger } from 'pino';
import { PROTO_DIR } from '../grpc/proto.js';
import { UiError, asUiError, uiGrpcStatus } from './errors.js';
import { type ExportEnv, planExport } from './export.js';
import { upstreamError } from './logstore-client.js';
import * as ops from './operations.js';
import { queryText, rfc3339 } from './requests.js';
import { Tail, tailLimitError } from './tail.js';
import { failStream } from '../grpc/stream-status.js';

let cached: grpc.ServiceClientConstructor | null = null;

/** The LogstoreUi service constructor (its `.service` is what a server adds; tests build clients from it). */
export function uiService(): grpc.ServiceClientConstructor {
  if (!cached) {
    const def = protoLoader.loadSync(path.join(PROTO_DIR, 'ui.proto'), {
      keepCase: true,
      longs: Number,
      enums: String,
      defaults: true,
      arrays: true,
      oneofs: true,
    });
    cached = (
      grpc.loadPackageDefinition(def) as unknown as {
        tidepool: { logstore: { ui: { v1: { LogstoreUi: grpc.ServiceClientConstructor } } } };
      }
    ).tidepool.logstore.ui.v1.LogstoreUi;
  }
  return cached;
}

interface PbAgg {
  field: string;
  func: string;
  group_by: string;
  quantiles: number[];
  interval: string;
}
type Ev = ops.UiEvent;

const opt = (v: string) => (v === '' ? undefined : v);

function aggsBody(aggs: PbAgg[]) {
  return aggs.map((a) => ({
    field: opt(a.field),
    func: opt(a.func),
    group_by: opt(a.group_by),
    quantiles: a.quantiles.length ? a.quantiles : undefined,
    interval: opt(a.interval),
  }));
}

function eventPb(e: Ev) {
  return { id: e.id, data: typeof e.data === 'string' ? e.data : JSON.stringify(e.data), time: e.time };
}

function partialPb(r: { partial_response: boolean; error?: { message: string } }) {
  return { partial_response: r.partial_response, message: r.error?.message ?? '' };
}

function aggResultsPb(
  aggs: { not_exists: number; buckets: { key: string; value: number; not_exists: number; quantiles?: number[] }[] }[],
) {
  return aggs.map((a) => ({
    not_exists: a.not_exists,
    buckets: a.buckets.map((b) => ({ ...b, quantiles: b.quantiles ?? [] })),
  }));
}

export interface UiGrpcEnv extends ExportEnv {
  log: Logger;
  tail: { pollMs: number; maxStreams: number; open: number };
}

export function uiGrpcHandlers(env: UiGrpcEnv): grpc.UntypedServiceImplementation {
  const counted = (route: string, status: string) => env.metrics.requests.inc({ route: `grpc:${route}`, status });
  function unary<Req>(name: string, fn: (req: Req) => Promise<unknown> | unknown): grpc.handleUnaryCall<Req, unknown> {
    return (call, cb) => {
      Promise.resolve()
        .then(() => fn(call.request))
        .then(
          (res) => {
            counted(name, 'OK');
            cb(null, res);
          },
          (err: unknown) => {
            const e = asUiError(err);
            if (e.code === 'internal') env.log.error({ err, method: name }, 'grpc call failed');
            counted(name, e.code);
            cb(uiGrpcStatus(e));
          },
        );
    };
  }
  const query = (r: { query: string; from: string; to: string }) => ({
    query: r.query,
    from: opt(r.from),
    to: opt(r.to),
  });

  return {
    GetFields: unary('GetFields', () => ops.fields(env)),
    Search: unary(
      'Search',
      async (r: {
        query: string;
        from: string;
        to: string;
        limit?: number;
        offset: number;
        with_total?: boolean;
        order: string;
        histogram_interval: string;
        aggregations: PbAgg[];
        cli: boolean;
      }) => {
        const res = await ops.search(
          env,
          {
            ...query(r),
            limit: r.limit ?? undefined,
            offset: r.offset,
            with_total: r.with_total ?? undefined,
            order: opt(r.order),
            histogram: r.histogram_interval ? { interval: r.histogram_interval } : undefined,
            aggregations: aggsBody(r.aggregations),
          },
          r.cli,
        );
        return {
          total: res.total,
          events: res.events.map(eventPb),
          histogram: res.histogram?.buckets ?? [],
          aggregations: aggResultsPb(res.aggregations),
          partial: partialPb(res),
        };
      },
    ),
    GetEvent: unary('GetEvent', async (r: { id: string }) => ({ event: eventPb((await ops.event(env, r.id)).event) })),
    GetAggregation: unary(
      'GetAggregation',
      async (r: { query: string; from: string; to: string; aggregations: PbAgg[] }) => {
        const res = await ops.aggregation(env, { ...query(r), aggregations: aggsBody(r.aggregations) });
        return { total: res.total, aggregations: aggResultsPb(res.aggregations), partial: partialPb(res) };
      },
    ),
    GetAggregationTs: unary(
      'GetAggregationTs',
      async (r: { query: string; from: string; to: string; aggregations: PbAgg[]; interval: string }) => {
        const res = await ops.aggregationTs(env, {
          ...query(r),
          aggregations: aggsBody(r.aggregations),
          interval: opt(r.interval),
        });
        return {
          total: res.total,
          partial: partialPb(res),
          aggregations: res.aggregations.map((a) => ({
            interval: a.interval,
            series: a.series.map((s) => ({
              key: s.key,
              points: s.points.map((p) => ({ ...p, quantiles: p.quantiles ?? [] })),
            })),
          })),
        };
      },
    ),
    GetHistogram: unary('GetHistogram', async (r: { query: string; from: string; to: string; interval: string }) => {
      const res = await ops.histogram(env, { ...query(r), interval: r.interval });
      return { total: res.total, buckets: res.histogram.buckets, partial: partialPb(res) };
    }),
    GetContext: unary('GetContext', async (r: { id: string; before?: number; after?: number; field: string }) => {
      const res = await ops.context(env, {
        id: r.id,
        before: r.before ?? undefined,
        after: r.after ?? undefined,
        field: opt(r.field),
      });
      return {
        event: eventPb(res.event),
        query: res.query,
        before: res.before.map(eventPb),
        after: res.after.map(eventPb),
      };
    }),
    GetLimits: unary('GetLimits', () => ops.limits(env)),
    GetStatus: unary('GetStatus', async () => {
      const s = await ops.status(env);
      return { status: s.status, logstore: JSON.stringify(s.logstore), logstore_addrs: s.logstore_addrs };
    }),
    Export: (
      call: grpc.ServerWritableStream<
        { query: string; from: string; to: string; limit?: number; format: string; fields: string[] },
        unknown
      >,
    ) => {
      let cancelled = false;
      call.on('cancelled', () => {
        cancelled = true;
      });
      const fail = (err: unknown) => {
        if (cancelled) return;
        const e =
          err instanceof UiError
            ? err
            : typeof (err as { code?: unknown }).code === 'number'
              ? upstreamError(err, 'the log store', env.client.timeoutMs)
              : asUiError(err);
        counted('Export', e.code);
        failStream(call, uiGrpcStatus(e));
      };
      let plan;
      try {
        const r = call.request;
        plan = planExport(env, {
          ...query(r),
          limit: r.limit ?? undefined,
          format: opt(r.format),
          fields: r.fields.length ? r.fields : undefined,
        });
      } catch (err) {
        fail(err);
        return;
      }
      plan
        .run((chunk) => {
          if (cancelled) return Promise.reject(new Error('the client cancelled the export'));
          return call.write({ data: chunk })
            ? Promise.resolve()
            : new Promise<void>((r) => call.once('drain', () => r()));
        })
        .then(() => {
          counted('Export', 'OK');
          call.end();
        }, fail);
    },
    Tail: (call: grpc.ServerWritableStream<{ query: string; since: string }, unknown>) => {
      let tail: Tail;
      try {
        const q = queryText(call.request.query);
        const since = call.request.since ? Date.parse(rfc3339(call.request.since, 'since')) : Date.now();
        if (env.tail.open >= env.tail.maxStreams) throw tailLimitError(env.tail.maxStreams);
        tail = new Tail(
          env.client,
          { query: q, since, pollMs: env.tail.pollMs, batch: env.limits.max_search_limit },
          (events) => {
            for (const e of events) call.write(eventPb(e));
          },
          (err) => env.log.warn({ error: err.message }, 'tail: the log store failed; still polling'),
          env.log,
        );
      } catch (err) {
        const e = asUiError(err);
        failStream(call, uiGrpcStatus(e));
        return;
      }
      env.tail.open++;
      env.metrics.tails.set(env.tail.open);
      let stopped = false;
      const stop = () => {
        if (stopped) return;
        stopped = true;
        tail.stop();
        env.tail.open--;
        env.metrics.tails.set(env.tail.open);
      };
      call.once('cancelled', stop);
      call.once('close', stop);
      tail.start();
    },
  };
}
