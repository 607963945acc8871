// Which client message engages the statement rewriter (JavaScript relay; the native relay's twin is WantsRewrite in native/relay-scan.h): until one comes, a client's bytes pass straight through.
import { FrontendMessage } from '../../protocol/codes.js';

/** Types that always go through the rewriter: the extended protocol's statement and portal messages. */
const EXTENDED = new Uint8Array(256);
for (const t of [FrontendMessage.Parse, FrontendMessage.Bind, FrontendMessage.Describe, FrontendMessage.Close])
  EXTENDED[t] = 1;

/** Types whose message may engage the rewriter, for a header cut by a read (its type byte is all there is). */
export const DIVERT_TYPES = new Uint8Array(EXTENDED);
DIVERT_TYPES[FrontendMessage.Query] = 1;

const enum Ch {
  Tab = 9,
  Lf = 10,
  Vt = 11,
  Ff = 12,
  Cr = 13,
  Space = 32,
  Star = 42,
  Dash = 45,
  Slash = 47,
}

/** The first words the rewriter acts on (rewriter.ts: SQL PREPARE, EXECUTE, DEALLOCATE; DISCARD and DEALLOCATE ALL drop a client's statements). */
const WORDS = new Set(['prepare', 'execute', 'deallocate', 'discard']);

/**
 * Whether the client message at buf[start] (type, length field `len`) must go through the rewriter: Parse, Bind,
 * Describe, Close, or a Query whose first word, after whitespace and SQL comments, is PREPARE, EXECUTE, DEALLOCATE or
 * DISCARD in any case. Only bytes before `end` are looked at; a Query whose first word is not all there (or that
 * starts with something this scan does not know to skip, such as a non-ASCII byte) counts as one that may be.
 */
export function wantsRewrite(type: number, buf: Buffer, start: number, len: number, end: number): boolean {
  if (EXTENDED[type] === 1) return true;
  if (type !== FrontendMessage.Query) return false;
  const bodyEnd = start + 1 + len;
  const stop = bodyEnd - 1 < end ? bodyEnd - 1 : end; // the text, without its terminating NUL when it is here
  let pos = start + 5;
  for (;;) {
    if (pos >= stop) return stop < bodyEnd - 1; // cut by the read: maybe; an empty or all-comment text: no
    const c = buf[pos]!;
    if (c === Ch.Space || (c >= Ch.Tab && c <= Ch.Cr)) pos++;
    else if ((c === Ch.Dash || c === Ch.Slash) && pos + 1 >= stop)
      return stop < bodyEnd - 1; // a comment may start here
    else if (c === Ch.Dash && buf[pos + 1] === Ch.Dash && pos + 1 < stop) {
      while (pos < stop && buf[pos] !== Ch.Lf) pos++;
    } else if (c === Ch.Slash && buf[pos + 1] === Ch.Star && pos + 1 < stop) {
      // Block comments nest in PostgreSQL.
      let depth = 1;
      pos += 2;
      while (depth > 0) {
        if (pos + 1 >= stop) return stop < bodyEnd - 1;
        if (buf[pos] === Ch.Slash && buf[pos + 1] === Ch.Star) {
          depth++;
          pos += 2;
        } else if (buf[pos] === Ch.Star && buf[pos + 1] === Ch.Slash) {
          depth--;
          pos += 2;
        } else pos++;
      }
    } else break;
  }
  // Most texts start with another word (SELECT, INSERT, BEGIN ...): decided by its first letter.
  const first = buf[pos]! | 0x20;
  if (first !== 0x70 && first !== 0x65 && first !== 0x64) return buf[pos]! >= 0x80; // p, e, d
  let word = '';
  for (; pos < stop; pos++) {
    const c = buf[pos]! | 0x20;
    if (c < 0x61 || c > 0x7a) break;
    word += String.fromCharCode(c);
    if (word.length > 10) return false;
  }
  if (pos >= stop && stop < bodyEnd - 1) return true; // the word may go on in the next read
  if (pos < stop && buf[pos]! >= 0x80) return true; // a letter PostgreSQL may take as part of the word
  return WORDS.has(word);
}
