// filter_path as Elasticsearch applies it (the shapes of its reference's "Response filtering" examples and of
// bulk answers with Logstash's and Beats' filters), and the streamed bulk answer against the generic filter.
import { describe, expect, it } from 'vitest';
import { filterValue, parseFilterPath } from '../../../src/logstore/es/filter-path.js';
import { BulkItems } from '../../../src/logstore/ingest/bulk-items.js';
import { type BulkOutcome, bulkResponseBytes, writeBulkResponse } from '../../../src/logstore/ingest/bulk-response.js';

const f = (s: string) => parseFilterPath(s)!;

describe('filterValue (Elasticsearch reference examples)', () => {
  const search = {
    took: 3,
    timed_out: false,
    _shards: { total: 1, successful: 1, failed: 0 },
    hits: {
      total: { value: 2 },
      hits: [
        { _index: 'a', _id: '0', _score: 1.6 },
        { _index: 'a', _id: '1', _score: 1.2 },
      ],
    },
  };
  it('selects fields through arrays', () => {
    expect(filterValue(search, f('took,hits.hits._id,hits.hits._score'))).toEqual({
      took: 3,
      hits: {
        hits: [
          { _id: '0', _score: 1.6 },
          { _id: '1', _score: 1.2 },
        ],
      },
    });
  });
  const state = {
    metadata: {
      indices: {
        'logstash-1': { state: 'open', stats: 1, settings: {} },
        other: { state: 'close', stats: 2, settings: {} },
      },
    },
    routing_table: { indices: { x: { shards: { 0: [{ state: 'STARTED', primary: true }] } } } },
  };
  it('globs inside a name, ** at any depth, and - to exclude', () => {
    expect(filterValue(state, f('metadata.indices.*.stat*'))).toEqual({
      metadata: { indices: { 'logstash-1': { state: 'open', stats: 1 }, other: { state: 'close', stats: 2 } } },
    });
    expect(filterValue(state, f('routing_table.indices.**.state'))).toEqual({
      routing_table: { indices: { x: { shards: { 0: [{ state: 'STARTED' }] } } } },
    });
    expect(filterValue(state, f('metadata.indices.*.state,-metadata.indices.logstash-*'))).toEqual({
      metadata: { indices: { other: { state: 'close' } } },
    });
    expect(filterValue({ count: 5, _shards: { total: 1 } }, f('-_shards'))).toEqual({ count: 5 });
  });
  it('answers {} when nothing matches, and parses spaces and empty parts away', () => {
    expect(filterValue(search, f('nothing'))).toEqual({});
    expect(filterValue(search, f(' took , '))).toEqual({ took: 3 });
    expect(parseFilterPath('')).toBeNull();
    expect(parseFilterPath(',')).toBeNull();
    expect(filterValue(search, f('**._id'))).toEqual({ hits: { hits: [{ _id: '0' }, { _id: '1' }] } });
    expect(filterValue(search, f('hits.hits.*'))).toEqual({ hits: { hits: search.hits.hits } });
    expect(filterValue(search, f('h*s.t*l.value'))).toEqual({ hits: { total: { value: 2 } } });
  });
  it('drops what an exclusion empties, keeps what was empty', () => {
    expect(filterValue({ a: { b: 1 }, c: {}, d: [] }, f('-a.b'))).toEqual({ c: {}, d: [] });
    expect(filterValue({ items: [{ x: { y: 1 } }, { x: { y: 2, z: 3 } }] }, f('-items.*.y'))).toEqual({
      items: [{ x: { z: 3 } }],
    });
  });
});

/** Items: 0 stored, 1 failed (400), 2 stored with a client id, 3 kept (200 noop), 4 create conflict (409). */
function outcome(): BulkOutcome {
  const items = new BulkItems();
  const gen = Buffer.from('0123456789abcdef01234567'.repeat(5));
  items.push('index', 'logs', null);
  items.setGenerated(0, gen, 0);
  items.push('index', 'logs', null);
  items.errors.set(1, { status: 400, type: 'mapper_parsing_exception', reason: 'failed to parse "x"' });
  items.push('create', 'other', 'id-"2"');
  items.push('index', 'logs', 'k');
  items.kept.add(3);
  items.push('create', 'logs', 'c');
  items.errors.set(4, { status: 409, type: 'version_conflict_engine_exception', reason: '[c]: version conflict' });
  return { items, errors: true, took: 7 };
}

