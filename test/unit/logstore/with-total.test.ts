// with_total: false skips fractions that cannot hold a better hit; the hits are the same as with the total.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseMapping } from '../../../src/logstore/mapping.js';
import { parseQuery } from '../../../src/logstore/query/parser.js';
import { planQuery } from '../../../src/logstore/query/plan.js';
import { unpackHits } from '../../../src/logstore/search/packed-hits.js';
import { Shard } from '../../../src/logstore/storage/shard.js';

const mapping = parseMapping('- {name: level, type: keyword}\n');
const base = Date.UTC(2026, 3, 1);
let dir: string;
let shard: Shard;

function batch(from: number, count: number): void {
  const lines = Array.from({ length: count }, (_, k) => {
    const n = from + k;
    return Buffer.from(
      JSON.stringify({ timestamp: new Date(base + n * 1000).toISOString(), level: n % 3 === 0 ? 'error' : 'info', n }),
    );
  });
  const offs = new Int32Array(lines.length * 2);
  let p = 0;
  lines.forEach((l, i) => {
    offs[2 * i] = p;
    offs[2 * i + 1] = l.length;
    p += l.length;
  });
  expect(shard.ingest(Buffer.concat(lines), offs).errors).toEqual([]);
}

beforeAll(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'tidepool-total-'));
  shard = new Shard(
    { dir, shard: 0, mapping, fracSize: 1 << 30, totalSize: 0, retention: 0 },
    pino({ level: 'silent' }),
  );
  // Four sealed fractions of 100 documents and an active one, in time order.
  for (let f = 0; f < 5; f++) {
    batch(f * 100, 100);
    if (f < 4) shard.seal();
  }
});

afterAll(() => {
  shard?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('with_total', () => {
  it.each([
    ['level:error', 'desc'],
    ['level:error', 'asc'],
    ['*', 'desc'],
    ['*', 'asc'],
    ['not level:error', 'desc'],
  ] as const)('%s %s: same hits, fewer fractions read, total a lower bound', (query, order) => {
    const plan = planQuery(parseQuery(query), mapping);
    for (const limit of [0, 5, 60, 150, 1000]) {
      const exact = shard.query({ plan, from: -Infinity, to: Infinity, limit, order });
      const quick = shard.query({ plan, from: -Infinity, to: Infinity, limit, order, withTotal: false });
      expect(unpackHits(quick.hits)).toEqual(unpackHits(exact.hits));
      expect(exact.fractionsRead).toBe(5);
      expect(quick.fractionsRead).toBeLessThanOrEqual(exact.fractionsRead);
      expect(quick.total).toBeLessThanOrEqual(exact.total);
      expect(quick.total).toBeGreaterThanOrEqual(unpackHits(quick.hits).length);
      if (limit === 5) expect(quick.fractionsRead).toBe(1);
    }
  });
});
