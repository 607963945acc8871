// Log patterns: the newest matches of a query grouped by message template (numbers, ids, quoted strings and IPs
// replaced by placeholders), counted, largest first; Grafana's and Kibana's "patterns" view over a capped sample.
import { badRequest, limitExceeded } from './errors.js';
import { eventOf, type UiEnv } from './operations.js';
import { type Body, intOf, queryOf } from './requests.js';

/** Where a record keeps its message when the request names no field (the explorer's own order). */
export const MESSAGE_FIELDS = ['message', 'msg', 'log', 'text'];
/** Documents read when the request does not say: the newest matches. */
export const DEFAULT_SAMPLE = 5000;
/** Patterns answered when the request does not say. */
const DEFAULT_LIMIT = 50;

// In order: a later rule must not see what an earlier one replaced (a quoted IP is one <str>).
const RULES: [RegExp, string][] = [
  [/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'/g, '<str>'],
  [/\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi, '<uuid>'],
  [/\b(?:\d{1,3}\.){3}\d{1,3}(?::\d+)?\b|\[[0-9a-f:]+\](?::\d+)?/gi, '<ip>'],
  [/\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?/g, '<time>'],
  // An id: hex of 8+ characters holding a digit and a letter (a word such as "deadbeef" alone stays).
  [/\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{8,}\b/gi, '<hex>'],
  // Numbers, also stuck to a unit or a word (12ms, 3.5s, v2, pid=1234): the digits go, the letters stay.
  [/[-+]?\d+(?:\.\d+)?/g, '<num>'],
];

/** The template of one message: what stays when the variable parts are placeholders. */
export function messageTemplate(message: string): string {
  let t = message.length > 2000 ? message.slice(0, 2000) : message;
  for (const [re, ph] of RULES) t = t.replace(re, ph);
  return t;
}

function valueAt(data: unknown, field: string): unknown {
  if (typeof data !== 'object' || data === null) return undefined;
  const obj = data as Record<string, unknown>;
  if (Object.hasOwn(obj, field)) return obj[field];
  let v: unknown = obj;
  for (const part of field.split('.')) {
    if (typeof v !== 'object' || v === null) return undefined;
    v = (v as Record<string, unknown>)[part];
  }
  return v;
}

function messageOf(data: unknown, field: string | null): string | null {
  if (typeof data === 'string') return field === null ? data : null;
  for (const f of field === null ? MESSAGE_FIELDS : [field]) {
    const v = valueAt(data, f);
    if (typeof v === 'string' && v !== '') return v;
    if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  }
  return null;
}

interface Group {
  pattern: string;
  count: number;
  example: { id: string; time: string; message: string };
  first_time: string;
  last_time: string;
}

/**
 * `{query, from, to, field, sample, limit}` -> `{total, sampled, without_message, patterns: [{pattern, count,
 * example: {id, time, message}, first_time, last_time}], patterns_total, partial_response}`. `sample` (default
 * 5 000, at most max_search_total_limit) newest matches are read; `total` is every match, so `sampled < total`
 * says the counts are of the newest ones.
 */
export async function patterns(env: UiEnv, body: Body) {
  const query = queryOf(body);
  const sample = intOf(body.sample, 'sample', Math.min(DEFAULT_SAMPLE, env.limits.max_search_total_limit));
  if (sample === 0)
    throw badRequest('sample must be a positive integer (the newest matches read)', { field: 'sample' });
  if (sample > env.limits.max_search_total_limit)
    throw limitExceeded('max_search_total_limit', env.limits.max_search_total_limit, sample, 'sample');
  const limit = intOf(body.limit, 'limit', DEFAULT_LIMIT);
  if (limit === 0)
    throw badRequest('limit must be a positive integer (the most patterns answered)', { field: 'limit' });
  const field = body.field === undefined || body.field === null || body.field === '' ? null : body.field;
  if (field !== null && typeof field !== 'string') throw badRequest('field must be a field name', { field: 'field' });

  const r = await env.client.complexSearch({
    query,
    size: sample,
    offset: 0,
    with_total: true,
    order: 'ORDER_DESC',
    aggs: [],
    hist_interval: '',
  });
  const groups = new Map<string, Group>();
  let without = 0;
  // Newest first: the first document of a group is its newest, the last its oldest.
  for (const d of r.docs) {
    const e = eventOf(d);
    const message = messageOf(e.data, field);
    if (message === null) {
      without++;
      continue;
    }
    const pattern = messageTemplate(message);
    const g = groups.get(pattern);
    if (g) {
      g.count++;
      g.first_time = e.time;
    } else
      groups.set(pattern, {
        pattern,
        count: 1,
        example: { id: e.id, time: e.time, message },
        first_time: e.time,
        last_time: e.time,
      });
  }
  const sorted = [...groups.values()].sort(
    (a, b) => b.count - a.count || (a.pattern < b.pattern ? -1 : a.pattern > b.pattern ? 1 : 0),
  );
  return {
    total: r.total,
    sampled: r.docs.length,
    without_message: without,
    field,
    patterns: sorted.slice(0, limit),
    patterns_total: sorted.length,
    partial_response: r.partial_response,
  };
}
