// The /api/v1 operations over the log-store client, transport-free: the HTTP routes and the gRPC service both call these.
import type { UiLimits } from '../../config/logstore-ui.js';
import { UiError, badRequest, limitExceeded } from './errors.js';
import type { LogstoreClient, PbAggregation, PbDocument, PbError, PbHistogram, PbQuery } from './logstore-client.js';
import { type Body, aggsOf, asBody, intOf, intervalOf, queryOf, searchParams } from './requests.js';

export interface UiEvent {
  id: string;
  data: unknown;
  time: string;
}

export interface UiEnv {
  client: LogstoreClient;
  limits: UiLimits;
}

/** A stored document as the API answers it: its JSON parsed (a document that is not JSON stays a string). */
export function eventOf(d: PbDocument): UiEvent {
  const text = Buffer.from(d.data).toString('utf8');
  let data: unknown = text;
  try {
    data = JSON.parse(text);
  } catch (err) {
    if (!(err instanceof SyntaxError)) throw err;
  }
  return { id: d.id, data, time: d.time };
}

function partial(error: PbError | null, partialResponse: boolean): { partial_response: boolean; error?: PbError } {
  return partialResponse
    ? { partial_response: true, error: { code: 'PARTIAL_RESPONSE', message: error?.message ?? '' } }
    : { partial_response: false };
}

function histogramOf(h: PbHistogram | null) {
  return h ? { buckets: h.buckets.map((b) => ({ ts: b.ts, doc_count: b.doc_count })) } : null;
}

function aggregationsOf(aggs: PbAggregation[]) {
  return aggs.map((a) => ({
    not_exists: a.not_exists,
    buckets: a.buckets.map((b) => ({
      key: b.key,
      value: b.value,
      not_exists: b.not_exists,
      ...(b.quantiles.length ? { quantiles: b.quantiles } : {}),
    })),
  }));
}

export async function fields(env: UiEnv) {
  const m = await env.client.mapping();
  return {
    auto: m.auto,
    fields: m.fields
      .map((f) => ({ name: f.name, type: f.types[0] ?? 'keyword', types: f.types }))
      .sort((a, b) => a.name.localeCompare(b.name)),
  };
}

export async function search(env: UiEnv, body: Body, cli = false) {
  const p = searchParams(body, env.limits, cli);
  const r = await env.client.complexSearch({
    query: p.query,
    size: p.limit,
    offset: p.offset,
    with_total: p.withTotal,
    order: p.order === 'asc' ? 'ORDER_ASC' : 'ORDER_DESC',
    aggs: p.aggs,
    hist_interval: p.histInterval,
  });
  return {
    total: r.total,
    events: r.docs.map(eventOf),
    histogram: p.histInterval ? histogramOf(r.hist) : null,
    aggregations: aggregationsOf(r.aggs),
    ...partial(r.error, r.partial_response),
  };
}

const ID = /^[0-9a-f]{24}$/i;

export async function event(env: UiEnv, id: string): Promise<{ event: UiEvent }> {
  if (!ID.test(id)) throw badRequest(`an event id is 24 hex digits; found ${JSON.stringify(id)}`, { field: 'id' });
  const { docs, partial } = await env.client.fetch([id]);
  // A shard that did not answer may hold it: not a 404.
  if (!docs[0] && partial)
    throw new UiError(
      'logstore_unavailable',
      `event ${id} not found, but the log store's answer is partial: ${partial}`,
    );
  if (!docs[0]) throw new UiError('not_found', `no event ${id}`);
  return { event: eventOf(docs[0]) };
}

/** Buckets by value, largest first (then key), at most `size` of them; buckets_total says how many there were. */
function topBuckets<T extends { buckets: { key: string; value: number }[] }>(
  a: T,
  size: number,
): T & { buckets_total: number } {
  const sorted = [...a.buckets].sort((x, y) => y.value - x.value || (x.key < y.key ? -1 : x.key > y.key ? 1 : 0));
  return { ...a, buckets: sorted.slice(0, size), buckets_total: a.buckets.length };
}

export async function aggregation(env: UiEnv, body: Body) {
  const query = queryOf(body);
  const aggs = aggsOf(body.aggregations, env.limits);
  if (!aggs.length) throw badRequest('aggregations must list at least one {field, func}', { field: 'aggregations' });
  const size = body.size === undefined || body.size === null ? null : intOf(body.size, 'size', 0);
  if (size === 0)
    throw badRequest('size must be a positive integer (the most buckets kept per aggregation)', { field: 'size' });
  const r = await env.client.aggregation(
    query,
    aggs.map((a) => ({ ...a, interval: '' })),
  );
  const out = aggregationsOf(r.aggs);
  return {
    total: r.total,
    aggregations: size === null ? out : out.map((a) => topBuckets(a, size)),
    ...partial(r.error, r.partial_response),
  };
}

