// Writes a seq-ql syntax tree back as seq-ql text that parses to the same tree: how a query made by another
// front end (the Elasticsearch query DSL) travels to the stores of a cluster, whose API takes seq-ql.
import type { FieldsPipe, ParsedQuery, Pattern, QueryNode } from './ast.js';

/** A value in double quotes: `\`, `"` and a literal `*` escaped, segments joined by the `*` wildcard. */
function quoted(segments: readonly string[]): string {
  const esc = (s: string) =>
    s
      .replace(/[\\"*]/g, (c) => `\\${c}`)
      .replace(/\n/g, '\\n')
      .replace(/\t/g, '\\t');
  return `"${segments.map(esc).join('*')}"`;
}

/** Thrown for a field name seq-ql cannot spell (outside the parser's field-name characters). */
export class UnprintableFieldError extends Error {
  constructor(readonly field: string) {
    super(
      `field name ${JSON.stringify(field)} cannot be written in seq-ql (no spaces, quotes, ':', '(', ')', '|', ',', '[', ']' or '#')`,
    );
    this.name = 'UnprintableFieldError';
  }
}

const FIELD = /^[^\s:()|,"'`[\]#]+$/;

function field(name: string): string {
  if (!FIELD.test(name)) throw new UnprintableFieldError(name);
  return name;
}

function pattern(p: Pattern): string {
  return quoted(p.segments);
}

function node(n: QueryNode): string {
  switch (n.kind) {
    case 'all':
      return '*';
    case 'term':
      return `${field(n.field)}:${pattern(n.value)}`;
    case 'text':
      return pattern(n.value);
    case 'exists':
      return `_exists_:${field(n.field)}`;
    case 'range':
      return `${field(n.field)}:${n.lo?.inclusive ? '[' : '('}${n.lo ? quoted([n.lo.value]) : '*'}, ${n.hi ? quoted([n.hi.value]) : '*'}${n.hi?.inclusive ? ']' : ')'}`;
    case 'and':
    case 'or': {
      // A left chain of one operator is written without inner parentheses (`(a or b or c)` parses back to the
      // same left-deep tree): no recursion down a chain as deep as it is long, and no nesting the parser counts.
      const rights: string[] = [];
      let l: QueryNode = n;
      while (l.kind === n.kind) {
        rights.push(node(l.right));
        l = l.left;
      }
      return `(${node(l)} ${n.kind} ${rights.reverse().join(` ${n.kind} `)})`;
    }
    case 'not':
      return `not ${node(n.inner)}`;
  }
}

function pipe(p: FieldsPipe): string {
  return ` | fields ${p.except ? 'except ' : ''}${p.names.map(field).join(', ')}`;
}

export function queryText(q: ParsedQuery): string {
  return node(q.root) + q.pipes.map(pipe).join('');
}
