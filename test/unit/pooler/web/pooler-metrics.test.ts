// Exposition of the pooler's duration histograms: cumulative buckets, +Inf, sum and count, label escaping, promtool.
import { describe, expect, it } from 'vitest';
import { addDurationHistograms, Exposition } from '../../../../src/pooler/web/pooler-metrics.js';
import { promtoolCheckMetrics } from '../../../helpers/promtool.js';

const buckets = (counts: number[], over: number, sum: number) => ({
  bounds: [0.001, 0.01, 0.1, 1],
  counts,
  count: counts.reduce((a, b) => a + b, 0) + over,
  sum,
});

describe('duration histograms', () => {
  const ex = new Exposition();
  addDurationHistograms(ex, [
    {
      database: 'app',
      user: 'md5user',
      query: buckets([5, 3, 1, 0], 1, 2.5),
      transaction: buckets([0, 2, 0, 1], 0, 0.9),
      wait: buckets([4, 0, 0, 0], 0, 0.001),
    },
    {
      database: 'we"ird\\db',
      user: 'u\nv',
      query: buckets([0, 0, 0, 0], 0, 0),
      transaction: buckets([0, 0, 0, 0], 0, 0),
      wait: buckets([0, 0, 0, 0], 0, 0),
    },
  ]);
  const text = ex.text();

  it('writes cumulative buckets, +Inf equal to count, sum and count', () => {
    expect(text).toContain('# TYPE pooler_query_duration_seconds histogram');
    expect(text).toContain('pooler_query_duration_seconds_bucket{database="app",user="md5user",le="0.001"} 5');
    expect(text).toContain('pooler_query_duration_seconds_bucket{database="app",user="md5user",le="0.01"} 8');
    expect(text).toContain('pooler_query_duration_seconds_bucket{database="app",user="md5user",le="1"} 9');
    expect(text).toContain('pooler_query_duration_seconds_bucket{database="app",user="md5user",le="+Inf"} 10');
    expect(text).toContain('pooler_query_duration_seconds_sum{database="app",user="md5user"} 2.5');
    expect(text).toContain('pooler_query_duration_seconds_count{database="app",user="md5user"} 10');
    expect(text).toContain('pooler_transaction_duration_seconds_count{database="app",user="md5user"} 3');
    expect(text).toContain('# TYPE pooler_wait_duration_seconds histogram');
    expect(text).toContain('pooler_wait_duration_seconds_bucket{database="app",user="md5user",le="+Inf"} 4');
  });
  it('escapes label values', () => {
    expect(text).toContain('database="we\\"ird\\\\db",user="u\\nv"');
  });
  it('leaves a family out when no pool has data', () => {
    const empty = new Exposition();
    addDurationHistograms(empty, []);
    expect(empty.text()).toBe('');
  });
  it('passes promtool check metrics', () => {
    expect(promtoolCheckMetrics(text)).toEqual({ output: '', status: 0 });
  });
});
