// A small typed schema for config files: validates, fills defaults, freezes, and derives the TS types.
import { readFileSync } from 'node:fs';
import { parseDuration, parseSize } from './units.js';

export interface Problem {
  path: string;
  expected: string;
  found: string;
  hint?: string;
}

export interface Field<T> {
  readonly kind: 'field';
  /** What a bad value is told it should be ("an integer in [1, 65535]"). */
  readonly expected: string;
  /** The value's type in the config reference ("integer", "duration"). */
  readonly type: string;
  readonly default: T | undefined;
  /** The default as the config reference shows it, where the value itself depends on the machine ("the CPU count"). */
  readonly shownDefault?: string;
  /** A running process keeps the value it started with: RELOAD does not apply it (SHOW CONFIG's changeable: no). */
  readonly restart?: boolean;
  readonly doc: string;
  parse(v: unknown): { ok: true; value: T } | { ok: false };
}

export interface Section<S extends Shape> {
  readonly kind: 'section';
  readonly shape: S;
}
/** `name`: what an entry's key is, as the config reference shows it (`[pools.<database>]`). */
export interface Table<S extends Shape> {
  readonly kind: 'table';
  readonly shape: S;
  readonly expected: string;
  readonly name: string;
}
export interface List<S extends Shape> {
  readonly kind: 'list';
  readonly shape: S;
}
export type Node = Field<unknown> | Section<Shape> | Table<Shape> | List<Shape>;
export type Shape = { readonly [key: string]: Node };

export type Infer<N> =
  N extends Field<infer T>
    ? T
    : N extends Section<infer S>
      ? InferShape<S>
      : N extends Table<infer S>
        ? Readonly<Record<string, InferShape<S>>>
        : N extends List<infer S>
          ? readonly InferShape<S>[]
          : never;
export type InferShape<S extends Shape> = { readonly [K in keyof S]: Infer<S[K]> };

function describe(v: unknown): string {
  if (v === null || v === undefined) return 'nothing';
  if (Array.isArray(v)) return `an array (${JSON.stringify(v).slice(0, 60)})`;
  if (typeof v === 'object') return 'a table';
  if (typeof v === 'string') return `the string ${JSON.stringify(v)}`;
  return `${typeof v} ${String(v)}`;
}

function field<T>(
  type: string,
  expected: string,
  def: T | undefined,
  doc: string,
  parse: (v: unknown) => T | undefined,
): Field<T> {
  return {
    kind: 'field',
    type,
    expected,
    default: def,
    doc,
    parse(v) {
      const r = parse(v);
      return r === undefined ? { ok: false } : { ok: true, value: r };
    },
  };
}

const quoted = (values: readonly string[]) => values.map((x) => JSON.stringify(x)).join(', ');

export const t = {
  string: (def: string, doc = '') =>
    field<string>('string', 'a string', def, doc, (v) => (typeof v === 'string' ? v : undefined)),
  optString: (doc = '') =>
    field<string | null>('string', 'a string', null, doc, (v) => (typeof v === 'string' ? v : undefined)),
  requiredString: (doc = '') =>
    field<string>('string', 'a string', undefined, doc, (v) => (typeof v === 'string' ? v : undefined)),
  int: (def: number | undefined, doc = '', min = 0, max = Number.MAX_SAFE_INTEGER) =>
    field<number>(
      max === Number.MAX_SAFE_INTEGER ? `integer >= ${min}` : `integer ${min}..${max}`,
      `an integer in [${min}, ${max}]`,
      def,
      doc,
      (v) => {
        const n = typeof v === 'bigint' ? Number(v) : v;
        return typeof n === 'number' && Number.isInteger(n) && n >= min && n <= max ? n : undefined;
      },
    ),
  bool: (def: boolean, doc = '') =>
    field<boolean>('boolean', 'true or false', def, doc, (v) => (typeof v === 'boolean' ? v : undefined)),
  duration: (def: number, doc = '') =>
    field<number>(
      'duration',
      'a duration ("250ms", "5s", "10m" or milliseconds)',
      def,
      doc,
      (v) => parseDuration(v) ?? undefined,
    ),
  size: (def: number, doc = '') =>
    field<number>('size', 'a size ("256MB" or bytes)', def, doc, (v) => parseSize(v) ?? undefined),
  oneOf: <const V extends string>(values: readonly V[], def: V | undefined, doc = '') =>
    field<V>(values.map((x) => JSON.stringify(x)).join(' | '), `one of ${quoted(values)}`, def, doc, (v) =>
      typeof v === 'string' && (values as readonly string[]).includes(v) ? (v as V) : undefined,
    ),
  optOneOf: <const V extends string>(values: readonly V[], doc = '') =>
    field<V | null>(values.map((x) => JSON.stringify(x)).join(' | '), `one of ${quoted(values)}`, null, doc, (v) =>
      typeof v === 'string' && (values as readonly string[]).includes(v) ? (v as V) : undefined,
    ),
  stringList: (def: string[], doc = '') =>
    field<readonly string[]>('list of strings', 'a list of strings', def, doc, (v) =>
      Array.isArray(v) && v.every((x) => typeof x === 'string') ? Object.freeze([...v] as string[]) : undefined,
    ),
  section: <S extends Shape>(shape: S): Section<S> => ({ kind: 'section', shape }),
  table: <S extends Shape>(shape: S, expected = 'a table of named entries', name = 'name'): Table<S> => ({
    kind: 'table',
    shape,
    expected,
    name,
  }),
  list: <S extends Shape>(shape: S): List<S> => ({ kind: 'list', shape }),
};

