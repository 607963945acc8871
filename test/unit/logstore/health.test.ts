// The debug /health's verdict: ok, or degraded with a reason for a shard thread busy past search.timeout, storage problems, a store down or behind, or a status that does not answer.
import { describe, expect, it } from 'vitest';
import { healthOf } from '../../../src/logstore/http/server.js';
import type { LogBackend, BackendStatus } from '../../../src/logstore/backend.js';
import type { LogstoreConfig } from '../../../src/config/logstore.js';

function ctx(status: () => Promise<BackendStatus>, timeout = 1000) {
  return { store: { status } as unknown as LogBackend, config: { search: { timeout } } as unknown as LogstoreConfig };
}

const shard = (extra: Record<string, unknown> = {}) =>
  ({ shard: 0, fractions: [], fields: [], problems: [], ...extra }) as unknown as BackendStatus['shards'][number];

describe('/health', () => {
  it('ok when nothing is wrong, and a shard busy within search.timeout plus the grace is not stuck', async () => {
    expect(await healthOf(ctx(async () => ({ shards: [shard()], stores: [] })))).toEqual({ status: 'ok' });
    expect(await healthOf(ctx(async () => ({ shards: [shard({ stale: true, busy_ms: 3000 })], stores: [] })))).toEqual({
      status: 'ok',
    });
  });

  it('degraded: a shard thread past search.timeout, storage problems, stores down or behind', async () => {
    const h = await healthOf(
      ctx(async () => ({
        shards: [
          shard({ stale: true, busy_ms: 60_000 }),
          shard({ shard: 1, problems: [{ kind: 'disk_full', name: 'wal', detail: 'ENOSPC' }] }),
        ],
        stores: [
          { addr: 'a:1', shard: 0, ok: false, error: 'refused', docs: 0 },
          { addr: 'b:1', shard: 0, ok: true, error: '', docs: 5, behind: 3 },
        ],
      })),
    );
    expect(h.status).toBe('degraded');
    expect(h.degraded).toEqual([
      'shard 0 thread busy for 60000 ms, past search.timeout',
      'shard 1: disk_full wal',
      'store a:1 is down: refused',
      'store b:1 is behind by 3 batches',
    ]);
  });

  it('degraded, within two seconds, when the status itself does not answer', async () => {
    const started = Date.now();
    const h = await healthOf(ctx(() => new Promise(() => undefined)));
    expect(h.status).toBe('degraded');
    expect(Date.now() - started).toBeLessThan(30_000);
  });
});
