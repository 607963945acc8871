// The public search API over gRPC (api.proto): each call becomes the HTTP body it mirrors and runs through
// api/operations.ts, so validation, limits and answers are those of the HTTP API.
import * as grpc from '@grpc/grpc-js';
import type { Logger } from 'pino';
import type { AsyncSearches } from '../api/async-search.js';
import {
  type ApiEnv,
  aggResults,
  histBuckets,
  mappingOf,
  parseSearchBody,
  runAggregate,
  runExport,
  runFetch,
  runHistogram,
  runSearch,
  statusOf,
} from '../api/operations.js';
import { type PartialInfo, type QueryAnswer, damagedPartial } from '../backend.js';
import type { ShardHit } from '../search/execute.js';
import { isoTime } from '../search/hit-json.js';
import type { HitList } from '../search/packed-hits.js';
import { hitData } from '../api/operations.js';
import { grpcError } from './grpc-status.js';
import { failStream } from './stream-status.js';

interface PbQuery {
  query: string;
  from: string;
  to: string;
  explain: boolean;
}
interface PbAgg {
  field: string;
  group_by: string;
  func: string;
  quantiles: number[];
  interval: string;
}
interface PbSearch {
  query: PbQuery | null;
  size?: number;
  offset: number;
  with_total?: boolean;
  order: 'ORDER_DESC' | 'ORDER_ASC';
  aggs?: PbAgg[];
  hist_interval?: string;
}
interface PbDocument {
  id: string;
  data: Uint8Array;
  time: string;
}

/** The HTTP JSON body a gRPC request stands for (empty strings and unset optionals are "absent"). */
function queryBody(q: PbQuery | null): Record<string, unknown> {
  return { query: { query: q?.query ?? '', from: q?.from || undefined, to: q?.to || undefined } };
}

function aggsBody(aggs: PbAgg[]): Record<string, unknown>[] {
  return aggs.map((a) => ({
    field: a.field,
    func: a.func || 'count',
    group_by: a.group_by || undefined,
    quantiles: a.quantiles.length ? a.quantiles : undefined,
    interval: a.interval || undefined,
  }));
}

function searchBody(r: PbSearch): Record<string, unknown> {
  return {
    ...queryBody(r.query),
    size: r.size ?? undefined,
    offset: r.offset,
    with_total: r.with_total ?? undefined,
    order: r.order === 'ORDER_ASC' ? 'asc' : 'desc',
    aggs: r.aggs?.length ? aggsBody(r.aggs) : undefined,
    hist: r.hist_interval ? { interval: r.hist_interval } : undefined,
  };
}

function docsOf(hits: HitList, from: number, to: number): PbDocument[] {
  const out: PbDocument[] = [];
  for (let i = Math.max(0, from); i < Math.min(to, hits.length); i++) {
    const d = hits.doc(i);
    out.push({ id: d.id, data: d.data, time: isoTime(d.time) });
  }
  return out;
}

function docOf(h: ShardHit): PbDocument {
  return { id: h.id, data: Buffer.from(hitData(h)), time: isoTime(h.time) };
}

function errorOf(p: PartialInfo | undefined) {
  return p
    ? { error: { code: 'ERROR_CODE_PARTIAL_RESPONSE', message: p.message }, partial_response: true }
    : { error: { code: 'ERROR_CODE_NO', message: '' }, partial_response: false };
}

function aggsOut(specs: Parameters<typeof aggResults>[0], r: QueryAnswer) {
  return aggResults(specs, r).map((a) => ({
    not_exists: a.not_exists,
    buckets: a.buckets.map((b) => ({ ...b, quantiles: b.quantiles ?? [], ts: b.ts ?? '' })),
  }));
}

function unary<Req, Res>(log: Logger, fn: (req: Req) => Promise<Res> | Res): grpc.handleUnaryCall<Req, Res> {
  return (call, cb) => {
    Promise.resolve()
      .then(() => fn(call.request))
      .then(
        (res) => cb(null, res),
        (err: unknown) => {
          const st = grpcError(err);
          if (st.code === grpc.status.INTERNAL) log.error({ err, method: call.getPath() }, 'api call failed');
          cb(st);
        },
      );
  };
}

/** Trailing metadata of an Export that left damaged fractions out: as HTTP /export's x-tidepool-skipped-fractions. */
export const SKIPPED_FRACTIONS_TRAILER = 'x-tidepool-skipped-fractions';

/** Trailing metadata of a Fetch that some shard failed to answer (api.proto): as HTTP /fetch's partial_response. */
export function partialTrailer(p: PartialInfo): grpc.Metadata {
  const m = new grpc.Metadata();
  m.set('x-partial-response', 'true');
  // A metadata value is printable ASCII that neither starts nor ends with a space (HTTP/2 drops it otherwise):
  // anything else in the message (a store's error text, which grpc-js ends with a space) becomes '?' or goes.
  m.set('x-partial-message', p.message.replace(/[^\x20-\x7e]/g, '?').trim());
  return m;
}

