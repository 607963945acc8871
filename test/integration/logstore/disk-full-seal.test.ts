// A seal that fails for room, on a real small filesystem (a tmpfs shrunk under the running log store): the active
// fraction keeps every acknowledged document, writes go on until the disk is really full (then refused, 429), the
// seal is retried once there is room, and neither a crash while full nor one after the seal loses or doubles a
// document. Mounting a tmpfs needs root: without it the test fails saying so.
import { randomBytes } from 'node:crypto';
import { statfsSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type LogstoreProcess, bulk, ndjson, postJson, startLogstore } from '../../helpers/logstore.js';
import { type SmallFs, mountTmpfs } from '../../helpers/small-fs.js';

let running: LogstoreProcess[] = [];
let mounts: SmallFs[] = [];
afterEach(async () => {
  for (const ls of running) await ls.cleanup();
  running = [];
  for (const m of mounts) m.cleanup();
  mounts = [];
});

const RANGE = { from: '2000-01-01T00:00:00Z', to: '2100-01-01T00:00:00Z' };

interface Status {
  status: string;
  storage_problems?: { kind: string; detail: string }[];
  fractions: { active: number; sealed: number };
  per_shard: { fractions: { state: string; docs: number; raw_bytes: number; disk_bytes: number }[] }[];
}

async function status(url: string): Promise<Status> {
  return (await (await fetch(`${url}/status`)).json()) as Status;
}

/** The `seq` of every stored document, failing on a document stored twice. */
async function storedSeqs(url: string): Promise<Set<number>> {
  const r = await postJson<{ total: number; docs: { data: { seq: number } }[] }>(`${url}/search`, {
    query: { query: '*', ...RANGE },
    size: 100_000,
  });
  expect(r.status).toBe(200);
  const seqs = r.body.docs.map((d) => d.data.seq);
  expect(r.body.total).toBe(seqs.length);
  const set = new Set(seqs);
  expect(set.size, 'a document is stored twice').toBe(seqs.length);
  return set;
}

function usedBytes(dir: string): number {
  const st = statfsSync(dir);
  return (st.blocks - st.bfree) * st.bsize;
}

describe('disk full during a seal', () => {
  it('keeps the active fraction whole, retries the seal when room comes back, and loses or doubles nothing across crashes', async () => {
    const fs = mountTmpfs(64 << 20);
    mounts.push(fs);
    const ls = await startLogstore({
      storage: { frac_size: '1MB', shards: 1 },
      dataDir: path.join(fs.dir, 'data'),
    });
    running.push(ls);
    const acked = new Set<number>();
    const refused = new Set<number>();
    let seq = 0;
    const send = async (count = 100): Promise<boolean> => {
      const seqs = Array.from({ length: count }, () => seq++);
      // Distinct words, so the sealed files (postings, dictionary) need room of their own.
      const docs = seqs.map((s) => ({
        seq: s,
        msg: `event ${s} ${randomBytes(60).toString('hex')}`,
        host: `h${s % 997}`,
      }));
      const r = await bulk(ls.url, ndjson(docs));
      expect(r.status).toBe(200);
      r.body.items.forEach((item, k) => {
        const it = item.index!;
        if (it.status === 201) acked.add(seqs[k]!);
        else {
          expect(it.status).toBe(429);
          expect(it.error!.type).toBe('cluster_block_exception');
          expect(it.error!.reason).toMatch(/disk full: not stored/);
          refused.add(seqs[k]!);
        }
      });
      return r.body.errors;
    };
    const activeRaw = async () => (await status(ls.url)).per_shard[0]!.fractions.find((f) => f.state === 'active')!;

    // A first fraction sealed with room to spare tells the size of a seal: raw bytes when it comes, bytes on disk.
    while ((await status(ls.url)).fractions.sealed === 0) expect(await send()).toBe(false);
    const first = (await status(ls.url)).per_shard[0]!.fractions.find((f) => f.state === 'sealed')!;
    const sealRaw = first.raw_bytes;
    const sealDisk = first.disk_bytes;
    // A third of the next fraction in, the filesystem is shrunk to what it holds plus room for the write-ahead file
    // to reach the seal and half a seal more: the seal fails, the write-ahead file then fills what is left.
    while ((await activeRaw()).raw_bytes < sealRaw / 3) expect(await send()).toBe(false);
    const now = await activeRaw();
    // Write-ahead bytes per raw byte (record headers), measured on this fraction.
    const walPerRaw = now.disk_bytes / now.raw_bytes;
    const room = 1.05 * walPerRaw * (sealRaw - now.raw_bytes) + sealDisk / 2;
    fs.resize(Math.ceil((usedBytes(fs.dir) + room) / 4096) * 4096);
    let failed = 0;
    for (let b = 0; b < 400 && failed < 3; b++) if (await send()) failed++;
    expect(failed, 'the filesystem never filled').toBe(3);

    // The seal failed for room and left the active fraction whole; it kept taking documents past the seal point
    // until the write-ahead file itself had no room.
    const st = await status(ls.url);
    expect(st.status).toBe('degraded');
    expect(st.storage_problems!.map((p) => p.kind)).toEqual(['disk_full']);
    expect(st.fractions).toEqual({ active: 1, sealed: 1 });
    const active = st.per_shard[0]!.fractions.find((f) => f.state === 'active')!;
    expect(active.raw_bytes).toBeGreaterThan(sealRaw);
    expect(active.docs + first.docs).toBe(acked.size);
    expect(ls.output()).toMatch(/level=error[^\n]*disk full[^\n]*during=seal/);
    expect(ls.output().match(/level=error[^\n]*disk full/g)).toHaveLength(1);
    expect(await storedSeqs(ls.url)).toEqual(acked);

    // A crash while the disk is still full: the write-ahead file holds exactly the acknowledged documents.
    await ls.kill9();
    await ls.restart();
    expect(await storedSeqs(ls.url)).toEqual(acked);

    // A little room: a write fits, the seal it sets off does not (the restarted process finds the disk full too).
    fs.resize(Math.ceil((usedBytes(fs.dir) + (64 << 10)) / 4096) * 4096);
    expect(await send(20)).toBe(false);
    const st2 = await status(ls.url);
    expect(st2.storage_problems!.map((p) => `${p.kind} ${p.detail}`)).toEqual(['disk_full seal failed: ENOSPC']);
    expect(st2.fractions).toEqual({ active: 1, sealed: 1 });

    // Room again: the next writes succeed and the seal is tried again (10 s after it failed) in the same process.
    fs.resize(64 << 20);
    const deadline = Date.now() + 60_000;
    let sealed = 0;
    while (Date.now() < deadline) {
      expect(await send(20)).toBe(false);
      const s = await status(ls.url);
      sealed = s.fractions.sealed;
      if (sealed >= 2 && s.status === 'ok') break;
      await new Promise((r) => setTimeout(r, 250));
    }
    expect(sealed, `no seal within 60 s once there was room:\n${ls.output()}`).toBeGreaterThanOrEqual(2);
    expect((await status(ls.url)).status).toBe('ok');
    expect(await storedSeqs(ls.url)).toEqual(acked);

    // And a crash after the seal: the sealed fraction and the new active one, each document once.
    await ls.kill9();
    await ls.restart();
    const after = await storedSeqs(ls.url);
    expect(after).toEqual(acked);
    for (const s of refused) expect(after.has(s)).toBe(false);
    expect(ls.output()).not.toMatch(/write-ahead file damaged|quarantined/);
  }, 180_000);
});
