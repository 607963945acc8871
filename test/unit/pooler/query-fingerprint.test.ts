// The simple-protocol query fingerprint (query-stats/fingerprint.ts) and its native twin (native/query-fingerprint.h via queryFingerprint): the same hash and normalized text for the same texts, whatever pieces the reads cut them into; and the JavaScript table's bound.
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { fingerprintOf, QueryFingerprint, QUERY_TEXT_MAX } from '../../../src/pooler/query-stats/fingerprint.js';
import { QueryStatsTable } from '../../../src/pooler/query-stats/table.js';
import { TransactionTracker } from '../../../src/pooler/transaction-tracker.js';
import { FrameStream, typeSet, type MessageHandler } from '../../../src/protocol/frame-stream.js';
import { requireAddon } from '../../helpers/native.js';
import { mulberry32 } from '../../helpers/prng.js';

type NativeFingerprint = (pieces: Uint8Array[]) => [string, string];

function nativeFingerprint(): NativeFingerprint {
  const f = requireAddon()['queryFingerprint'] as NativeFingerprint | undefined;
  expect(typeof f, 'the addon exports queryFingerprint (rebuild it: npx node-gyp rebuild)').toBe('function');
  return f!;
}

/** [text, its normalized form]. */
const VECTORS: [string, string][] = [
  ['SELECT 1', 'SELECT ?'],
  ['select 42, 3.14, .5, 1e10, 1.5E-3, 0x1F, 1_000', 'select ?, ?, ?, ?, ?, ?, ?'],
  ["SELECT 'a'", 'SELECT ?'],
  ["SELECT 'it''s', ''", 'SELECT ?, ?'],
  ["SELECT E'a\\'b', e'\\\\', 'c'", 'SELECT ?, ?, ?'],
  ["SELECT B'101', X'1f', N'x', U&'d\\0061t'", 'SELECT ?, ?, ?, U&?'],
  ['SELECT $$a $ b$$, $tag$ x $$ $ta $tag$', 'SELECT ?, ?'],
  ['SELECT $1, $23 FROM t WHERE a = $1', 'SELECT $1, $23 FROM t WHERE a = $1'],
  ['SELECT a$b, $x', 'SELECT a$b, $x'],
  ["SELECT t1.c2, int4 '5', x::int4", 'SELECT t1.c2, int4 ?, x::int4'],
  ['SELECT "Col 1", "a""b", "x 1"', 'SELECT "Col 1", "a""b", "x 1"'],
  ['  SELECT\n\t1  ,\r\n  2  ', 'SELECT ? , ?'],
  ['SELECT 1 -- trailing comment', 'SELECT ?'],
  ['-- leading\nSELECT /* inline */ 2', 'SELECT ?'],
  ['SELECT /* outer /* nested */ still */ 3', 'SELECT ?'],
  ['SELECT 1-1, -2, a-b, 4/2, a/*c*/b', 'SELECT ?-?, -?, a-b, ?/?, a b'],
  ['SELECT 1; SELECT 2;', 'SELECT ?; SELECT ?;'],
  ['SELECT e, each, x, nx FROM e', 'SELECT e, each, x, nx FROM e'],
  ['SELECT 1.', 'SELECT ?'],
  ['SELECT a.', 'SELECT a.'],
  ['SELECT -', 'SELECT -'],
  ['SELECT $', 'SELECT $'],
  ['SELECT $abc', 'SELECT $abc'],
  ["SELECT 'unterminated", 'SELECT ?'],
  ['SELECT $q$ never closed', 'SELECT ?'],
  ['SELECT 1\0SELECT 2', 'SELECT ?'],
  ["SELECT ärger, 名前, 'ü'", 'SELECT ärger, 名前, ?'],
  ['SELECT 1e+5, 0xE+1', 'SELECT ?, ?+?'],
  ['', ''],
  ['   ', ''],
  ['/* only a comment */', ''],
];

/** Texts without a stated form, held only to the twin. */
const MORE: (string | Buffer)[] = [
  `SELECT $${'t'.repeat(70)}$ x $${'t'.repeat(70)}$`,
  "SELECT 'a' 'b' E'\\x41' || $f$it's$f$",
  'SELECT 1 /* unterminated comment',
  'SELECT 1 --',
  'SELECT .e, ..5, 5..6, 1ee, 1e-, 0b101, 0o17',
  Buffer.from([0x53, 0x45, 0x4c, 0x20, 0xff, 0xfe, 0x27, 0xc3, 0x27, 0x20, 0xe2, 0x82]),
  Buffer.concat([Buffer.from('SELECT '), Buffer.alloc(3000, 'é'), Buffer.from(" 'x'")]),
  Buffer.concat([Buffer.from('SELECT '), Buffer.alloc(2041, 'a'), Buffer.from('€€')]),
  `SELECT ${Array.from({ length: 600 }, (_, i) => i).join(', ')}`,
];

