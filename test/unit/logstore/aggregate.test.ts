// Each aggregation against values computed in the test, over a sealed and an active fraction together.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AggSpec, finalizeAgg, quantile } from '../../../src/logstore/aggregate/aggregate.js';
import { autoMapping } from '../../../src/logstore/mapping.js';
import { parseQuery } from '../../../src/logstore/query/parser.js';
import { planQuery } from '../../../src/logstore/query/plan.js';
import { Shard } from '../../../src/logstore/storage/shard.js';

interface Doc {
  status: number;
  size?: number;
  service: string;
  client: string;
  timestamp: string;
}
const base = Date.parse('2026-05-01T00:00:00Z');
const docs: Doc[] = Array.from({ length: 600 }, (_, i) => {
  const d: Doc = {
    status: [200, 404, 500][(i * 7) % 3]!,
    service: ['a', 'b', 'c', 'd'][i % 4]!,
    client: `10.0.0.${(i * 13) % 17}`,
    timestamp: new Date(base + i * 10_000).toISOString(),
  };
  if (i % 10 !== 3) d.size = (i * 37) % 1000;
  return d;
});

const mapping = autoMapping();
let dir: string;
let shard: Shard;

function ingest(part: Doc[]): void {
  const lines = part.map((d) => Buffer.from(JSON.stringify(d)));
  const offs = new Int32Array(lines.length * 2);
  let p = 0;
  lines.forEach((l, i) => {
    offs[2 * i] = p;
    offs[2 * i + 1] = l.length;
    p += l.length;
  });
  shard.ingest(Buffer.concat(lines), offs);
}

function agg(spec: AggSpec, q = '*') {
  const r = shard.query({
    plan: planQuery(parseQuery(q), mapping),
    from: -Infinity,
    to: Infinity,
    limit: 0,
    order: 'desc',
    aggs: [spec],
  });
  return finalizeAgg(spec, r.aggs[0]!);
}

function groups<T>(pred: (d: Doc) => boolean, key: (d: Doc) => string, val: (ds: Doc[]) => T): Map<string, T> {
  const m = new Map<string, Doc[]>();
  for (const d of docs.filter(pred)) m.set(key(d), [...(m.get(key(d)) ?? []), d]);
  return new Map([...m].map(([k, ds]) => [k, val(ds)]));
}

beforeAll(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'tidepool-agg-'));
  shard = new Shard(
    { dir, shard: 0, mapping, fracSize: 1 << 30, totalSize: 0, retention: 0 },
    pino({ level: 'silent' }),
  );
  ingest(docs.slice(0, 350));
  shard.seal();
  ingest(docs.slice(350));
});
afterAll(() => {
  shard?.close();
  rmSync(dir, { recursive: true, force: true });
});

const sizes = (ds: Doc[]) => ds.filter((d) => d.size !== undefined).map((d) => d.size!);

describe('aggregations', () => {
  it('count by a field', () => {
    const r = agg({ field: 'status', func: 'count' });
    const want = groups(
      () => true,
      (d) => String(d.status),
      (ds) => ds.length,
    );
    expect(new Map(r.buckets.map((b) => [b.key, b.value]))).toEqual(want);
    expect(r.buckets.map((b) => b.value)).toEqual([...r.buckets.map((b) => b.value)].sort((a, b) => b - a));
  });

  it('count with a query', () => {
    const r = agg({ field: 'service', func: 'count' }, 'status:500');
    expect(new Map(r.buckets.map((b) => [b.key, b.value]))).toEqual(
      groups(
        (d) => d.status === 500,
        (d) => d.service,
        (ds) => ds.length,
      ),
    );
  });

  it.each(['sum', 'min', 'max', 'avg'] as const)('%s of size by status, with not_exists', (func) => {
    const r = agg({ field: 'size', func, group_by: 'status' });
    const calc = (ds: Doc[]) => {
      const v = sizes(ds);
      return func === 'sum'
        ? v.reduce((a, b) => a + b, 0)
        : func === 'min'
          ? Math.min(...v)
          : func === 'max'
            ? Math.max(...v)
            : v.reduce((a, b) => a + b, 0) / v.length;
    };
    const want = groups(
      () => true,
      (d) => String(d.status),
      calc,
    );
    const got = new Map(r.buckets.map((b) => [b.key, b.value]));
    expect([...got.keys()].sort()).toEqual([...want.keys()].sort());
    for (const [k, v] of want) expect(got.get(k)).toBeCloseTo(v, 9);
    const missing = groups(
      () => true,
      (d) => String(d.status),
      (ds) => ds.filter((d) => d.size === undefined).length,
    );
    expect(new Map(r.buckets.map((b) => [b.key, b.not_exists]))).toEqual(missing);
  });

  it('quantiles of size (nearest rank)', () => {
    const r = agg({ field: 'size', func: 'quantile', quantiles: [0.5, 0.9, 0.99] });
    const sorted = sizes(docs).sort((a, b) => a - b);
    expect(r.buckets).toHaveLength(1);
    expect(r.buckets[0]!.quantiles).toEqual([0.5, 0.9, 0.99].map((q) => quantile(sorted, q)));
  });

  it('unique values of client per service', () => {
    const r = agg({ field: 'client', func: 'unique', group_by: 'service' });
    expect(new Map(r.buckets.map((b) => [b.key, b.value]))).toEqual(
      groups(
        () => true,
        (d) => d.service,
        (ds) => new Set(ds.map((d) => d.client)).size,
      ),
    );
  });

  it('time series: count by status per 30 minutes', () => {
    const interval = 30 * 60_000;
    const r = agg({ field: 'status', func: 'count', interval });
    const want = groups(
      () => true,
      (d) => `${d.status}@${new Date(Math.floor(Date.parse(d.timestamp) / interval) * interval).toISOString()}`,
      (ds) => ds.length,
    );
    expect(new Map(r.buckets.map((b) => [`${b.key}@${b.ts}`, b.value]))).toEqual(want);
  });

  it('reads only the fractions that overlap [from, to]', () => {
    const plan = planQuery(parseQuery('*'), mapping);
    const early = shard.query({ plan, from: base, to: base + 100 * 10_000, limit: 0, order: 'desc' });
    expect(early.fractionsRead).toBe(1);
    expect(early.total).toBe(101);
    const late = shard.query({ plan, from: base + 400 * 10_000, to: Infinity, limit: 0, order: 'desc' });
    expect(late.fractionsRead).toBe(1);
    expect(late.total).toBe(200);
    expect(shard.query({ plan, from: -Infinity, to: Infinity, limit: 0, order: 'desc' }).fractionsRead).toBe(2);
  });

  it('histogram of matches', () => {
    const interval = 3_600_000;
    const q = shard.query({
      plan: planQuery(parseQuery('service:a or service:b'), mapping),
      from: -Infinity,
      to: Infinity,
      limit: 0,
      order: 'desc',
      histInterval: interval,
    });
    const want = groups(
      (d) => d.service === 'a' || d.service === 'b',
      (d) => String(Math.floor(Date.parse(d.timestamp) / interval) * interval),
      (ds) => ds.length,
    );
    expect(new Map(q.hist.map(([ts, c]) => [String(ts), c]))).toEqual(want);
    expect(q.total).toBe(docs.filter((d) => d.service === 'a' || d.service === 'b').length);
  });
});
