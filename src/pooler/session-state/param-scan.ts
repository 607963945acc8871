// The JavaScript relay's twin of native/relay-scan.h ParamStatement: does a client message's query text maybe change a session parameter?

const FrontendQuery = 0x51; // Q
const FrontendParse = 0x50; // P
const SEMICOLON = 0x3b;

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
  if (pos + n < end && isLetter(buf[pos + n]!)) return false;
  const word = buf.toString('latin1', pos, pos + n).toLowerCase();
  return word === 'set' || word === 'reset' || word === 'discard';
}

/** A Query or Parse message at buf[start] (`complete`: all of it is in buf): 0 when no statement of its text begins
 * with SET, RESET or DISCARD and it calls no set_config; 1 when one does (`text` gets the query text); 2 when the message is cut (maybe). Same
 * answers as the native scan (a false hit costs one read-back, never a wrong value). */
export function paramStatement(type: number, buf: Buffer, start: number, len: number, complete: boolean, text: { value: string }): 0 | 1 | 2 {
  if (type !== FrontendQuery && type !== FrontendParse) return 0;
  if (!complete) return 2;
  const end = start + 1 + len;
  let pos = start + 5;
  if (type === FrontendParse) {
    const nul = buf.indexOf(0, pos);
    if (nul < 0 || nul >= end) return 0;
    pos = nul + 1;
  }
  const textStart = pos;
  let textEnd = buf.indexOf(0, pos);
  if (textEnd < 0 || textEnd >= end) textEnd = end;
  for (;;) {
    if (keywordAt(buf, pos, textEnd)) break;
    const semi = buf.indexOf(SEMICOLON, pos);
    if (semi < 0 || semi >= textEnd) {
      if (!callsSetConfig(buf, textStart, textEnd)) return 0;
      break;
    }
    pos = semi + 1;
  }
  text.value = buf.toString('utf8', textStart, textEnd);
  return 1;
}

const SET = [0x73, 0x65, 0x74];
const CONFIG = [0x63, 0x6f, 0x6e, 0x66, 0x69, 0x67];

/** "set_config" in any case anywhere in buf[start, end). */
function callsSetConfig(buf: Buffer, start: number, end: number): boolean {
  let u = buf.indexOf(0x5f, start + 3);
  while (u >= 0 && u + 7 <= end) {
    let match = true;
    for (let k = 0; k < 3 && match; k++) match = (buf[u - 3 + k]! | 0x20) === SET[k];
    for (let k = 0; k < 6 && match; k++) match = (buf[u + 1 + k]! | 0x20) === CONFIG[k];
    if (match) return true;
    u = buf.indexOf(0x5f, u + 1);
  }
  return false;
}
