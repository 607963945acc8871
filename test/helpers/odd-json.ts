// Random JSON object documents in the spellings a byte-for-byte store must keep: random key orders, duplicate and
// escaped keys, unicode, escapes, numbers as 1e3, -0, 1.50 or past 2^53, nested objects and arrays, odd whitespace,
// times and addresses near the forms a column-wise store writes compactly.

const KEYS = ['timestamp', 'msg', 'level', 'ip', 'n', 'é', '😀k', 'a\\"b', 'x\\u0041', '1', '', 'tags', 'obj', 'k k'];
const WORDS = ['GET', 'POST', '/a/b_1.gif', 'héllo', 'ß', '😀', '\\n', '\\"q\\"', '\\\\', '\\u00e9', '\\/', 'x y', ''];
const NUMBERS = [
  '0',
  '-0',
  '1e3',
  '1E+3',
  '1.50',
  '-12',
  '12345678901234567890',
  '9007199254740993',
  '0.1',
  '-0.0',
  '7',
];
const SPACES = ['', '', '', ' ', '\n', '\t', '  ', '\r\n'];

/** A JSON object text; `time` (whole milliseconds) is the document's time, which some of its values spell. */
export function oddDocument(r: () => number, time: number): string {
  const pick = <T>(xs: readonly T[]): T => xs[(r() * xs.length) | 0]!;
  const ws = () => (r() < 0.15 ? pick(SPACES) : '');
  const str = () => {
    let s = '';
    const n = (r() * 4) | 0;
    for (let i = 0; i < n; i++) s += (i ? ' ' : '') + pick(WORDS);
    return `"${s}"`;
  };
  const value = (depth: number): string => {
    const x = r();
    if (x < 0.12) return `"${new Date(time).toISOString()}"`;
    if (x < 0.16) return `"${new Date(time + 1).toISOString()}"`;
    if (x < 0.18) return `"${new Date(time).toISOString().replace('Z', '+00:00')}"`;
    if (x < 0.26) return `"${(r() * 256) | 0}.${(r() * 256) | 0}.${(r() * 256) | 0}.${(r() * 256) | 0}"`;
    if (x < 0.29) return pick(['"01.2.3.4"', '"256.1.1.1"', '"1.2.3"', '"1.2.3.4.5"', '"1..2.3"', '"1.2.3.4 "']);
    if (x < 0.45) return String(((r() - 0.5) * 2 ** (r() * 60)) | 0);
    if (x < 0.55) return pick(NUMBERS);
    if (x < 0.6) return pick(['true', 'false', 'null']);
    if (x < 0.67 && depth < 2) {
      const n = (r() * 3) | 0;
      const items = Array.from({ length: n }, () => `${ws()}${value(depth + 1)}${ws()}`);
      return `[${items.join(',')}${n === 0 ? ws() : ''}]`;
    }
    if (x < 0.72 && depth < 2) return object(depth + 1);
    return str();
  };
  const object = (depth: number): string => {
    const n = (r() * 6) | 0;
    const parts: string[] = [];
    for (let i = 0; i < n; i++) parts.push(`${ws()}"${pick(KEYS)}"${ws()}:${ws()}${value(depth)}${ws()}`);
    return `{${parts.join(',')}${n === 0 ? ws() : ''}}`;
  };
  return `${ws()}${object(0)}${ws()}`;
}
