// A store's StoreReply bytes for a Session: a search answer's hits are written once, straight from the merged hit
// list into the message (the protobuf encoder would copy an encoded hits buffer a second time).
import { HitList } from '../../search/packed-hits.js';
import { hitsWireSize, writeHits } from '../../search/packed-wire.js';
import { giveBack } from '../../search/scratch.js';
import { services } from '../proto.js';

type Serialize = (value: unknown) => Buffer;

function varintSize(v: number): number {
  let n = 1;
  while (v >= 0x80) {
    v = Math.floor(v / 128);
    n++;
  }
  return n;
}

function writeVarint(out: Buffer, at: number, v: number): number {
  while (v >= 0x80) {
    out[at++] = (v & 0x7f) | 0x80;
    v = Math.floor(v / 128);
  }
  out[at++] = v;
  return at;
}

/** Field tags (field number << 3 | wire type 2, length-delimited) of StoreReply.search and StoreSearchResponse.hits. */
const REPLY_SEARCH_TAG = (2 << 3) | 2;
const SEARCH_HITS_TAG = (6 << 3) | 2;
const REPLY_ID_TAG = 1 << 3;

/**
 * Serializes a StoreReply. One whose search.hits is a HitList is laid out by hand: id, then the search answer
 * (every other field by the library's own encoder, then `hits` as the last field, written in place); protobuf
 * readers take fields in any order, so the message is the same as the library would write.
 */
export function storeReplySerializer(): Serialize {
  const svc = services().store.service;
  const reply = svc.Session!.responseSerialize as Serialize;
  const search = svc.Search!.responseSerialize as Serialize;
  return (value) => {
    const r = value as { id: number; search?: { hits: unknown } & Record<string, unknown> };
    const hits = r.search?.hits;
    if (!(hits instanceof HitList)) return reply(value);
    const { hits: _, ...rest } = r.search!;
    const head = search(rest);
    const hitsSize = hitsWireSize(hits);
    const subSize = head.length + 1 + varintSize(hitsSize) + hitsSize;
    const out = Buffer.allocUnsafe(1 + varintSize(r.id) + 1 + varintSize(subSize) + subSize);
    let at = 0;
    out[at++] = REPLY_ID_TAG;
    at = writeVarint(out, at, r.id);
    out[at++] = REPLY_SEARCH_TAG;
    at = writeVarint(out, at, subSize);
    at += head.copy(out, at);
    out[at++] = SEARCH_HITS_TAG;
    at = writeVarint(out, at, hitsSize);
    writeHits(hits, out, at);
    // Copied into the message (serialized once): the hits' bytes are free for the next search (search/scratch.ts).
    for (const p of hits.parts) giveBack(p.json);
    return out;
  };
}
