// seq-ql text from a syntax tree: what a proxy sends its stores for a query that did not arrive as text (the
// Elasticsearch `_search` / `_count` translation); parsing the text gives the same tree back.
import type { FieldsPipe, Pattern, QueryNode } from './ast.js';

/** Thrown for a field name that seq-ql cannot spell (the parser's field-name characters). */
export class UnformattableFieldError extends Error {
  constructor(readonly field: string) {
    super(`field name ${JSON.stringify(field)} cannot be written in seq-ql (no spaces, quotes, ':', '(', ')', '|', ',', '[', ']' or '#')`);
    this.name = 'UnformattableFieldError';
  }
}

const FIELD = /^[^\s:()|,"'`[\]#]+$/;

function field(name: string): string {
  if (!FIELD.test(name)) throw new UnformattableFieldError(name);
  return name;
}

/** One literal segment inside double quotes: `*` would be a wildcard there, so it is escaped with the rest. */
function literal(s: string): string {
  return s.replace(/[\\"*]/g, (c) => `\\${c}`).replace(/\n/g, '\\n').replace(/\t/g, '\\t');
}

function pattern(p: Pattern): string {
  return `"${p.segments.map(literal).join('*')}"`;
}

export function formatNode(node: QueryNode): string {
  switch (node.kind) {
    case 'all': return '*';
    case 'term': return `${field(node.field)}:${pattern(node.value)}`;
    case 'exists': return `_exists_:${field(node.field)}`;
    case 'range': {
      const lo = node.lo ? `"${literal(node.lo.value)}"` : '*';
      const hi = node.hi ? `"${literal(node.hi.value)}"` : '*';
      return `${field(node.field)}:${node.lo?.inclusive ? '[' : '('}${lo}, ${hi}${node.hi?.inclusive ? ']' : ')'}`;
    }
    case 'and': return `(${formatNode(node.left)} and ${formatNode(node.right)})`;
    case 'or': return `(${formatNode(node.left)} or ${formatNode(node.right)})`;
    case 'not': return `not (${formatNode(node.inner)})`;
  }
}

/** The query and its pipes as seq-ql text. */
export function formatQuery(root: QueryNode, pipes: readonly FieldsPipe[] = []): string {
  return [formatNode(root), ...pipes.map((p) => `fields ${p.except ? 'except ' : ''}${p.names.map(field).join(', ')}`)].join(' | ');
}
