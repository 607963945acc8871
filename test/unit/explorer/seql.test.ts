// The explorer's seq-ql helpers: tokens cover the text, completion spots, quoting, and terms added from the sidebar parse.
import { describe, expect, it } from 'vitest';
import { parseQuery } from '../../../src/logstore/query/parser.js';
import { addTerm, completionAt, quoteValue, tokenize } from '../../../ui/explorer/src/seql.js';

const kinds = (q: string) =>
  tokenize(q)
    .filter((t) => t.kind !== 'space')
    .map((t) => `${t.kind}:${t.text}`);

describe('tokenize', () => {
  it('covers every character and names the parts', () => {
    const queries = [
      'service:api and not level:error',
      'latency:[10 to 50] or code:in(a, "b c")',
      "msg:'x y' | fields a, b  # note",
      'a:`raw*`',
      '(x:1 or y:2) and *',
      'unterminated:"abc',
    ];
    for (const q of queries)
      expect(
        tokenize(q)
          .map((t) => t.text)
          .join(''),
      ).toBe(q);
    expect(kinds('service:api and not level:error')).toEqual([
      'field:service',
      'colon::',
      'value:api',
      'keyword:and',
      'keyword:not',
      'field:level',
      'colon::',
      'value:error',
    ]);
    expect(kinds('latency:[10 to 50]')).toEqual([
      'field:latency',
      'colon::',
      'op:[',
      'value:10',
      'keyword:to',
      'value:50',
      'op:]',
    ]);
    expect(kinds('code:in(a, b)')).toEqual([
      'field:code',
      'colon::',
      'keyword:in',
      'op:(',
      'value:a',
      'op:,',
      'value:b',
      'op:)',
    ]);
    expect(kinds('m:"a b" # c')).toEqual(['field:m', 'colon::', 'string:"a b"', 'comment:# c']);
    expect(kinds('x:*')).toEqual(['field:x', 'colon::', 'wildcard:*']);
  });
});

describe('completionAt', () => {
  it('finds a field name or a value being typed, and nothing inside strings or comments', () => {
    expect(completionAt('serv', 4)).toEqual({ kind: 'field', field: '', prefix: 'serv', start: 0 });
    expect(completionAt('a:b and lev', 11)).toEqual({ kind: 'field', field: '', prefix: 'lev', start: 8 });
    expect(completionAt('service:ap', 10)).toEqual({ kind: 'value', field: 'service', prefix: 'ap', start: 8 });
    expect(completionAt('service:', 8)).toEqual({ kind: 'value', field: 'service', prefix: '', start: 8 });
    expect(completionAt('_exists_:ho', 11)).toEqual({ kind: 'field', field: '', prefix: 'ho', start: 9 });
    expect(completionAt('m:"ab', 5)).toBeNull();
    expect(completionAt('# serv', 6)).toBeNull();
    expect(completionAt('x:[1', 4)).toBeNull();
  });
});

describe('quoteValue and addTerm', () => {
  it('writes values the parser reads back exactly', () => {
    for (const v of ['api', 'GET /a b', 'and', 'a`b"c*', 'x:y', '']) {
      const q = `f:${quoteValue(v)}`;
      const parsed = parseQuery(q);
      expect(parsed.root).toMatchObject({ kind: 'term', field: 'f', value: { segments: [v] } });
    }
  });

  it('and-s a term onto the query, parenthesizing an or and keeping pipes', () => {
    expect(addTerm('', 'level', 'error', false)).toBe('level:error');
    expect(addTerm('*', 'level', 'error', true)).toBe('not level:error');
    expect(addTerm('service:api', 'level', 'GET /x', false)).toBe('service:api and level:`GET /x`');
    expect(addTerm('a:1 or b:2', 'c', '3', true)).toBe('(a:1 or b:2) and not c:3');
    expect(addTerm('a:1 | fields a, b', 'c', '3', false)).toBe('a:1 and c:3 | fields a, b');
    for (const q of ['a:1 or b:2', 'a:1 | fields a'])
      expect(() => parseQuery(addTerm(q, 'c', 'x y', true))).not.toThrow();
  });
});
