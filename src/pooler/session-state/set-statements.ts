// Which session parameters a client's SQL may change: the SET, RESET and DISCARD statements of a query text, by name.
import { PARAM_NAME } from '../../protocol/param-names.js';

/** What the statements of some query texts do to session parameters (names in lower case, as PostgreSQL folds them). */
export interface ParamEffects {
  /** Parameters a session-level SET, SET ... TO DEFAULT or RESET names. */
  names: Set<string>;
  /** Of those, the ones whose last statement returned them to the session default (RESET, SET ... TO DEFAULT). */
  resets: Set<string>;
  /** RESET ALL or DISCARD ALL: every parameter back to its session default. */
  resetAll: boolean;
}

export function emptyEffects(): ParamEffects {
  return { names: new Set(), resets: new Set(), resetAll: false };
}

/** Statements split at top-level semicolons, each as its words (lower-cased unless double-quoted) and the
 * punctuation `=`, `.`, `,` as tokens; string literals become one `'` token, comments go. */
export function statementTokens(text: string): string[][] {
  const out: string[][] = [];
  let cur: string[] = [];
  let i = 0;
  const n = text.length;
  while (i < n) {
    const ch = text[i]!;
    if (ch === ';') {
      if (cur.length) out.push(cur);
      cur = [];
      i++;
    } else if (ch === '-' && text[i + 1] === '-') {
      const e = text.indexOf('\n', i);
      i = e < 0 ? n : e + 1;
    } else if (ch === '/' && text[i + 1] === '*') {
      // PostgreSQL nests block comments.
      let depth = 1;
      i += 2;
      while (i < n && depth > 0) {
        if (text[i] === '/' && text[i + 1] === '*') {
          depth++;
          i += 2;
        } else if (text[i] === '*' && text[i + 1] === '/') {
          depth--;
          i += 2;
        } else i++;
      }
    } else if (ch === "'" || ((ch === 'e' || ch === 'E') && text[i + 1] === "'")) {
      const backslash = ch !== "'";
      i += backslash ? 2 : 1;
      while (i < n) {
        const c = text[i]!;
        if (backslash && c === '\\') i += 2;
        else if (c === "'" && text[i + 1] === "'") i += 2;
        else if (c === "'") {
          i++;
          break;
        } else i++;
      }
      cur.push("'");
    } else if (ch === '"') {
      let word = '';
      i++;
      while (i < n) {
        if (text[i] === '"' && text[i + 1] === '"') {
          word += '"';
          i += 2;
        } else if (text[i] === '"') {
          i++;
          break;
        } else word += text[i++];
      }
      cur.push(word);
    } else if (ch === '$') {
      const m = /^\$([A-Za-z_][A-Za-z0-9_]*)?\$/.exec(text.slice(i, i + 64));
      if (m) {
        const e = text.indexOf(m[0], i + m[0].length);
        i = e < 0 ? n : e + m[0].length;
        cur.push("'");
      } else i++;
    } else if (/[A-Za-z0-9_]/.test(ch)) {
      let j = i + 1;
      while (j < n && /[A-Za-z0-9_$]/.test(text[j]!)) j++;
      cur.push(text.slice(i, j).toLowerCase());
      i = j;
    } else {
      if (ch === '=' || ch === '.' || ch === ',') cur.push(ch);
      i++;
    }
  }
  if (cur.length) out.push(cur);
  return out;
}

/** A dotted name starting at tokens[i]: [name, index after it]. */
function nameAt(t: string[], i: number): [string, number] {
  let name = t[i] ?? '';
  let j = i + 1;
  while (t[j] === '.' && t[j + 1] !== undefined) {
    name += `.${t[j + 1]}`;
    j += 2;
  }
  return [name, j];
}

function note(into: ParamEffects, quoted: string, reset: boolean): void {
  // GUC names are looked up without regard to case, quoted or not.
  const name = quoted.toLowerCase();
  if (!PARAM_NAME.test(name)) return;
  into.names.add(name);
  if (reset) into.resets.add(name);
  else into.resets.delete(name);
}

/** Adds the effects of the session-level SET / RESET / DISCARD statements of `text` (SET LOCAL, SET TRANSACTION and
 * SET CONSTRAINTS last one transaction and change nothing after it). Whether they took effect (an error, a rollback)
 * is not known here: the values are read back from the server. */
export function addParamEffects(text: string, into: ParamEffects): void {
  // set_config('name', value, false): a function call changes a parameter too (its name read when it is a literal).
  for (const m of text.matchAll(/set_config\s*\(\s*'([^']*)'/gi)) note(into, m[1]!.toLowerCase(), false);
  for (const t of statementTokens(text)) {
    const verb = t[0];
    if (verb === 'discard') {
      if (t[1] === 'all') into.resetAll = true;
    } else if (verb === 'reset') {
      const w = t[1];
      if (w === 'all') into.resetAll = true;
      else if (w === 'session' && t[2] === 'authorization') note(into, 'session_authorization', true);
      else if (w === 'time' && t[2] === 'zone') note(into, 'timezone', true);
      else if (w !== undefined) note(into, nameAt(t, 1)[0], true);
    } else if (verb === 'set') {
      let i = 1;
      if (t[i] === 'local') continue;
      if (t[i] === 'session') {
        i++;
        if (t[i] === 'authorization') {
          note(into, 'session_authorization', t[i + 1] === 'default');
          continue;
        }
        if (t[i] === 'characteristics') {
          for (const n of [
            'default_transaction_isolation',
            'default_transaction_read_only',
            'default_transaction_deferrable',
          ])
            note(into, n, false);
          continue;
        }
      }
      const w = t[i];
      if (w === undefined || w === 'transaction' || w === 'constraints') continue;
      let name: string;
      let j: number;
      if (w === 'time' && t[i + 1] === 'zone') {
        name = 'timezone';
        j = i + 2;
      } else if (w === 'schema') {
        name = 'search_path';
        j = i + 1;
      } else if (w === 'names') {
        name = 'client_encoding';
        j = i + 1;
      } else if (w === 'xml' && t[i + 1] === 'option') {
        name = 'xmloption';
        j = i + 2;
      } else [name, j] = nameAt(t, i);
      if (t[j] === 'to' || t[j] === '=') j++;
      note(into, name, t[j] === 'default' && t.length === j + 1);
    }
  }
}
