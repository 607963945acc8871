// Elasticsearch `query_string` (Lucene classic syntax), the common subset, translated to a seq-ql tree:
// field:value, "phrases", * wildcards, [a TO b] / {a TO b} / >=x ranges, _exists_:f, AND OR NOT && || !, + -, ( ).
import type { Pattern, QueryNode } from '../query/ast.js';
import { QueryBudget } from '../query/limits.js';
import { DslError, allOf, anyOf, negate, rangeNode } from './query-nodes.js';

type Occur = 'must' | 'should' | 'must_not';
type Tok =
  | { t: 'open' | 'close' | 'and' | 'or' | 'not' | 'plus' | 'minus' }
  | { t: 'term'; field: string | null; value: Pattern; quoted: boolean }
  | { t: 'range'; field: string | null; lo: string | null; hi: string | null; loIncl: boolean; hiIncl: boolean };

export interface QueryStringOptions {
  defaultField: string | null;
  defaultOperator: 'or' | 'and';
}

const STOP = new Set([' ', '\t', '\n', '\r', '(', ')']);
const UNSUPPORTED = new Set(['~', '^', '?', '/']);

function tokenize(src: string): Tok[] {
  const out: Tok[] = [];
  let i = 0;
  const fail = (what: string): never => {
    throw new DslError(`query_string: ${what} at position ${i} of ${JSON.stringify(src)}`);
  };
  /** A bare word up to a blank or parenthesis, `\` escapes kept literal; `*` splits wildcard segments. */
  const word = (stopAt: Set<string>): { segs: string[]; raw: string } => {
    const segs = [''];
    const start = i;
    while (i < src.length && !stopAt.has(src[i]!)) {
      const c = src[i++]!;
      if (c === '\\') {
        if (i >= src.length) fail('a character after "\\"');
        segs[segs.length - 1] += src[i++]!;
      } else if (c === '*') segs.push('');
      else if (UNSUPPORTED.has(c))
        fail(`"${c}" (fuzzy, boost, single-character wildcard and regular expressions are not supported)`);
      else segs[segs.length - 1] += c;
    }
    return { segs, raw: src.slice(start, i) };
  };
  const quoted = (): string => {
    i++;
    let v = '';
    for (;;) {
      if (i >= src.length) fail("a closing '\"'");
      const c = src[i++]!;
      if (c === '"') return v;
      if (c === '\\') {
        if (i >= src.length) fail('a character after "\\"');
        v += src[i++]!;
      } else v += c;
    }
  };
  const bound = (stop: Set<string>): string | null => {
    while (src[i] === ' ') i++;
    if (src[i] === '"') return quoted();
    const w = word(stop);
    if (w.raw === '*') return null;
    if (w.segs.length !== 1 || w.raw === '') fail('a range bound');
    return w.segs[0]!;
  };
  while (i < src.length) {
    const c = src[i]!;
    if (c === ' ' || c === '\t' || c === '\n' || c === '\r') {
      i++;
      continue;
    }
    if (c === '(') {
      out.push({ t: 'open' });
      i++;
      continue;
    }
    if (c === ')') {
      out.push({ t: 'close' });
      i++;
      continue;
    }
    if (src.startsWith('&&', i)) {
      out.push({ t: 'and' });
      i += 2;
      continue;
    }
    if (src.startsWith('||', i)) {
      out.push({ t: 'or' });
      i += 2;
      continue;
    }
    if (c === '!') {
      out.push({ t: 'not' });
      i++;
      continue;
    }
    if (c === '+') {
      out.push({ t: 'plus' });
      i++;
      continue;
    }
    if (c === '-') {
      out.push({ t: 'minus' });
      i++;
      continue;
    }
    // An operator word stands alone (followed by a blank, a parenthesis or the end).
    const op = /^(AND|OR|NOT)(?=[\s()]|$)/.exec(src.slice(i, i + 4));
    if (op) {
      out.push({ t: op[1]!.toLowerCase() as 'and' | 'or' | 'not' });
      i += op[1]!.length;
      continue;
    }
    // field: (unescaped ':' before a blank) then a value; or a bare value.
    let field: string | null = null;
    let j = i;
    let name = '';
    while (j < src.length && !STOP.has(src[j]!) && src[j] !== ':' && src[j] !== '"') {
      if (src[j] === '\\') {
        name += src[j + 1] ?? '';
        j += 2;
      } else name += src[j++];
    }
    if (src[j] === ':' && name !== '') {
      field = name;
      i = j + 1;
    }
    const v = src[i];
    if (field !== null && (v === '[' || v === '{')) {
      i++;
      const lo = bound(new Set([' ']));
      while (src[i] === ' ') i++;
      if (!src.startsWith('TO', i)) fail('"TO" in a range');
      i += 2;
      const hi = bound(new Set([' ', ']', '}']));
      while (src[i] === ' ') i++;
      const close = src[i];
      if (close !== ']' && close !== '}') fail('"]" or "}" closing the range');
      i++;
      out.push({ t: 'range', field, lo, hi, loIncl: v === '[', hiIncl: close === ']' });
      continue;
    }
    if (field !== null && (v === '>' || v === '<')) {
      const eq = src[i + 1] === '=';
      i += eq ? 2 : 1;
      const b = bound(STOP);
      if (b === null) fail('a value after the comparison');
      out.push(
        v === '>'
          ? { t: 'range', field, lo: b, hi: null, loIncl: eq, hiIncl: false }
          : { t: 'range', field, lo: null, hi: b, loIncl: false, hiIncl: eq },
      );
      continue;
    }
    if (field !== null && v === '(') fail('a value (field:(a b) groups are not supported; write field:a OR field:b)');
    if (v === '"') {
      out.push({ t: 'term', field, value: { segments: [quoted()] }, quoted: true });
      continue;
    }
    const w = word(STOP);
    if (w.raw === '') fail('a value');
    out.push({ t: 'term', field, value: { segments: w.segs }, quoted: false });
  }
  return out;
}

