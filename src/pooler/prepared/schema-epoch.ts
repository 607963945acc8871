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
  if (!e) byDatabase.set(database, e = new SchemaEpoch());
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

/** maySchemaChange on a Parse's text bytes, without making a string for the texts that cannot match: those whose
 * first non-blank byte is no letter of the words nor a comment's, and that hold no `;`. */
export function maySchemaChangeBytes(query: Buffer): boolean {
  let i = 0;
  while (i < query.length && (query[i] === 0x20 || (query[i]! >= 0x09 && query[i]! <= 0x0d))) i++;
  const c = (query[i] ?? 0) | 0x20;
  const candidate = c === 0x63 || c === 0x61 || c === 0x64 || c === 0x69 || c === 0x2d || c === 0x2f;
  if (!candidate && query.indexOf(0x3b) < 0) return false;
  return maySchemaChange(query.toString('latin1'));
}

/** The first byte of such a tag (C, A, D, I): the others (SELECT, INSERT's I aside...) need no string. */
export function mayBeSchemaTag(first: number | undefined): boolean {
  return first === 0x43 || first === 0x41 || first === 0x44 || first === 0x49;
}

/** The same test on a CommandComplete tag (the JavaScript relay's twin of native/relay-scan.h ChangesSchema). */
export function isSchemaTag(tag: string): boolean {
  return tag.startsWith('CREATE ') || tag.startsWith('ALTER ') || tag.startsWith('DROP ') || tag === 'DO' || tag.startsWith('IMPORT FOREIGN SCHEMA');
}
