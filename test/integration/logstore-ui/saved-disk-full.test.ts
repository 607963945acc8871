// Saved queries on a full disk (a real tmpfs filled up under the running UI backend): SQLite's SQLITE_FULL is
// answered 507 disk_full with a JSON body (nothing written), logged at error once per episode and reported by the
// debug /health, until there is room again. Mounting a tmpfs needs root: without it the test fails saying so.
import { closeSync, openSync, rmSync, writeSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type UiProcess, api, startUi } from '../../helpers/logstore-ui.js';
import { type SmallFs, mountTmpfs } from '../../helpers/small-fs.js';

let ui: UiProcess | null = null;
let fs: SmallFs | null = null;
afterEach(async () => {
  await ui?.cleanup();
  ui = null;
  fs?.cleanup();
  fs = null;
});

/** Writes `file` until the filesystem has no room left. */
function fill(file: string): void {
  const fd = openSync(file, 'w');
  const chunk = Buffer.alloc(64 << 10, 1);
  try {
    for (;;) writeSync(fd, chunk);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
  }
  const small = Buffer.alloc(512, 1);
  try {
    for (;;) writeSync(fd, small);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
  } finally {
    closeSync(fd);
  }
}

async function health(u: UiProcess): Promise<{ status: string; degraded?: string[] }> {
  return (await (await fetch(`${u.debugUrl}/health`)).json()) as { status: string; degraded?: string[] };
}

describe('saved queries on a full disk', () => {
  it('answers 507 disk_full, logs it once, reports it on /health, and writes again once there is room', async () => {
    fs = mountTmpfs(4 << 20);
    // The log store is not asked for saved queries: an address nothing listens on will do.
    ui = await startUi({ logstoreAddrs: ['127.0.0.1:9'], savedQueriesPath: path.join(fs.dir, 'saved.db') });
    const alice = { 'x-tidepool-user': 'alice' };
    expect((await api(ui, 'POST', '/saved_queries', { name: 'first', query: 'level:error' }, alice)).status).toBe(200);
    expect(await health(ui)).toEqual({ status: 'ok' });

    const filler = path.join(fs.dir, 'filler');
    fill(filler);
    // SQLite may still have room inside the pages its files hold: write until it needs more.
    const big = `service:${'x'.repeat(60_000)}`;
    const stored = ['first'];
    let refused = 0;
    for (let i = 0; i < 100 && refused < 2; i++) {
      const name = `q${String(i).padStart(3, '0')}`;
      const r = await api(ui, 'POST', '/saved_queries', { name, query: big }, alice);
      if (r.status === 200) {
        expect(refused, 'a write succeeded between two refused ones').toBe(0);
        stored.push(name);
        continue;
      }
      expect(r.status).toBe(507);
      expect(r.body.status).toBe(507);
      expect(r.body.error.code).toBe('disk_full');
      expect(r.body.error.message).toMatch(/not written: the disk under .* is full \(SQLITE_(FULL|IOERR\w*)\)/);
      refused++;
    }
    expect(refused, 'the disk never filled').toBe(2);
    expect(ui.output().match(/level=error[^\n]*disk full/g)).toHaveLength(1);
    const h = await health(ui);
    expect(h.status).toBe('degraded');
    expect(h.degraded![0]).toMatch(/^saved queries: disk full since /);
    // Reads go on, and nothing of the refused writes is there.
    const list = await api(ui, 'GET', '/saved_queries', undefined, alice);
    expect(list.status).toBe(200);
    expect(list.body.saved_queries.map((q: { name: string }) => q.name)).toEqual(stored);

    rmSync(filler);
    const again = await api(ui, 'POST', '/saved_queries', { name: 'z-after', query: big }, alice);
    expect(again.status).toBe(200);
    expect(await health(ui)).toEqual({ status: 'ok' });
    expect(ui.output()).toMatch(/disk full episode over/);
    const after = await api(ui, 'GET', '/saved_queries', undefined, alice);
    expect(after.body.saved_queries.map((q: { name: string }) => q.name)).toEqual([...stored, 'z-after']);
  });
});
