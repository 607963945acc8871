// WaiterQueue (src/pooler/waiter-queue.ts): first come first served, removal, and no client kept alive by the queue
// after it got its server (checked in a child node with --expose-gc: WeakRefs to shifted waiters are cleared).
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { WaiterQueue, type PoolWaiter } from '../../../src/pooler/waiter-queue.js';

const waiter = (n: number): PoolWaiter & { n: number } => ({
  n,
  waitingSince: n,
  onServer: () => undefined,
  onPoolError: () => undefined,
});

describe('WaiterQueue', () => {
  it('hands out waiters in order, skips removed ones, and compacts past 1 024 taken', () => {
    const q = new WaiterQueue();
    const ws = Array.from({ length: 3000 }, (_, i) => waiter(i));
    for (const w of ws) q.push(w);
    q.remove(ws[5]!);
    const got: number[] = [];
    for (let w = q.shift(); w; w = q.shift()) got.push((w as ReturnType<typeof waiter>).n);
    expect(got).toEqual(ws.filter((_, i) => i !== 5).map((w) => w.n));
    expect(q.length).toBe(0);
    expect(q.peek()).toBeUndefined();
  });

  it('keeps no waiter alive once it was taken', () => {
    const mod = fileURLToPath(new URL('../../../dist/src/pooler/waiter-queue.js', import.meta.url));
    const out = execFileSync(
      process.execPath,
      [
        '--expose-gc',
        '--input-type=module',
        '-e',
        `
      const { WaiterQueue } = await import(${JSON.stringify(mod)});
      const q = new WaiterQueue();
      const refs = [];
      (() => {
        for (let i = 0; i < 100; i++) {
          const w = { waitingSince: i, onServer() {}, onPoolError() {}, payload: new Array(100).fill(i) };
          refs.push(new WeakRef(w));
          q.push(w);
        }
        for (let i = 0; i < 100; i++) q.shift();
      })();
      await new Promise((r) => setTimeout(r, 0));
      globalThis.gc();
      console.log(refs.filter((r) => r.deref() !== undefined).length, q.length);`,
      ],
      { encoding: 'utf8' },
    );
    expect(out.trim()).toBe('0 0');
  });
});
