// Hits packed in a shard thread and merged in the HTTP thread keep (time, id) order and the limit.
import { describe, expect, it } from 'vitest';
import { mergeHits, packHits, unpackHits, type ShardHit } from '../../../src/logstore/search/packed-hits.js';

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
});
