// Client ids: the hash's interpolation search finds every id (and runs of equal hashes), the id goes first
// into the document bytes, and the sealed file answers candidates by hash.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  ClientIdTable,
  SealedClientIds,
  clientIdHash,
  encodeClientIds,
  findHash,
  routeClientId,
  withClientId,
  withClientIdBound,
} from '../../../src/logstore/storage/client-ids.js';

describe('client ids', () => {
  it('findHash finds every present hash at its first position, and no absent one', () => {
    const xs = Uint32Array.from(Array.from({ length: 5000 }, (_, i) => clientIdHash(`id-${i}`))).sort();
    const dup = Uint32Array.from([...xs.subarray(0, 100), xs[100]!, xs[100]!, ...xs.subarray(100)]).sort();
    for (const arr of [xs, dup]) {
      for (let i = 0; i < arr.length; i++) {
        const at = findHash(arr, arr[i]!);
        expect(arr[at]).toBe(arr[i]);
        expect(at === 0 || arr[at - 1] !== arr[i]).toBe(true);
      }
    }
    const present = new Set(xs);
    for (let i = 0; i < 5000; i++) {
      const h = clientIdHash(`absent-${i}`);
      if (!present.has(h)) expect(findHash(xs, h)).toBe(-1);
    }
    expect(findHash(new Uint32Array(0), 5)).toBe(-1);
  });

  it('routes ids evenly over shards', () => {
    const counts = [0, 0, 0];
    for (let i = 0; i < 30_000; i++) counts[routeClientId(`doc-${i}`, 3)]!++;
    for (const c of counts) expect(c).toBeGreaterThan(9000);
  });

  it('withClientId puts "_id" first and keeps the rest byte for byte', () => {
    const cases: [string, string][] = [
      ['{"a":1}', '{"_id":"x\\"y","a":1}'],
      ['{}', '{"_id":"x\\"y"}'],
      ['{ }', '{"_id":"x\\"y"}'],
      ['  { "a" : [1, {"b":2}] }', '{"_id":"x\\"y", "a" : [1, {"b":2}] }'],
    ];
    for (const id of ['plain', 'q"b\\s', '\u0001ctl', 'é', '€', '😀', '\ud800lone']) {
      expect(withClientId(Buffer.from('{"a":1}'), id).length).toBeLessThanOrEqual(withClientIdBound(7, id));
      expect(JSON.parse(withClientId(Buffer.from('{"a":1}'), id).toString())._id).toBe(
        id.replace('\ud800', '\ufffd') === id ? id : JSON.parse(JSON.stringify(id)),
      );
    }
    for (const [doc, want] of cases) {
      const out = withClientId(Buffer.from(doc), 'x"y').toString();
      expect(out).toBe(want);
      expect(JSON.parse(out)._id).toBe('x"y');
    }
  });

  it('the sealed file gives the local ids whose id hashes alike', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'tidepool-cid-'));
    try {
      const entries: [string, number][] = Array.from({ length: 1000 }, (_, i) => [`k${i}`, 999 - i]);
      writeFileSync(
        path.join(dir, 'f'),
        encodeClientIds(
          Uint32Array.from(entries, ([id]) => clientIdHash(id)),
          entries.map(([, l]) => l),
        ),
      );
      const f = new SealedClientIds(path.join(dir, 'f'));
      for (const [id, local] of entries) expect(f.candidates(clientIdHash(id))).toContain(local);
      expect(f.candidates(clientIdHash('nope')).length).toBeLessThanOrEqual(1);
      f.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('the active table finds every id it holds (through growth and hash collisions), and lists them for the seal', () => {
    const t = new ClientIdTable();
    for (let i = 0; i < 5000; i++) t.add(clientIdHash(`a${i}`), i);
    t.add(12345, 9000);
    t.add(12345, 9001);
    for (let i = 0; i < 5000; i++) expect(t.candidates(clientIdHash(`a${i}`))).toContain(i);
    expect([...t.candidates(12345)].sort()).toEqual([9000, 9001]);
    const { hashes, locals } = t.entries();
    expect(hashes.length).toBe(5002);
    expect([...locals].sort((a, b) => a - b).slice(-2)).toEqual([9000, 9001]);
  });
});