function editDistance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => [i, ...new Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0]![j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
  }
  return d[a.length]![b.length]!;
}

/** The closest known key, when one is close enough to be a likely typo. */
export function didYouMean(key: string, known: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestD = Infinity;
  for (const k of known) {
    const dist = editDistance(key.toLowerCase(), k.toLowerCase());
    if (dist < bestD) {
      bestD = dist;
      best = k;
    }
  }
  return best !== undefined && bestD <= Math.max(2, Math.floor(key.length / 3)) ? best : undefined;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Date);
}

function join(path: string, key: string): string {
  return path ? `${path}.${key}` : key;
}

function validateShape(
  shape: Shape,
  input: Record<string, unknown>,
  path: string,
  problems: Problem[],
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const known = Object.keys(shape);
  for (const key of Object.keys(input)) {
    if (key in shape) continue;
    const hint = didYouMean(key, known);
    problems.push({
      path: join(path, key),
      expected: `one of the known keys (${known.join(', ')})`,
      found: 'an unknown key',
      hint: hint ? `did you mean "${hint}"?` : undefined,
    });
  }
  for (const key of known) {
    const node = shape[key]!;
    out[key] = validateNode(node, input[key], join(path, key), problems);
  }
  return Object.freeze(out);
}

function validateNode(node: Node, raw: unknown, path: string, problems: Problem[]): unknown {
  switch (node.kind) {
    case 'field': {
      if (raw === undefined) {
        if (node.default === undefined)
          problems.push({ path, expected: node.expected, found: 'nothing (the key is required)' });
        return node.default;
      }
      const r = node.parse(raw);
      if (!r.ok) {
        problems.push({ path, expected: node.expected, found: describe(raw) });
        return node.default;
      }
      return r.value;
    }
    case 'section': {
      // An empty YAML section ("limits:" with nothing under it) parses as null: all defaults.
      if (raw === undefined || raw === null) raw = {};
      if (!isPlainObject(raw)) {
        problems.push({ path, expected: 'a table', found: describe(raw) });
        raw = {};
      }
      return validateShape(node.shape, raw as Record<string, unknown>, path, problems);
    }
    case 'table': {
      if (raw === undefined) return Object.freeze({});
      if (!isPlainObject(raw)) {
        problems.push({ path, expected: node.expected, found: describe(raw) });
        return Object.freeze({});
      }
      const out: Record<string, unknown> = {};
      for (const [name, value] of Object.entries(raw)) {
        if (!isPlainObject(value)) {
          problems.push({ path: join(path, name), expected: 'a table', found: describe(value) });
          continue;
        }
        out[name] = validateShape(node.shape, value, join(path, name), problems);
      }
      return Object.freeze(out);
    }
    case 'list': {
      if (raw === undefined) return Object.freeze([]);
      if (!Array.isArray(raw)) {
        problems.push({ path, expected: 'a list of tables', found: describe(raw) });
        return Object.freeze([]);
      }
      return Object.freeze(
        raw.map((item, i) => {
          if (!isPlainObject(item)) {
            problems.push({ path: `${path}[${i}]`, expected: 'a table', found: describe(item) });
            return Object.freeze({});
          }
          return validateShape(node.shape, item, `${path}[${i}]`, problems);
        }),
      );
    }
  }
}

/** Validates `input` against `shape`, filling defaults; the result is deeply frozen. */
export function validate<S extends Shape>(shape: S, input: unknown): { value: InferShape<S>; problems: Problem[] } {
  const problems: Problem[] = [];
  const obj = isPlainObject(input) ? input : {};
  const value = validateShape(shape, obj, '', problems) as InferShape<S>;
  return { value, problems };
}

export function formatProblem(p: Problem): string {
  return `${p.path}: expected ${p.expected}, found ${p.found}${p.hint ? ` (${p.hint})` : ''}`;
}

/** A field whose default the config reference shows as `text` (the value depends on the machine). */
export function shownAs<T>(f: Field<T>, text: string): Field<T> {
  return { ...f, shownDefault: text };
}

/** A field that takes effect at the next start only; the config reference says "Needs a restart." after its doc. */
export function restartOnly<T>(f: Field<T>): Field<T> {
  return { ...f, restart: true };
}

/** Flattens a schema into (path, default, doc, restart) rows for SHOW CONFIG. */
export function describeShape(
  shape: Shape,
  prefix = '',
): { key: string; default: unknown; doc: string; restart: boolean }[] {
  const rows: { key: string; default: unknown; doc: string; restart: boolean }[] = [];
  for (const [key, node] of Object.entries(shape)) {
    const p = join(prefix, key);
    if (node.kind === 'field')
      rows.push({ key: p, default: node.default, doc: node.doc, restart: node.restart === true });
    else if (node.kind === 'section') rows.push(...describeShape(node.shape, p));
  }
  return rows;
}

/**
 * Reads a config file and parses it with `parse`; throws `fail(file, problems)` listing every problem (an unreadable
 * file is one problem at `(file)`). Each program's loader is this with its own parser and error class.
 */
export function loadConfigFile<C>(
  file: string,
  parse: (text: string) => { config: C; problems: Problem[] },
  fail: (file: string, problems: Problem[]) => Error,
): C {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw fail(file, [{ path: '(file)', expected: 'a readable file', found: (err as Error).message }]);
  }
  const { config, problems } = parse(text);
  if (problems.length) throw fail(file, problems);
  return config;
}
