// How deep and how large one query may be, in every query language the log store reads: past a limit the
// query is refused (HTTP 400, gRPC INVALID_ARGUMENT) before anything walks it, so no parser or tree walk
// can run out of stack and no single request can ask for unbounded work.

/**
 * Nesting levels a query may have: seq-ql parentheses and `not`, query_string parentheses, and DSL query
 * objects inside `bool` clauses. Elasticsearch refuses bool queries nested deeper than 30
 * (indices.query.bool.max_nested_depth); a log query that needs 100 has gone wrong.
 */
export const MAX_QUERY_DEPTH = 100;

/**
 * Clauses (terms, values of in() and terms, ranges, _exists_) one query may hold: as many values as an
 * Elasticsearch terms query may list (index.max_terms_count).
 */
export const MAX_QUERY_CLAUSES = 65_536;

export type QueryLimit = 'max_depth' | 'max_clauses';

/** A query past MAX_QUERY_DEPTH or MAX_QUERY_CLAUSES; the message names the limit and its value. */
export class QueryLimitError extends Error {
  constructor(
    readonly limit: QueryLimit,
    readonly max: number,
    readonly position: number,
  ) {
    super(
      limit === 'max_depth'
        ? `the query is nested deeper than ${max} levels (the query depth limit, max_depth: parentheses, not, bool clauses)`
        : `the query holds more than ${max} clauses (the query size limit, max_clauses: terms, listed values, ranges, _exists_)`,
    );
    this.name = 'QueryLimitError';
  }
}

/** Depth and clause counters that one query's parsers share (a query_string inside a DSL bool adds to it). */
export class QueryBudget {
  private depth = 0;
  private clauses = 0;

  constructor(
    readonly maxDepth = MAX_QUERY_DEPTH,
    readonly maxClauses = MAX_QUERY_CLAUSES,
  ) {}

  /** One level deeper; throws past the limit, before the parser recurses. Pair with leave(). */
  enter(position = 0): void {
    if (++this.depth > this.maxDepth) throw new QueryLimitError('max_depth', this.maxDepth, position);
  }

  leave(): void {
    this.depth--;
  }

  clause(position = 0, n = 1): void {
    this.clauses += n;
    if (this.clauses > this.maxClauses) throw new QueryLimitError('max_clauses', this.maxClauses, position);
  }
}
