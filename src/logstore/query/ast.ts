// The seq-ql syntax tree: plain data, so a parsed query crosses into shard workers as is.

/** A value: literal segments with a `*` wildcard between each two; one segment = an exact value. */
export interface Pattern {
  segments: string[];
}

export interface Bound {
  value: string;
  inclusive: boolean;
}

export type QueryNode =
  | { kind: 'all' }
  | { kind: 'term'; field: string; value: Pattern; pos: number }
  /** Free text: a bare word or a quoted phrase without a field, matched against every indexed field (plan.ts). */
  | { kind: 'text'; value: Pattern; pos: number }
  | { kind: 'range'; field: string; lo: Bound | null; hi: Bound | null; pos: number }
  | { kind: 'exists'; field: string; pos: number }
  | { kind: 'and'; left: QueryNode; right: QueryNode }
  | { kind: 'or'; left: QueryNode; right: QueryNode }
  | { kind: 'not'; inner: QueryNode };

export interface FieldsPipe {
  kind: 'fields';
  except: boolean;
  names: string[];
}

export interface ParsedQuery {
  root: QueryNode;
  pipes: FieldsPipe[];
}

export function isExact(p: Pattern): boolean {
  return p.segments.length === 1;
}

/** Literal prefix before the first wildcard (lets sorted dictionaries narrow the scan). */
export function patternPrefix(p: Pattern): string {
  return p.segments[0] ?? '';
}
