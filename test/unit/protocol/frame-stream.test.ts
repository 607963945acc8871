// FrameStream: message boundaries across chunks, whole messages for the types asked for, bad lengths.
import { describe, expect, it } from 'vitest';
import { wireMessage } from '../../helpers/wire.js';
import { FrameStream, typeSet } from '../../../src/protocol/frame-stream.js';

const msg = wireMessage;

const Z = 'Z'.charCodeAt(0);
const stream = Buffer.concat([
  msg('T', 'rowdesc'),
  msg('D', Buffer.alloc(5000, 1)),
  msg('D', 'x'),
  msg('C', 'SELECT 2\0'),
  msg('Z', 'I'),
  msg('S', ''),
  msg('Z', 'T'),
  msg('D', Buffer.alloc(300, 2)),
  msg('Z', 'E'),
]);
const expected = ['T', 'D', 'D', 'C', 'Z:I', 'S', 'Z:T', 'D', 'Z:E'];

function collect(chunks: Buffer[]): string[] {
  const seen: string[] = [];
  const fs = new FrameStream(1 << 20, typeSet(Z), (type, buf, start, _len, complete) => {
    const t = String.fromCharCode(type);
    if (type === Z) {
      expect(complete).toBe(true);
      seen.push(`Z:${String.fromCharCode(buf[start + 5]!)}`);
    } else seen.push(t);
  });
  for (const c of chunks) expect(fs.feed(c)).toBe(true);
  expect(fs.atBoundary).toBe(true);
  return seen;
}

describe('FrameStream', () => {
  it('sees every message when all arrive in one chunk', () => {
    expect(collect([stream])).toEqual(expected);
  });

  it('sees every message for a cut at every position', () => {
    for (let cut = 1; cut < stream.length; cut++) {
      expect(collect([stream.subarray(0, cut), stream.subarray(cut)])).toEqual(expected);
    }
  });

  it('sees every message byte by byte and in random pieces', () => {
    const bytes: Buffer[] = [];
    for (let i = 0; i < stream.length; i++) bytes.push(stream.subarray(i, i + 1));
    expect(collect(bytes)).toEqual(expected);
    let seed = 7;
    for (let round = 0; round < 50; round++) {
      const pieces: Buffer[] = [];
      for (let pos = 0; pos < stream.length;) {
        seed = (seed * 1103515245 + 12345) >>> 0;
        const n = 1 + (seed % 700);
        pieces.push(stream.subarray(pos, pos + n));
        pos += n;
      }
      expect(collect(pieces)).toEqual(expected);
    }
  });

  it('a message not asked for whole comes with the body bytes its chunk holds, also when its header was cut', () => {
    // What a consumer can read of each 'D' at delivery: the body bytes in the delivered buffer.
    const body = (chunks: Buffer[]): string => {
      let got = '';
      const fs = new FrameStream(1 << 20, typeSet(Z), (type, buf, start, len, complete) => {
        if (type !== 'Q'.charCodeAt(0)) return;
        const end = complete ? start + 1 + len : Math.min(start + 1 + len, buf.length);
        got += buf.toString('latin1', start + 5, end) + '|';
      });
      for (const c of chunks) expect(fs.feed(c)).toBe(true);
      return got;
    };
    const q = Buffer.concat([msg('Q', 'SET search_path = a\0'), msg('Z', 'I')]);
    for (let cut = 1; cut < q.length; cut++) {
      const got = body([q.subarray(0, cut), q.subarray(cut)]);
      // Cut inside the header (cut < 5): the whole text comes with the header, from the second chunk.
      if (cut < 5) expect(got, `cut ${cut}`).toBe('SET search_path = a\0|');
      // Cut inside the body: what the first chunk holds (the rest is bytes the consumer sees as they come).
      else expect(got, `cut ${cut}`).toBe(`${'SET search_path = a\0'.slice(0, Math.min(cut - 5, 20))}|`);
    }
  });

  it('hands a chunk of many messages from the TypeScript scan to the native one without losing any', () => {
    const many = Buffer.concat(
      Array.from({ length: 300 }, (_, i) => (i % 50 === 49 ? msg('Z', 'I') : msg('D', 'r'.repeat(i % 7)))),
    );
    const want = Array.from({ length: 300 }, (_, i) => (i % 50 === 49 ? 'Z:I' : 'D'));
    expect(collect([many])).toEqual(want);
    expect(collect([many.subarray(0, 1001), many.subarray(1001)])).toEqual(want);
  });

  it('rejects a bad length in the header, also when the header is split', () => {
    const bad = Buffer.concat([msg('Z', 'I'), Buffer.from([0x51, 0, 0, 0, 2])]);
    const fs = new FrameStream(1 << 20, typeSet(Z), () => undefined);
    expect(fs.feed(bad)).toBe(false);
    expect(fs.badLength).toBe(2);
    const fs2 = new FrameStream(100, typeSet(Z), () => undefined);
    expect(fs2.feed(Buffer.from([0x51, 0, 0]))).toBe(true);
    expect(fs2.feed(Buffer.from([1, 0]))).toBe(false);
    expect(fs2.badLength).toBe(256);
  });
});
