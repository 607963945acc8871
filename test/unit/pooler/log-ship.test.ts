// The log shipper's pure parts: the bounded queue (oldest dropped), record documents, bulk bodies and answers.
import { describe, expect, it } from 'vitest';
import { Writable } from 'node:stream';
import { docTime } from '../../../src/logstore/doc-time.js';
import {
  bulkActionLine,
  bulkBody,
  isoTime,
  readBulkAnswer,
  shipDocument,
} from '../../../src/pooler/log-ship/ship-document.js';
import { LogHub, type LogRecord } from '../../../src/shared/logger.js';
import { ShipQueue } from '../../../src/pooler/log-ship/ship-queue.js';

const docs = (q: ShipQueue, n = q.length) => q.take(n).map((d) => d.doc);

describe('ShipQueue', () => {
  it('holds at most its capacity, dropping the oldest and counting them', () => {
    const q = new ShipQueue(3);
    expect([1, 2, 3, 4, 5].map((i) => q.push(`d${i}`))).toEqual([0, 0, 0, 1, 1]);
    expect(q.length).toBe(3);
    expect(docs(q)).toEqual(['d3', 'd4', 'd5']);
    expect(q.length).toBe(0);
  });

  it('puts a failed batch back in front, dropping from it (the oldest) what no longer fits', () => {
    const q = new ShipQueue(4);
    for (let i = 1; i <= 4; i++) q.push(`d${i}`);
    const batch = q.take(3);
    q.push('d5');
    q.push('d6');
    expect(q.unshift(batch)).toBe(2);
    expect(docs(q)).toEqual(['d3', 'd4', 'd5', 'd6']);
  });

  it('keeps order across wrap-around, keeps per-item tries, and resizes keeping the newest', () => {
    const q = new ShipQueue(4);
    for (let i = 1; i <= 6; i++) q.push(`d${i}`);
    const taken = q.take(2);
    q.unshift(taken.map((t) => ({ ...t, tries: t.tries + 1 })));
    expect(q.take(1)).toEqual([{ doc: 'd3', tries: 1 }]);
    expect(q.resize(2)).toBe(1);
    expect(q.capacity).toBe(2);
    expect(docs(q)).toEqual(['d5', 'd6']);
    q.push('a');
    expect(q.resize(10)).toBe(0);
    expect(q.clear()).toBe(1);
  });
});

describe('ship documents', () => {
  it('turns a record into a document whose time the log store takes as the document time', () => {
    const t = Date.UTC(2025, 4, 6, 7, 8, 9, 123);
    const doc = shipDocument({ level: 40, time: t, target: 'pooler::web::access', msg: 'x', status: 404, path: '/a' });
    expect(doc).toBe(
      '{"time":"2025-05-06T07:08:09.123Z","level":"warn","target":"pooler::web::access","msg":"x","status":404,"path":"/a"}',
    );
    expect(docTime(JSON.parse(doc) as Record<string, unknown>, t + 5000)).toEqual({ time: t });
  });

  it('reuses the line pino wrote: the same document as rebuilding it from the record', () => {
    const hub = new LogHub({
      level: 'debug',
      out: new Writable({
        write(_c, _e, cb) {
          cb();
        },
      }),
    });
    const seen: [LogRecord, string][] = [];
    hub.addSink((rec, line) => seen.push([rec, line]));
    const log = hub.get('pooler::web::access');
    log.debug({ method: 'GET', path: '/a "quoted" \\ path', status: 200, nested: { a: [1, 2] } }, 'ünïcode msg');
    log.warn('no fields');
    hub.get('pooler').info({ err: new Error('boom') }, 'with an error');
    expect(seen).toHaveLength(3);
    for (const [rec, line] of seen) {
      const fast = shipDocument(rec, line);
      expect(fast).toMatch(
        /^\{"time":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z","level":"(debug|warn|info)","target":"pooler/,
      );
      expect(JSON.parse(fast)).toEqual(JSON.parse(shipDocument(rec)));
    }
    expect(JSON.parse(shipDocument(seen[1]![0], seen[1]![1]))).toEqual({
      time: new Date(seen[1]![0].time).toISOString(),
      level: 'warn',
      target: 'pooler::web::access',
      msg: 'no fields',
    });
    // A line of another shape is not trusted: the document is rebuilt from the record.
    const rec = { level: 30, time: Date.UTC(2025, 0, 1), target: 't', msg: 'm' };
    expect(shipDocument(rec, '{"time":1,"level":30}')).toBe(
      '{"time":"2025-01-01T00:00:00.000Z","level":"info","target":"t","msg":"m"}',
    );
  });

  it('formats times as Date#toISOString does, across seconds and for odd values', () => {
    const base = Date.UTC(2025, 11, 31, 23, 59, 58, 0);
    for (const ms of [0, 1, 9, 10, 99, 100, 999, 1000, 1001, 1999, 2000, 2005])
      expect(isoTime(base + ms)).toBe(new Date(base + ms).toISOString());
    expect(isoTime(base)).toBe('2025-12-31T23:59:58.000Z');
    expect(isoTime(-5)).toBe(new Date(-5).toISOString());
    expect(isoTime(1.5)).toBe(new Date(1.5).toISOString());
    expect(() => isoTime(1e20)).not.toThrow();
    expect(() => isoTime(Number.NaN)).not.toThrow();
  });

  it('builds NDJSON bulk bodies with the index in every action line', () => {
    const action = bulkActionLine('tidepool-pooler');
    expect(bulkBody(action, [{ doc: '{"a":1}' }, { doc: '{"b":2}' }]).toString()).toBe(
      '{"index":{"_index":"tidepool-pooler"}}\n{"a":1}\n{"index":{"_index":"tidepool-pooler"}}\n{"b":2}\n',
    );
  });

  it("reads bulk answers: all stored without parsing the items, else each item's status and reason", () => {
    expect(readBulkAnswer('{"took":3,"errors":false,"items":[{"index":{"status":201}}]}')).toEqual({ allStored: true });
    expect(readBulkAnswer('{"errors": false, "took": 3, "items": []}')).toEqual({ allStored: true });
    expect(
      readBulkAnswer(
        '{"took":3,"errors":true,"items":[{"index":{"status":201}},{"create":{"status":400,"error":{"type":"mapper_parsing_exception","reason":"bad"}}},{"index":{"status":429}}]}',
      ),
    ).toEqual({
      allStored: false,
      items: [
        { status: 201, reason: '' },
        { status: 400, reason: 'mapper_parsing_exception: bad' },
        { status: 429, reason: '' },
      ],
    });
    expect(() => readBulkAnswer('{"took":3,"errors":true}')).toThrow(/no items/);
  });
});
