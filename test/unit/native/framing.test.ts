// The framing scanner: the native addon and its TypeScript twin give the same answers on the same byte streams.
import { describe, expect, it } from 'vitest';
import { wireMessage } from '../../helpers/wire.js';
import { scanFramesTs, SCAN_BAD_LENGTH } from '../../../src/native/framing.js';
import { requireAddon } from '../../helpers/native.js';

const msg = wireMessage;

type Result = { count: number; next: number; status: number; triples: number[] };

function run(fn: typeof scanFramesTs, buf: Buffer, offset = 0, end = buf.length, cap = 64, max = 1 << 28): Result {
  const out = new Int32Array(2 + cap * 3);
  const count = fn(buf, offset, end, out, max);
  return { count, next: out[0]!, status: out[1]!, triples: Array.from(out.subarray(2, 2 + count * 3)) };
}

const nativeScan: typeof scanFramesTs = (...args) => requireAddon().scanFrames(...args);
const impls: [string, typeof scanFramesTs][] = [['typescript', scanFramesTs], ['native', nativeScan]];

const q = msg('Q', 'select 1\0');
const z = msg('Z', 'I');
const big = msg('D', Buffer.alloc(70_000, 7));
const stream = Buffer.concat([q, z, big, msg('C', 'SELECT 1\0'), z]);

describe.each(impls)('scanFrames (%s)', (_name, fn) => {
  it('finds many messages in one chunk', () => {
    const r = run(fn, stream);
    expect(r.count).toBe(5);
    expect(r.next).toBe(stream.length);
    expect(r.status).toBe(0);
    expect(r.triples.slice(0, 3)).toEqual(['Q'.charCodeAt(0), 0, q.length - 1]);
    expect(r.triples.slice(6, 9)).toEqual(['D'.charCodeAt(0), q.length + z.length, big.length - 1]);
  });

  it('stops at a message cut at the start, in the header, in the middle and at the end', () => {
    for (const cut of [1, 3, 5, 6, q.length - 1]) {
      const r = run(fn, stream, 0, cut);
      expect(r.count).toBe(0);
      expect(r.next).toBe(0);
    }
    const afterQ = q.length;
    for (const cut of [afterQ, afterQ + 2, afterQ + z.length - 1]) {
      const r = run(fn, stream, 0, cut);
      expect(r.count).toBe(1);
      expect(r.next).toBe(afterQ);
    }
  });

  it('starts from an offset and honours a full output array', () => {
    const r = run(fn, stream, q.length, stream.length, 2);
    expect(r.count).toBe(2);
    expect(r.triples[1]).toBe(q.length);
    expect(r.next).toBe(q.length + z.length + big.length);
  });

  it('reports a length below 4 or past the limit', () => {
    const bad = Buffer.concat([z, Buffer.from([0x51, 0, 0, 0, 3])]);
    const r = run(fn, bad);
    expect(r.count).toBe(1);
    expect(r.status).toBe(SCAN_BAD_LENGTH);
    expect(r.next).toBe(z.length);
    const huge = run(fn, big, 0, big.length, 8, 1000);
    expect(huge.status).toBe(SCAN_BAD_LENGTH);
    expect(huge.next).toBe(0);
    const negative = run(fn, Buffer.from([0x44, 0xff, 0xff, 0xff, 0xff, 0]));
    expect(negative.status).toBe(SCAN_BAD_LENGTH);
  });
});

describe('native and TypeScript twins agree', () => {
  it('on random split streams', () => {
    let seed = 42;
    const rnd = () => ((seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32);
    for (let i = 0; i < 300; i++) {
      const parts: Buffer[] = [];
      const n = 1 + Math.floor(rnd() * 20);
      for (let k = 0; k < n; k++) parts.push(msg(String.fromCharCode(65 + Math.floor(rnd() * 26)), Buffer.alloc(Math.floor(rnd() * 300))));
      const buf = Buffer.concat(parts);
      const start = Math.floor(rnd() * 10);
      const end = start + Math.floor(rnd() * (buf.length - start));
      const cap = 1 + Math.floor(rnd() * 25);
      expect(run(nativeScan, buf, start, end, cap)).toEqual(run(scanFramesTs, buf, start, end, cap));
    }
  });
});
