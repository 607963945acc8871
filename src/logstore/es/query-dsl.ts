// Elasticsearch query DSL (the common subset) translated to a seq-ql tree plus a time window: match_all,
// match, match_phrase, term, terms, ids, prefix, wildcard, exists, range, bool, query_string.
import { TIME_FIELDS, parseDocTime } from '../doc-time.js';
import { fieldTypes, type MappingSpec } from '../mapping.js';
import type { QueryNode } from '../query/ast.js';
import { QueryBudget } from '../query/limits.js';
import { DslError, allOf, anyOf, exact, negate, rangeNode } from './query-nodes.js';
import { translateQueryString } from './query-string.js';

export const SUPPORTED_QUERIES = [
  'match_all',
  'match_none',
  'match',
  'match_phrase',
  'term',
  'terms',
  'ids',
  'prefix',
  'wildcard',
  'exists',
  'range',
  'bool',
  'query_string',
] as const;

export interface Translated {
  root: QueryNode;
  /** Document-time window, narrowed by ranges on a time field that every match must satisfy. */
  from: number;
  to: number;
}

const FAR = 8.64e15;
const TIME = new Set<string>(TIME_FIELDS);

function isObj(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function scalar(v: unknown, where: string): string {
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  throw new DslError(`${where}: expected a string, number or boolean; found ${JSON.stringify(v)}`);
}

/** `{field: value}` or `{field: {<key>: value, ...}}`: the one field, its value and its options. */
function fieldAndValue(body: unknown, kind: string, key: string): [string, unknown, Record<string, unknown>] {
  if (!isObj(body)) throw new DslError(`[${kind}] query malformed, expected an object {field: value}`);
  const entries = Object.entries(body).filter(([k]) => k !== 'boost' && k !== '_name');
  if (entries.length !== 1)
    throw new DslError(
      `[${kind}] query doesn't support multiple fields, found [${entries.map(([k]) => k).join(', ')}]`,
    );
  const [field, v] = entries[0]!;
  if (isObj(v)) {
    if (!(key in v)) throw new DslError(`[${kind}] query on [${field}]: "${key}" is missing`);
    return [field, v[key], v];
  }
  return [field, v, {}];
}

const UNITS: Record<string, number> = {
  s: 1000,
  m: 60_000,
  h: 3_600_000,
  H: 3_600_000,
  d: 86_400_000,
  w: 7 * 86_400_000,
};

/** Elasticsearch date math on `now` (now, now-15m, now+1h, now-1d/d), ISO dates and epoch milliseconds. */
export function esDate(v: unknown, roundUp: boolean, now: number, where: string): number {
  if (typeof v === 'number' && Number.isFinite(v)) return v;
  if (typeof v === 'string') {
    const m = /^now((?:[+-]\d+[smhHdwMy])*)(?:\/([smhHdwMy]))?$/.exec(v.replace(/\s+/g, ''));
    if (m) {
      const d = new Date(now);
      for (const [, sign, n, u] of m[1]!.matchAll(/([+-])(\d+)([smhHdwMy])/g)) {
        const k = (sign === '-' ? -1 : 1) * Number(n);
        if (u === 'M') d.setUTCMonth(d.getUTCMonth() + k);
        else if (u === 'y') d.setUTCFullYear(d.getUTCFullYear() + k);
        else d.setTime(d.getTime() + k * UNITS[u!]!);
      }
      const r = m[2];
      if (!r) return d.getTime();
      const start = new Date(d.getTime());
      if (r === 'y') start.setUTCMonth(0, 1);
      if (r === 'y' || r === 'M') start.setUTCDate(1);
      if (r === 'w') start.setUTCDate(start.getUTCDate() - ((start.getUTCDay() + 6) % 7));
      if (r !== 's' && r !== 'm' && r !== 'h' && r !== 'H') start.setUTCHours(0, 0, 0, 0);
      else if (r === 'h' || r === 'H') start.setUTCMinutes(0, 0, 0);
      else if (r === 'm') start.setUTCSeconds(0, 0);
      else start.setUTCMilliseconds(0);
      if (!roundUp) return start.getTime();
      const end = new Date(start.getTime());
      if (r === 'y') end.setUTCFullYear(end.getUTCFullYear() + 1);
      else if (r === 'M') end.setUTCMonth(end.getUTCMonth() + 1);
      else end.setTime(end.getTime() + UNITS[r]!);
      return end.getTime() - 1;
    }
    const t = parseDocTime(v) ?? (/^\d{4}-\d{2}-\d{2}$/.test(v) ? Date.parse(`${v}T00:00:00Z`) : null);
    if (t !== null && Number.isFinite(t)) return t;
  }
  throw new DslError(
    `${where}: ${JSON.stringify(v)} is not a date (ISO 8601, epoch milliseconds, or now with +/-N and /unit)`,
  );
}

class Translator {
  from = -FAR;
  to = FAR;

  constructor(
    private readonly mapping: MappingSpec,
    private readonly now: number,
    private readonly budget: QueryBudget,
  ) {}

  private isText(field: string): boolean {
    return fieldTypes(this.mapping, field)?.includes('text') ?? false;
  }

  /** `conjunctive`: every match must satisfy this clause (so a time range can narrow the window). */
  node(q: unknown, conjunctive: boolean): QueryNode {
    if (!isObj(q))
      throw new DslError(
        `a query is an object with one key (${SUPPORTED_QUERIES.join(', ')}); found ${JSON.stringify(q)}`,
      );
    const keys = Object.keys(q);
    if (keys.length !== 1) throw new DslError(`a query object has exactly one key; found [${keys.join(', ')}]`);
    const kind = keys[0]!;
    const body = q[kind];
    switch (kind) {
      case 'match_all':
        return { kind: 'all' };
      case 'match_none':
        return { kind: 'not', inner: { kind: 'all' } };
      case 'term': {
        const [field, v] = fieldAndValue(body, kind, 'value');
        this.budget.clause();
        return exact(field, scalar(v, `[term] on [${field}]`));
      }
      case 'terms': {
        if (!isObj(body)) throw new DslError('[terms] query malformed, expected {field: [values]}');
        const entries = Object.entries(body).filter(([k]) => k !== 'boost' && k !== '_name');
        if (entries.length !== 1 || !Array.isArray(entries[0]![1]))
          throw new DslError('[terms] query takes one field with a list of values');
        const [field, list] = entries[0]! as [string, unknown[]];
        this.budget.clause(0, list.length);
        return anyOf(list.map((v) => exact(field, scalar(v, `[terms] on [${field}]`))));
      }
      case 'ids': {
        if (!isObj(body) || !Array.isArray(body.values)) throw new DslError('[ids] query takes {values: [...]}');
        this.budget.clause(0, body.values.length);
        return anyOf(body.values.map((v) => exact('_id', scalar(v, '[ids]'))));
      }
      case 'match':
      case 'match_phrase': {
        const [field, v, opts] = fieldAndValue(body, kind, 'query');
        const text = scalar(v, `[${kind}] on [${field}]`);
        this.budget.clause();
        // A keyword field matches the whole value (as Elasticsearch's match on a keyword field); a text
        // field matches words: every word (operator "and", and match_phrase), any of them by default.
        if (kind === 'match' && this.isText(field) && String(opts.operator ?? 'or').toLowerCase() === 'or') {
          const words = text.split(/[^\p{L}\p{N}_]+/u).filter(Boolean);
          if (words.length > 1) this.budget.clause(0, words.length - 1);
          if (words.length > 1) return anyOf(words.map((w) => exact(field, w)));
        }
        return exact(field, text);
      }
      case 'prefix': {
        const [field, v] = fieldAndValue(body, kind, 'value');
        this.budget.clause();
        return { kind: 'term', field, value: { segments: [scalar(v, `[prefix] on [${field}]`), ''] }, pos: 0 };
      }
      case 'wildcard': {
        const [field, v, opts] = fieldAndValue(body, kind, 'value');
        const text = scalar(v ?? opts.wildcard, `[wildcard] on [${field}]`);
        if (text.includes('?')) throw new DslError(`[wildcard] on [${field}]: "?" is not supported (only "*")`);
        this.budget.clause();
        return { kind: 'term', field, value: { segments: text.split('*') }, pos: 0 };
      }
      case 'exists': {
        if (!isObj(body) || typeof body.field !== 'string') throw new DslError('[exists] query takes {field: name}');
        this.budget.clause();
        return { kind: 'exists', field: body.field, pos: 0 };
      }
      case 'range':
        this.budget.clause();
        return this.range(body, conjunctive);
      case 'bool': {
        // Counted before the clauses are read: a bool nested 10 000 deep stops here, not at the stack's end.
        this.budget.enter();
        const node = this.bool(body, conjunctive);
        this.budget.leave();
        return node;
      }
      case 'query_string': {
        if (!isObj(body) || typeof body.query !== 'string') throw new DslError('[query_string] takes {query: "..."}');
        const fields = Array.isArray(body.fields) ? body.fields : null;
        if (fields && fields.length > 1)
          throw new DslError('[query_string] takes one default field (default_field or fields: [one])');
        const df =
          typeof body.default_field === 'string'
            ? body.default_field
            : typeof fields?.[0] === 'string'
              ? (fields[0] as string)
              : null;
        const op = String(body.default_operator ?? 'or').toLowerCase();
        if (op !== 'or' && op !== 'and') throw new DslError('[query_string] default_operator is OR or AND');
        return translateQueryString(body.query, { defaultField: df, defaultOperator: op }, this.budget);
      }
      default:
        throw new DslError(
          `unknown query [${kind}]; the log store translates ${SUPPORTED_QUERIES.join(', ')} (see docs/logstore.md), or use POST /search with seq-ql`,
        );
    }
  }

  private range(body: unknown, conjunctive: boolean): QueryNode {
    if (!isObj(body)) throw new DslError('[range] query malformed, expected {field: {gte, gt, lte, lt}}');
    const entries = Object.entries(body);
    if (entries.length !== 1 || !isObj(entries[0]![1]))
      throw new DslError('[range] query takes one field: {field: {gte, gt, lte, lt}}');
    const [field, b] = entries[0]! as [string, Record<string, unknown>];
    for (const k of Object.keys(b)) {
      if (
        ![
          'gte',
          'gt',
          'lte',
          'lt',
          'format',
          'boost',
          'time_zone',
          'from',
          'to',
          'include_lower',
          'include_upper',
        ].includes(k)
      )
        throw new DslError(`[range] on [${field}]: unknown key [${k}]`);
    }
    if (b.time_zone !== undefined && b.time_zone !== 'Z' && b.time_zone !== 'UTC' && b.time_zone !== '+00:00')
      throw new DslError(`[range] on [${field}]: only UTC time_zone is supported`);
    let lo = b.gte ?? b.gt ?? b.from ?? null;
    let hi = b.lte ?? b.lt ?? b.to ?? null;
    const loIncl = b.gt === undefined && b.include_lower !== false;
    const hiIncl = b.lt === undefined && b.include_upper !== false;
    if (TIME.has(field) && conjunctive) {
      // The document time: a window on the fractions, not a comparison of stored values.
      if (lo !== null)
        this.from = Math.max(this.from, esDate(lo, !loIncl, this.now, `[range] on [${field}]`) + (loIncl ? 0 : 1));
      if (hi !== null)
        this.to = Math.min(this.to, esDate(hi, hiIncl, this.now, `[range] on [${field}]`) - (hiIncl ? 0 : 1));
      return { kind: 'all' };
    }
    lo = lo === null ? null : scalar(lo, `[range] on [${field}]`);
    hi = hi === null ? null : scalar(hi, `[range] on [${field}]`);
    return rangeNode(field, lo as string | null, hi as string | null, loIncl, hiIncl);
  }

  private bool(body: unknown, conjunctive: boolean): QueryNode {
    if (!isObj(body)) throw new DslError('[bool] query malformed, expected {must, filter, should, must_not}');
    const list = (k: string): unknown[] =>
      body[k] === undefined ? [] : Array.isArray(body[k]) ? (body[k] as unknown[]) : [body[k]];
    for (const k of Object.keys(body)) {
      if (!['must', 'filter', 'should', 'must_not', 'minimum_should_match', 'boost', '_name'].includes(k))
        throw new DslError(`[bool] query does not support [${k}]`);
    }
    const must = [...list('must'), ...list('filter')].map((q) => this.node(q, conjunctive));
    const should = list('should').map((q) => this.node(q, false));
    const not = list('must_not').map((q) => negate(this.node(q, false)));
    const msm = body.minimum_should_match;
    const min = msm === undefined ? (must.length === 0 ? 1 : 0) : Number(msm);
    if (!(min === 0 || min === 1))
      throw new DslError(`[bool] minimum_should_match ${JSON.stringify(msm)} is not supported (0 or 1)`);
    return allOf([...must, ...(min === 1 && should.length > 0 ? [anyOf(should)] : []), ...not]);
  }
}

/** Translates an Elasticsearch query (absent: match_all); past a limit of query/limits.ts, QueryLimitError. */
export function translateQuery(
  q: unknown,
  mapping: MappingSpec,
  now = Date.now(),
  budget = new QueryBudget(),
): Translated {
  const t = new Translator(mapping, now, budget);
  const root = q === undefined || q === null ? ({ kind: 'all' } as QueryNode) : t.node(q, true);
  return { root, from: t.from, to: t.to };
}
