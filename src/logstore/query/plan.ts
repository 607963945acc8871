// Query planner: checks fields against the mapping and lowers seq-ql terms to token operations per field type.
import { EXISTS_FIELD, fieldTypes, type MappingSpec } from '../mapping.js';
import { pathTokens } from '../tokenize.js';
import type { ParsedQuery, Pattern, QueryNode } from './ast.js';
import { queryFields } from './parser.js';

export type Plan =
  | { op: 'all' }
  | { op: 'none' }
  | { op: 'token'; field: string; token: string }
  | { op: 'pattern'; field: string; segments: string[] }
  /** Free text in auto mode: every field of the fraction (but `_exists_`) whose token matches `segments`. */
  | { op: 'anyField'; segments: string[] }
  | {
      op: 'range';
      field: string;
      lo: string | null;
      hi: string | null;
      loIncl: boolean;
      hiIncl: boolean;
      numeric: boolean;
    }
  | { op: 'and'; items: Plan[] }
  | { op: 'or'; items: Plan[] }
  | { op: 'not'; inner: Plan };

export class QueryFieldError extends Error {
  constructor(
    readonly position: number,
    readonly field: string,
  ) {
    super(`query error at position ${position}: field "${field}" is not indexed (expected a field of the mapping)`);
    this.name = 'QueryFieldError';
  }
}

const NUMBER = /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/;

/** A token as a numeric range reads it: its number when the whole token is one (no blanks, no hex), else NaN. */
export function rangeNumber(tok: string): number {
  return tok === '' || !NUMBER.test(tok) ? NaN : Number(tok);
}

export function isNumeric(s: string): boolean {
  return NUMBER.test(s.trim());
}

const WILD = '\u0001';
const TEXT_SPLIT = /[^\p{L}\p{N}_\u0001]+/u;

function and(items: Plan[]): Plan {
  return items.length === 1 ? items[0]! : items.length === 0 ? { op: 'all' } : { op: 'and', items };
}

function or(items: Plan[]): Plan {
  return items.length === 1 ? items[0]! : items.length === 0 ? { op: 'none' } : { op: 'or', items };
}

function truncate(s: string, n: number): string {
  return s.length > n ? s.slice(0, n) : s;
}

function patternPlan(field: string, segments: string[], maxTokenSize: number): Plan {
  if (segments.length === 1) return { op: 'token', field, token: truncate(segments[0]!, maxTokenSize) };
  return { op: 'pattern', field, segments };
}

function termPlan(field: string, value: Pattern, m: MappingSpec): Plan {
  const types = fieldTypes(m, field) ?? [];
  const lower = value.segments.map((s) => s.toLowerCase());
  const alternatives: Plan[] = [];
  for (const type of types) {
    if (type === 'keyword') alternatives.push(patternPlan(field, lower, m.maxTokenSize));
    else if (type === 'path') {
      if (lower.length === 1) {
        const toks = pathTokens(lower[0]!, m.maxTokenSize);
        alternatives.push(toks.length ? { op: 'token', field, token: toks[toks.length - 1]! } : { op: 'none' });
      } else alternatives.push({ op: 'pattern', field, segments: lower });
    } else if (type === 'text') {
      const words = lower
        .join(WILD)
        .split(TEXT_SPLIT)
        .filter((w) => w !== '');
      if (words.length === 0)
        alternatives.push(lower.length > 1 ? { op: 'pattern', field, segments: ['', ''] } : { op: 'none' });
      else alternatives.push(and(words.map((w) => patternPlan(field, w.split(WILD), m.maxTokenSize))));
    } else if (type === 'exists' && lower.length > 1 && lower.every((s) => s === '')) {
      alternatives.push({ op: 'token', field: EXISTS_FIELD, token: field });
    }
  }
  return or(alternatives);
}

/** A keyword (or path) value that holds the text: `*value*`, the value's own stars kept. */
function containsSegments(lower: readonly string[]): string[] {
  return ['', ...lower, ''];
}

/**
 * Free text. A `text` field matches the value's words (all of them, as `field:"a b"`); a keyword or path field
 * matches a value that contains it (`field:*a b*`). Under a mapping file: an `or` of that over the mapped fields;
 * in auto mode (every field a keyword, the fields unknown until a fraction is read): `anyField`.
 */
function freeTextPlan(value: Pattern, m: MappingSpec): Plan {
  const lower = value.segments.map((s) => s.toLowerCase());
  if (m.auto) return { op: 'anyField', segments: containsSegments(lower) };
  const alternatives: Plan[] = [];
  for (const field of Object.keys(m.fields)) {
    const types = m.fields[field]!;
    if (types.includes('text')) alternatives.push(termPlan(field, value, { ...m, fields: { [field]: ['text'] } }));
    if (types.includes('keyword') || types.includes('path'))
      alternatives.push({ op: 'pattern', field, segments: containsSegments(lower) });
  }
  return or(alternatives);
}

function lower(node: QueryNode, m: MappingSpec): Plan {
  switch (node.kind) {
    case 'all':
      return { op: 'all' };
    case 'term':
      return termPlan(node.field, node.value, m);
    case 'text':
      return freeTextPlan(node.value, m);
    case 'exists':
      return { op: 'token', field: EXISTS_FIELD, token: node.field };
    case 'range': {
      const lo = node.lo?.value ?? null;
      const hi = node.hi?.value ?? null;
      const numeric = (lo === null || isNumeric(lo)) && (hi === null || isNumeric(hi)) && (lo !== null || hi !== null);
      return {
        op: 'range',
        field: node.field,
        numeric,
        lo: lo === null ? null : numeric ? lo : lo.toLowerCase(),
        hi: hi === null ? null : numeric ? hi : hi.toLowerCase(),
        loIncl: node.lo?.inclusive ?? true,
        hiIncl: node.hi?.inclusive ?? true,
      };
    }
    case 'and':
    case 'or': {
      // Down the left spine without recursion: `a or b or c ...` parses to a chain as deep as it is long.
      const rights: QueryNode[] = [];
      let n: QueryNode = node;
      while (n.kind === node.kind) {
        rights.push(n.right);
        n = n.left;
      }
      const items = [lower(n, m)];
      for (let i = rights.length - 1; i >= 0; i--) items.push(lower(rights[i]!, m));
      return flatten(node.kind, items);
    }
    case 'not':
      return { op: 'not', inner: lower(node.inner, m) };
  }
}

function flatten(op: 'and' | 'or', items: Plan[]): Plan {
  const out: Plan[] = [];
  for (const it of items) {
    if (it.op === op) out.push(...it.items);
    else out.push(it);
  }
  return op === 'and' ? and(out) : or(out);
}

/** Checks that every field is indexed (QueryFieldError names the position) and lowers the query. */
export function planQuery(q: ParsedQuery, m: MappingSpec): Plan {
  for (const [field, pos] of queryFields(q.root)) {
    if (fieldTypes(m, field) === null) throw new QueryFieldError(pos, field);
  }
  return lower(q.root, m);
}
