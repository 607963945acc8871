// The NDJSON bulk parser under every chunking: a line cut at its start, middle and end, many lines in one
// chunk, one byte at a time; the batches and items must not depend on where the chunks were cut.
import { describe, expect, it } from 'vitest';
import { type Batch, BulkFormatError, BulkParser } from '../../../src/logstore/ingest/bulk-parser.js';
import { ScratchPool } from '../../../src/logstore/search/scratch.js';

function parse(chunks: Buffer[], maxDocSize = 1000, batchBytes = 64) {
  const batches: { docs: string[]; items: number[] }[] = [];
  const p = new BulkParser({
    maxDocSize,
    defaultIndex: 'logs',
    batchBytes,
    onBatch(b: Batch) {
      const docs: string[] = [];
      for (let i = 0; i < b.offs.length; i += 2)
        docs.push(Buffer.from(b.buf.buffer, b.buf.byteOffset + b.offs[i]!, b.offs[i + 1]!).toString());
      batches.push({ docs, items: [...b.items] });
    },
  });
  for (const c of chunks) p.push(c);
  p.end();
  return {
    docs: batches.flatMap((b) => b.docs),
    items: batches.flatMap((b) => b.items),
    errors: [...p.items.errors],
    ops: p.items.ops(),
    indexes: p.items.indexes(),
  };
}

const body = Buffer.from(
  [
    '{"index":{"_index":"a"}}',
    '{"m":"one"}',
    '',
    '{"create":{}}\r',
    '{"m":"two é"}',
    '{"index":{}}',
    `{"m":"${'x'.repeat(1200)}"}`,
    'garbage action',
    '{"m":"skipped"}',
    '{"index":{}}',
    '{"m":"three"}',
  ].join('\n'),
);

function chunkings(buf: Buffer): [string, Buffer[]][] {
  const out: [string, Buffer[]][] = [['one chunk', [buf]]];
  out.push(['one byte at a time', [...buf].map((b) => Buffer.from([b]))]);
  for (const cut of [1, 23, 24, 25, 30, 60, 100, 700, buf.length - 1])
    out.push([`cut at ${cut}`, [buf.subarray(0, cut), buf.subarray(cut)]]);
  out.push([
    '7-byte chunks',
    Array.from({ length: Math.ceil(buf.length / 7) }, (_, i) => buf.subarray(i * 7, i * 7 + 7)),
  ]);
  return out;
}

