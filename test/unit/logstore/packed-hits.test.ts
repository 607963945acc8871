// Hits packed in a shard thread and merged in the HTTP thread keep (time, id) order and the limit.
import { describe, expect, it } from 'vitest';
import { HitWriter, mergeHitList, mergeHits, packHits, unpackHits, type ShardHit } from '../../../src/logstore/search/packed-hits.js';
import { hitJson } from '../../../src/logstore/search/hit-json.js';

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
    expect(JSON.parse(list.jsonBytes(1, 3, '{"docs":[', ']}').toString())).toEqual({ docs: want.slice(1).map((h) => JSON.parse(h.json)) });
    expect(list.jsonBytes(3, 3).length).toBe(0);
  });
});
