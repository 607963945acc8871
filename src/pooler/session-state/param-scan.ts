// The JavaScript relay's twin of native/relay-scan.h ParamStatement and ParamWords: does a client message's query text maybe change a session parameter?

const FrontendQuery = 0x51; // Q
const FrontendParse = 0x50; // P
const SEMICOLON = 0x3b;
const UNDERSCORE = 0x5f;

function isLetter(ch: number): boolean {
  const l = ch | 0x20;
  return l >= 0x61 && l <= 0x7a;
}

/** At `pos` (after spaces and '('): the word is SET, RESET or DISCARD. */
function keywordAt(buf: Buffer, pos: number, end: number): boolean {
  while (pos < end) {
    const ch = buf[pos]!;
    if (ch !== 0x20 && ch !== 0x09 && ch !== 0x0a && ch !== 0x0d && ch !== 0x28) break;
    pos++;
  }
  let n = 0;
  while (pos + n < end && n < 8 && isLetter(buf[pos + n]!)) n++;
  if (n !== 3 && n !== 5 && n !== 7) return false;
  const word = buf.toString('latin1', pos, pos + n).toLowerCase();
  return word === 'set' || word === 'reset' || word === 'discard';
}

const SET = [0x73, 0x65, 0x74];
const CONFIG = [0x63, 0x6f, 0x6e, 0x66, 0x69, 0x67];

/** buf[pos, end) holds a statement start (at pos when `atStart`, else after a ';') whose first word is SET, RESET or
 * DISCARD, or set_config in any case anywhere. */
export function paramWords(buf: Buffer, pos: number, end: number, atStart: boolean): boolean {
  const from = pos;
  if (!atStart) {
    const semi = buf.indexOf(SEMICOLON, pos);
    pos = semi < 0 || semi >= end ? end : semi + 1;
  }
  while (pos < end) {
    if (keywordAt(buf, pos, end)) return true;
    const semi = buf.indexOf(SEMICOLON, pos);
    if (semi < 0 || semi >= end) break;
    pos = semi + 1;
  }
  let u = buf.indexOf(UNDERSCORE, from + 3);
  while (u >= 0 && u + 7 <= end) {
    let match = true;
    for (let k = 0; k < 3 && match; k++) match = (buf[u - 3 + k]! | 0x20) === SET[k];
    for (let k = 0; k < 6 && match; k++) match = (buf[u + 1 + k]! | 0x20) === CONFIG[k];
    if (match) return true;
    u = buf.indexOf(UNDERSCORE, u + 1);
  }
  return false;
}

/** A Query or Parse message at buf[start] (`complete`: all of it is in buf): 0 when its text may not change a
 * parameter (cut by the read and nothing found in what is here: `tail.left` gets the bytes still to come, for
 * paramWords on them); 1 when it may (`text` gets the query text); 2 when it may but is cut. Same answers as the
 * native scan (a false hit costs one read-back, never a wrong value). */
export function paramStatement(
  type: number,
  buf: Buffer,
  start: number,
  len: number,
  complete: boolean,
  text: { value: string },
  tail: { left: number },
): 0 | 1 | 2 {
  if (type !== FrontendQuery && type !== FrontendParse) return 0;
  const bodyEnd = start + 1 + len;
  const end = complete ? bodyEnd : Math.min(bodyEnd, buf.length);
  let pos = start + 5;
  if (type === FrontendParse) {
    const nul = buf.indexOf(0, pos);
    if (nul < 0 || nul >= end) {
      if (!complete) tail.left = bodyEnd - end;
      return 0;
    }
    pos = nul + 1;
  }
  const textStart = pos;
  let textEnd = pos < end ? buf.indexOf(0, pos) : -1;
  const terminated = textEnd >= 0 && textEnd < end;
  if (!terminated) textEnd = end;
  const found = paramWords(buf, textStart, textEnd, true);
  if (!complete) {
    if (found) return 2;
    if (!terminated) tail.left = bodyEnd - end;
    return 0;
  }
  if (!found || !terminated) return 0;
  text.value = buf.toString('utf8', textStart, textEnd);
  return 1;
}
