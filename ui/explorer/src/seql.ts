// seq-ql in the editor: tokens for highlighting, what to complete at the caret, and field:value terms to add.
export type TokenKind =
  'field' | 'colon' | 'value' | 'string' | 'keyword' | 'op' | 'wildcard' | 'comment' | 'space' | 'text';

export interface Token {
  kind: TokenKind;
  text: string;
  start: number;
}

const KEYWORDS = new Set(['and', 'or', 'not', 'to', 'in', 'fields', 'except']);
const FIELD_CHAR = /[^\s:()|,"'`[\]#]/;
const VALUE_STOP = /[\s()|"'`]/;

/** Splits a query into tokens covering every character (so that joining their texts gives the query back). */
export function tokenize(src: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  let afterColon = false;
  let inRange = false;
  const push = (kind: TokenKind, end: number) => {
    out.push({ kind, text: src.slice(i, end), start: i });
    i = end;
  };
  while (i < src.length) {
    const c = src[i]!;
    if (/\s/.test(c)) {
      let j = i;
      while (j < src.length && /\s/.test(src[j]!)) j++;
      push('space', j);
      afterColon = false;
      continue;
    }
    if (c === '#') {
      const nl = src.indexOf('\n', i);
      push('comment', nl < 0 ? src.length : nl);
      continue;
    }
    if (c === '"' || c === "'" || c === '`') {
      let j = i + 1;
      while (j < src.length && src[j] !== c) j += src[j] === '\\' && c !== '`' ? 2 : 1;
      push('string', Math.min(src.length, j + 1));
      afterColon = false;
      continue;
    }
    if (c === '[' || c === ']' || (inRange && c === ',')) {
      inRange = c === '[' || (inRange && c === ',');
      push('op', i + 1);
      afterColon = false;
      continue;
    }
    if (c === '(' || c === ')' || c === '|' || c === ',') {
      if (afterColon && c === '(') inRange = true;
      else if (c === ')') inRange = false;
      push('op', i + 1);
      afterColon = false;
      continue;
    }
    if (c === ':') {
      push('colon', i + 1);
      afterColon = true;
      continue;
    }
    if (afterColon) {
      let j = i;
      while (j < src.length && !VALUE_STOP.test(src[j]!) && !(inRange && (src[j] === ',' || src[j] === ']')))
        j += src[j] === '\\' ? 2 : 1;
      const text = src.slice(i, j);
      if (text.toLowerCase().startsWith('in(') || text.toLowerCase() === 'in') {
        push('keyword', i + 2);
        continue;
      }
      push(text === '*' ? 'wildcard' : 'value', j);
      afterColon = false;
      continue;
    }
    let j = i;
    while (j < src.length && FIELD_CHAR.test(src[j]!)) j++;
    if (j === i) {
      push('text', i + 1);
      continue;
    }
    const word = src.slice(i, j);
    if (src[j] === ':') push('field', j);
    else if (word === '*') push('wildcard', j);
    else if (KEYWORDS.has(word.toLowerCase())) push('keyword', j);
    else push(inRange ? 'value' : 'text', j);
  }
  return out;
}

export interface CompletionSpot {
  /** A field name (or keyword) is being typed, or the value of `field`. */
  kind: 'field' | 'value';
  field: string;
  /** What is typed so far, and where it starts (it is replaced by the chosen item). */
  prefix: string;
  start: number;
}

/** What the word under the caret is: a field name being typed, or the value after `field:`; null inside strings and comments. */
export function completionAt(src: string, caret: number): CompletionSpot | null {
  const before = src.slice(0, caret);
  const line = before.slice(before.lastIndexOf('\n') + 1);
  if (line.includes('#')) return null;
  const quotes = (before.match(/["'`]/g) ?? []).length;
  if (quotes % 2 === 1) return null;
  const value = /([^\s:()|,"'`[\]#]+):([^\s()|"'`]*)$/.exec(before);
  if (value) {
    const field = value[1]!;
    if (field.toLowerCase() === '_exists_')
      return { kind: 'field', field: '', prefix: value[2]!, start: caret - value[2]!.length };
    if (value[2]!.startsWith('[') || value[2]!.startsWith('(')) return null;
    return { kind: 'value', field, prefix: value[2]!, start: caret - value[2]!.length };
  }
  const word = /[^\s:()|,"'`[\]#]*$/.exec(before)![0];
  const after = src.slice(caret);
  if (/^[^\s()|]/.test(after) && !/^\)/.test(after)) return null;
  return { kind: 'field', field: '', prefix: word, start: caret - word.length };
}

/** A value as seq-ql writes it: bare when it is a plain word, else a raw `string` (or a "quoted" one if it holds a backtick). */
export function quoteValue(v: string): string {
  if (/^[A-Za-z0-9_.\-/@]+$/.test(v) && !KEYWORDS.has(v.toLowerCase())) return v;
  if (!v.includes('`')) return `\`${v}\``;
  return `"${v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\*/g, '\\*')}"`;
}

/** The query with `field:value` (or `not field:value`) added as one more condition (and-ed with the rest). */
export function addTerm(query: string, field: string, value: string, negate: boolean): string {
  const term = `${negate ? 'not ' : ''}${field}:${quoteValue(value)}`;
  const q = query.trim();
  if (!q || q === '*') return term;
  const pipe = q.indexOf('|');
  const head = pipe < 0 ? q : q.slice(0, pipe).trim();
  const tail = pipe < 0 ? '' : ` ${q.slice(pipe)}`;
  if (!head || head === '*') return `${term}${tail}`;
  const wrapped = /\bor\b/i.test(head) ? `(${head})` : head;
  return `${wrapped} and ${term}${tail}`;
}
