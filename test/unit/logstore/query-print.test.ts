// seq-ql printed from a syntax tree parses back to the same tree (what a proxy sends its stores for queries
// that came as Elasticsearch DSL).
import { describe, expect, it } from 'vitest';
import type { QueryNode } from '../../../src/logstore/query/ast.js';
import { parseQuery } from '../../../src/logstore/query/parser.js';
import { queryText } from '../../../src/logstore/query/print.js';

/** The tree without source positions (printing moves them). */
function shape(n: QueryNode): unknown {
  switch (n.kind) {
    case 'and': case 'or': return { kind: n.kind, left: shape(n.left), right: shape(n.right) };
    case 'not': return { kind: 'not', inner: shape(n.inner) };
    case 'all': return n;
    default: { const { pos: _pos, ...rest } = n; return rest; }
  }
}

describe('seq-ql printer', () => {
  const queries = [
    '', '*', 'level:error', 'msg:"a \\"quoted\\" b\\\\c"', 'uri:`raw*text`', 'svc:api*', 'msg:*time\\*out*', 'a:1 and b:2 or not c:3',
    '(a:1 or b:2) and not (c:3 and d:4)', 'status:[400, 499]', 'size:(100 to *]', 'x:[* , "m"]', 'status:in(500, 400, "x*")', '_exists_:user',
    'not _exists_:user and level:warn', 'level:info | fields a, b', '* | fields except msg | fields a', 'msg:"tab\\there\\nnewline"', "who:'single \\' quote'",
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
});
