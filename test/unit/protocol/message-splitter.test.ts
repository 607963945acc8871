// MessageSplitter: whole messages for the types asked for, pieces for the rest, the same bytes in the same order however the stream is cut.
import { describe, expect, it } from 'vitest';
import { typeSet } from '../../../src/protocol/frame-stream.js';
import { MessageSplitter } from '../../../src/protocol/message-splitter.js';
import { mulberry32 } from '../../helpers/prng.js';
import { wireMessage } from '../../helpers/wire.js';

const WHOLE = typeSet(0x50, 0x42, 0x53); // P, B, S whole; D, d, Q passed in pieces

function run(chunks: Buffer[], max = 1 << 20) {
  const out: Buffer[] = [];
  const wholes: string[] = [];
  const starts: string[] = [];
  const s = new MessageSplitter(max, WHOLE, {
    whole: (type, msg) => {
      out.push(msg);
      wholes.push(String.fromCharCode(type) + msg.subarray(5).toString());
    },
    piece: (type, bytes, first) => {
      out.push(Buffer.from(bytes));
      if (first) starts.push(String.fromCharCode(type));
    },
  });
  const ok = chunks.every((c) => s.feed(c));
  return { ok, bytes: Buffer.concat(out), wholes, starts, splitter: s };
}

function stream(rand: () => number): { bytes: Buffer; wholes: string[]; starts: string[] } {
  const parts: Buffer[] = [];
  const wholes: string[] = [];
  const starts: string[] = [];
  for (let i = 0, n = 1 + Math.floor(rand() * 12); i < n; i++) {
    const type = 'PBSDdQ'[Math.floor(rand() * 6)]!;
    const body = 'x'.repeat(Math.floor(rand() * 40)) + i;
    parts.push(wireMessage(type, type === 'S' ? '' : body));
    if ('PBS'.includes(type)) wholes.push(type + (type === 'S' ? '' : body));
    else starts.push(type);
  }
  return { bytes: Buffer.concat(parts), wholes, starts };
}

describe('MessageSplitter', () => {
  it('cut at every position of a stream: whole messages intact, every byte once, in order', () => {
    const s = stream(mulberry32(7));
    for (let cut = 0; cut <= s.bytes.length; cut++) {
      const r = run([s.bytes.subarray(0, cut), s.bytes.subarray(cut)]);
      expect(r.ok).toBe(true);
      expect(r.bytes.equals(s.bytes), `cut at ${cut}`).toBe(true);
      expect(r.wholes).toEqual(s.wholes);
      expect(r.starts).toEqual(s.starts);
      expect(r.splitter.atBoundary).toBe(true);
    }
  });

  it('500 seeded streams cut into random pieces of 1 to 9 bytes', () => {
    const rand = mulberry32(20261122);
    for (let i = 0; i < 500; i++) {
      const s = stream(rand);
      const chunks: Buffer[] = [];
      for (let pos = 0; pos < s.bytes.length;) {
        const n = 1 + Math.floor(rand() * 9);
        chunks.push(s.bytes.subarray(pos, pos + n));
        pos += n;
      }
      const r = run(chunks);
      expect(r.bytes.equals(s.bytes)).toBe(true);
      expect(r.wholes).toEqual(s.wholes);
      expect(r.starts).toEqual(s.starts);
    }
  });

  it('stops at a length below 4 or above the limit, whole header or cut inside it', () => {
    const good = wireMessage('Q', 'select 1\0');
    for (const bad of [Buffer.from([0x50, 0, 0, 0, 3]), Buffer.from([0x44, 0, 0x10, 0, 0])]) {
      const bytes = Buffer.concat([good, bad, good]);
      for (let cut = good.length; cut <= good.length + 5; cut++) {
        const r = run([bytes.subarray(0, cut), bytes.subarray(cut)], 1000);
        expect(r.ok).toBe(false);
        expect(r.splitter.badLength).toBe(bad.readUInt32BE(1));
        expect(r.bytes.equals(good)).toBe(true);
      }
    }
  });

  it('is mid-message while a piece or a whole message is incomplete', () => {
    const r = run([wireMessage('D', 'abcdef').subarray(0, 7)]);
    expect(r.splitter.atBoundary).toBe(false);
    const w = run([wireMessage('P', 'abcdef').subarray(0, 3)]);
    expect(w.splitter.atBoundary).toBe(false);
    expect(w.wholes).toEqual([]);
  });
});