class Parser {
  private p = 0;
  constructor(
    private readonly toks: Tok[],
    private readonly opts: QueryStringOptions,
    private readonly budget: QueryBudget,
  ) {}

  parse(): QueryNode {
    const node = this.group();
    if (this.p < this.toks.length) throw new DslError('query_string: unbalanced ")"');
    return node;
  }

  /** A sequence of clauses with their occurrences, combined as Lucene's classic parser does. */
  private group(): QueryNode {
    const clauses: { occur: Occur; node: QueryNode }[] = [];
    let conj: 'and' | 'or' | null = null;
    while (this.p < this.toks.length && this.toks[this.p]!.t !== 'close') {
      const tk = this.toks[this.p]!;
      if (tk.t === 'and' || tk.t === 'or') {
        if (clauses.length === 0) throw new DslError(`query_string: "${tk.t.toUpperCase()}" without a left side`);
        conj = tk.t;
        this.p++;
        continue;
      }
      let mod: 'req' | 'not' | null = null;
      if (tk.t === 'plus') {
        mod = 'req';
        this.p++;
      } else if (tk.t === 'minus' || tk.t === 'not') {
        mod = 'not';
        this.p++;
      }
      // Lucene's QueryParserBase.addClause: AND makes the preceding clause required; with default operator
      // AND, OR makes it optional; a prohibited clause stays prohibited.
      const prev = clauses[clauses.length - 1];
      if (prev && prev.occur !== 'must_not') {
        if (conj === 'and') prev.occur = 'must';
        else if (conj === 'or' && this.opts.defaultOperator === 'and') prev.occur = 'should';
      }
      let occur: Occur;
      if (mod === 'not') occur = 'must_not';
      else if (this.opts.defaultOperator === 'or') occur = mod === 'req' || conj === 'and' ? 'must' : 'should';
      else occur = conj !== 'or' ? 'must' : 'should';
      conj = null;
      clauses.push({ occur, node: this.clause() });
    }
    if (conj !== null) throw new DslError(`query_string: "${conj.toUpperCase()}" without a right side`);
    const must = clauses.filter((c) => c.occur === 'must').map((c) => c.node);
    const should = clauses.filter((c) => c.occur === 'should').map((c) => c.node);
    const not = clauses.filter((c) => c.occur === 'must_not').map((c) => negate(c.node));
    // With a required clause, optional ones only score in Lucene: they do not filter.
    return allOf([...must, ...(must.length === 0 && should.length > 0 ? [anyOf(should)] : []), ...not]);
  }

  private clause(): QueryNode {
    const tk = this.toks[this.p++];
    if (!tk) throw new DslError('query_string: a term is missing at the end');
    if (tk.t === 'open') {
      this.budget.enter();
      const inner = this.group();
      if (this.toks[this.p]?.t !== 'close') throw new DslError('query_string: a "(" is not closed');
      this.p++;
      this.budget.leave();
      return inner;
    }
    this.budget.clause();
    if (tk.t === 'term') {
      if (tk.field === null && !tk.quoted && tk.value.segments.length === 2 && tk.value.segments.every((s) => s === ''))
        return { kind: 'all' };
      if (tk.field === '*' && tk.value.segments.every((s) => s === '')) return { kind: 'all' };
      if (tk.field === '_exists_') return { kind: 'exists', field: tk.value.segments.join('*'), pos: 0 };
      // No field and no default_field (or `*`, Elasticsearch's default): every field, as seq-ql free text does.
      if (tk.field === null && (this.opts.defaultField === null || this.opts.defaultField === '*'))
        return { kind: 'text', value: tk.value, pos: 0 };
      return { kind: 'term', field: this.field(tk.field), value: tk.value, pos: 0 };
    }
    if (tk.t === 'range') return rangeNode(this.field(tk.field), tk.lo, tk.hi, tk.loIncl, tk.hiIncl);
    throw new DslError(`query_string: unexpected "${tk.t}"`);
  }

  private field(f: string | null): string {
    if (f !== null) return f;
    if (this.opts.defaultField !== null && this.opts.defaultField !== '*') return this.opts.defaultField;
    throw new DslError('query_string: a range has no field; give one (field:[a TO b]), or default_field');
  }
}

/** The seq-ql tree of a Lucene query string; past a limit of query/limits.ts, QueryLimitError. */
export function translateQueryString(src: string, opts: QueryStringOptions, budget = new QueryBudget()): QueryNode {
  if (src.trim() === '') return { kind: 'all' };
  return new Parser(tokenize(src), opts, budget).parse();
}