/** A server stream of documents; `fn` may resolve to trailing metadata sent with the final status. */
function streamed<Req>(
  log: Logger,
  fn: (req: Req, write: (d: PbDocument) => Promise<void>) => Promise<grpc.Metadata | void>,
) {
  return (call: grpc.ServerWritableStream<Req, PbDocument>) => {
    let cancelled = false;
    call.on('cancelled', () => {
      cancelled = true;
    });
    const write = (d: PbDocument) => {
      if (cancelled) return Promise.reject(new Error('the client cancelled the call'));
      return call.write(d) ? Promise.resolve() : new Promise<void>((r) => call.once('drain', () => r()));
    };
    fn(call.request, write).then(
      (trailer) => (trailer ? call.end(trailer) : call.end()),
      (err: unknown) => {
        if (cancelled) return;
        const st = grpcError(err);
        if (st.code === grpc.status.INTERNAL) log.error({ err, method: call.getPath() }, 'api stream failed');
        failStream(call, st);
      },
    );
  };
}

export function apiHandlers(
  env: ApiEnv,
  searches: AsyncSearches,
  log: Logger,
  inflight: { bulks: number },
): grpc.UntypedServiceImplementation {
  const complex = async (req: PbSearch) => {
    const { spec, aggs, hist, r } = await runSearch(env, parseSearchBody(env, searchBody(req), true));
    return {
      total: r.total,
      docs: docsOf(r.hits, spec.offset, spec.offset + spec.size),
      aggs: aggsOut(aggs, r),
      hist: hist ? { buckets: histBuckets(r) } : null,
      ...errorOf(r.partial),
    };
  };
  return {
    Search: unary(log, async (req: PbSearch) => {
      const { spec, r } = await runSearch(
        env,
        parseSearchBody(env, searchBody({ ...req, aggs: [], hist_interval: '' }), false),
      );
      return { total: r.total, docs: docsOf(r.hits, spec.offset, spec.offset + spec.size), ...errorOf(r.partial) };
    }),
    ComplexSearch: unary(log, complex),
    GetAggregation: unary(log, async (req: { query: PbQuery | null; aggs: PbAgg[] }) => {
      const { aggs, r } = await runAggregate(env, { ...queryBody(req.query), aggs: aggsBody(req.aggs) });
      return { total: r.total, aggs: aggsOut(aggs, r), ...errorOf(r.partial) };
    }),
    GetHistogram: unary(log, async (req: { query: PbQuery | null; interval: string }) => {
      const r = await runHistogram(env, { ...queryBody(req.query), interval: req.interval || undefined });
      return { total: r.total, hist: { buckets: histBuckets(r) }, ...errorOf(r.partial) };
    }),
    Fetch: streamed(log, async (req: { ids: string[]; fields: string[] }, write) => {
      const { hits, partial } = await runFetch(env, {
        ids: req.ids,
        fields: req.fields.length ? req.fields : undefined,
      });
      for (const h of hits) await write(docOf(h));
      return partial ? partialTrailer(partial) : undefined;
    }),
    Mapping: unary(log, async () => {
      const m = await mappingOf(env);
      return { auto: m.auto, fields: Object.entries(m.mapping).map(([name, types]) => ({ name, types })) };
    }),
    Status: unary(log, async () => {
      const s = await statusOf(env, inflight.bulks);
      return {
        mode: s.mode,
        docs: s.docs,
        raw_bytes: s.raw_bytes,
        disk_bytes: s.disk_bytes,
        shards: s.shards,
        oldest_time: s.oldest_time ?? '',
        newest_time: s.newest_time ?? '',
        stores: 'stores' in s ? s.stores : [],
      };
    }),
    Export: streamed(log, async (req: { query: PbQuery | null; size: number }, write) => {
      const { skippedFractions } = await runExport(
        env,
        { ...queryBody(req.query), size: req.size > 0 ? req.size : undefined },
        async (hits) => {
          for (const h of hits) await write(docOf(h));
        },
      );
      // As HTTP /export's trailer: the damaged fractions left out, and the answer marked partial.
      if (skippedFractions.length === 0) return undefined;
      const m = partialTrailer(damagedPartial(skippedFractions, env.store.shardCount));
      m.set(SKIPPED_FRACTIONS_TRAILER, skippedFractions.join(','));
      return m;
    }),
    StartAsyncSearch: unary(log, (req: PbSearch) => ({ search_id: searches.start(searchBody(req)) })),
    FetchAsyncSearchResult: unary(log, (req: { search_id: string }) => {
      const { info, response } = searches.get(req.search_id);
      return {
        info: { ...info, finished_at: info.finished_at ?? '', error: info.error ?? '' },
        response: {
          total: response.total,
          docs: response.docs.map(docOf),
          aggs: response.aggs.map((a) => ({
            not_exists: a.not_exists,
            buckets: a.buckets.map((b) => ({ ...b, quantiles: b.quantiles ?? [], ts: b.ts ?? '' })),
          })),
          hist: response.hist ?? null,
          error: response.error
            ? { code: 'ERROR_CODE_PARTIAL_RESPONSE', message: response.error.message }
            : { code: 'ERROR_CODE_NO', message: '' },
          partial_response: !!response.partial_response,
        },
      };
    }),
    CancelAsyncSearch: unary(log, (req: { search_id: string }) => {
      searches.cancel(req.search_id);
      return {};
    }),
    DeleteAsyncSearch: unary(log, (req: { search_id: string }) => {
      searches.delete(req.search_id);
      return {};
    }),
    GetAsyncSearchesList: unary(log, () => ({
      searches: searches.list().map((i) => ({ ...i, finished_at: i.finished_at ?? '', error: i.error ?? '' })),
    })),
  };
}
