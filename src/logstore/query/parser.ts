// seq-ql parser: field:value terms, free text (bare words, quoted phrases), quoting, wildcards, and/or/not, ranges, in(), _exists_, comments, pipes.
import type { Bound, FieldsPipe, ParsedQuery, Pattern, QueryNode } from './ast.js';
import { QueryBudget } from './limits.js';

export class QuerySyntaxError extends Error {
  constructor(
    readonly position: number,
    readonly expected: string,
    readonly found: string,
  ) {
    super(`query syntax error at position ${position}: expected ${expected}, found ${found}`);
    this.name = 'QuerySyntaxError';
  }
}

const FIELD_CHAR = /[^\s:()|,"'`[\]#]/;
const WORD_STOP = new Set([' ', '\t', '\n', '\r', '(', ')', '|', '"', "'", '`']);

class Parser {
  pos = 0;
  constructor(
    readonly src: string,
    readonly budget: QueryBudget,
  ) {}

  fail(expected: string): never {
    const found =
      this.pos >= this.src.length ? 'the end of the query' : JSON.stringify(this.src.slice(this.pos, this.pos + 12));
    throw new QuerySyntaxError(this.pos, expected, found);
  }

  skipWs(): void {
    for (;;) {
      const c = this.src[this.pos];
      if (c === ' ' || c === '\t' || c === '\n' || c === '\r') this.pos++;
      else if (c === '#') {
        while (this.pos < this.src.length && this.src[this.pos] !== '\n') this.pos++;
      } else return;
    }
  }

  peek(): string | undefined {
    this.skipWs();
    return this.src[this.pos];
  }

  /** A case-insensitive keyword that ends at a delimiter; consumed when present. */
  keyword(word: string, allowParen = true): boolean {
    this.skipWs();
    const s = this.src.slice(this.pos, this.pos + word.length);
    if (s.toLowerCase() !== word) return false;
    const after = this.src[this.pos + word.length];
    if (after !== undefined && !/\s/.test(after) && !(allowParen && after === '(')) return false;
    this.pos += word.length;
    return true;
  }

  fieldName(): string {
    this.skipWs();
    const start = this.pos;
    while (this.pos < this.src.length && FIELD_CHAR.test(this.src[this.pos]!)) this.pos++;
    if (this.pos === start) this.fail('a field name');
    return this.src.slice(start, this.pos);
  }

  parseQuery(): ParsedQuery {
    let root: QueryNode = { kind: 'all' };
    const c = this.peek();
    if (c !== undefined && c !== '|') root = this.parseOr();
    const pipes: FieldsPipe[] = [];
    while (this.peek() === '|') {
      this.pos++;
      pipes.push(this.parsePipe());
    }
    if (this.peek() !== undefined) this.fail('"and", "or", "|" or the end of the query');
    return { root, pipes };
  }

  parsePipe(): FieldsPipe {
    if (!this.keyword('fields', false)) this.fail('a pipe ("fields" or "fields except")');
    const except = this.keyword('except', false);
    const names = [this.fieldName()];
    while (this.peek() === ',') {
      this.pos++;
      names.push(this.fieldName());
    }
    return { kind: 'fields', except, names };
  }

  parseOr(): QueryNode {
    let left = this.parseAnd();
    while (this.keyword('or')) left = { kind: 'or', left, right: this.parseAnd() };
    return left;
  }

  parseAnd(): QueryNode {
    let left = this.parseUnary();
    while (this.keyword('and')) left = { kind: 'and', left, right: this.parseUnary() };
    return left;
  }

  parseUnary(): QueryNode {
    const c = this.peek();
    if (c === undefined) this.fail('a term (field:value or a word), "not", "(" or "*"');
    if (c === '(') {
      this.budget.enter(this.pos);
      this.pos++;
      const inner = this.parseOr();
      if (this.peek() !== ')') this.fail('")"');
      this.pos++;
      this.budget.leave();
      return inner;
    }
    if (c === '*') {
      const next = this.src[this.pos + 1];
      if (next === undefined || /[\s)|]/.test(next)) {
        this.pos++;
        return { kind: 'all' };
      }
    }
    const save = this.pos;
    if (this.keyword('not')) {
      if (this.peek() !== ':') {
        this.budget.enter(save);
        const inner = this.parseUnary();
        this.budget.leave();
        return { kind: 'not', inner };
      }
      this.pos = save;
    }
    return this.parseTerm();
  }

  parseTerm(): QueryNode {
    this.skipWs();
    const pos = this.pos;
    const first = this.src[pos];
    // A quoted phrase, or a word not followed by ":", is free text; a word is cut where a field name ends
    // only when ":" follows it (`a,b` and `x[1]` are words).
    if (first === '"' || first === "'" || first === '`') return this.freeText(pos);
    while (this.pos < this.src.length && FIELD_CHAR.test(this.src[this.pos]!)) this.pos++;
    if (this.pos === pos || this.src[this.pos] !== ':') {
      this.pos = pos;
      return this.freeText(pos);
    }
    const field = this.src.slice(pos, this.pos);
    this.pos++;
    const c = this.src[this.pos];
    if (field !== '_exists_' && this.src.slice(this.pos, this.pos + 3).toLowerCase() === 'in(') {
      this.pos += 3;
      return this.parseIn(field, pos);
    }
    this.budget.clause(pos);
    if (field === '_exists_') return { kind: 'exists', field: this.fieldName(), pos };
    if (c === '[' || c === '(') return this.parseRange(field, pos);
    if (c === undefined || /\s/.test(c) || c === ')' || c === '|') this.fail('a value after ":"');
    return { kind: 'term', field, value: this.parseValue(false), pos };
  }

  freeText(pos: number): QueryNode {
    this.budget.clause(pos);
    return { kind: 'text', value: this.parseValue(false), pos };
  }

  parseIn(field: string, pos: number): QueryNode {
    let node: QueryNode | null = null;
    for (;;) {
      if (this.peek() === undefined) this.fail('a value or ")"');
      this.budget.clause(this.pos);
      const value = this.parseValue(true);
      const term: QueryNode = { kind: 'term', field, value, pos };
      node = node ? { kind: 'or', left: node, right: term } : term;
      const c = this.peek();
      if (c === ',') {
        this.pos++;
        continue;
      }
      if (c === ')') {
        this.pos++;
        return node;
      }
      this.fail('"," or ")" in in(...)');
    }
  }

  parseRange(field: string, pos: number): QueryNode {
    const loInclusive = this.src[this.pos] === '[';
    this.pos++;
    const lo = this.parseBound();
    if (this.peek() === ',') this.pos++;
    else if (!this.keyword('to', false)) this.fail('"," or "to" between the range bounds');
    const hi = this.parseBound();
    const c = this.peek();
    if (c !== ']' && c !== ')') this.fail('"]" or ")" closing the range');
    this.pos++;
    return {
      kind: 'range',
      field,
      pos,
      lo: lo === null ? null : { value: lo, inclusive: loInclusive },
      hi: hi === null ? null : { value: hi, inclusive: c === ']' },
    };
  }

  parseBound(): string | null {
    const c = this.peek();
    if (c === '*') {
      const next = this.src[this.pos + 1];
      if (next === undefined || /[\s,\])]/.test(next)) {
        this.pos++;
        return null;
      }
    }
    if (c === undefined || c === ',' || c === ']' || c === ')') this.fail('a range bound (a value or "*")');
    const v = this.parseValue(true);
    if (v.segments.length !== 1) this.fail('a range bound without wildcards');
    return v.segments[0]!;
  }

  /** A bare word, 'quoted' / "quoted" string (escapes, * wildcards) or `raw` string. */
  parseValue(inList: boolean): Pattern {
    this.skipWs();
    const q = this.src[this.pos];
    const segments: string[] = [''];
    const add = (ch: string) => {
      segments[segments.length - 1] += ch;
    };
    if (q === '`') {
      const end = this.src.indexOf('`', this.pos + 1);
      if (end < 0) {
        this.pos = this.src.length;
        this.fail('a closing "`"');
      }
      const v = this.src.slice(this.pos + 1, end);
      this.pos = end + 1;
      return { segments: [v] };
    }
    if (q === '"' || q === "'") {
      const start = this.pos;
      this.pos++;
      for (;;) {
        const c = this.src[this.pos];
        if (c === undefined) {
          this.pos = start;
          this.fail(`a closing ${q} for the string starting here`);
        }
        this.pos++;
        if (c === q) break;
        if (c === '\\') {
          const e = this.src[this.pos++];
          if (e === undefined) this.fail('a character after "\\"');
          add(e === 'n' ? '\n' : e === 't' ? '\t' : e);
        } else if (c === '*') segments.push('');
        else add(c);
      }
      return { segments };
    }
    const start = this.pos;
    while (this.pos < this.src.length) {
      const c = this.src[this.pos]!;
      if (WORD_STOP.has(c) || (inList && (c === ',' || c === ']'))) break;
      this.pos++;
      if (c === '\\' && this.pos < this.src.length) add(this.src[this.pos++]!);
      else if (c === '*') segments.push('');
      else add(c);
    }
    if (this.pos === start) this.fail('a value');
    return { segments };
  }
}

/**
 * Parses a seq-ql query; an empty query (or only comments) matches everything. Past the budget's depth or
 * clause limit it throws QueryLimitError (limits.ts).
 */
export function parseQuery(src: string, budget = new QueryBudget()): ParsedQuery {
  return new Parser(src, budget).parseQuery();
}

/** Every field the query reads, with the position of its first use (for "field is not indexed"). */
export function queryFields(root: QueryNode, out = new Map<string, number>()): Map<string, number> {
  // A stack, not recursion: a chain of `or` is as deep as it is long. Right before left keeps source order.
  const todo: QueryNode[] = [root];
  for (let node = todo.pop(); node; node = todo.pop()) {
    switch (node.kind) {
      case 'term':
      case 'range':
      case 'exists':
        if (!out.has(node.field)) out.set(node.field, node.pos);
        break;
      case 'and':
      case 'or':
        todo.push(node.right, node.left);
        break;
      case 'not':
        todo.push(node.inner);
        break;
      case 'all':
      case 'text':
        break;
    }
  }
  return out;
}

export type { Bound };
