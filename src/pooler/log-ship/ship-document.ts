// How log records become a bulk body for the log store, and what a bulk answer says about each of them.
import { levelName, type LogRecord } from '../../shared/logger.js';

/** The second whose "YYYY-MM-DDTHH:MM:SS." isoPrefix holds: records come in time order, so it mostly repeats. */
let isoSecond = NaN;
let isoPrefix = '';

/** RFC 3339 in UTC with milliseconds, as Date#toISOString, reusing the text up to the second. */
export function isoTime(ms: number): string {
  // Outside the common case (whole milliseconds after 1970), Date does it; a time Date cannot hold becomes now
  // rather than a RangeError thrown inside the log call that wrote the record.
  if (!Number.isInteger(ms) || ms < 0 || ms > 8.64e15)
    return new Date(Math.abs(ms) <= 8.64e15 ? ms : Date.now()).toISOString();
  const second = Math.floor(ms / 1000);
  if (second !== isoSecond) {
    isoPrefix = new Date(second * 1000).toISOString().slice(0, 20);
    isoSecond = second;
  }
  const frac = ms - second * 1000;
  return `${isoPrefix}${frac < 10 ? '00' : frac < 100 ? '0' : ''}${frac}Z`;
}

/**
 * The document of one record: `time` in RFC 3339 first (the log store takes the first of timestamp, time,
 * ts, @timestamp that parses as the document's time; pooler records carry no `timestamp`), the level by
 * name, then the record's own fields (`target`, `msg`, ...) as they were logged.
 *
 * `line` is the JSON pino wrote for the record, `{"level":N,"time":MS,...}`: its fields after the time are
 * reused as they are, so a record costs no second JSON.stringify. A line of another shape is rebuilt from `rec`.
 */
export function shipDocument(rec: LogRecord, line?: string): string {
  const { level, time } = rec;
  if (line !== undefined && Number.isInteger(level) && Number.isInteger(time)) {
    const head = `{"level":${level},"time":${time}`;
    const next = line.charCodeAt(head.length);
    // pino's own head, followed by more fields (,) or the end of the object (}).
    if (line.startsWith(head) && (next === 44 || next === 125)) {
      return `{"time":"${isoTime(time)}","level":"${levelName(level)}"${line.slice(head.length)}`;
    }
  }
  const { level: _level, time: _time, ...fields } = rec;
  return JSON.stringify({
    time: isoTime(typeof time === 'number' ? time : Date.now()),
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
      const op =
        item && typeof item === 'object'
          ? (Object.values(item)[0] as { status?: unknown; error?: { type?: unknown; reason?: unknown } } | undefined)
          : undefined;
      const status = typeof op?.status === 'number' ? op.status : 0;
      const reason = op?.error ? `${String(op.error.type ?? 'error')}: ${String(op.error.reason ?? '')}` : '';
      return { status, reason };
    }),
  };
}
