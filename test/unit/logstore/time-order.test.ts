// Searches of an active fraction whose documents arrived out of time order go through its time order (built on
// the first search, merged with later arrivals): the same hits and totals as a brute-force sort and as the
// sealed fraction of the same documents.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { parseMapping } from '../../../src/logstore/mapping.js';
import { parseQuery } from '../../../src/logstore/query/parser.js';
import { planQuery } from '../../../src/logstore/query/plan.js';
import { unpackHits } from '../../../src/logstore/search/packed-hits.js';
import { Shard } from '../../../src/logstore/storage/shard.js';
import { mulberry32 } from '../../helpers/prng.js';

const mapping = parseMapping('- {name: level, type: keyword}\n');
const base = Date.UTC(2026, 3, 1);
const dirs: string[] = [];

afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

interface Doc {
  t: number;
  level: string;
  n: number;
}

function openShard(): Shard {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tidepool-order-'));
  dirs.push(dir);
  return new Shard(
    { dir, shard: 0, mapping, fracSize: 1 << 30, totalSize: 0, retention: 0 },
    pino({ level: 'silent' }),
  );
}

function ingest(shard: Shard, docs: Doc[]): void {
  const lines = docs.map((d) =>
    Buffer.from(JSON.stringify({ timestamp: new Date(base + d.t).toISOString(), level: d.level, n: d.n })),
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

/** Runs of increasing time interleaved (as concurrent senders deliver them), with many equal times. */
function makeDocs(count: number, seed: number, from: number): Doc[] {
  const r = mulberry32(seed);
  const out: Doc[] = [];
  for (let i = 0; i < count; i++) {
    const run = (r() * 4) | 0;
    out.push({
      t: run * 50_000 + ((i / 4) | 0) * 20 + ((r() * 3) | 0),
      level: r() < 0.1 ? 'error' : 'info',
      n: from + i,
    });
  }
  return out;
}

const QUERIES = ['*', 'level:error', 'level:info', 'not level:error'];

/** Hits as (time, n) and the total of every query, order, limit and time range. */
function answers(shard: Shard): unknown[] {
  const out: unknown[] = [];
  for (const text of QUERIES) {
    const plan = planQuery(parseQuery(text), mapping);
    for (const order of ['desc', 'asc'] as const) {
      for (const limit of [0, 1, 7, 100, 5000]) {
        for (const [from, to] of [
          [-8.64e15, 8.64e15],
          [base + 40_000, base + 120_000],
          [base + 199_990, base + 400_000],
        ] as const) {
          const r = shard.query({ plan, from, to, limit, order });
          out.push([
            text,
            order,
            limit,
            from,
            r.total,
            unpackHits(r.hits).map((h) => [h.time, (JSON.parse(h.json) as { data: Doc }).data.n, h.id]),
          ]);
        }
      }
    }
  }
  return out;
}

describe('time order of an out-of-order active fraction', () => {
  it('gives the hits and totals of a brute-force sort and of the sealed fraction, across later arrivals', () => {
    const shard = openShard();
    const first = makeDocs(6000, 3, 0);
    ingest(shard, first);
    const brute = (docs: Doc[], text: string, order: 'desc' | 'asc', limit: number, lo: number, hi: number) => {
      const keep = docs.filter(
        (d) =>
          base + d.t >= lo && base + d.t <= hi && (text === '*' || (text === 'level:error') === (d.level === 'error')),
      );
      // Equal times: ingest order, which is id order within one shard.
      const sorted = keep.map((d) => [d.t, d.n] as const).sort((a, b) => a[0] - b[0] || a[1] - b[1]);
      if (order === 'desc') sorted.reverse();
      return [keep.length, sorted.slice(0, limit).map(([t, n]) => [base + t, n])];
    };
    const check = (docs: Doc[]) => {
      for (const a of answers(shard) as [
        string,
        'desc' | 'asc',
        number,
        number,
        number,
        [number, number, string][],
      ][]) {
        const [text, order, limit, from, total, hits] = a;
        const to = from === base + 40_000 ? base + 120_000 : from === base + 199_990 ? base + 400_000 : 8.64e15;
        expect([total, hits.map(([t, n]) => [t, n])], `${text} ${order} ${limit} ${from}`).toEqual(
          brute(docs, text, order, limit, from, to),
        );
      }
    };
    check(first);
    // More documents after the order was built: it is merged with them on the next search.
    const second = makeDocs(3000, 4, 6000);
    ingest(shard, second);
    check([...first, ...second]);
    const active = answers(shard);
    shard.seal();
    expect(answers(shard)).toEqual(active);
    shard.close(false);
  });
});
