// A Session's StoreReply with the hits written in place (grpc/store/session-reply.ts) is the message the protobuf library
// writes with the hits encoded first: the proxy decodes the same answer, whatever the id's and the hits' sizes.
import { describe, expect, it } from 'vitest';
import { services } from '../../../src/logstore/grpc/proto.js';
import { storeReplySerializer } from '../../../src/logstore/grpc/store/session-reply.js';
import { mergeHitList, packHits, unpackHits, type ShardHit } from '../../../src/logstore/search/packed-hits.js';
import { decodeHits, encodeHits, hitsWireSize, writeHits } from '../../../src/logstore/search/packed-wire.js';

const hit = (time: number, n: number, pad = 0): ShardHit => {
  const id = time.toString(16).padStart(12, '0') + n.toString(16).padStart(12, '0');
  return { id, time, json: `{"id":"${id}","data":{"n":${n},"é":"ü 😀","pad":"${'x'.repeat(pad)}"}}` };
};

type Decoded = {
  id: number;
  reply: string;
  search: { total: number; hits: Buffer; aggs: unknown[]; hist: unknown[]; fractions_read: number };
};

describe('StoreReply with hits written in place', () => {
  const svc = services().store.service;
  const decode = svc.Session!.responseDeserialize as (b: Buffer) => Decoded;
  const library = svc.Session!.responseSerialize as (v: unknown) => Buffer;
  const ours = storeReplySerializer();

  it("decodes to the same reply as the library's encoding, for small and large ids and hit lists", () => {
    for (const [id, count, pad] of [
      [1, 0, 0],
      [127, 3, 10],
      [128, 50, 100],
      [2 ** 32 - 1, 600, 300],
    ] as const) {
      const a = Array.from({ length: count }, (_, i) => hit(10_000 - 2 * i, i, pad));
      const b = Array.from({ length: count }, (_, i) => hit(10_001 - 2 * i, count + i, pad));
      const list = mergeHitList([packHits(a), packHits(b)], count + 7, true);
      const search = {
        total: 2 * count + 5,
        docs: [],
        aggs: [
          {
            buckets: [
              { key: 'k', count: 3, sum: 1, min: 0, max: 2, not_exists: 0, values: [], uniq: [], sketch: null },
            ],
            no_group: 0,
          },
        ],
        hist: [{ ts: 60_000, count: 4 }],
        fractions_read: 3,
      };
      const mine = decode(ours({ id, search: { ...search, hits: list } }));
      const theirs = decode(library({ id, search: { ...search, hits: encodeHits(list) } }));
      expect(mine).toEqual(theirs);
      expect(mine.reply).toBe('search');
      expect(mine.id).toBe(id);
      expect(unpackHits(decodeHits(mine.search.hits))).toEqual(list.slice(0, list.length));
    }
  });

  it("other replies (errors, status, hits already bytes) are the library's own bytes", () => {
    const err = { id: 9, error: { code: 3, message: 'bad query' } };
    expect(ours(err)).toEqual(library(err));
    const bytes = {
      id: 10,
      search: {
        total: 1,
        docs: [],
        hits: encodeHits(mergeHitList([packHits([hit(5, 1)])], 10, true)),
        aggs: [],
        hist: [],
        fractions_read: 1,
      },
    };
    expect(ours(bytes)).toEqual(library(bytes));
  });

  it('hits in long runs of one part, and runs broken by a dropped duplicate, are written whole and in order', () => {
    const a = Array.from({ length: 40 }, (_, i) => hit(1000 - i, i, i));
    const b = Array.from({ length: 40 }, (_, i) => hit(500 - i, 100 + i, 3));
    // The same document (same id and time) in both parts: the merge keeps one copy, skipping an index of one part.
    const twin = hit(497.5, 999, 7);
    a.push(twin);
    b.splice(3, 0, twin);
    const list = mergeHitList([packHits(b), packHits(a)], 75, true);
    expect(list.dropped).toBe(1);
    const back = unpackHits(decodeHits(encodeHits(list)));
    expect(back).toEqual(list.slice(0, list.length));
    expect(back.map((h) => h.time)).toEqual([...back.map((h) => h.time)].sort((x, y) => y - x));
  });

  it('writeHits at an unaligned offset writes what encodeHits does', () => {
    const list = mergeHitList([packHits([hit(9, 1), hit(4, 2)]), packHits([hit(7, 3)])], 10, true);
    const out = Buffer.alloc(hitsWireSize(list) + 3);
    writeHits(list, out, 3);
    expect(out.subarray(3)).toEqual(encodeHits(list));
  });
});
