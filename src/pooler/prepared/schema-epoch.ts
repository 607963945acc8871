// Schema changes the pooler saw on a database: part of every cached statement's identity, so a Parse sent after DDL is parsed anew by PostgreSQL.

/** Counts the schema changes seen on one database (every pool on it shares one). */
export class SchemaEpoch {
  value = 0;

  bump(): void {
    this.value++;
  }
}

const byDatabase = new Map<string, SchemaEpoch>();

/** The epoch of a database (`host:port/database` of the servers): the same object for every pool that reaches it. */
export function schemaEpochFor(database: string): SchemaEpoch {
  let e = byDatabase.get(database);
  if (!e) byDatabase.set(database, (e = new SchemaEpoch()));
  return e;
}

/** A statement-opening word that may change what a Parse of another text infers (a table, type, function, search
 * path target...): CREATE, ALTER, DROP, DO (an anonymous block may run any DDL), IMPORT FOREIGN SCHEMA. Checked at
 * the start of the text and after each `;` (comments before a statement are skipped). */
const SCHEMA_WORD = /(?:^|;)(?:\s|--[^\n]*(?:\n|$)|\/\*[\s\S]*?\*\/)*(?:create|alter|drop|do|import)\b/i;

/** True when a Query or Parse text may change the schema (see SCHEMA_WORD). */
export function maySchemaChange(text: string): boolean {
  return SCHEMA_WORD.test(text);
}

const SCHEMA_WORDS = ['create', 'alter', 'drop', 'do', 'import'].map((w) => Buffer.from(w));

function isLetter(c: number): boolean {
  const l = c | 0x20;
  return (l >= 0x61 && l <= 0x7a) || c === 0x5f || (c >= 0x30 && c <= 0x39) || c >= 0x80;
}

/** maySchemaChange on a Parse's text bytes, making no string for the texts that cannot match: the first word is
 * compared in place (INSERT, SELECT, DELETE... need nothing more); only a text that opens with a comment or holds a
 * `;` (a later statement) goes through the regular expression. */
export function maySchemaChangeBytes(query: Buffer): boolean {
  let i = 0;
  while (i < query.length && (query[i] === 0x20 || (query[i]! >= 0x09 && query[i]! <= 0x0d))) i++;
  const c = query[i] ?? 0;
  if (c === 0x2d || c === 0x2f || query.indexOf(0x3b, i) >= 0) return maySchemaChange(query.toString('latin1'));
  let end = i;
  while (end < query.length && isLetter(query[end]!)) end++;
  return SCHEMA_WORDS.some((w) => w.length === end - i && w.every((b, k) => (query[i + k]! | 0x20) === b));
}

const SCHEMA_TAGS = ['CREATE ', 'ALTER ', 'DROP ', 'IMPORT FOREIGN SCHEMA'].map((t) => Buffer.from(t));
const DO_TAG = Buffer.from('DO');

/** A CommandComplete tag (bytes `from` to `to`, its NUL excluded) of a schema change, compared in place (the JavaScript
 * relay's twin of native/relay-scan.h ChangesSchema): CREATE, ALTER, DROP, DO, IMPORT FOREIGN SCHEMA. */
export function isSchemaTagAt(buf: Buffer, from: number, to: number): boolean {
  if (to - from === 2) return buf.compare(DO_TAG, 0, 2, from, to) === 0;
  return SCHEMA_TAGS.some((t) => to - from >= t.length && buf.compare(t, 0, t.length, from, from + t.length) === 0);
}
