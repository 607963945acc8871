// Validates search-API request bodies (search, aggregate, histogram, complex-search, export, fetch).
import { parseDuration } from '../../config/units.js';
import { type AggSpec, AGG_FUNCS, type AggFunc } from '../aggregate/aggregate.js';
import { fieldTypes, type MappingSpec } from '../mapping.js';
import type { FieldsPipe } from '../query/ast.js';
import { QueryLimitError } from '../query/limits.js';
import { QuerySyntaxError, parseQuery } from '../query/parser.js';
import { type Plan, QueryFieldError, planQuery } from '../query/plan.js';
import { ErrorCode, LogstoreError } from '../errors.js';

export interface QuerySpec {
  text: string;
  plan: Plan;
  pipes: FieldsPipe[];
  from: number;
  to: number;
}

export interface SearchSpec extends QuerySpec {
  size: number;
  offset: number;
  order: 'desc' | 'asc';
  withTotal: boolean;
}

function bad(message: string): never {
  throw new LogstoreError(ErrorCode.BadRequest, message);
}

function time(v: unknown, name: string, dflt: number): number {
  if (v === undefined || v === null || v === '') return dflt;
  if (typeof v === 'number' && Number.isFinite(v)) return v;
  if (typeof v === 'string') {
    const t = Date.parse(v);
    if (!Number.isNaN(t)) return t;
  }
  return bad(`${name} must be an ISO 8601 timestamp (or milliseconds since the epoch); found ${JSON.stringify(v)}`);
}

function int(v: unknown, name: string, dflt: number, max: number): number {
  if (v === undefined || v === null) return dflt;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > max)
    bad(`${name} must be an integer in [0, ${max}]; found ${JSON.stringify(v)}`);
  return v;
}

/** The query object {query, from, to} of every search-API body. */
export function parseQuerySpec(body: Record<string, unknown>, mapping: MappingSpec): QuerySpec {
  const q = body.query ?? {};
  if (typeof q !== 'object' || q === null || Array.isArray(q)) bad('query must be an object {query, from, to}');
  const qo = q as Record<string, unknown>;
  const text = qo.query ?? '';
  if (typeof text !== 'string') bad('query.query must be a string');
  const from = time(qo.from, 'query.from', -8.64e15);
  const to = time(qo.to, 'query.to', 8.64e15);
  if (from > to) bad('query.from is after query.to');
  try {
    const parsed = parseQuery(text);
    return { text, plan: planQuery(parsed, mapping), pipes: parsed.pipes, from, to };
  } catch (err) {
    if (err instanceof QuerySyntaxError) {
      throw new LogstoreError(ErrorCode.QuerySyntax, err.message, {
        position: err.position,
        expected: err.expected,
        found: err.found,
      });
    }
    if (err instanceof QueryFieldError)
      throw new LogstoreError(ErrorCode.FieldNotIndexed, err.message, { position: err.position, field: err.field });
    if (err instanceof QueryLimitError)
      throw new LogstoreError(ErrorCode.QueryTooComplex, err.message, {
        position: err.position,
        limit: err.limit,
        max: err.max,
      });
    throw err;
  }
}

export function parseSearchSpec(body: Record<string, unknown>, mapping: MappingSpec, maxDocs: number): SearchSpec {
  const spec = parseQuerySpec(body, mapping);
  const size = int(body.size, 'size', 100, maxDocs);
  const offset = int(body.offset, 'offset', 0, maxDocs);
  if (size + offset > maxDocs)
    bad(`offset + size must be at most limits.search_docs (${maxDocs}); found ${size + offset}`);
  const order = body.order ?? 'desc';
  if (order !== 'desc' && order !== 'asc') bad(`order must be "desc" or "asc"; found ${JSON.stringify(order)}`);
  // A literal, not a spread: the spread took most of this function's time.
  return {
    text: spec.text,
    plan: spec.plan,
    pipes: spec.pipes,
    from: spec.from,
    to: spec.to,
    size,
    offset,
    order,
    withTotal: body.with_total !== false,
  };
}

export function parseInterval(v: unknown, name: string): number {
  const ms = parseDuration(v);
  if (ms === null || ms <= 0)
    bad(`${name} must be a duration such as "30s", "1m", "1h" (or milliseconds > 0); found ${JSON.stringify(v)}`);
  return ms;
}

/**
 * A field aggregations can read: a keyword field (one value per document), or a text or path field, whose
 * tokens are its values (words, path prefixes: a document counts once under each), as seq-db aggregates.
 */
function aggField(field: unknown, name: string, mapping: MappingSpec, numeric: boolean): string {
  if (typeof field !== 'string' || field === '') bad(`${name} must be a field name`);
  const types = fieldTypes(mapping, field);
  if (!types) throw new LogstoreError(ErrorCode.FieldNotIndexed, `${name}: field "${field}" is not indexed`, { field });
  if (types.includes('keyword')) return field;
  if (!types.includes('text') && !types.includes('path'))
    bad(`${name}: field "${field}" is indexed for _exists_ only; aggregations read keyword, text or path fields`);
  if (numeric)
    bad(
      `${name}: field "${field}" is a ${types.includes('text') ? 'text' : 'path'} field, whose values are tokens; sum, min, max, avg and quantile read the single value of a keyword field (count, unique and group_by accept it)`,
    );
  return field;
}

export function parseAggs(v: unknown, mapping: MappingSpec): AggSpec[] {
  if (v === undefined) return [];
  const list = Array.isArray(v) ? v : [v];
  if (list.length > 32) bad('at most 32 aggregations per request');
  return list.map((a, i) => {
    const at = `aggs[${i}]`;
    if (typeof a !== 'object' || a === null || Array.isArray(a))
      bad(`${at} must be an object {field, func, group_by, quantiles, interval}`);
    const o = a as Record<string, unknown>;
    const func = (o.func ?? o.agg_func ?? 'count') as AggFunc;
    if (!AGG_FUNCS.includes(func))
      bad(`${at}.func must be one of ${AGG_FUNCS.join(', ')}; found ${JSON.stringify(o.func)}`);
    const spec: AggSpec = {
      field: aggField(o.field, `${at}.field`, mapping, func !== 'count' && func !== 'unique'),
      func,
    };
    if (o.group_by !== undefined && o.group_by !== null && o.group_by !== '')
      spec.group_by = aggField(o.group_by, `${at}.group_by`, mapping, false);
    if (o.quantiles !== undefined) {
      if (!Array.isArray(o.quantiles) || !o.quantiles.every((q) => typeof q === 'number' && q >= 0 && q <= 1))
        bad(`${at}.quantiles must be a list of numbers in [0, 1]`);
      spec.quantiles = o.quantiles as number[];
    }
    if (o.interval !== undefined && o.interval !== null && o.interval !== '')
      spec.interval = parseInterval(o.interval, `${at}.interval`);
    return spec;
  });
}
