// Field mapping: which document fields are indexed and how (keyword, text, path, exists); "auto" = all keyword.
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';

export const FIELD_TYPES = ['keyword', 'text', 'path', 'exists'] as const;
export type FieldType = (typeof FIELD_TYPES)[number];

/** The pseudo-field whose tokens are the names of the fields a document has. */
export const EXISTS_FIELD = '_exists_';

/** Plain data so it crosses into workers as is. */
export interface MappingSpec {
  auto: boolean;
  /** Dotted field path -> its index types. */
  fields: Record<string, FieldType[]>;
  /** Longest token kept (longer values are truncated), in UTF-16 units. */
  maxTokenSize: number;
}

export const DEFAULT_MAX_TOKEN_SIZE = 72;

export class MappingError extends Error {
  constructor(
    readonly file: string,
    readonly where: string,
    message: string,
  ) {
    super(`${file}: ${where}: ${message}`);
    this.name = 'MappingError';
  }
}

export function autoMapping(): MappingSpec {
  return { auto: true, fields: {}, maxTokenSize: DEFAULT_MAX_TOKEN_SIZE };
}

/**
 * The types the mapping itself names for a field, or undefined. Only own entries count: a document field
 * named `toString` or `__proto__` must not find Object.prototype's members.
 */
export function mappedTypes(m: MappingSpec, field: string): FieldType[] | undefined {
  return Object.hasOwn(m.fields, field) ? m.fields[field] : undefined;
}

/** Types of a field under the mapping, or null when the field is not indexed. */
export function fieldTypes(m: MappingSpec, field: string): readonly FieldType[] | null {
  if (field === EXISTS_FIELD) return ['keyword'];
  const t = mappedTypes(m, field);
  if (t) return t;
  return m.auto ? ['keyword'] : null;
}

function isObj(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function walk(file: string, list: unknown, prefix: string, where: string, out: Record<string, FieldType[]>): void {
  if (!Array.isArray(list)) throw new MappingError(file, where, 'expected a list of {name, type} entries');
  list.forEach((entry, i) => {
    const at = `${where}[${i}]`;
    if (!isObj(entry)) throw new MappingError(file, at, 'expected an entry {name, type}');
    const name = entry.name;
    if (typeof name !== 'string' || name === '')
      throw new MappingError(file, `${at}.name`, 'expected a non-empty string');
    const full = prefix ? `${prefix}.${name}` : name;
    const rawTypes: unknown[] =
      entry.types !== undefined ? (Array.isArray(entry.types) ? entry.types : [entry.types]) : [entry.type];
    for (const rt of rawTypes) {
      const type = isObj(rt) ? rt.type : rt;
      if (type === 'object') {
        walk(file, entry['mapping-list'] ?? entry.mapping_list ?? entry.fields, full, `${at}.mapping-list`, out);
        continue;
      }
      if (typeof type !== 'string' || !(FIELD_TYPES as readonly string[]).includes(type)) {
        throw new MappingError(
          file,
          `${at}.type`,
          `expected one of keyword, text, path, exists, object; found ${JSON.stringify(type)}`,
        );
      }
      const types = Object.hasOwn(out, full) ? out[full]! : (out[full] = []);
      if (!types.includes(type as FieldType)) types.push(type as FieldType);
    }
  });
}

/** Parses mapping YAML: a list of {name, type | types, mapping-list} or {mapping-list: [...]}. */
export function parseMapping(text: string, file = '(mapping)'): MappingSpec {
  let raw: unknown;
  try {
    raw = parseYaml(text);
  } catch (err) {
    throw new MappingError(file, '(file)', `invalid YAML: ${(err as Error).message.split('\n')[0]}`);
  }
  let maxTokenSize = DEFAULT_MAX_TOKEN_SIZE;
  let list = raw;
  if (isObj(raw)) {
    list = raw['mapping-list'] ?? raw.mapping_list ?? raw.fields;
    if (raw.max_token_size !== undefined) {
      if (typeof raw.max_token_size !== 'number' || !Number.isInteger(raw.max_token_size) || raw.max_token_size < 1) {
        throw new MappingError(file, 'max_token_size', 'expected a positive integer');
      }
      maxTokenSize = raw.max_token_size;
    }
  }
  // No prototype: a mapped field named __proto__ is an entry like any other.
  const fields: Record<string, FieldType[]> = Object.create(null) as Record<string, FieldType[]>;
  walk(file, list, '', 'mapping-list', fields);
  return { auto: false, fields, maxTokenSize };
}

export function loadMapping(pathOrAuto: string): MappingSpec {
  if (pathOrAuto === 'auto') return autoMapping();
  let text: string;
  try {
    text = readFileSync(pathOrAuto, 'utf8');
  } catch (err) {
    throw new MappingError(pathOrAuto, '(file)', (err as Error).message);
  }
  return parseMapping(text, pathOrAuto);
}
