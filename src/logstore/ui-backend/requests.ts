// Validates /api/v1 request bodies and enforces the handlers.logstore_api limits (each a 400 naming the limit).
import type { UiLimits } from '../../config/logstore-ui.js';
import { parseDuration } from '../../config/units.js';
import { AGG_FUNCS } from '../aggregate/aggregate.js';
import { QueryLimitError } from '../query/limits.js';
import { QuerySyntaxError, parseQuery } from '../query/parser.js';
import { UiError, badRequest, limitExceeded } from './errors.js';
import type { PbAggQuery, PbQuery } from './logstore-client.js';

export type Body = Record<string, unknown>;

export interface SearchParams {
  query: PbQuery;
  limit: number;
  offset: number;
  withTotal: boolean;
  order: 'desc' | 'asc';
  histInterval: string;
  aggs: PbAggQuery[];
}

export function asBody(v: unknown): Body {
  if (v === undefined || v === null) return {};
  if (typeof v !== 'object' || Array.isArray(v)) throw badRequest('the body must be a JSON object');
  return v as Body;
}

/** An RFC 3339 time as the log store's ISO form; absent: empty (unbounded). */
export function rfc3339(v: unknown, name: string): string {
  if (v === undefined || v === null || v === '') return '';
  if (typeof v === 'string' && /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}/.test(v)) {
    const t = Date.parse(v);
    if (!Number.isNaN(t)) return new Date(t).toISOString();
  }
  throw badRequest(`${name} must be an RFC 3339 time such as "2026-01-02T15:04:05Z"; found ${JSON.stringify(v)}`, {
    field: name,
  });
}

/** The seq-ql text, checked here so that a syntax error comes back with its position. */
export function queryText(v: unknown, name = 'query'): string {
  if (v === undefined || v === null) return '';
  if (typeof v !== 'string')
    throw badRequest(`${name} must be a seq-ql string; found ${JSON.stringify(v)}`, { field: name });
  try {
    parseQuery(v);
  } catch (err) {
    if (err instanceof QuerySyntaxError)
      throw new UiError('query_syntax', err.message, {
        position: err.position,
        expected: err.expected,
        found: err.found,
      });
    if (err instanceof QueryLimitError)
      throw new UiError('query_syntax', err.message, { position: err.position, limit: err.limit, max: err.max });
    throw err;
  }
  return v;
}

export function queryOf(b: Body): PbQuery {
  const from = rfc3339(b.from, 'from');
  const to = rfc3339(b.to, 'to');
  if (from && to && from > to) throw badRequest('from is after to', { field: 'from' });
  return { query: queryText(b.query), from, to };
}

export function intOf(v: unknown, name: string, dflt: number): number {
  if (v === undefined || v === null) return dflt;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0)
    throw badRequest(`${name} must be a non-negative integer; found ${JSON.stringify(v)}`, { field: name });
  return v;
}

export function intervalOf(v: unknown, name: string): string {
  if (typeof v !== 'string' || !parseDuration(v) || /^\s*\d+(\.\d+)?\s*$/.test(v)) {
    throw badRequest(`${name} must be a duration such as "30s", "1m" or "1h"; found ${JSON.stringify(v)}`, {
      field: name,
    });
  }
  return v.trim();
}

function check(limits: UiLimits, key: keyof UiLimits, asked: number, what: string): void {
  if (asked > limits[key]) throw limitExceeded(key, limits[key], asked, what);
}

export function aggsOf(
  v: unknown,
  limits: UiLimits,
  opts: { interval?: string; needInterval?: boolean } = {},
): PbAggQuery[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v))
    throw badRequest('aggregations must be a list of {field, func, group_by, quantiles}', { field: 'aggregations' });
  check(limits, 'max_aggregations_per_request', v.length, 'aggregations count');
  return v.map((raw, i) => {
    const a = asBody(raw);
    const name = `aggregations[${i}]`;
    const func = a.func ?? 'count';
    if (typeof func !== 'string' || !(AGG_FUNCS as readonly string[]).includes(func))
      throw badRequest(`${name}.func must be one of ${AGG_FUNCS.join(', ')}; found ${JSON.stringify(func)}`, {
        field: `${name}.func`,
      });
    if (typeof a.field !== 'string' || a.field === '') {
      if (!(func === 'count' && typeof a.group_by === 'string' && a.group_by !== ''))
        throw badRequest(`${name}.field must be a field name`, { field: `${name}.field` });
    }
    if (a.group_by !== undefined && typeof a.group_by !== 'string')
      throw badRequest(`${name}.group_by must be a field name`, { field: `${name}.group_by` });
    let quantiles: number[] = [];
    if (func === 'quantile') {
      if (
        !Array.isArray(a.quantiles) ||
        a.quantiles.length === 0 ||
        !a.quantiles.every((q) => typeof q === 'number' && q >= 0 && q <= 1)
      ) {
        throw badRequest(`${name}.quantiles must be a list of numbers in [0, 1] such as [0.5, 0.99]`, {
          field: `${name}.quantiles`,
        });
      }
      quantiles = a.quantiles as number[];
    }
    let interval = '';
    if (a.interval !== undefined) interval = intervalOf(a.interval, `${name}.interval`);
    else if (opts.interval) interval = opts.interval;
    if (opts.needInterval && !interval)
      throw badRequest(`${name}.interval (or a top-level interval) is required for a time series`, {
        field: `${name}.interval`,
      });
    return {
      field: (a.field as string | undefined) ?? '',
      func,
      group_by: (a.group_by as string | undefined) ?? '',
      quantiles,
      interval,
    };
  });
}

/** A search body: {query, from, to, limit, offset, with_total, order, histogram: {interval}, aggregations}. */
export function searchParams(b: Body, limits: UiLimits, cli: boolean): SearchParams {
  const query = queryOf(b);
  const limit = intOf(b.limit, 'limit', 100);
  const offset = intOf(b.offset, 'offset', 0);
  if (cli) check(limits, 'cli_max_search_limit', limit, 'limit');
  else check(limits, 'max_search_limit', limit, 'limit');
  check(limits, 'max_search_offset_limit', offset, 'offset');
  check(limits, 'max_search_total_limit', offset + limit, 'offset + limit');
  if (b.with_total !== undefined && typeof b.with_total !== 'boolean')
    throw badRequest('with_total must be true or false', { field: 'with_total' });
  const order = b.order ?? 'desc';
  if (order !== 'desc' && order !== 'asc')
    throw badRequest(`order must be "desc" or "asc"; found ${JSON.stringify(order)}`, { field: 'order' });
  let histInterval = '';
  if (b.histogram !== undefined && b.histogram !== null)
    histInterval = intervalOf(asBody(b.histogram).interval, 'histogram.interval');
  return {
    query,
    limit,
    offset,
    withTotal: b.with_total !== false,
    order,
    histInterval,
    aggs: aggsOf(b.aggregations, limits),
  };
}
