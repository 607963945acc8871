// The Logs page's history: the pooler's own records of the last hour read back from the log store it ships them to
// ([logs] ship_to), with the tap's filters, so an operator who opens the page during an incident sees what already
// happened (the tap itself only starts at its first request).
import { shipTarget } from '../log-ship/bulk-client.js';
import type { TapEntry } from './log-tap.js';

const LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal'] as const;
export const ACCESS_TARGET = 'pooler::web::access';
/** The fields a shipped record has besides its own (log-ship/record-json.ts writes them). */
const OWN = new Set(['time', 'level', 'target', 'msg']);

export interface HistoryQuery {
  /** At least this level. */
  level?: string;
  /** Text anywhere in the record (seq-ql free text: a quoted phrase). */
  q?: string;
  access?: 'hide' | 'only';
  /** The last this many milliseconds. */
  windowMs: number;
  limit: number;
}

export interface HistoryAnswer {
  /** Oldest first, as the tap's; `seq` negative (they are not the tap's sequence numbers). */
  entries: TapEntry[];
  /** Matches in the window (more than `entries` when the limit cut them). */
  total: number;
  /** The log store answered from some shards only. */
  partial: boolean;
}

/** A seq-ql string literal: double quotes, `\` before `"` and `\`. */
const quoted = (s: string) => `"${s.replace(/[\\"]/g, (c) => `\\${c}`)}"`;

/** The seq-ql query of `q`'s filters. */
export function historyQueryText(q: HistoryQuery): string {
  const parts: string[] = [];
  if (q.level) {
    const at = LEVELS.indexOf(q.level as (typeof LEVELS)[number]);
    if (at > 0) parts.push(`level:in(${LEVELS.slice(at).join(', ')})`);
  }
  if (q.access === 'hide') parts.push(`not target:${quoted(ACCESS_TARGET)}`);
  if (q.access === 'only') parts.push(`target:${quoted(ACCESS_TARGET)}`);
  if (q.q) parts.push(quoted(q.q));
  return parts.length ? parts.join(' and ') : '*';
}

/** A shipped record as the tap shows one. */
export function entryOf(doc: Record<string, unknown>, seq: number): TapEntry {
  const fields: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(doc)) if (!OWN.has(k)) fields[k] = v;
  return {
    seq,
    time: String(doc.time ?? ''),
    level: String(doc.level ?? ''),
    target: String(doc.target ?? ''),
    msg: String(doc.msg ?? ''),
    fields,
  };
}

/** Reads the history from the log store at `shipTo` (its seq-ql `/search`); rejects with a message when it fails. */
export async function readHistory(
  shipTo: string,
  q: HistoryQuery,
  timeoutMs: number,
  now = Date.now(),
): Promise<HistoryAnswer> {
  // The same address and credentials the shipper's bulks use.
  const { endpoint: url, auth, display } = shipTarget(shipTo, 'search');
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (auth !== undefined) headers.authorization = `Basic ${Buffer.from(auth).toString('base64')}`;
  const body = {
    query: {
      query: historyQueryText(q),
      from: new Date(now - q.windowMs).toISOString(),
      to: new Date(now + 60_000).toISOString(),
    },
    size: q.limit,
    order: 'desc',
  };
  let res: Response;
  try {
    res = await fetch(url, {
      method: 'POST',
      headers,
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (err) {
    throw new Error(`the log store at ${display} did not answer: ${(err as Error).message}`);
  }
  const text = await res.text();
  if (res.status !== 200) throw new Error(`the log store at ${display} answered ${res.status}: ${text.slice(0, 300)}`);
  const r = JSON.parse(text) as {
    total: number;
    docs: { data: Record<string, unknown> }[];
    partial_response?: boolean;
  };
  const docs = r.docs.map((d) => d.data).reverse();
  return {
    entries: docs.map((d, i) => entryOf(d, -(docs.length - i))),
    total: r.total,
    partial: r.partial_response === true,
  };
}
