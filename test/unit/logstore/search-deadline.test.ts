// A search's deadline inside a shard: passed before the search starts, nothing is read and the answer says
// timed out; a deadline to come changes nothing. Deadline.tick reads the clock once per TICKS_PER_READ calls.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseMapping } from '../../../src/logstore/mapping.js';
import { parseQuery } from '../../../src/logstore/query/parser.js';
import { planQuery } from '../../../src/logstore/query/plan.js';
import { Deadline, SearchTimedOut } from '../../../src/logstore/search/deadline.js';
import { unpackHits } from '../../../src/logstore/search/packed-hits.js';
import { Shard } from '../../../src/logstore/storage/shard.js';

const mapping = parseMapping('mapping-list:\n  - name: m\n    type: keyword\n');
let dir: string;
let shard: Shard;

beforeAll(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'tidepool-deadline-'));
  // Small fractions: the search walks several sealed ones and the active one.
  shard = new Shard({ dir, shard: 0, mapping, fracSize: 4096, totalSize: 0, retention: 0 }, pino({ level: 'silent' }));
  for (let b = 0; b < 10; b++) {
    const lines = Array.from({ length: 100 }, (_, i) =>
      Buffer.from(
        JSON.stringify({ m: `v${b}-${i}`, timestamp: new Date(Date.UTC(2026, 0, 1, 0, b, i % 60)).toISOString() }),
      ),
    );
    const offs = new Int32Array(lines.length * 2);
    let p = 0;
    lines.forEach((l, i) => {
      offs[2 * i] = p;
      offs[2 * i + 1] = l.length;
      p += l.length;
    });
    expect(shard.ingest(Buffer.concat(lines), offs).errors).toEqual([]);
  }
});
afterAll(() => {
  shard?.close();
  rmSync(dir, { recursive: true, force: true });
});

const plan = planQuery(parseQuery('m:*v*'), mapping);

describe('search deadline', () => {
  it('a deadline already passed: no fraction read, the answer is empty and timed out', () => {
    const r = shard.query({ plan, from: -Infinity, to: Infinity, limit: 5, order: 'desc', deadline: Date.now() - 1 });
    expect(r.timedOut).toBe(true);
    expect(r.total).toBe(0);
    expect(unpackHits(r.hits)).toEqual([]);
  });

  it('a deadline to come: the whole answer, not marked', () => {
    const r = shard.query({
      plan,
      from: -Infinity,
      to: Infinity,
      limit: 5,
      order: 'desc',
      deadline: Date.now() + 60_000,
    });
    expect(r.timedOut).toBeUndefined();
    expect(r.total).toBe(1000);
    expect(r.fractionsRead).toBeGreaterThan(1);
  });

  it('tick() throws once the deadline has passed, within 256 calls; check() at once', () => {
    const d = new Deadline(Date.now() - 1);
    expect(() => d.check()).toThrow(SearchTimedOut);
    let calls = 0;
    expect(() => {
      for (;;) {
        calls++;
        d.tick();
      }
    }).toThrow(SearchTimedOut);
    expect(calls).toBeLessThanOrEqual(256);
    const never = new Deadline(Infinity);
    for (let i = 0; i < 10_000; i++) never.tick();
  });
});
