// Document time formats and clamping, time-sorted ids, config defaults and errors, text tokenization.
import { describe, expect, it } from 'vitest';
import { parseLogstoreConfig, parseAddr } from '../../../src/config/logstore.js';
import {
  IdMaker,
  docTime,
  formatIdTail,
  formatIdTailInto,
  idTime,
  parseDocTime,
} from '../../../src/logstore/doc-time.js';

describe('document time', () => {
  it.each([
    ['2026-01-02T03:04:05Z', Date.UTC(2026, 0, 2, 3, 4, 5)],
    ['2026-01-02T03:04:05.123Z', Date.UTC(2026, 0, 2, 3, 4, 5, 123)],
    ['2026-01-02T03:04:05.123456789Z', Date.UTC(2026, 0, 2, 3, 4, 5, 123)],
    ['2026-01-02T03:04:05+02:00', Date.UTC(2026, 0, 2, 1, 4, 5)],
    ['2026-01-02T03:04:05.5-0130', Date.UTC(2026, 0, 2, 4, 34, 5, 500)],
    ['2026-01-02 03:04:05.999', Date.UTC(2026, 0, 2, 3, 4, 5, 999)],
    ['2026-01-02 03:04:05', Date.UTC(2026, 0, 2, 3, 4, 5)],
  ])('parses %s', (text, want) => {
    expect(parseDocTime(text)).toBe(want);
  });

  it.each([
    [1767323045, Date.UTC(2026, 0, 2, 3, 4, 5)],
    [1767323045.25, Date.UTC(2026, 0, 2, 3, 4, 5, 250)],
    [1767323045123, Date.UTC(2026, 0, 2, 3, 4, 5, 123)],
    [1767323045123456, Date.UTC(2026, 0, 2, 3, 4, 5, 123)],
    [1767323045123456789, Date.UTC(2026, 0, 2, 3, 4, 5, 123)],
    ['1767323045', Date.UTC(2026, 0, 2, 3, 4, 5)],
    ['1767323045.5', Date.UTC(2026, 0, 2, 3, 4, 5, 500)],
    ['1767323045123', Date.UTC(2026, 0, 2, 3, 4, 5, 123)],
  ])('parses the epoch value %s (seconds, milli-, micro- or nanoseconds by size)', (v, want) => {
    expect(parseDocTime(v)).toBe(want);
  });

  it.each([
    'yesterday',
    '2026-01-02',
    '-1767323045',
    '17673e5',
    12345,
    0.25,
    -5,
    Infinity,
    null,
    '2026-01-02X03:04:05Z',
  ])('does not parse %s', (v) => {
    expect(parseDocTime(v)).toBeNull();
  });

  it('takes the first of timestamp, time, ts, @timestamp that parses; else ingest time', () => {
    const now = Date.UTC(2026, 5, 1);
    expect(docTime({ time: 'junk', ts: '2026-05-01T00:00:00Z', '@timestamp': '2026-04-01T00:00:00Z' }, now)).toEqual({
      time: Date.UTC(2026, 4, 1),
    });
    expect(docTime({ '@timestamp': '2026-04-01T00:00:00Z' }, now)).toEqual({ time: Date.UTC(2026, 3, 1) });
    expect(docTime({ msg: 'no time' }, now)).toEqual({ time: now });
    expect(docTime({ time: 0.25, '@timestamp': 1780000000000 }, now)).toEqual({ time: 1780000000000 });
  });

  it('clamps far-future and pre-1971 times to ingest time, keeping the original', () => {
    const now = Date.UTC(2026, 5, 1);
    expect(docTime({ timestamp: '2031-01-01T00:00:00Z' }, now)).toEqual({
      time: now,
      clampedFrom: '2031-01-01T00:00:00Z',
    });
    expect(docTime({ timestamp: '1970-01-01T00:00:00Z' }, now)).toEqual({
      time: now,
      clampedFrom: '1970-01-01T00:00:00Z',
    });
  });

  it('ids sort by time and carry it', () => {
    const ids = new IdMaker(3, 2 ** 40 - 2);
    const a = ids.next(Date.UTC(2026, 0, 1));
    const b = ids.next(Date.UTC(2026, 0, 1));
    const c = ids.next(Date.UTC(2026, 0, 2));
    expect([a, b, c].every((id) => /^[0-9a-f]{24}$/.test(id))).toBe(true);
    expect(a < c && b < c).toBe(true);
    expect(idTime(c)).toBe(Date.UTC(2026, 0, 2));
    expect(a.slice(12, 14)).toBe('03');
  });

  it('ids written as bytes equal the id strings, across digit carries, the 2^40 wrap and a counter jump', () => {
    const strings = new IdMaker(0xab, 2 ** 40 - 300);
    const bytes = new IdMaker(0xab, 2 ** 40 - 300);
    const out = new Uint8Array(24);
    const t0 = Date.UTC(2026, 0, 1);
    for (let i = 0; i < 5000; i++) {
      if (i === 2500) {
        strings.continueAfter('000000000000ab00000fffff');
        bytes.continueAfter('000000000000ab00000fffff');
      }
      const t = t0 + Math.floor(i / 3) * 17;
      bytes.nextInto(t, out, 0);
      expect(Buffer.from(out).toString('latin1')).toBe(strings.next(t));
    }
  });

  it('a proxy-made id (time and shard+counter tail) written as bytes equals its string', () => {
    const out = Buffer.alloc(30, 0x20);
    const tails = [0, 1, 15, 16, 2 ** 24 - 1, 2 ** 24, 2 ** 40 - 1, 0xab * 2 ** 40 + 12345, 2 ** 48 - 1];
    const times = [0, Date.UTC(2026, 0, 1), 2 ** 24 + 5, 2 ** 48 - 1];
    for (const time of times) {
      for (const tail of tails) {
        formatIdTailInto(time, tail, out, 3);
        expect(out.toString('latin1', 3, 27)).toBe(formatIdTail(time, tail));
        expect(out[2]).toBe(0x20);
        expect(out[27]).toBe(0x20);
      }
    }
  });
});

