// limits.bulk_memory charged for every item a bulk keeps until its answer, rejected (429) ones included, and a
// bulk cut (BulkTooLargeError, answered 413) when the state of its items alone would pass the budget by more than
// an eighth. The shard side is a scripted target (our own BulkTarget interface) that stores after a delay.
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { BulkBudget } from '../../../src/logstore/ingest/bulk-budget.js';
import { BulkTooLargeError, type BulkTarget, rejectBulk, runBulk } from '../../../src/logstore/ingest/bulk.js';

/** A target whose every batch is stored after `ms` (ids made up), counting the documents it was given. */
function slowTarget(ms: number): BulkTarget & { docs: number } {
  const t = {
    docs: 0,
    async ingest(_buf: Uint8Array, offs: Int32Array) {
      const n = offs.length >>> 1;
      t.docs += n;
      await new Promise((r) => setTimeout(r, ms));
      return { ids: Buffer.from('0123456789abcdef01234567'.repeat(n)), errors: [] };
    },
  };
  return t;
}

/** A body of `n` items in 64 KiB chunks; every item carries a client `_id` of `idLen` characters when idLen > 0. */
function body(n: number, idLen = 0): Readable {
  const lines: string[] = [];
  for (let i = 0; i < n; i++) {
    lines.push(
      idLen ? `{"index":{"_id":"${String(i).padStart(idLen, 'x')}"}}` : '{"index":{}}',
      `{"msg":"line ${i} of the body","n":${i}}`,
    );
  }
  const all = Buffer.from(lines.join('\n') + '\n');
  const chunks: Buffer[] = [];
  for (let p = 0; p < all.length; p += 65536) chunks.push(all.subarray(p, p + 65536));
  return Readable.from(chunks);
}

const opts = { maxDocSize: 1 << 20, defaultIndex: 'logs', gzip: false, maxOutstanding: 4, batchBytes: 32 * 1024 };

describe('limits.bulk_memory and item state', () => {
  it('charges every item kept until the answer, the 429 ones included, and gives it all back', async () => {
    // 20 000 items hold about 370 KiB (codes and id pages) by the end, and up to 8 batches of 32 KiB are in flight.
    const budget = new BulkBudget(448 * 1024);
    const out = await runBulk(body(20_000), slowTarget(20), { ...opts, maxOutstanding: 8, budget });
    const rejected = Array.from({ length: out.items.count }, (_, i) => out.items.error(i)?.status === 429).filter(
      Boolean,
    ).length;
    expect(rejected).toBeGreaterThan(0);
    expect(rejected).toBeLessThan(out.items.count);
    // The code of every item (4 bytes) and the id pages are held, rejected items included.
    expect(out.held).toBe(out.items.stateBytes);
    expect(out.items.stateBytes).toBeGreaterThanOrEqual(out.items.count * 4);
    expect(budget.used).toBe(out.held);
    budget.give(out.held!);
    expect(budget.used).toBe(0);
  });

  it('a bulk is cut once the state of its items would pass the budget by more than an eighth, and gives back all it took', async () => {
    const budget = new BulkBudget(64 * 1024);
    const target = slowTarget(1);
    // 400-character ids: about 860 bytes of state an item, so about 86 items fill 72 KiB.
    const err = await runBulk(body(2_000, 400), target, { ...opts, budget }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(BulkTooLargeError);
    expect((err as BulkTooLargeError).items).toBeLessThan(2_000);
    expect(budget.used).toBe(0);
    expect(target.docs).toBeLessThan(2_000);
    // The same budget serves the next, smaller bulk whole.
    const ok = await runBulk(body(20, 400), slowTarget(1), { ...opts, budget });
    expect(ok.items.failed).toBe(0);
    budget.give(ok.held!);
    expect(budget.used).toBe(0);
  });

  it('a bulk rejected for overload (every item 429) is charged for its items too, and cut past the budget', async () => {
    const budget = new BulkBudget(1024 * 1024);
    const out = await rejectBulk(body(5_000, 40), { ...opts, budget }, 'overloaded');
    expect(out.items.error(4_999)?.status).toBe(429);
    expect(out.held).toBe(out.items.stateBytes);
    expect(budget.used).toBe(out.held);
    budget.give(out.held!);
    const err = await rejectBulk(body(20_000, 400), { ...opts, budget }, 'overloaded').then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(BulkTooLargeError);
    expect(budget.used).toBe(0);
  });
});
