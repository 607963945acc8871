// Hits packed in a shard thread and merged in the HTTP thread keep (time, id) order and the limit.
import { describe, expect, it } from 'vitest';
import {
  HitWriter,
  mergeHitList,
  mergeHits,
  packHits,
  unpackHits,
  type ShardHit,
} from '../../../src/logstore/search/packed-hits.js';
import { ISO_TIME_BYTES, hitJson, isoTime, writeIsoTime } from '../../../src/logstore/search/hit-json.js';

const hit = (time: number, n: number): ShardHit => {
  const id = time.toString(16).padStart(12, '0') + n.toString(16).padStart(12, '0');
  return { id, time, json: `{"id":"${id}","data":{"n":${n},"é":"ü"}}` };
};

describe('packed hits', () => {
  it('round-trip', () => {
    const hits = [hit(5, 1), hit(3, 2), hit(3, 3)];
    expect(unpackHits(packHits(hits))).toEqual(hits);
    expect(unpackHits(packHits([]))).toEqual([]);
  });

  it('merge shards newest first (ties by id) and oldest first, up to the limit', () => {
    const a = [hit(9, 1), hit(7, 4), hit(7, 2), hit(1, 3)];
    const b = [hit(8, 5), hit(7, 3), hit(2, 6)];
    const all = [...a, ...b].sort((x, y) => y.time - x.time || (y.id > x.id ? 1 : -1));
    expect(mergeHits([packHits(a), packHits(b)], 5, true)).toEqual(all.slice(0, 5));
    expect(mergeHits([packHits(a), packHits(b)], 100, true)).toEqual(all);
    const asc = (h: ShardHit[]) => [...h].reverse();
    expect(mergeHits([packHits(asc(a)), packHits(asc(b))], 3, false)).toEqual(asc(all).slice(0, 3));
    expect(mergeHits([packHits([]), packHits(b)], 2, true)).toEqual(b.slice(0, 2));
  });

  it('drops a document that two replicas both return, and still fills the limit', () => {
    const a = [hit(9, 1), hit(7, 4), hit(7, 2), hit(1, 3)];
    const b = [hit(9, 1), hit(7, 2), hit(5, 8)];
    expect(mergeHits([packHits(a), packHits(b)], 4, true)).toEqual([hit(9, 1), hit(7, 4), hit(7, 2), hit(5, 8)]);
    expect(mergeHits([packHits(a), packHits(b)], 100, true)).toHaveLength(5);
    expect(mergeHitList([packHits(a), packHits(b)], 100, true).dropped).toBe(2);
  });

  it('hits written from stored bytes equal the JSON text, and the merged list renders a whole response', () => {
    const docs = ['{"a":1}', '{"m":"é ü \\" x"}', '{}'];
    const stored = Buffer.from(`xx${docs.join('')}yy`);
    const w = new HitWriter(1);
    const want: ShardHit[] = [];
    let at = 2;
    docs.forEach((d, i) => {
      const len = Buffer.byteLength(d);
      const time = Date.UTC(2026, 0, 1) + i * 1234567;
      const id = time.toString(16).padStart(12, '0') + i.toString(16).padStart(12, '0');
      if (i === 1) w.add(id, time, stored.subarray(at, at + len));
      else w.addRef(id, time, stored, at, at + len);
      want.push({ id, time, json: hitJson(id, time, d, []) });
      at += len;
    });
    const packed = w.finish();
    expect(unpackHits(packed)).toEqual(want);
    const list = mergeHitList([packed, packHits([])], 10, false);
    expect(JSON.parse(list.jsonBytes(1, 3, '{"docs":[', ']}').toString())).toEqual({
      docs: want.slice(1).map((h) => JSON.parse(h.json)),
    });
    expect(list.jsonBytes(3, 3).length).toBe(0);
  });

  it('writes ISO times as bytes exactly as toISOString, and leaves years past 9999 or before 0 to the text form', () => {
    const out = new Uint8Array(ISO_TIME_BYTES + 2);
    const times = [
      0,
      1,
      999,
      86_399_999,
      86_400_000,
      Date.UTC(2026, 10, 24, 7, 8, 9, 10),
      Date.UTC(2024, 1, 29, 23, 59, 59, 999),
      253_402_300_799_999,
    ];
    for (let i = 0; i < 2000; i++)
      times.push(Math.floor((((i * 2654435761) % 1_000_003) / 1_000_003) * 253_402_300_800_000));
    for (const t of times) {
      out.fill(0);
      expect(writeIsoTime(t, out, 1)).toBe(true);
      expect(Buffer.from(out.subarray(1, 1 + ISO_TIME_BYTES)).toString('latin1')).toBe(new Date(t).toISOString());
      expect(out[0]).toBe(0);
      expect(out[1 + ISO_TIME_BYTES]).toBe(0);
    }
    for (const t of [-1, -86_400_000 * 400, 253_402_300_800_000, 8.64e15, NaN]) {
      out.fill(7);
      expect(writeIsoTime(t, out, 0)).toBe(false);
      expect([...out].every((b) => b === 7)).toBe(true);
    }
    // A hit at such a time still renders as hitJson does.
    const w = new HitWriter(2);
    const doc = Buffer.from('{"x":1}');
    const far = [8.64e15, -62_198_755_200_000];
    far.forEach((t, i) => w.addRef(`${'f'.repeat(23)}${i}`, t, doc, 0, doc.length));
    expect(unpackHits(w.finish()).map((h) => h.json)).toEqual(
      far.map((t, i) => hitJson(`${'f'.repeat(23)}${i}`, t, '{"x":1}', [])),
    );
    expect(isoTime(far[1]!)).toBe(new Date(far[1]!).toISOString());
  });

  it('repairs stored bytes that are not UTF-8 unless the caller vouches for them', () => {
    const bad = Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0x22, 0x7d]);
    const w = new HitWriter(1);
    w.addRef('0'.repeat(24), 0, bad, 0, bad.length);
    expect(JSON.parse(unpackHits(w.finish())[0]!.json)).toEqual({
      id: '0'.repeat(24),
      data: { a: '\ufffd' },
      time: '1970-01-01T00:00:00.000Z',
    });
  });
});
