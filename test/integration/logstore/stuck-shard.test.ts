// A shard thread really stuck past its deadline: the store's data directory is on a filesystem frozen with fsfreeze
// (as a stalled disk), so a bulk's write-ahead append blocks the shard thread in the kernel. /health and /status say
// degraded once it is busy past search.timeout + 5 s, the HTTP thread keeps answering, and both recover once the disk
// does; the bulk is then stored. Nothing here depends on how searches share the thread. Mounting and freezing need
// root: without it the test fails saying so.
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type LogstoreProcess, bulk, ndjson, postJson, startLogstore } from '../../helpers/logstore.js';
import { type FreezableFs, mountFreezable } from '../../helpers/small-fs.js';

let ls: LogstoreProcess | null = null;
let fs: FreezableFs | null = null;
afterEach(async () => {
  // Thawed first: a thread blocked on the frozen filesystem cannot be killed until then.
  fs?.thaw();
  await ls?.cleanup();
  ls = null;
  fs?.cleanup();
  fs = null;
});

interface Health {
  status: string;
  degraded?: string[];
}
interface Status extends Health {
  per_shard: { shard: number; stale?: boolean; busy_ms?: number }[];
}

async function json<T>(url: string): Promise<T> {
  return (await (await fetch(url)).json()) as T;
}

async function until<T>(what: string, get: () => Promise<T>, ok: (v: T) => boolean, ms = 60_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await get();
    if (ok(v)) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; last: ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

describe('a shard thread stuck past its deadline', () => {
  it('/health and /status report it while the thread is held, and recover once it is free', async () => {
    fs = mountFreezable(64 << 20);
    ls = await startLogstore({
      storage: { shards: 1 },
      search: { timeout: '1s' },
      dataDir: path.join(fs.dir, 'data'),
    });
    const url = ls.url;
    expect((await bulk(url, ndjson([{ n: 0 }]))).body.errors).toBe(false);
    expect(await json<Health>(`${ls.debugUrl}/health`)).toMatchObject({ status: 'ok' });
    expect((await json<Status>(`${url}/status`)).status).toBe('ok');

    fs.freeze();
    // Held in its write-ahead append until the thaw.
    const held = bulk(url, ndjson([{ n: 1 }, { n: 2 }]));
    const stuck = /^shard 0 thread busy for \d+ ms, past search\.timeout$/;
    const h = await until(
      '/health to report the stuck shard thread',
      () => json<Health>(`${ls!.debugUrl}/health`),
      (v) => v.status === 'degraded',
    );
    expect(h.degraded).toEqual([expect.stringMatching(stuck)]);
    const st = await json<Status>(`${url}/status`);
    expect(st.status).toBe('degraded');
    expect(st.degraded).toEqual([expect.stringMatching(stuck)]);
    expect(st.per_shard[0]).toMatchObject({ shard: 0, stale: true });
    expect(st.per_shard[0]!.busy_ms).toBeGreaterThan(6000);
    // Store mode's debug listener and this one serve the same /status.
    expect((await json<Status>(`${ls.debugUrl}/status`)).status).toBe('degraded');

    fs.thaw();
    const r = await held;
    expect(r.status).toBe(200);
    expect(r.body.errors).toBe(false);
    await until(
      '/health to recover',
      () => json<Health>(`${ls!.debugUrl}/health`),
      (v) => v.status === 'ok',
    );
    const after = await json<Status>(`${url}/status`);
    expect(after.status).toBe('ok');
    expect(after.per_shard[0]!.stale).toBeUndefined();
    const found = await postJson<{ total: number }>(`${url}/search`, {
      query: { query: '*', from: '2000-01-01T00:00:00Z', to: '2100-01-01T00:00:00Z' },
    });
    expect(found.body.total).toBe(3);
  }, 120_000);
});
