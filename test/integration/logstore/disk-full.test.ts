// A full disk, made with a file size limit on the real log store process (ulimit -f: writes past it fail with
// EFBIG): logged at error once, /status degraded, and every bulk item answered either stored (found, also after a
// crash) or not stored (never found): no acknowledged document is lost and no refused one appears.
import { afterEach, describe, expect, it } from 'vitest';
import { type LogstoreProcess, bulk, ndjson, postJson, startLogstore } from '../../helpers/logstore.js';

let running: LogstoreProcess[] = [];
afterEach(async () => {
  for (const ls of running) await ls.cleanup();
  running = [];
});

const RANGE = { from: '2000-01-01T00:00:00Z', to: '2100-01-01T00:00:00Z' };

async function storedSeqs(url: string): Promise<Set<number>> {
  const r = await postJson<{ total: number; docs: { data: { seq: number } }[] }>(`${url}/search`, { query: { query: '*', ...RANGE }, size: 100_000 });
  expect(r.status).toBe(200);
  return new Set(r.body.docs.map((d) => d.data.seq));
}

describe('disk full', () => {
  it('answers each bulk item stored or not stored, truthfully, and says so once per episode', async () => {
    // 2048 blocks of 512 bytes: the write-ahead file fills after about 1 MiB (no seal: frac_size is large).
    const ls = await startLogstore({ storage: { frac_size: '64MB', shards: 1 }, fileBlocks: 2048 });
    running.push(ls);
    const acked = new Set<number>();
    const refused = new Set<number>();
    let seq = 0;
    let fullBulks = 0;
    for (let b = 0; b < 400 && fullBulks < 5; b++) {
      const seqs = Array.from({ length: 100 }, () => seq++);
      const r = await bulk(ls.url, ndjson(seqs.map((s) => ({ seq: s, msg: `event ${s} ${'m'.repeat(150)}` }))));
      expect(r.status).toBe(200);
      r.body.items.forEach((item, k) => {
        const it = item.index!;
        if (it.status === 201) acked.add(seqs[k]!);
        else {
          expect(it.status).toBe(507);
          expect(it.error!.type).toBe('disk_full_exception');
          expect(it._id).toBeNull();
          refused.add(seqs[k]!);
        }
      });
      if (r.body.errors) fullBulks++;
    }
    expect(fullBulks).toBe(5);
    expect(acked.size).toBeGreaterThan(1000);

    // One error line for the episode, however many writes failed.
    expect(ls.output().match(/level=error[^\n]*disk full/g)).toHaveLength(1);
    const st = (await (await fetch(`${ls.url}/status`)).json()) as { status: string; storage_problems: { kind: string; detail: string }[] };
    expect(st.status).toBe('degraded');
    expect(st.storage_problems.map((p) => p.kind)).toEqual(['disk_full']);
    expect(st.storage_problems[0]!.detail).toMatch(/EFBIG/);
    const metrics = await (await fetch(`${ls.debugUrl}/metrics`)).text();
    expect(metrics).toMatch(/tidepool_logstore_storage_problems\{kind="disk_full"\} 1/);

    expect(await storedSeqs(ls.url)).toEqual(acked);

    // A crash, then room again: the write-ahead file holds exactly the acknowledged documents, no torn record.
    await ls.kill9();
    ls.fileBlocks = undefined;
    await ls.restart();
    expect(await storedSeqs(ls.url)).toEqual(acked);
    const st2 = (await (await fetch(`${ls.url}/status`)).json()) as { status: string };
    expect(st2.status).toBe('ok');
    const r = await bulk(ls.url, ndjson([{ seq: -1, msg: 'after' }]));
    expect(r.body.errors).toBe(false);
    for (const s of refused) expect(acked.has(s)).toBe(false);
  });
});
