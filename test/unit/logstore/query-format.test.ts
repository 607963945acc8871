// seq-ql text from syntax trees (what a proxy sends stores for translated Elasticsearch queries): parsing the text gives the tree back.
import { describe, expect, it } from 'vitest';
import type { FieldsPipe, QueryNode } from '../../../src/logstore/query/ast.js';
import { formatQuery, UnformattableFieldError } from '../../../src/logstore/query/format.js';
import { parseQuery } from '../../../src/logstore/query/parser.js';
import { translateQuery } from '../../../src/logstore/es/query-dsl.js';
import type { MappingSpec } from '../../../src/logstore/mapping.js';
import { mulberry32 } from '../../helpers/prng.js';

/** The tree without source positions, which a formatted text cannot keep. */
function strip(n: QueryNode): unknown {
  switch (n.kind) {
    case 'term': case 'range': case 'exists': { const { pos: _pos, ...rest } = n; return rest; }
    case 'and': case 'or': return { kind: n.kind, left: strip(n.left), right: strip(n.right) };
    case 'not': return { kind: 'not', inner: strip(n.inner) };
    case 'all': return n;
  }
}

function roundTrip(root: QueryNode, pipes: FieldsPipe[] = []): void {
  const text = formatQuery(root, pipes);
  const back = parseQuery(text);
  expect(strip(back.root), text).toEqual(strip(root));
  expect(back.pipes, text).toEqual(pipes);
}

const NASTY = ['', 'a', 'GET', 'x y', '"', "'", '`', '\\', '*', 'a*b', '\n', '\t', '(', ')', '|', ',', ']', '#', 'and', 'not', 'or', 'ü€'];

describe('formatQuery', () => {
  it('writes every node kind so that it parses back to the same tree', () => {
    roundTrip({ kind: 'all' });
    roundTrip({ kind: 'term', field: 'status', value: { segments: ['500'] }, pos: 0 });
    roundTrip({ kind: 'term', field: 'msg', value: { segments: ['', 'err', ''] }, pos: 0 });
    roundTrip({ kind: 'range', field: 'size', lo: { value: '10', inclusive: false }, hi: null, pos: 0 });
    roundTrip({ kind: 'range', field: 'size', lo: null, hi: { value: 'a*"b', inclusive: true }, pos: 0 });
    roundTrip({ kind: 'exists', field: 'user.name', pos: 0 });
    roundTrip({ kind: 'not', inner: { kind: 'all' } });
    roundTrip({ kind: 'all' }, [{ kind: 'fields', except: false, names: ['a', 'b.c'] }, { kind: 'fields', except: true, names: ['_id'] }]);
  });

  it('round-trips 2 000 random trees with quotes, escapes, wildcards and keywords in values', () => {
    const rnd = mulberry32(20261123);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
    const fields = ['a', 'status', 'host.name', 'not', 'and', '_x', 'k8s/pod'];
    const leaf = (): QueryNode => {
      const r = rnd();
      if (r < 0.5) return { kind: 'term', field: pick(fields), value: { segments: Array.from({ length: 1 + Math.floor(rnd() * 3) }, () => pick(NASTY)) }, pos: 0 };
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
    for (let i = 0; i < 2000; i++) roundTrip(tree(5));
  });

  it('round-trips what the Elasticsearch DSL translation produces', () => {
    const auto = { auto: true, fields: {} } as unknown as MappingSpec;
    const t = translateQuery({ bool: { must: [{ match: { message: 'disk full' } }, { term: { 'host.name': 'web-1' } }], must_not: [{ range: { status: { gte: 500 } } }] } }, auto);
    roundTrip(t.root);
  });

  it('refuses a field name seq-ql cannot spell, naming it', () => {
    expect(() => formatQuery({ kind: 'exists', field: 'a b', pos: 0 })).toThrow(UnformattableFieldError);
    expect(() => formatQuery({ kind: 'exists', field: 'a b', pos: 0 })).toThrow(/"a b"/);
  });
});