const bytesOf = (t: string | Buffer): Buffer => (typeof t === 'string' ? Buffer.from(t) : t);

/** `text` cut into pieces at random places. */
function cut(b: Buffer, rand: () => number): Buffer[] {
  const pieces: Buffer[] = [];
  let at = 0;
  while (at < b.length) {
    const n = 1 + Math.floor(rand() * Math.min(8, b.length - at));
    pieces.push(b.subarray(at, at + n));
    at += n;
  }
  return pieces;
}

describe('query fingerprint', () => {
  it('normalizes literals, comments and whitespace (TypeScript and native)', () => {
    const native = nativeFingerprint();
    for (const [text, want] of VECTORS) {
      const ts = fingerprintOf([Buffer.from(text)]);
      expect(ts[1], text).toBe(want);
      expect(native([Buffer.from(text)]), text).toEqual(ts);
    }
  });

  it('gives the same hash and text on both sides, whatever the reads cut', () => {
    const native = nativeFingerprint();
    const rand = mulberry32(10);
    for (const t of [...VECTORS.map(([v]) => v), ...MORE]) {
      const whole = fingerprintOf([bytesOf(t)]);
      expect(native([bytesOf(t)]), String(t).slice(0, 60)).toEqual(whole);
      for (let i = 0; i < 5; i++) {
        const pieces = cut(bytesOf(t), rand);
        expect(fingerprintOf(pieces), String(t).slice(0, 60)).toEqual(whole);
        expect(native(pieces), String(t).slice(0, 60)).toEqual(whole);
      }
    }
  });

  it('literal variants share one fingerprint; the hash is FNV-1a 64 of the normalized bytes', () => {
    const of = (t: string) => fingerprintOf([Buffer.from(t)]);
    expect(of("SELECT 'a'")).toEqual(of("SELECT 'b'"));
    expect(of('SELECT 1')).toEqual(of('select 1'.replace('select', 'SELECT')));
    expect(of('SELECT 1')[0]).not.toBe(of('SELECT a')[0]);
    let h = 0xcbf29ce484222325n;
    for (const b of Buffer.from('SELECT ?')) h = ((h ^ BigInt(b)) * 0x100000001b3n) & 0xffffffffffffffffn;
    expect(of('SELECT 1')[0]).toBe(h.toString(16).padStart(16, '0'));
  });

  it('keeps at most QUERY_TEXT_MAX bytes, cut on a character boundary, and hashes all of it', () => {
    const native = nativeFingerprint();
    const long = Buffer.concat([Buffer.from('SELECT '), Buffer.alloc(5000, 'é')]);
    const [hash, text] = fingerprintOf([long]);
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(QUERY_TEXT_MAX);
    expect(Buffer.byteLength(text)).toBeGreaterThan(QUERY_TEXT_MAX - 4);
    expect(text).not.toContain('\ufffd');
    expect(native([long])).toEqual([hash, text]);
    const longer = Buffer.concat([long, Buffer.from('x')]);
    expect(fingerprintOf([longer])[0]).not.toBe(hash);
    expect(fingerprintOf([longer])[1]).toBe(text);
  });

  it('a huge text with random bytes stays within the bound and matches natively', () => {
    const native = nativeFingerprint();
    const rand = mulberry32(7);
    const huge = Buffer.alloc(4 * 1024 * 1024);
    for (let i = 0; i < huge.length; i++) huge[i] = Math.floor(rand() * 256) | 1;
    const ts = fingerprintOf([huge]);
    expect(Buffer.byteLength(ts[1])).toBeLessThanOrEqual(QUERY_TEXT_MAX * 3);
    expect(native([huge])).toEqual(ts);
    expect(createHash('sha1').update(ts[1]).digest('hex')).toBe(
      createHash('sha1')
        .update(native([huge])[1])
        .digest('hex'),
    );
  });
});

