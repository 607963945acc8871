// The bulk action lines most shippers send, recognised from their bytes without JSON.parse: {"index":{}} and
// {"index"|"create":{ "_index":"..." and/or "_id":"..." }} with plain string values; anything else is parsed as JSON.

const PLAIN_INDEX = Buffer.from('{"index":{}}');
const INDEX_OPEN = Buffer.from('{"index":{');
const CREATE_OPEN = Buffer.from('{"create":{');
const ID_KEY = Buffer.from('"_id":"');
const INDEX_KEY = Buffer.from('"_index":"');

function startsWith(buf: Buffer, start: number, end: number, prefix: Buffer): boolean {
  if (end - start < prefix.length) return false;
  for (let i = 0; i < prefix.length; i++) if (buf[start + i] !== prefix[i]) return false;
  return true;
}

/** Exactly `{"index":{}}`. */
export function isPlainIndex(buf: Buffer, start: number, end: number): boolean {
  if (end - start !== PLAIN_INDEX.length) return false;
  for (let i = 0; i < PLAIN_INDEX.length; i++) if (buf[start + i] !== PLAIN_INDEX[i]) return false;
  return true;
}

/**
 * `{"index":{` or `{"create":{`, then only `"_index"` and `"_id"` with string values without escapes or
 * control characters, then `}}` and nothing else: the action and its metadata; null for anything else.
 */
export function readPlainAction(
  raw: Buffer,
  start: number,
  end: number,
): { op: 'index' | 'create'; meta: Record<string, string> } | null {
  let op: 'index' | 'create';
  let p: number;
  if (startsWith(raw, start, end, INDEX_OPEN)) {
    op = 'index';
    p = start + INDEX_OPEN.length;
  } else if (startsWith(raw, start, end, CREATE_OPEN)) {
    op = 'create';
    p = start + CREATE_OPEN.length;
  } else return null;
  const meta: Record<string, string> = {};
  if (raw[p] !== 0x7d) {
    for (;;) {
      if (raw[p] !== 0x22) return null;
      const key = startsWith(raw, p, end, ID_KEY) ? '_id' : startsWith(raw, p, end, INDEX_KEY) ? '_index' : null;
      if (key === null) return null;
      const k = p + (key === '_id' ? ID_KEY.length : INDEX_KEY.length);
      let q = k;
      while (q < end && raw[q] !== 0x22) {
        if (raw[q] === 0x5c || raw[q]! < 0x20) return null;
        q++;
      }
      if (q >= end) return null;
      meta[key] = raw.toString('utf8', k, q);
      p = q + 1;
      if (raw[p] === 0x2c) {
        p++;
        continue;
      }
      break;
    }
  }
  if (raw[p] !== 0x7d || raw[p + 1] !== 0x7d || p + 2 !== end) return null;
  return { op, meta };
}
