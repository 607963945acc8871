// The SQL-level prepared-statement commands a client may send as a whole simple Query: PREPARE, EXECUTE, DEALLOCATE (one statement each).
import type { Statement } from './interner.js';

export type SqlCommand =
  | { kind: 'prepare'; name: string; types: string | null; body: string }
  | { kind: 'execute'; name: string; args: string }
  | { kind: 'deallocate'; name: string };

const NAME = String.raw`("(?:[^"]|"")+"|[a-z_][a-z0-9_$]*)`;
const PREPARE = new RegExp(
  String.raw`^\s*prepare\s+${NAME}\s*(?:\(((?:[^()]|\([^()]*\))*)\))?\s+as\s+([\s\S]+?)\s*;?\s*$`,
  'i',
);
const EXECUTE = new RegExp(String.raw`^\s*execute\s+${NAME}\s*(\([\s\S]*\))?\s*;?\s*$`, 'i');
const DEALLOCATE = new RegExp(String.raw`^\s*deallocate\s+(?:prepare\s+)?${NAME}\s*;?\s*$`, 'i');

/** A name as PostgreSQL stores it: quoted as written, unquoted folded to lower case. */
export function sqlIdentifier(token: string): string {
  return token.startsWith('"') ? token.slice(1, -1).replace(/""/g, '"') : token.toLowerCase();
}

/** A name written so that PostgreSQL reads it back as `name`. */
export function quoteIdentifier(name: string): string {
  return /^[a-z_][a-z0-9_$]*$/.test(name) ? name : `"${name.replace(/"/g, '""')}"`;
}

/**
 * The command in a simple Query's text, or null when it is something else. A text with a semicolon inside
 * (several statements, or one that only looks like one of these) is left to PostgreSQL as it is.
 */
export function parseSqlCommand(text: string): SqlCommand | null {
  const first = /^\s*([a-z]+)/i.exec(text)?.[1]?.toLowerCase();
  if (first !== 'prepare' && first !== 'execute' && first !== 'deallocate') return null;
  if (text.replace(/;\s*$/, '').includes(';')) return null;
  let m = DEALLOCATE.exec(text);
  if (m) return m[1]!.toLowerCase() === 'all' ? null : { kind: 'deallocate', name: sqlIdentifier(m[1]!) };
  m = PREPARE.exec(text);
  if (m) return { kind: 'prepare', name: sqlIdentifier(m[1]!), types: m[2] ?? null, body: m[3]! };
  m = EXECUTE.exec(text);
  if (m) return { kind: 'execute', name: sqlIdentifier(m[1]!), args: m[2] ?? '' };
  return null;
}

/** A statement that came from a SQL PREPARE: its `types` hold `sql:` and the declared type list as text. */
export function isSql(s: Statement): boolean {
  return s.types.length >= 4 && s.types.toString('latin1', 0, 4) === 'sql:';
}

/** The PREPARE that creates a SQL-level statement under its pooler name. */
export function sqlPrepare(s: Statement): string {
  const types = s.types.toString('utf8', 4);
  return `PREPARE ${quoteIdentifier(s.name)}${types ? `(${types})` : ''} AS ${s.query.toString('utf8')}`;
}
