// How log records become a bulk body for the log store, and what a bulk answer says about each of them.
import { levelName, type LogRecord } from '../../shared/logger.js';

/**
 * The document of one record: `time` in RFC 3339 first (the log store takes the first of timestamp, time,
 * ts, @timestamp that parses as the document's time; pooler records carry no `timestamp`), the level by
 * name, then the record's own fields (`target`, `msg`, ...) as they were logged.
 */
export function shipDocument(rec: LogRecord): string {
  const { level, time, ...fields } = rec;
  return JSON.stringify({
    // A time Date cannot hold would throw inside the log call that wrote the record.
    time: new Date(typeof time === 'number' && Math.abs(time) <= 8.64e15 ? time : Date.now()).toISOString(),
    level: levelName(level),
    ...fields,
  });
}

/** The action line that precedes every document of a bulk body, with its newline. */
export function bulkActionLine(index: string): string {
  return `${JSON.stringify({ index: { _index: index } })}\n`;
}

/** NDJSON bulk body: action line, document line, for each document in order. */
export function bulkBody(action: string, docs: readonly { doc: string }[]): Buffer {
  let text = '';
  for (const d of docs) text += `${action}${d.doc}\n`;
  return Buffer.from(text, 'utf8');
}

/** What a 2xx bulk answer says: every item stored, or per-item statuses (in the order of the body). */
export type BulkItemsAnswer = { allStored: true } | { allStored: false; items: { status: number; reason: string }[] };

/**
 * Reads a bulk answer. `"errors": false` before `"items"` means every item was stored, without parsing the
 * item list (hundreds of entries per batch). Otherwise each item's status and error reason.
 */
export function readBulkAnswer(text: string): BulkItemsAnswer {
  const itemsAt = text.indexOf('"items"');
  const head = itemsAt < 0 ? text : text.slice(0, itemsAt);
  if (/"errors"\s*:\s*false/.test(head)) return { allStored: true };
  const parsed = JSON.parse(text) as { items?: unknown };
  if (!Array.isArray(parsed.items)) throw new Error('the bulk answer has no items list');
  return {
    allStored: false,
    items: parsed.items.map((item: unknown) => {
      const op = item && typeof item === 'object' ? (Object.values(item)[0] as { status?: unknown; error?: { type?: unknown; reason?: unknown } } | undefined) : undefined;
      const status = typeof op?.status === 'number' ? op.status : 0;
      const reason = op?.error ? `${String(op.error.type ?? 'error')}: ${String(op.error.reason ?? '')}` : '';
      return { status, reason };
    }),
  };
}