describe('query statistics table (JavaScript)', () => {
  const print = (t: string) => {
    const q = new QueryFingerprint();
    q.start();
    q.feed(Buffer.from(t), 0, Buffer.byteLength(t));
    q.finish();
    return q;
  };

  it('finds a fingerprint again per pool, and replaces the least counted one when full', () => {
    const t = new QueryStatsTable();
    t.resize(2);
    const a = t.find(print('SELECT 1'), 1);
    const gA = t.foundGen;
    expect(t.find(print('SELECT 2'), 1)).toBe(a);
    t.observe(a, gA, 10);
    t.observe(a, gA, 20);
    const b = t.find(print('SELECT a'), 1);
    const gB = t.foundGen;
    t.observe(b, gB, 5);
    expect(t.find(print('SELECT 1'), 2)).not.toBe(a);
    // Full: SELECT a (count 1) was the least counted, so the pool-2 entry took its place (and is not listed before its first count).
    const rows = t.rows();
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ pool: 1, text: 'SELECT ?', count: 2, timeUs: 30 });
    t.observe(b, gB, 5);
    expect(t.rows()).toHaveLength(1);
    for (let i = 0; i < 1000; i++) t.find(print(`SELECT c${i}`), 1);
    expect(t.rows()).toEqual([expect.objectContaining({ text: 'SELECT ?', count: 2 })]);
    expect(t.find(print('SELECT 9'), 1)).toBe(a);
  });

  it('size 0 records nothing; a new size empties the table', () => {
    const t = new QueryStatsTable();
    expect(t.find(print('SELECT 1'), 1)).toBe(-1);
    t.resize(3);
    const s = t.find(print('SELECT 1'), 1);
    t.observe(s, t.foundGen, 1);
    expect(t.rows()).toHaveLength(1);
    t.resize(4);
    expect(t.rows()).toHaveLength(0);
    t.observe(s, 1, 1);
    expect(t.rows()).toHaveLength(0);
  });
});

describe('query recorder (JavaScript relay)', () => {
  const message = (type: string, body: Buffer | string) => {
    const b = typeof body === 'string' ? Buffer.from(body) : body;
    const head = Buffer.alloc(5);
    head[0] = type.charCodeAt(0);
    head.writeUInt32BE(b.length + 4, 1);
    return Buffer.concat([head, b]);
  };
  const q = (sql: string) => message('Q', `${sql}\0`);
  /** Reads as the JavaScript relay hands them over: the recorder first, then the relay's framing, each message to the
   * recorder and then to the client's transaction tracker. `copyIn`: the server answered CopyInResponse before it. */
  const reads = (r: { onChunk(c: Buffer): void; onMessage: MessageHandler }, tx: TransactionTracker) => {
    const frames = new FrameStream(1 << 20, typeSet(), (type, buf, start, len, complete) => {
      r.onMessage(type, buf, start, len, complete);
      tx.onMessage(type, buf, start);
    });
    return (chunk: Buffer, copyIn = false) => {
      if (copyIn) tx.copyIn = true;
      tx.chunk = chunk;
      r.onChunk(chunk);
      expect(frames.feed(chunk)).toBe(true);
    };
  };

  it('times each Query at its ReadyForQuery, whatever the reads cut, and skips Syncs and COPY IN', async () => {
    const { QueryRecorder } = await import('../../../src/pooler/query-stats/recorder.js');
    const table = new QueryStatsTable();
    table.resize(10);
    const tx = new TransactionTracker();
    const r = new QueryRecorder(3, tx, table);
    const read = reads(r, tx);
    // One Query cut at every byte.
    const one = q("SELECT 'a' AS x");
    for (let i = 0; i < one.length; i++) read(one.subarray(i, i + 1));
    r.onReady(100, 0);
    // A pipeline in one read: Query, an extended group ending in Sync, Query; three ReadyForQuery.
    read(Buffer.concat([q('SELECT 1 AS x'), message('P', '\0SELECT 1\0\0\0'), message('S', ''), q('SELECT 2 AS y')]));
    r.onReady(10, 2);
    r.onReady(1000, 1);
    r.onReady(20, 0);
    // During COPY IN a Sync is no sync point; CopyDone ends the copy, and the Query after it is timed.
    read(Buffer.concat([message('d', 'row\n'), message('S', ''), message('c', ''), q('SELECT 3 AS x')]), true);
    r.onReady(5, 0);
    const rows = table.rows().map((x) => [x.text, x.count, x.timeUs, x.pool]);
    expect(rows).toEqual([
      ['SELECT ? AS x', 3, 115, 3],
      ['SELECT ? AS y', 1, 20, 3],
    ]);
  });

  it('a pipeline longer than its ring is counted but not misattributed; nothing in flight clears the ring', async () => {
    const { QueryRecorder } = await import('../../../src/pooler/query-stats/recorder.js');
    const table = new QueryStatsTable();
    table.resize(20);
    const tx = new TransactionTracker();
    const r = new QueryRecorder(1, tx, table);
    const read = reads(r, tx);
    read(Buffer.concat(Array.from({ length: 12 }, (_, i) => q(`SELECT ${i} AS n${i}`))));
    for (let left = 11; left >= 0; left--) r.onReady(1, left);
    expect(table.rows().map((x) => x.text)).toEqual(Array.from({ length: 8 }, (_, i) => `SELECT ? AS n${i}`));
    // A ReadyForQuery with nothing recorded in flight (the pooler's own query) is ignored.
    r.onReady(1, 0);
    read(q('SELECT 1 AS n0'));
    r.onReady(7, 0);
    expect(table.rows()[0]).toMatchObject({ text: 'SELECT ? AS n0', count: 2, timeUs: 8 });
  });
});
