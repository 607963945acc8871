// The columns sealed fractions keep for aggregations and range filters stay within one byte budget per thread
// (search.column_memory): past it the least recently used go and are read again when needed, with the same answers.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { type AggSpec, finalizeAgg } from '../../../src/logstore/aggregate/aggregate.js';
import { autoMapping } from '../../../src/logstore/mapping.js';
import { parseQuery } from '../../../src/logstore/query/parser.js';
import { planQuery } from '../../../src/logstore/query/plan.js';
import { COLUMN_MEMORY, columnBytes } from '../../../src/logstore/storage/column-memory.js';
import { BLOCK_DOCS } from '../../../src/logstore/storage/numeric-column.js';
import { Shard } from '../../../src/logstore/storage/shard.js';
import { mulberry32 } from '../../helpers/prng.js';

const mapping = autoMapping();
const base = Date.parse('2026-05-01T00:00:00Z');
const N = 3 * BLOCK_DOCS + 100;
const FIELDS = ['a', 'b', 'c', 'd'];
const dirs: string[] = [];
const budget = COLUMN_MEMORY.bytes;
afterEach(() => {
  COLUMN_MEMORY.bytes = budget;
});
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function openShard(dir: string): Shard {
  return new Shard(
    { dir, shard: 0, mapping, fracSize: 1 << 30, totalSize: 0, retention: 0 },
    pino({ level: 'silent' }),
  );
}

/** A shard directory with two sealed fractions of documents with four numeric fields and a group. */
function sealedShard(): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tidepool-colmem-'));
  dirs.push(dir);
  const shard = openShard(dir);
  const r = mulberry32(5);
  for (let part = 0; part < 2; part++) {
    const lines: Buffer[] = [];
    for (let i = 0; i < N; i++) {
      const d: Record<string, unknown> = { timestamp: new Date(base + (part * N + i) * 1000).toISOString() };
      for (const f of FIELDS) if (r() < 0.9) d[f] = ((r() * 10_000) | 0) - 5000;
      d.g = ['x', 'y', 'z'][(r() * 3) | 0];
      lines.push(Buffer.from(JSON.stringify(d)));
    }
    const offs = new Int32Array(lines.length * 2);
    let p = 0;
    lines.forEach((l, k) => {
      offs[2 * k] = p;
      offs[2 * k + 1] = l.length;
      p += l.length;
    });
    shard.ingest(Buffer.concat(lines), offs);
    shard.seal();
  }
  shard.close();
  return dir;
}

/**
 * Every field aggregated (grouped, so keyword and numeric columns are read) and range-filtered, by the shard in
 * `dir` opened afresh (its fractions read their columns from the files) and closed after.
 */
function answers(dir: string): { answers: string[]; peak: number } {
  const shard = openShard(dir);
  const out: string[] = [];
  let peak = 0;
  for (const f of FIELDS) {
    for (const [q, spec] of [
      ['*', { field: f, func: 'sum', group_by: 'g' }],
      ['*', { field: f, func: 'count', group_by: f }],
      [`${f}:[-100, 2000]`, { field: 'g', func: 'count', group_by: 'g' }],
    ] as [string, AggSpec][]) {
      const r = shard.query({
        plan: planQuery(parseQuery(q), mapping),
        from: -Infinity,
        to: Infinity,
        limit: 0,
        order: 'desc',
        aggs: [spec],
      });
      out.push(`${r.total} ${JSON.stringify(finalizeAgg(spec, r.aggs[0]!))}`);
      peak = Math.max(peak, columnBytes());
    }
  }
  shard.close();
  // Closed fractions keep nothing.
  expect(columnBytes()).toBe(0);
  return { answers: out, peak };
}

describe('column memory', () => {
  it('keeps the columns of every fraction under the budget, with the same answers as without one', () => {
    const dir = sealedShard();
    const free = answers(dir);
    // Keyword (4 bytes a document) and decoded numeric columns (8) of four fields over two fractions.
    expect(free.peak).toBeGreaterThan(4 * 2 * N * 12);
    // Room for about one decoded numeric column: every query drops what the one before read.
    COLUMN_MEMORY.bytes = 10 * N;
    const tight = answers(dir);
    expect(tight.answers).toEqual(free.answers);
    // Past the budget by the one column just read at most.
    expect(tight.peak).toBeLessThanOrEqual(COLUMN_MEMORY.bytes + 8 * N + 1024);
  });
});
