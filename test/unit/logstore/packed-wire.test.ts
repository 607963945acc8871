// Packed hits as the store API's bytes (StoreSearchResponse.hits): a merged hit list survives the trip whole and
// in order, the JSON is not copied on the way in, and bytes that do not add up are refused with a clear error.
import { describe, expect, it } from 'vitest';
import {
  HitWriter,
  mergeHitList,
  packHits,
  unpackHits,
  type ShardHit,
} from '../../../src/logstore/search/packed-hits.js';
import { decodeHits, encodeHits } from '../../../src/logstore/search/packed-wire.js';

const hit = (time: number, n: number): ShardHit => {
  const id = time.toString(16).padStart(12, '0') + n.toString(16).padStart(12, '0');
  return { id, time, json: `{"id":"${id}","data":{"n":${n},"é":"ü 😀"}}` };
};

describe('packed hits on the wire', () => {
  it('a merged list of several shards round-trips: the same hits in the same order, documents as bytes', () => {
    const a = [hit(9, 1), hit(7, 4), hit(7, 2), hit(1, 3)];
    const b = [hit(8, 5), hit(7, 3), hit(2, 6)];
    const list = mergeHitList([packHits(a), packHits(b)], 5, true);
    const wire = encodeHits(list);
    const back = decodeHits(new Uint8Array(wire));
    expect(unpackHits(back)).toEqual(list.slice(0, list.length));
    // Merged again on the proxy (one store's answer), the same list.
    const again = mergeHitList([back], 100, true);
    expect(again.slice(0, again.length)).toEqual(list.slice(0, list.length));
    expect(again.jsonBytes(0, 5).toString()).toBe(list.jsonBytes(0, 5).toString());
    for (let i = 0; i < list.length; i++) expect(Buffer.from(again.doc(i).data)).toEqual(Buffer.from(list.doc(i).data));
  });

  it('hits written from stored documents (the store path) keep their bytes; the JSON is a view of the message', () => {
    const w = new HitWriter(2);
    w.add('0190000000000000000000aa', Date.parse('2026-06-01T00:00:00.123Z'), Buffer.from('{"msg":"a\\"b","x":[1,2]}'));
    w.addText('0190000000000000000000ab', -5, '{"neg":"time"}');
    const list = mergeHitList([w.finish()], 10, true);
    const wire = encodeHits(list);
    const back = decodeHits(wire);
    expect(back.json.buffer).toBe(wire.buffer);
    expect(unpackHits(back)).toEqual(list.slice(0, 2));
  });

  it('no hits is 12 bytes (never empty: empty means an older store that sent documents one by one)', () => {
    const wire = encodeHits(mergeHitList([packHits([])], 10, true));
    expect(wire.length).toBe(12);
    expect(unpackHits(decodeHits(wire))).toEqual([]);
  });

  it('refuses bytes that do not add up', () => {
    const wire = encodeHits(mergeHitList([packHits([hit(3, 1), hit(2, 2)])], 10, true));
    expect(() => decodeHits(wire.subarray(0, 4))).toThrow(/malformed/);
    expect(() => decodeHits(wire.subarray(0, 40))).toThrow(/2 hits in 40 bytes/);
    expect(() => decodeHits(wire.subarray(0, wire.length - 1))).toThrow(/offsets/);
    const swapped = Buffer.from(wire);
    swapped.writeUInt32LE(swapped.readUInt32LE(8 + 16 + 8) + 1, 8 + 16 + 4);
    expect(() => decodeHits(swapped)).toThrow(/hit 1 ends before it starts/);
    const huge = Buffer.from(wire);
    huge.writeUInt32LE(0xffffffff, 0);
    expect(() => decodeHits(huge)).toThrow(/malformed/);
  });
});