describe('log-store config', () => {
  it('fills every default', () => {
    const { config, problems } = parseLogstoreConfig('');
    expect(problems).toEqual([]);
    expect(config.server).toEqual({ http_addr: ':9002', grpc_addr: ':9004', debug_addr: ':9200' });
    expect(config.storage.frac_size).toBe(128 * 1024 ** 2);
    expect(config.storage.total_size).toBe(0);
    expect(config.storage.retention).toBe(0);
    expect(config.storage.shards).toBeGreaterThanOrEqual(1);
    expect(config.mapping.path).toBe('auto');
    expect(config.limits).toEqual({
      max_doc_size: 1024 ** 2,
      inflight_bulks: 32,
      bulk_queue: 1024,
      bulk_queue_wait: 10_000,
      bulk_memory: 128 * 1024 ** 2,
      search_docs: 100_000,
    });
    expect(Object.isFrozen(config.storage)).toBe(true);
  });

  it('reads units and addresses', () => {
    const { config, problems } = parseLogstoreConfig(
      'storage:\n  frac_size: 64MB\n  total_size: 2GB\n  retention: 7d\nserver:\n  http_addr: "127.0.0.1:0"\n',
    );
    expect(problems).toEqual([]);
    expect(config.storage.frac_size).toBe(64 * 1024 ** 2);
    expect(config.storage.total_size).toBe(2 * 1024 ** 3);
    expect(config.storage.retention).toBe(7 * 86_400_000);
    expect(parseAddr(config.server.http_addr)).toEqual({ host: '127.0.0.1', port: 0 });
    expect(parseAddr(':9002')).toEqual({ host: '0.0.0.0', port: 9002 });
    expect(parseAddr('[::1]:80')).toEqual({ host: '::1', port: 80 });
    expect(parseAddr('nowhere')).toBeNull();
  });

  it('names each bad key', () => {
    const { problems } = parseLogstoreConfig(
      'storage:\n  frac_size: 1KB\nlimits:\n  inflight_bulks: 0\nmapping: auto\n',
    );
    expect(problems.map((p) => p.path).sort()).toEqual(['limits.inflight_bulks', 'mapping', 'storage.frac_size']);
  });
});

describe('text tokens', () => {
  it('split ASCII and Unicode text the same way as the Unicode word split', async () => {
    const { textTokens } = await import('../../../src/logstore/tokenize.js');
    const split = (s: string, max: number) =>
      s
        .toLowerCase()
        .split(/[^\p{L}\p{N}_]+/u)
        .filter(Boolean)
        .map((w) => w.slice(0, max));
    for (const s of [
      'GET /images/French_12.gif HTTP/1.0',
      '  lead and trail  ',
      'a',
      '',
      '--',
      'x_y-z',
      'Grüße aus Köln 42',
      'naïve café',
      'long'.repeat(30),
    ]) {
      expect(textTokens(s, 72)).toEqual(split(s, 72));
      expect(textTokens(s, 3)).toEqual(split(s, 3));
    }
  });
});

describe('isoTime', () => {
  it('equals Date.toISOString', async () => {
    const { isoTime } = await import('../../../src/logstore/search/hit-json.js');
    const times = [
      0,
      1,
      999,
      86_399_999,
      86_400_000,
      Date.UTC(2026, 10, 22, 23, 59, 59, 999),
      Date.UTC(2024, 1, 29, 12, 0, 0, 5),
      Date.UTC(1999, 11, 31, 23, 59, 59, 90),
      1_700_000_000_123.7,
    ];
    for (let i = 0; i < 2000; i++) times.push(Math.floor(Date.UTC(2026, 0, 1) + i * 12_345_678.9));
    for (const t of times) expect(isoTime(t), String(t)).toBe(new Date(t).toISOString());
  });
});

describe('fast ISO time path', () => {
  it('agrees with Date.parse on valid and invalid "YYYY-MM-DDTHH:MM:SS.mmmZ" values', () => {
    const values: string[] = [];
    for (let i = 0; i < 3000; i++) values.push(new Date(Date.UTC(2020, 0, 1) + i * 987_654_321.7).toISOString());
    values.push(
      '2026-02-30T00:00:00.000Z',
      '2026-13-01T00:00:00.000Z',
      '2026-01-01T24:00:00.000Z',
      '2026-01-01T00:60:00.000Z',
      '2026-01-0xT00:00:00.000Z',
      '2024-02-29T23:59:59.999Z',
    );
    for (const v of values) {
      const want = Date.parse(v);
      const got = parseDocTime(v);
      if (Number.isNaN(want) || new Date(want).toISOString() !== v) expect(got === null || got === want, v).toBe(true);
      else expect(got, v).toBe(want);
    }
  });
});