const FILTERS = [
  'errors,items.*.error,items.*.status',
  'errors',
  'took',
  'items.*.error',
  'items.*._id',
  '**.status',
  'items.index.status',
  'items.*.error.type',
  '-items',
  '-took,-items.*._index,-items.*._version',
  'errors,-items',
  'items.create',
  'items.*._id.x',
  '-items.*._id.x',
  'nothing',
  'items.*.error.reason,-items.*.error',
  'it*.*.res*',
  '**',
];

describe('bulk answer with filter_path', () => {
  it('is the unfiltered answer under each filter', async () => {
    const whole = JSON.parse((await bulkResponseBytes(outcome())).toString());
    expect(whole).toEqual({
      took: 7,
      errors: true,
      items: [
        { index: { _index: 'logs', _id: '0123456789abcdef01234567', _version: 1, result: 'created', status: 201 } },
        {
          index: {
            _index: 'logs',
            _id: null,
            status: 400,
            error: { type: 'mapper_parsing_exception', reason: 'failed to parse "x"' },
          },
        },
        { create: { _index: 'other', _id: 'id-"2"', _version: 1, result: 'created', status: 201 } },
        { index: { _index: 'logs', _id: 'k', _version: 1, result: 'noop', status: 200 } },
        {
          create: {
            _index: 'logs',
            _id: 'c',
            status: 409,
            error: { type: 'version_conflict_engine_exception', reason: '[c]: version conflict' },
          },
        },
      ],
    });
    for (const s of FILTERS) {
      const text = (await bulkResponseBytes(outcome(), f(s))).toString();
      expect(JSON.parse(text), s).toEqual(filterValue(whole, f(s)));
    }
  });
  it('gives the shapes shippers read', async () => {
    const text = async (s: string) => (await bulkResponseBytes(outcome(), f(s))).toString();
    expect(await text('errors,items.*.error,items.*.status')).toBe(
      '{"errors":true,"items":[{"index":{"status":201}},{"index":{"status":400,"error":{"type":"mapper_parsing_exception","reason":"failed to parse \\"x\\""}}},' +
        '{"create":{"status":201}},{"index":{"status":200}},{"create":{"status":409,"error":{"type":"version_conflict_engine_exception","reason":"[c]: version conflict"}}}]}',
    );
    expect(await text('errors')).toBe('{"errors":true}');
    expect(await text('items.*.error.type')).toBe(
      '{"items":[{"index":{"error":{"type":"mapper_parsing_exception"}}},{"create":{"error":{"type":"version_conflict_engine_exception"}}}]}',
    );
    const ok = outcome();
    ok.items.errors.clear();
    ok.items.errors.set(4, { status: 409, type: 'x', reason: 'y' });
    ok.items.errors.delete(4);
    ok.items.setGenerated(1, Buffer.from('abcdefabcdefabcdefabcdef'), 0);
    const okText = async (s: string) => (await bulkResponseBytes({ ...ok, errors: false }, f(s))).toString();
    expect(await okText('items.*.error')).toBe('{}');
    expect(await okText('errors,items.*.error')).toBe('{"errors":false}');
  });
  it('writes in bounded chunks and waits for a slow reader', async () => {
    const items = new BulkItems();
    const id = Buffer.from('0123456789abcdef01234567');
    for (let i = 0; i < 50_000; i++) {
      items.push('index', 'logs', null);
      items.setGenerated(i, id, 0);
    }
    const chunks: Buffer[] = [];
    let waits = 0;
    await writeBulkResponse(
      { items, errors: false, took: 1 },
      {
        write: (c) => {
          chunks.push(c);
          return chunks.length % 3 !== 0;
        },
        drained: () => {
          waits++;
          return new Promise((r) => setTimeout(r, 1));
        },
      },
      null,
    );
    expect(Math.max(...chunks.map((c) => c.length))).toBeLessThanOrEqual(64 * 1024);
    expect(waits).toBeGreaterThan(10);
    const all = JSON.parse(Buffer.concat(chunks).toString()) as { items: unknown[] };
    expect(all.items).toHaveLength(50_000);
    expect(all.items[49_999]).toEqual({
      index: { _index: 'logs', _id: '0123456789abcdef01234567', _version: 1, result: 'created', status: 201 },
    });
  });
});
