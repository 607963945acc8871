// Writes a seq-ql syntax tree back as seq-ql text that parses to the same tree: how a query made by another
// front end (the Elasticsearch query DSL) travels to the stores of a cluster, whose API takes seq-ql.
import type { FieldsPipe, ParsedQuery, Pattern, QueryNode } from './ast.js';

/** A value in double quotes: `\`, `"` and a literal `*` escaped, segments joined by the `*` wildcard. */
function quoted(segments: readonly string[]): string {
  const esc = (s: string) => s.replace(/[\\"*]/g, (c) => `\\${c}`).replace(/\n/g, '\\n').replace(/\t/g, '\\t');
  return `"${segments.map(esc).join('*')}"`;
}

function pattern(p: Pattern): string {
  return quoted(p.segments);
}

function node(n: QueryNode): string {
  switch (n.kind) {
    case 'all': return '*';
    case 'term': return `${n.field}:${pattern(n.value)}`;
    case 'exists': return `_exists_:${n.field}`;
    case 'range':
      return `${n.field}:${n.lo?.inclusive ? '[' : '('}${n.lo ? quoted([n.lo.value]) : '*'}, ${n.hi ? quoted([n.hi.value]) : '*'}${n.hi?.inclusive ? ']' : ')'}`;
    case 'and': return `(${node(n.left)} and ${node(n.right)})`;
    case 'or': return `(${node(n.left)} or ${node(n.right)})`;
    case 'not': return `not ${node(n.inner)}`;
  }
}

function pipe(p: FieldsPipe): string {
  return ` | fields ${p.except ? 'except ' : ''}${p.names.join(', ')}`;
}

export function queryText(q: ParsedQuery): string {
  return node(q.root) + q.pipes.map(pipe).join('');
}
