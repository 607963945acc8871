// seq-ql printed from a syntax tree parses back to the same tree (what a proxy sends its stores for queries
// that came as Elasticsearch DSL).
import { describe, expect, it } from 'vitest';
import type { QueryNode } from '../../../src/logstore/query/ast.js';
import { parseQuery } from '../../../src/logstore/query/parser.js';
import { UnprintableFieldError, queryText } from '../../../src/logstore/query/print.js';
import { mulberry32 } from '../../helpers/prng.js';

/** The tree without source positions (printing moves them). */
function shape(n: QueryNode): unknown {
  switch (n.kind) {
    case 'and':
    case 'or':
      return { kind: n.kind, left: shape(n.left), right: shape(n.right) };
    case 'not':
      return { kind: 'not', inner: shape(n.inner) };
    case 'all':
      return n;
    default: {
      const { pos: _pos, ...rest } = n;
      return rest;
    }
  }
}

describe('seq-ql printer', () => {
  const queries = [
    '',
    '*',
    'level:error',
    'msg:"a \\"quoted\\" b\\\\c"',
    'uri:`raw*text`',
    'svc:api*',
    'msg:*time\\*out*',
    'a:1 and b:2 or not c:3',
    '(a:1 or b:2) and not (c:3 and d:4)',
    'status:[400, 499]',
    'size:(100 to *]',
    'x:[* , "m"]',
    'status:in(500, 400, "x*")',
    '_exists_:user',
    'not _exists_:user and level:warn',
    'level:info | fields a, b',
    '* | fields except msg | fields a',
    'msg:"tab\\there\\nnewline"',
    "who:'single \\' quote'",
    'RELOAD',
    '"connection refused" and not level:debug',
    'time*out or `raw*`',
    "'it\\'s' | fields msg",
    'a,b or x[1]',
  ];
  it('trees no seq-ql text makes (everything inside and / not, as the DSL translation builds)', () => {
    const root: QueryNode = { kind: 'and', left: { kind: 'all' }, right: { kind: 'not', inner: { kind: 'all' } } };
    expect(shape(parseQuery(queryText({ root, pipes: [] })).root)).toEqual(root);
  });

  for (const q of queries) {
    it(JSON.stringify(q), () => {
      const a = parseQuery(q);
      const text = queryText(a);
      const b = parseQuery(text);
      expect(shape(b.root)).toEqual(shape(a.root));
      expect(b.pipes).toEqual(a.pipes);
    });
  }

  it('round-trips 2 000 random trees with quotes, escapes, wildcards and keywords in values', () => {
    const NASTY = [
      '',
      'a',
      'GET',
      'x y',
      '"',
      "'",
      '`',
      '\\',
      '*',
      'a*b',
      '\n',
      '\t',
      '(',
      ')',
      '|',
      ',',
      ']',
      '#',
      'and',
      'not',
      'or',
      'ü€',
    ];
    const rnd = mulberry32(20261123);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
    const fields = ['a', 'status', 'host.name', 'not', 'and', '_x', 'k8s/pod'];
    const leaf = (): QueryNode => {
      const r = rnd();
      if (r < 0.5)
        return {
          kind: 'term',
          field: pick(fields),
          value: { segments: Array.from({ length: 1 + Math.floor(rnd() * 3) }, () => pick(NASTY)) },
          pos: 0,
        };
      if (r < 0.8) {
        const b = () => (rnd() < 0.3 ? null : { value: pick(NASTY), inclusive: rnd() < 0.5 });
        return { kind: 'range', field: pick(fields), lo: b(), hi: b(), pos: 0 };
      }
      if (r < 0.9) return { kind: 'exists', field: pick(fields), pos: 0 };
      return { kind: 'all' };
    };
    const tree = (depth: number): QueryNode => {
      if (depth === 0 || rnd() < 0.3) return leaf();
      const r = rnd();
      if (r < 0.2) return { kind: 'not', inner: tree(depth - 1) };
      return { kind: r < 0.6 ? 'and' : 'or', left: tree(depth - 1), right: tree(depth - 1) };
    };
    for (let i = 0; i < 2000; i++) {
      const root = tree(5);
      const text = queryText({ root, pipes: [] });
      expect(shape(parseQuery(text).root), text).toEqual(shape(root));
    }
  });

  it('refuses a field name seq-ql cannot spell, naming it', () => {
    expect(() => queryText({ root: { kind: 'exists', field: 'a b', pos: 0 }, pipes: [] })).toThrow(
      UnprintableFieldError,
    );
    expect(() =>
      queryText({ root: { kind: 'all' }, pipes: [{ kind: 'fields', except: false, names: ['x:y'] }] }),
    ).toThrow(/"x:y"/);
  });
});
