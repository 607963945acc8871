// Shard threads: tasks answered in order over the port, errors as rejections, moved buffers, one wake-up for a
// fan-out, and a thread that dies fails its pending task and is started again.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ShardThreads } from '../../../src/logstore/storage/shard-thread.js';
import { ensureBuilt } from '../../helpers/logstore.js';

const ROOT = path.resolve(import.meta.dirname, '..', '..', '..');
let dir: string;
let file: string;
let threads: ShardThreads<{ n: number }> | null = null;

beforeAll(() => {
  ensureBuilt();
  dir = mkdtempSync(path.join(os.tmpdir(), 'tidepool-thread-'));
  file = path.join(dir, 'worker.mjs');
  const lib = pathToFileURL(path.join(ROOT, 'dist', 'src', 'logstore', 'storage', 'shard-thread.js')).href;
  writeFileSync(file, `import { workerData } from 'node:worker_threads';
import { Moved, serveTasks } from '${lib}';
const { port, wake, data } = workerData;
let calls = 0;
serveTasks(port, wake, {
  echo: (t) => ({ n: data.n, t, calls: ++calls }),
  fail: () => { throw new RangeError('no such thing'); },
  bytes: (t) => { const b = new Uint8Array(t.size).fill(data.n); return new Moved(b, [b.buffer]); },
  die: () => process.exit(3),
});
`);
  return () => rmSync(dir, { recursive: true, force: true });
});

afterEach(async () => {
  await threads?.terminate();
  threads = null;
});

describe('ShardThreads', () => {
  it('runs tasks on one thread or all, in order, and moves buffers', async () => {
    threads = new ShardThreads(file, [{ n: 1 }, { n: 2 }], 8);
    expect(await threads.all('echo', 'x')).toEqual([{ n: 1, t: 'x', calls: 1 }, { n: 2, t: 'x', calls: 1 }]);
    const burst = await Promise.all(Array.from({ length: 50 }, (_, i) => threads!.run<{ calls: number }>(1, 'echo', i)));
    expect(burst.map((r) => r.calls)).toEqual(Array.from({ length: 50 }, (_, i) => i + 2));
    const [a, b] = await threads.all<Uint8Array>('bytes', { size: 4 });
    expect([...a!, ...b!]).toEqual([1, 1, 1, 1, 2, 2, 2, 2]);
  });

  it('turns a throwing task into a rejection and keeps serving', async () => {
    threads = new ShardThreads(file, [{ n: 1 }], 8);
    await expect(threads.run(0, 'fail', null)).rejects.toThrow(/no such thing/);
    await expect(threads.run(0, 'nope', null)).rejects.toThrow(/no task named nope/);
    expect(await threads.run(0, 'echo', 5)).toEqual({ n: 1, t: 5, calls: 1 });
  });

  it('fails the pending task of a thread that dies and starts the thread again', async () => {
    threads = new ShardThreads(file, [{ n: 1 }, { n: 2 }], 8);
    await expect(threads.run(0, 'die', null)).rejects.toThrow(/exited with code 3/);
    expect(await threads.all('echo', 'again')).toEqual([{ n: 1, t: 'again', calls: 1 }, { n: 2, t: 'again', calls: 1 }]);
  });
});
