// Turns a parsed document into index tokens per field, following the mapping (keyword, text, path, exists).
import { EXISTS_FIELD, type FieldType, type MappingSpec } from './mapping.js';

/**
 * Receives the tokens of one document. The same (field, token) may arrive more than once (arrays, repeated
 * words): sinks keep it once. `keyword` is a token that is also a keyword value (the first one of a field
 * is its column value for aggregations).
 */
export interface TokenSink {
  token(field: string, token: string): void;
  keyword(field: string, token: string): void;
  /** A number of a keyword-only field: its token is String(value); sinks may skip making that string. */
  keywordNumber?(field: string, value: number): void;
}

const WORD_SPLIT = /[^\p{L}\p{N}_]+/u;

export function keywordToken(value: string, maxTokenSize: number): string {
  const v = value.length > maxTokenSize ? value.slice(0, maxTokenSize) : value;
  return v.toLowerCase();
}

/** Words (letters, digits, _) of a text value, lowercased (the same split is applied to query values). */
export function textTokens(value: string, maxTokenSize: number): string[] {
  const v = value.toLowerCase();
  const out: string[] = [];
  let start = -1;
  // ASCII fast path; any other character falls back to the Unicode-aware split.
  for (let i = 0; i < v.length; i++) {
    const c = v.charCodeAt(i);
    if (c >= 128) return unicodeWords(v, maxTokenSize);
    if ((c >= 97 && c <= 122) || (c >= 48 && c <= 57) || c === 95) {
      if (start < 0) start = i;
    } else if (start >= 0) {
      out.push(i - start > maxTokenSize ? v.slice(start, start + maxTokenSize) : v.slice(start, i));
      start = -1;
    }
  }
  if (start >= 0) out.push(v.length - start > maxTokenSize ? v.slice(start, start + maxTokenSize) : v.slice(start));
  return out;
}

function unicodeWords(v: string, maxTokenSize: number): string[] {
  const out: string[] = [];
  for (const w of v.split(WORD_SPLIT)) if (w) out.push(w.length > maxTokenSize ? w.slice(0, maxTokenSize) : w);
  return out;
}

/** Every prefix of a path ("/a/b" -> "/a", "/a/b"), lowercased. */
export function pathTokens(value: string, maxTokenSize: number): string[] {
  const v = value.toLowerCase();
  const out: string[] = [];
  let i = v.indexOf('/', 1);
  while (i > 0) {
    out.push(v.slice(0, i));
    i = v.indexOf('/', i + 1);
  }
  if (v && !v.endsWith('/')) out.push(v);
  else if (v.length > 1) out.push(v.slice(0, -1));
  return out.map((t) => (t.length > maxTokenSize ? t.slice(0, maxTokenSize) : t));
}

function scalar(v: unknown): string | null {
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return null;
}

function emitValue(types: readonly FieldType[], field: string, v: string, m: MappingSpec, sink: TokenSink): void {
  for (const type of types) {
    switch (type) {
      case 'keyword': {
        sink.keyword(field, keywordToken(v, m.maxTokenSize));
        break;
      }
      case 'text':
        for (const tok of textTokens(v, m.maxTokenSize)) sink.token(field, tok);
        break;
      case 'path':
        for (const tok of pathTokens(v, m.maxTokenSize)) sink.token(field, tok);
        break;
      case 'exists':
        break;
    }
  }
}

function visit(value: unknown, field: string, m: MappingSpec, sink: TokenSink): void {
  if (value === null || value === undefined) return;
  if (typeof value === 'object') {
    if (Array.isArray(value)) {
      for (const v of value) visit(v, field, m, sink);
      return;
    }
    for (const k in value as Record<string, unknown>) visit((value as Record<string, unknown>)[k], field ? `${field}.${k}` : k, m, sink);
    return;
  }
  const types = m.fields[field] ?? (m.auto ? AUTO_TYPES : null);
  if (!types) return;
  if (typeof value === 'number' && sink.keywordNumber && types.length === 1 && types[0] === 'keyword') {
    sink.token(EXISTS_FIELD, field);
    sink.keywordNumber(field, value);
    return;
  }
  const s = scalar(value);
  if (s === null) return;
  sink.token(EXISTS_FIELD, field);
  emitValue(types, field, s, m, sink);
}

const AUTO_TYPES: readonly FieldType[] = ['keyword'];

/** Emits the tokens of one document, and its field names as tokens of the `_exists_` pseudo-field. */
export function tokenizeDoc(doc: Record<string, unknown>, m: MappingSpec, sink: TokenSink): void {
  visit(doc, '', m, sink);
}
