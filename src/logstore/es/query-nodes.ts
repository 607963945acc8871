// Building blocks of the seq-ql trees that Elasticsearch queries are translated into, and their error.
import type { QueryNode } from '../query/ast.js';

/** A query the translation does not support or that is malformed: answered 400 parsing_exception. */
export class DslError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DslError';
  }
}

export function allOf(nodes: QueryNode[]): QueryNode {
  const items = nodes.filter((n) => n.kind !== 'all');
  if (items.length === 0) return { kind: 'all' };
  return items.reduce((left, right) => ({ kind: 'and', left, right }));
}

export function anyOf(nodes: QueryNode[]): QueryNode {
  if (nodes.length === 0) return { kind: 'not', inner: { kind: 'all' } };
  if (nodes.some((n) => n.kind === 'all')) return { kind: 'all' };
  return nodes.reduce((left, right) => ({ kind: 'or', left, right }));
}

export function negate(node: QueryNode): QueryNode {
  return node.kind === 'not' ? node.inner : { kind: 'not', inner: node };
}

/** A value matched exactly (no wildcard). */
export function exact(field: string, value: string): QueryNode {
  return { kind: 'term', field, value: { segments: [value] }, pos: 0 };
}

export function rangeNode(
  field: string,
  lo: string | null,
  hi: string | null,
  loIncl: boolean,
  hiIncl: boolean,
): QueryNode {
  return {
    kind: 'range',
    field,
    pos: 0,
    lo: lo === null ? null : { value: lo, inclusive: loIncl },
    hi: hi === null ? null : { value: hi, inclusive: hiIncl },
  };
}