/** Time series: per aggregation, one series per group (key) of points {ts, value}, in time order. */
export async function aggregationTs(env: UiEnv, body: Body) {
  const query = queryOf(body);
  const interval = body.interval === undefined ? undefined : intervalOf(body.interval, 'interval');
  const aggs = aggsOf(body.aggregations, env.limits, { interval, needInterval: true });
  if (!aggs.length)
    throw badRequest('aggregations must list at least one {field, func, interval}', { field: 'aggregations' });
  const r = await env.client.aggregation(query, aggs);
  return {
    total: r.total,
    aggregations: r.aggs.map((a, i) => {
      const series = new Map<string, { ts: string; value: number; quantiles?: number[] }[]>();
      for (const b of a.buckets) {
        let s = series.get(b.key);
        if (!s) series.set(b.key, (s = []));
        s.push({ ts: b.ts, value: b.value, ...(b.quantiles.length ? { quantiles: b.quantiles } : {}) });
      }
      return {
        interval: aggs[i]!.interval,
        series: [...series].map(([key, points]) => ({
          key,
          points: points.sort((x, y) => (x.ts < y.ts ? -1 : x.ts > y.ts ? 1 : 0)),
        })),
      };
    }),
    ...partial(r.error, r.partial_response),
  };
}

export async function histogram(env: UiEnv, body: Body) {
  const query = queryOf(body);
  const interval = intervalOf(body.interval, 'interval');
  const r = await env.client.histogram(query, interval);
  return { total: r.total, histogram: histogramOf(r.hist) ?? { buckets: [] }, ...partial(r.error, r.partial_response) };
}

export function limits(env: UiEnv) {
  return { ...env.limits };
}

export async function status(env: UiEnv) {
  const s = await env.client.status();
  return {
    status: s.stores.some((x) => !x.ok) ? 'degraded' : 'ok',
    logstore: {
      mode: s.mode,
      docs: s.docs,
      raw_bytes: s.raw_bytes,
      disk_bytes: s.disk_bytes,
      shards: s.shards,
      oldest_time: s.oldest_time || null,
      newest_time: s.newest_time || null,
      stores: s.stores,
    },
    logstore_addrs: env.client.addrs,
  };
}

/** A seq-ql term matching one value exactly (raw backticks unless the value holds one). */
export function exactTerm(field: string, value: string): string {
  if (!/^[^\s:()|,"'`[\]#]+$/.test(field))
    throw badRequest(`field ${JSON.stringify(field)} cannot be used in a query`, { field: 'field' });
  if (!value.includes('`')) return `${field}:\`${value}\``;
  return `${field}:"${value.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}

function fieldValue(data: unknown, field: string): string | null {
  let v: unknown = data;
  for (const part of field.split('.')) {
    if (typeof v !== 'object' || v === null) return null;
    v = (v as Record<string, unknown>)[part];
  }
  if (v === undefined || v === null || typeof v === 'object') return null;
  return String(v);
}

/** Order of documents by (time, id), the log store's own order. */
function cmp(a: { time: string; id: string }, b: { time: string; id: string }): number {
  return a.time < b.time ? -1 : a.time > b.time ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

/** Extra documents read at the boundary time, so that documents of the same millisecond are ordered by id. */
const TIE_SLACK = 50;

/**
 * The `before` documents older and `after` documents newer than one document (in time then id order), within
 * the same value of `field` when given: {event, before (oldest first), after (oldest first)}.
 */
export async function context(env: UiEnv, b: Body) {
  if (typeof b.id !== 'string') throw badRequest('id must be an event id', { field: 'id' });
  const before = intOf(b.before, 'before', 10);
  const after = intOf(b.after, 'after', 10);
  for (const [n, name] of [
    [before, 'before'],
    [after, 'after'],
  ] as const) {
    if (n > env.limits.max_search_limit) throw limitExceeded('max_search_limit', env.limits.max_search_limit, n, name);
  }
  if (b.field !== undefined && b.field !== null && (typeof b.field !== 'string' || b.field === ''))
    throw badRequest('field must be a field name', { field: 'field' });
  const { event: center } = await event(env, b.id);
  let query = '*';
  if (typeof b.field === 'string') {
    const v = fieldValue(center.data, b.field);
    query = v === null ? `not _exists_:${b.field}` : exactTerm(b.field, v);
  }
  const side = async (n: number, order: 'ORDER_DESC' | 'ORDER_ASC') => {
    if (n === 0) return [];
    // The bound is widened by a millisecond: documents of the center's own millisecond are sorted out by id below.
    const t = Date.parse(center.time);
    const q: PbQuery =
      order === 'ORDER_DESC'
        ? { query, from: '', to: new Date(t + 1).toISOString() }
        : { query, from: new Date(t - 1).toISOString(), to: '' };
    const r = await env.client.complexSearch({
      query: q,
      size: n + TIE_SLACK,
      offset: 0,
      with_total: false,
      order,
      aggs: [],
      hist_interval: '',
    });
    const evs = r.docs.map(eventOf).filter((e) => (order === 'ORDER_DESC' ? cmp(e, center) < 0 : cmp(e, center) > 0));
    evs.sort(cmp);
    return order === 'ORDER_DESC' ? evs.slice(Math.max(0, evs.length - n)) : evs.slice(0, n);
  };
  const [older, newer] = await Promise.all([side(before, 'ORDER_DESC'), side(after, 'ORDER_ASC')]);
  return { event: center, query, before: older, after: newer };
}

export { asBody };
