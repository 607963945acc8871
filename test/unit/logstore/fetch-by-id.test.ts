// Fetch by id inside one shard: ids made by the shard's own counter and ids a proxy assigned (its counter jumps
// between batches; a batch split across local shards keeps each document's counter) are found in the active
// fraction and after sealing, absent ids are not, and the shard reports which id shard bytes it holds.
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { parseMapping } from '../../../src/logstore/mapping.js';
import { Shard } from '../../../src/logstore/storage/shard.js';

const mapping = parseMapping('- {name: level, type: keyword}\n');
const base = Date.UTC(2026, 3, 1);
const dirs: string[] = [];

afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function openShard(dir?: string): Shard {
  const d = dir ?? mkdtempSync(path.join(os.tmpdir(), 'tidepool-fetch-'));
  if (!dir) dirs.push(d);
  return new Shard(
    { dir: d, shard: 1, mapping, fracSize: 1 << 30, totalSize: 0, retention: 0 },
    pino({ level: 'silent' }),
  );
}

/** Ingests `n` documents (numbered from `from`) and returns their ids. */
function ingest(
  shard: Shard,
  from: number,
  n: number,
  assign?: { shard: number; counter: number; counters?: number[] },
): string[] {
  const lines = Array.from({ length: n }, (_, i) =>
    Buffer.from(
      JSON.stringify({ timestamp: new Date(base + (from + i) * 10).toISOString(), level: 'info', n: from + i }),
    ),
  );
  const offs = new Int32Array(n * 2);
  let p = 0;
  lines.forEach((l, i) => {
    offs[2 * i] = p;
    offs[2 * i + 1] = l.length;
    p += l.length;
  });
  const r = shard.ingest(Buffer.concat(lines), offs, base, assign);
  expect(r.errors).toEqual([]);
  return Array.from({ length: n }, (_, i) => Buffer.from(r.ids).toString('latin1', 24 * i, 24 * i + 24));
}

const ns = (shard: Shard, ids: string[]) =>
  shard.fetch(ids).hits.map((h) => (JSON.parse(h.json) as { data: { n: number } }).data.n);

describe('fetch by id in a shard', () => {
  it("finds ids of its own counter and of a proxy's jumping counters, active and sealed; not others", () => {
    const shard = openShard();
    const own = ingest(shard, 0, 50);
    const a = ingest(shard, 50, 40, { shard: 3, counter: 1000 });
    const b = ingest(shard, 90, 40, { shard: 3, counter: 500 });
    const c = ingest(shard, 130, 5, { shard: 7, counter: 0, counters: [9, 4, 77, 5, 2 ** 40 - 1] });
    expect(new Set([...own, ...a, ...b, ...c].map((id) => id.slice(12, 14)))).toEqual(new Set(['01', '03', '07']));
    const all = [...own, ...a, ...b, ...c];
    const wanted = [all[134]!, all[3]!, all[60]!, all[129]!, all[131]!, all[90]!, all[49]!];
    // Absent: a known id's time with another counter, another shard byte, a counter between two batches, junk.
    const absent = [
      all[3]!.slice(0, 14) + 'ffffffffff',
      all[60]!.slice(0, 12) + '04' + all[60]!.slice(14),
      all[60]!.slice(0, 14) + '0000000bb8',
      'zz' + all[3]!.slice(2),
    ];
    for (let round = 0; round < 2; round++) {
      expect(ns(shard, [...wanted, ...absent])).toEqual([134, 3, 60, 129, 131, 90, 49]);
      expect(ns(shard, all)).toEqual(Array.from({ length: 135 }, (_, i) => i));
      expect(new Set(shard.idShards())).toEqual(new Set([1, 3, 7]));
      shard.seal();
    }
    shard.close();
  });

  it('a fraction sealed before id shard bytes were recorded makes the shard answer "any" (null)', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'tidepool-fetch-'));
    dirs.push(dir);
    let shard = openShard(dir);
    ingest(shard, 0, 10);
    shard.close();
    shard = openShard(dir);
    expect(shard.idShards()).toEqual([1]);
    shard.close();
    const fracs = dir;
    const metaFile = path.join(fracs, readdirFirst(fracs), 'meta.json');
    const meta = JSON.parse(readFileSync(metaFile, 'utf8')) as Record<string, unknown>;
    // As such a fraction was written: format 1, without idShards and without the checksum of meta.json.
    delete meta.idShards;
    delete meta.check;
    meta.format = 1;
    writeFileSync(metaFile, JSON.stringify(meta));
    shard = openShard(dir);
    expect(shard.idShards()).toBeNull();
    shard.close();
  });
});

function readdirFirst(dir: string): string {
  return readdirSync(dir).filter((e) => e.startsWith('frac-'))[0]!;
}
