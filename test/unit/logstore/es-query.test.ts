// Elasticsearch queries to seq-ql trees: Lucene's classic occurrence rules in query_string, the DSL subset,
// time ranges lifted into the search window (date math included), and clear errors for the rest.
import { describe, expect, it } from 'vitest';
import type { QueryNode } from '../../../src/logstore/query/ast.js';
import { esDate, translateQuery } from '../../../src/logstore/es/query-dsl.js';
import { DslError } from '../../../src/logstore/es/query-nodes.js';
import { translateQueryString } from '../../../src/logstore/es/query-string.js';
import type { MappingSpec } from '../../../src/logstore/mapping.js';

const auto = { auto: true, fields: {} } as unknown as MappingSpec;

/** A compact seq-ql-like rendering of a tree, to compare translations. */
function show(n: QueryNode): string {
  switch (n.kind) {
    case 'all':
      return '*';
    case 'term':
      return `${n.field}:${n.value.segments.join('*')}`;
    case 'text':
      return `"${n.value.segments.join('*')}"`;
    case 'exists':
      return `_exists_:${n.field}`;
    case 'range':
      return `${n.field}:${n.lo?.inclusive === false ? '(' : '['}${n.lo?.value ?? '*'},${n.hi?.value ?? '*'}${n.hi?.inclusive === false ? ')' : ']'}`;
    case 'and':
      return `(${show(n.left)} and ${show(n.right)})`;
    case 'or':
      return `(${show(n.left)} or ${show(n.right)})`;
    case 'not':
      return `not ${show(n.inner)}`;
  }
}

const qs = (q: string, df: string | null = null, op: 'or' | 'and' = 'or') =>
  show(translateQueryString(q, { defaultField: df, defaultOperator: op }));

describe('query_string (Lucene classic rules)', () => {
  it.each([
    ['a:1', 'a:1'],
    ['a:1 b:2', '(a:1 or b:2)'],
    ['a:1 AND b:2', '(a:1 and b:2)'],
    ['a:1 && b:2 || c:3', '(a:1 and b:2)'],
    ['a:1 -b:2', '(a:1 and not b:2)'],
    ['a:1 +b:2', 'b:2'],
    ['NOT a:1', 'not a:1'],
    ['!a:1 OR b:2', '(b:2 and not a:1)'],
    ['(a:1 OR b:2) AND c:3', '((a:1 or b:2) and c:3)'],
    ['a:"x y" b:x*y', '(a:x y or b:x*y)'],
    ['a:[1 TO 5]', 'a:[1,5]'],
    ['a:{1 TO *]', 'a:(1,*]'],
    ['a:>=3', 'a:[3,*]'],
    ['a:<3', 'a:[*,3)'],
    ['_exists_:f', '_exists_:f'],
    ['*', '*'],
    ['*:*', '*'],
    ['a:we\\:ird', 'a:we:ird'],
  ])('%s -> %s', (q, want) => {
    expect(qs(q)).toBe(want);
  });

  it('uses default_field and default_operator', () => {
    expect(qs('x y', 'msg')).toBe('(msg:x or msg:y)');
    expect(qs('x y', 'msg', 'and')).toBe('(msg:x and msg:y)');
    expect(qs('x OR y', 'msg', 'and')).toBe('(msg:x or msg:y)');
  });

  it('searches every field for a term without one and no default_field (or `*`), as seq-ql free text', () => {
    expect(qs('timeout')).toBe('"timeout"');
    expect(qs('"connection refused" AND level:warn', '*')).toBe('("connection refused" and level:warn)');
    expect(qs('time*')).toBe('"time*"');
  });

  it.each(['a:b~2', 'a:b^3', 'a:b?', 'a:(x y)', 'a:1 AND', '(a:1', 'a:"open', 'a:[1 5]'])('refuses %s', (q) => {
    expect(() => qs(q)).toThrow(DslError);
  });
});

describe('query DSL', () => {
  const now = Date.UTC(2026, 10, 20, 12, 30, 45);
  const tr = (q: unknown) => translateQuery(q, auto, now);

  it('translates the subset', () => {
    expect(
      show(
        tr({ bool: { must: [{ term: { a: 1 } }], should: [{ term: { b: 2 } }], must_not: { exists: { field: 'c' } } } })
          .root,
      ),
    ).toBe('(a:1 and not _exists_:c)');
    expect(show(tr({ bool: { should: [{ term: { b: 2 } }, { prefix: { c: 'x' } }] } }).root)).toBe('(b:2 or c:x*)');
    expect(show(tr({ terms: { s: [1, 'x'] } }).root)).toBe('(s:1 or s:x)');
    expect(show(tr({ match: { m: 'a b' } }).root)).toBe('m:a b');
    expect(show(tr({ range: { status: { gt: 400, lte: 499 } } }).root)).toBe('status:(400,499]');
    expect(show(tr(undefined).root)).toBe('*');
  });

  it('lifts ranges on the document time into the window, only where every match must satisfy them', () => {
    const t = tr({
      bool: { filter: [{ range: { '@timestamp': { gte: 'now-15m', lt: 'now' } } }, { term: { a: 1 } }] },
    });
    expect(show(t.root)).toBe('a:1');
    expect([t.from, t.to]).toEqual([now - 15 * 60_000, now - 1]);
    const s = tr({ bool: { should: [{ range: { timestamp: { gte: '2026-01-01' } } }, { term: { a: 1 } }] } });
    expect(show(s.root)).toBe('(timestamp:[2026-01-01,*] or a:1)');
    expect(s.from).toBeLessThan(0);
  });

  it('date math rounds as Elasticsearch does (gte/lt down, gt/lte up)', () => {
    const day = Date.UTC(2026, 10, 20);
    expect(esDate('now/d', false, now, 'x')).toBe(day);
    expect(esDate('now/d', true, now, 'x')).toBe(day + 86_400_000 - 1);
    expect(esDate('now-1d/d', false, now, 'x')).toBe(day - 86_400_000);
    expect(esDate('now-1M/M', false, now, 'x')).toBe(Date.UTC(2026, 9, 1));
    expect(esDate('now+1h/h', false, now, 'x')).toBe(Date.UTC(2026, 10, 20, 13));
    expect(esDate(12345, false, now, 'x')).toBe(12345);
    expect(() => esDate('yesterday', false, now, 'x')).toThrow(DslError);
    const t = tr({ range: { '@timestamp': { gt: 'now-1d/d', lte: 'now/d' } } });
    expect([t.from, t.to]).toEqual([day, day + 86_400_000 - 1]);
  });

  it.each([
    { fuzzy: { a: 'x' } },
    { term: { a: 1, b: 2 } },
    { bool: { must: [], nope: [] } },
    { range: { a: { gte: 1, weird: 2 } } },
    { wildcard: { a: 'x?y' } },
    { match_all: {}, term: { a: 1 } },
    'a:1',
  ])('refuses %j', (q) => {
    expect(() => tr(q)).toThrow(DslError);
  });
});