describe('BulkParser', () => {
  const want = parse([body]);

  it('splits pairs, keeps empty lines out, fails bad pairs alone', () => {
    expect(want.docs).toEqual(['{"m":"one"}', '{"m":"two é"}', '{"m":"three"}']);
    expect(want.items).toEqual([0, 1, 4]);
    expect(want.ops).toEqual(['index', 'create', 'index', 'index', 'index']);
    expect(want.indexes).toEqual(['a', 'logs', 'logs', 'logs', 'logs']);
    expect(want.errors.map(([i, e]) => [i, e.type])).toEqual([
      [2, 'document_too_large_exception'],
      [3, 'illegal_argument_exception'],
    ]);
  });

  it.each(chunkings(body))('gives the same result for %s', (_name, chunks) => {
    expect(parse(chunks)).toEqual(want);
  });

  it('cuts batches at batchBytes and keeps document order across them', () => {
    const docs = Array.from({ length: 50 }, (_, i) => `{"i":${i}}`);
    const buf = Buffer.from(docs.map((d) => `{"index":{}}\n${d}\n`).join(''));
    const r = parse([buf], 1000, 40);
    expect(r.docs).toEqual(docs);
    expect(r.items).toEqual(docs.map((_, i) => i));
  });

  it('rejects a first line that is not an action before anything is batched', () => {
    for (const text of ['{"not":"an action"}\n{"a":1}\n', '[1]\n', 'plain text\n', '']) {
      expect(() => parse([Buffer.from(text)])).toThrow(BulkFormatError);
    }
  });

  it('an action with no document line fails alone', () => {
    const r = parse([Buffer.from('{"index":{}}\n{"a":1}\n{"index":{}}\n')]);
    expect(r.docs).toEqual(['{"a":1}']);
    expect(r.errors.map(([i, e]) => [i, e.type])).toEqual([[1, 'action_request_validation_exception']]);
  });

  it('batches of thousands of documents, one after another, each hold their own offsets and items', () => {
    // The offsets and item arrays grow past their first size and are reused for the next batch: a batch handed over
    // must keep its values while the parser fills the next one.
    const docs = Array.from({ length: 7000 }, (_, i) => `{"i":${i}}`);
    const buf = Buffer.from(docs.map((d) => `{"index":{}}\n${d}\n`).join(''));
    const seen: Batch[] = [];
    const p = new BulkParser({
      maxDocSize: 1000,
      defaultIndex: 'logs',
      batchBytes: 3000 * 12,
      onBatch: (b) => seen.push(b),
    });
    for (let at = 0; at < buf.length; at += 4096) p.push(buf.subarray(at, at + 4096));
    p.end();
    expect(seen.length).toBeGreaterThanOrEqual(3);
    const got: string[] = [];
    const items: number[] = [];
    for (const b of seen) {
      expect(b.offs.length).toBe(2 * b.items.length);
      for (let i = 0; i < b.offs.length; i += 2)
        got.push(Buffer.from(b.buf.buffer, b.buf.byteOffset + b.offs[i]!, b.offs[i + 1]!).toString());
      items.push(...b.items);
    }
    expect(got).toEqual(docs);
    expect(items).toEqual(docs.map((_, i) => i));
  });

  it('routes documents with a client _id to the batch of their shard, with their ids and create flags', () => {
    const text =
      [
        '{"index":{}}',
        '{"n":0}',
        '{"create":{"_id":"b"}}',
        '{"n":1}',
        '{"index":{"_id":"a"}}',
        '{"n":2}',
        '{"delete":{"_id":"a"}}',
        '{"update":{"_id":"a"}}',
        '{"doc":{}}',
        '{"index":{}}',
        '{"n":5}',
        '{"create":{"_id":"a"}}',
        '{"n":6}',
      ].join('\n') + '\n';
    const seen: Batch[] = [];
    const p = new BulkParser({
      maxDocSize: 1000,
      defaultIndex: 'logs',
      batchBytes: 1024,
      route: (id) => (id === 'a' ? 0 : 1),
      onBatch: (b) => seen.push(b),
    });
    p.push(Buffer.from(text));
    p.end();
    const view = (b: Batch) => ({ shard: b.shard, items: [...b.items], ids: b.ids, create: b.create && [...b.create] });
    expect(seen.map(view)).toEqual([
      { shard: -1, items: [0, 5], ids: null, create: null },
      { shard: 1, items: [1], ids: ['b'], create: [1] },
      { shard: 0, items: [2, 6], ids: ['a', 'a'], create: [0, 1] },
    ]);
    expect(p.items.ops()).toEqual(['index', 'create', 'index', 'delete', 'update', 'index', 'create']);
    expect(p.items.ids()).toEqual([null, 'b', 'a', 'a', 'a', null, 'a']);
    expect([...p.items.errors.keys()]).toEqual([3, 4]);
    expect(p.items.errors.get(3)!.reason).toMatch(/append-only/);
  });

  it('without a router, documents with ids stay in the ordinary batches and carry their ids', () => {
    const seen: Batch[] = [];
    const p = new BulkParser({
      maxDocSize: 1000,
      defaultIndex: 'logs',
      batchBytes: 1024,
      onBatch: (b) => seen.push(b),
    });
    p.push(Buffer.from('{"index":{}}\n{"n":0}\n{"create":{"_id":"x"}}\n{"n":1}\n'));
    p.end();
    expect(seen).toHaveLength(1);
    expect(seen[0]!.shard).toBe(-1);
    expect(seen[0]!.ids).toEqual([null, 'x']);
    expect([...seen[0]!.create!]).toEqual([0, 1]);
  });

  it('reads plain action lines without JSON.parse and agrees with the JSON path', () => {
    const actions = [
      ['{"index":{"_index":"a","_id":"x1"}}', '{"index": {"_index": "a", "_id": "x1"}}'],
      ['{"create":{"_id":"é/ü"}}', '{"create":{"_id":"\\u00e9/\\u00fc"}}'],
      ['{"index":{"_id":""}}', '{ "index":{"_id":""}}'],
      ['{"create":{}}', '{"create":{ }}'],
      ['{"index":{"_id":"a","_id":"b"}}', '{"index":{"_id":"a", "_id":"b"}}'],
    ];
    for (const [fast, slow] of actions) {
      const run = (action: string) => {
        const p = new BulkParser({
          maxDocSize: 1000,
          defaultIndex: 'logs',
          batchBytes: 1024,
          onBatch: () => undefined,
        });
        p.push(Buffer.from(`${action}\n{"a":1}\n`));
        p.end();
        return {
          ops: p.items.ops(),
          ids: p.items.ids(),
          indexes: p.items.indexes(),
          kept: [...p.items.kept],
          errors: [...p.items.errors.values()].map((e) => e.reason.replace(/^line \d+: /, '')),
        };
      };
      expect(run(fast!), fast).toEqual(run(slow!));
    }
  });

  it('takes batch buffers from a pool and hands each batch over as a view of its buffer, never copied', () => {
    const pool = new ScratchPool(8, 1 << 20);
    const bufs: Uint8Array[] = [];
    const docs: string[] = [];
    const p = new BulkParser({
      maxDocSize: 1000,
      defaultIndex: 'logs',
      batchBytes: 64,
      pool,
      onBatch(b: Batch) {
        bufs.push(b.buf);
        for (let i = 0; i < b.offs.length; i += 2)
          docs.push(Buffer.from(b.buf.buffer, b.buf.byteOffset + b.offs[i]!, b.offs[i + 1]!).toString());
      },
    });
    p.push(body);
    p.end();
    expect(docs).toEqual(want.docs);
    for (const b of bufs) {
      expect(b.byteOffset).toBe(0);
      pool.give(b);
    }
    // Every batch buffer was the pool's: each came back (the small last one is not a copy of its own).
    expect(pool.keptBytes).toBe(bufs.reduce((n, b) => n + b.buffer.byteLength, 0));
  });
});
