// The depth and size limits of every query language: refused with QueryLimitError at the limit, never a stack
// overflow, however deep or long the query; long chains of one operator parse, plan and print.
import { describe, expect, it } from 'vitest';
import { translateQuery } from '../../../src/logstore/es/query-dsl.js';
import { translateQueryString } from '../../../src/logstore/es/query-string.js';
import { parseMapping } from '../../../src/logstore/mapping.js';
import {
  MAX_QUERY_CLAUSES,
  MAX_QUERY_DEPTH,
  QueryBudget,
  QueryLimitError,
} from '../../../src/logstore/query/limits.js';
import { parseQuery } from '../../../src/logstore/query/parser.js';
import { planQuery } from '../../../src/logstore/query/plan.js';
import { queryText } from '../../../src/logstore/query/print.js';

const mapping = parseMapping('mapping-list:\n  - name: m\n    type: keyword\n');
const opts = { defaultField: 'm', defaultOperator: 'or' as const };

function limitOf(f: () => unknown): string {
  try {
    f();
  } catch (err) {
    if (err instanceof QueryLimitError) return `${err.limit} ${err.max}`;
    throw err;
  }
  return 'accepted';
}

/** A DSL query: `levels` bools, each holding the next in must (or must_not on odd levels). */
function nestedBool(levels: number): unknown {
  let q: unknown = { term: { m: 'x' } };
  for (let i = 0; i < levels; i++) q = { bool: i % 2 ? { must_not: [q] } : { must: [{ term: { m: 'y' } }, q] } };
  return q;
}

describe('query limits', () => {
  it('seq-ql: parentheses and not count as levels, up to the limit and not one more', () => {
    const parens = (n: number) => `${'('.repeat(n)}m:x${')'.repeat(n)}`;
    expect(limitOf(() => parseQuery(parens(MAX_QUERY_DEPTH)))).toBe('accepted');
    expect(limitOf(() => parseQuery(parens(MAX_QUERY_DEPTH + 1)))).toBe(`max_depth ${MAX_QUERY_DEPTH}`);
    expect(limitOf(() => parseQuery(`${'not '.repeat(MAX_QUERY_DEPTH)}m:x`))).toBe('accepted');
    expect(limitOf(() => parseQuery(`${'not '.repeat(MAX_QUERY_DEPTH + 1)}m:x`))).toBe(`max_depth ${MAX_QUERY_DEPTH}`);
    // Far past any stack: refused as early, unclosed or not.
    expect(limitOf(() => parseQuery(parens(100_000)))).toBe(`max_depth ${MAX_QUERY_DEPTH}`);
    expect(limitOf(() => parseQuery('('.repeat(100_000)))).toBe(`max_depth ${MAX_QUERY_DEPTH}`);
    expect(limitOf(() => parseQuery(`${'not ('.repeat(50_000)}m:x`))).toBe(`max_depth ${MAX_QUERY_DEPTH}`);
  });

  it('seq-ql: a chain of the longest allowed length parses, plans and prints; one clause more is refused', () => {
    const chain = (n: number) => Array.from({ length: n }, (_, i) => `m:v${i}`).join(' or ');
    const q = parseQuery(chain(MAX_QUERY_CLAUSES));
    const plan = planQuery(q, mapping);
    expect(plan.op === 'or' && plan.items.length).toBe(MAX_QUERY_CLAUSES);
    // The printed text parses to the same chain (compared as text: a deep equality walks the chain recursively).
    expect(queryText(parseQuery(queryText(q)))).toBe(queryText(q));
    expect(limitOf(() => parseQuery(chain(MAX_QUERY_CLAUSES + 1)))).toBe(`max_clauses ${MAX_QUERY_CLAUSES}`);
    const list = (n: number) => `m:in(${Array.from({ length: n }, (_, i) => `v${i}`).join(', ')})`;
    expect(limitOf(() => parseQuery(list(MAX_QUERY_CLAUSES)))).toBe('accepted');
    expect(limitOf(() => parseQuery(list(MAX_QUERY_CLAUSES + 1)))).toBe(`max_clauses ${MAX_QUERY_CLAUSES}`);
  });

  it('Elasticsearch DSL: bool nesting up to the limit; deeper is refused before the stack runs out', () => {
    expect(limitOf(() => translateQuery(nestedBool(MAX_QUERY_DEPTH), mapping))).toBe('accepted');
    expect(limitOf(() => translateQuery(nestedBool(MAX_QUERY_DEPTH + 1), mapping))).toBe(
      `max_depth ${MAX_QUERY_DEPTH}`,
    );
    expect(limitOf(() => translateQuery(nestedBool(10_000), mapping))).toBe(`max_depth ${MAX_QUERY_DEPTH}`);
    // What a proxy sends its stores for the deepest accepted query may be deeper as seq-ql (a must and a must_not
    // per bool print as parentheses and a not): the stores parse it with room for that (grpc/store/search.ts).
    let q: unknown = { term: { m: 'x' } };
    for (let i = 0; i < MAX_QUERY_DEPTH; i++) q = { bool: { must: [{ term: { m: 'y' } }], must_not: [q] } };
    const text = queryText({ root: translateQuery(q, mapping).root, pipes: [] });
    expect(limitOf(() => parseQuery(text))).toBe(`max_depth ${MAX_QUERY_DEPTH}`);
    expect(limitOf(() => parseQuery(text, new QueryBudget(4 * MAX_QUERY_DEPTH)))).toBe('accepted');
  });

  it('Elasticsearch DSL: terms up to the clause limit; query_string parentheses count with the bools around them', () => {
    const terms = (n: number) => ({ terms: { m: Array.from({ length: n }, (_, i) => `v${i}`) } });
    const t = translateQuery(terms(MAX_QUERY_CLAUSES), mapping);
    expect(queryText({ root: t.root, pipes: [] }).length).toBeGreaterThan(MAX_QUERY_CLAUSES);
    expect(limitOf(() => translateQuery(terms(MAX_QUERY_CLAUSES + 1), mapping))).toBe(
      `max_clauses ${MAX_QUERY_CLAUSES}`,
    );
    const qs = (n: number) => `${'('.repeat(n)}m:x${')'.repeat(n)}`;
    expect(limitOf(() => translateQueryString(qs(MAX_QUERY_DEPTH), opts))).toBe('accepted');
    expect(limitOf(() => translateQueryString(qs(50_000), opts))).toBe(`max_depth ${MAX_QUERY_DEPTH}`);
    const inBool = (n: number) => ({ bool: { must: [{ query_string: { query: qs(n), default_field: 'm' } }] } });
    expect(limitOf(() => translateQuery(inBool(MAX_QUERY_DEPTH - 1), mapping))).toBe('accepted');
    expect(limitOf(() => translateQuery(inBool(MAX_QUERY_DEPTH), mapping))).toBe(`max_depth ${MAX_QUERY_DEPTH}`);
  });
});
