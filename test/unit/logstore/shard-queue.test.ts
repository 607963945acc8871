// The shard task queue: writes and status before waiting searches, in arrival order within each lane, and a
// search let through after FRONT_BURST other tasks so that neither kind can starve the other.
import { describe, expect, it } from 'vitest';
import type { PiscinaTask } from 'piscina';
import { FRONT_BURST, ShardTaskQueue } from '../../../src/logstore/storage/shard-queue.js';

const task = (name: string, n: number) => ({ name, n }) as unknown as PiscinaTask;
const label = (t: PiscinaTask | null) =>
  t ? `${(t as unknown as { name: string }).name}${(t as unknown as { n: number }).n}` : null;

function drain(q: ShardTaskQueue): (string | null)[] {
  const out: (string | null)[] = [];
  while (q.size > 0) out.push(label(q.shift()));
  return out;
}

describe('ShardTaskQueue', () => {
  it('takes writes, fetches and status before searches queued earlier; each lane in arrival order', () => {
    const q = new ShardTaskQueue();
    q.push(task('query', 1));
    q.push(task('query', 2));
    q.push(task('ingest', 1));
    q.push(task('status', 1));
    q.push(task('close', 1));
    q.push(task('fetch', 1));
    expect(q.size).toBe(6);
    expect(drain(q)).toEqual(['ingest1', 'status1', 'fetch1', 'query1', 'query2', 'close1']);
    expect(q.shift()).toBeNull();
  });

  it('lets a waiting search through after FRONT_BURST other tasks', () => {
    const q = new ShardTaskQueue();
    q.push(task('query', 1));
    for (let i = 0; i < FRONT_BURST + 3; i++) q.push(task('ingest', i));
    const order = drain(q);
    expect(order.indexOf('query1')).toBe(FRONT_BURST);
    expect(order).toHaveLength(FRONT_BURST + 4);
  });

  it('remove() takes a task out of either lane', () => {
    const q = new ShardTaskQueue();
    const a = task('query', 1);
    const b = task('ingest', 1);
    q.push(a);
    q.push(b);
    q.remove(a);
    expect(drain(q)).toEqual(['ingest1']);
  });
});
