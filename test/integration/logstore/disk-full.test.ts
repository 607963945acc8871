// A full disk, made with a file size limit on the real log store process (ulimit -f: writes past it fail with
// EFBIG): logged at error once, /status degraded, and every bulk item answered either stored (found, also after a
// crash) or not stored (never found): no acknowledged document is lost and no refused one appears.
import { spawnSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Wal } from '../../../src/logstore/storage/wal.js';
import { type LogstoreProcess, ROOT, bulk, ndjson, postJson, startLogstore, tempDir } from '../../helpers/logstore.js';

let running: LogstoreProcess[] = [];
afterEach(async () => {
  for (const ls of running) await ls.cleanup();
  running = [];
});

const RANGE = { from: '2000-01-01T00:00:00Z', to: '2100-01-01T00:00:00Z' };

async function storedSeqs(url: string): Promise<Set<number>> {
  const r = await postJson<{ total: number; docs: { data: { seq: number } }[] }>(`${url}/search`, {
    query: { query: '*', ...RANGE },
    size: 100_000,
  });
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
          // As Elasticsearch past its flood-stage watermark: shippers retry these items.
          expect(it.status).toBe(429);
          expect(it.error!.type).toBe('cluster_block_exception');
          expect(it.error!.reason).toMatch(/disk full: not stored/);
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
    const st = (await (await fetch(`${ls.url}/status`)).json()) as {
      status: string;
      storage_problems: { kind: string; detail: string }[];
    };
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

  it('a batch whose write fails half-way: the chunks written before are stored and answered so, the rest refused', () => {
    // A shard in a child process under a file size limit (the built code: the limit is the process's), fed one
    // batch of 2000 documents, several chunks of INGEST_CHUNK: the write-ahead file fills inside the batch.
    const dir = tempDir('tidepool-full-');
    try {
      const script = path.join(dir, 'fill.mjs');
      const dist = (f: string) => JSON.stringify(path.join(ROOT, 'dist', 'src', f));
      writeFileSync(
        script,
        `
        import { Shard } from ${dist('logstore/storage/shard.js')};
        import { autoMapping } from ${dist('logstore/mapping.js')};
        import { LogHub } from ${dist('shared/logger.js')};
        process.on('SIGXFSZ', () => {}); // the write fails with EFBIG instead of the signal killing the process
        const shard = new Shard({ dir: process.argv[2], shard: 0, mapping: autoMapping(), fracSize: 1 << 30, totalSize: 0, retention: 0 }, new LogHub({ level: 'silent' }).get('test'));
        const docs = Array.from({ length: 2000 }, (_, n) => Buffer.from(JSON.stringify({ n, msg: 'x'.repeat(200) })));
        const buf = Buffer.concat(docs);
        const offs = new Int32Array(2 * docs.length);
        for (let i = 0, at = 0; i < docs.length; at += docs[i].length, i++) { offs[2 * i] = at; offs[2 * i + 1] = docs[i].length; }
        const r = shard.ingest(buf, offs);
        const ids = Buffer.from(r.ids).toString('latin1');
        const stored = [];
        for (let i = 0; i < docs.length; i++) if (ids.slice(24 * i, 24 * i + 24).trim()) stored.push(i);
        process.stdout.write(JSON.stringify({ stored, errors: r.errors, status: shard.status().problems }));
      `,
      );
      // 400 blocks of 512 bytes: about 200 KB of write-ahead file, some 900 of the 2000 documents.
      const shardDir = path.join(dir, 'shard');
      const run = spawnSync('/bin/sh', ['-c', 'ulimit -f 400 && exec "$0" "$@"', process.execPath, script, shardDir], {
        encoding: 'utf8',
        timeout: 60_000,
      });
      expect(run.status, run.stderr).toBe(0);
      const out = JSON.parse(run.stdout) as {
        stored: number[];
        errors: [number, string, string, number][];
        status: { kind: string }[];
      };
      expect(out.stored.length).toBeGreaterThan(256);
      expect(out.stored.length).toBeLessThan(2000);
      // Whole chunks: the stored ones are a prefix, every other one is refused with a retryable 429.
      expect(out.stored).toEqual(Array.from({ length: out.stored.length }, (_, i) => i));
      expect(out.stored.length % 256).toBe(0);
      expect(out.errors.map((e) => e[0]).sort((a, b) => a - b)).toEqual(
        Array.from({ length: 2000 - out.stored.length }, (_, i) => out.stored.length + i),
      );
      expect(new Set(out.errors.map((e) => `${e[1]} ${e[3]}`))).toEqual(new Set(['cluster_block_exception 429']));
      expect(out.status.map((p) => p.kind)).toEqual(['disk_full']);
      // The write-ahead file holds exactly the stored documents, whole: no torn record after them.
      const wal = new Wal(path.join(shardDir, 'frac-0000000001.wal'));
      const replayed: number[] = [];
      const { loss } = wal.replay((r) => replayed.push((JSON.parse(Buffer.from(r.doc).toString()) as { n: number }).n));
      wal.close();
      expect(loss).toBeNull();
      expect(replayed).toEqual(out.stored);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('an fsync that fails after the write succeeded (or a write that fails with EIO): the batch is cut from the write-ahead file and from memory', () => {
    // The real Shard in a child process (the built code) whose fdatasync fails when told: node:fs's export is
    // replaced and the ES module bindings synced, so no seam is needed in the product code. The failed batch's
    // bytes are really in the file (the write succeeded): the worst case, a replay would find them unless cut.
    const dir = tempDir('tidepool-fsync-');
    try {
      const script = path.join(dir, 'fsync.mjs');
      const dist = (f: string) => JSON.stringify(path.join(ROOT, 'dist', 'src', f));
      writeFileSync(
        script,
        `
        import fs from 'node:fs';
        import { syncBuiltinESMExports } from 'node:module';
        import { Shard } from ${dist('logstore/storage/shard.js')};
        import { autoMapping } from ${dist('logstore/mapping.js')};
        import { LogHub } from ${dist('shared/logger.js')};
        const real = fs.fdatasyncSync;
        let failing = 0; // how many of the next fdatasync calls fail
        fs.fdatasyncSync = (fd) => {
          if (failing > 0) {
            failing--;
            throw Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO', errno: -5, syscall: 'fdatasync' });
          }
          return real(fd);
        };
        const realWrite = fs.writeSync;
        let writesBeforeFailure = -1; // the write that many calls from now fails (EIO)
        fs.writeSync = (...args) => {
          if (writesBeforeFailure === 0) {
            writesBeforeFailure = -1;
            throw Object.assign(new Error('EIO: i/o error, write'), { code: 'EIO', errno: -5, syscall: 'write' });
          }
          if (writesBeforeFailure > 0) writesBeforeFailure--;
          return realWrite(...args);
        };
        syncBuiltinESMExports();
        const lines = [];
        const hub = new LogHub({ level: 'info' });
        const shard = new Shard({ dir: process.argv[2], shard: 0, mapping: autoMapping(), fracSize: 1 << 30, totalSize: 0, retention: 0 }, hub.get('test'));
        let next = 0;
        const out = [];
        // 600 documents (3 chunks of INGEST_CHUNK); with client ids: 'dup' twice (the second kept as the first's copy).
        const send = (fail, withIds) => {
          const docs = Array.from({ length: 600 }, () => ({ n: next++, msg: 'x'.repeat(100) }));
          const body = docs.map((d) => Buffer.from(JSON.stringify(d)));
          const buf = Buffer.concat(body);
          const offs = new Int32Array(2 * body.length);
          for (let i = 0, at = 0; i < body.length; at += body[i].length, i++) { offs[2 * i] = at; offs[2 * i + 1] = body[i].length; }
          const meta = withIds ? { ids: docs.map((d, i) => (i === 10 || i === 20 ? 'dup' : 'id-' + d.n)), create: null } : null;
          failing = fail;
          const r = shard.ingest(buf, offs, Date.now(), undefined, meta);
          failing = 0;
          const ids = Buffer.from(r.ids).toString('latin1');
          const stored = [];
          for (let i = 0; i < docs.length; i++) if (ids.slice(24 * i, 24 * i + 24).trim()) stored.push(docs[i].n);
          const active = shard.status().fractions.find((f) => f.state === 'active');
          out.push({ first: docs[0].n, stored, errors: r.errors, kept: r.kept ?? [], activeDocs: active.docs, walBytes: active.disk_bytes, problems: shard.status().problems, dup: shard.hasClientId('dup') });
        };
        send(0, false);
        send(2, false); // the fsync fails, and so does the first fsync after the cut (retried)
        send(1, true);
        send(0, false);
        writesBeforeFailure = 1; // the first chunk is written (not synced), the second fails
        send(0, false);
        send(0, false);
        if (process.argv[3] === 'fatal') send(4, false); // the fsync and every try to cut back fail
        process.stdout.write(JSON.stringify(out));
      `,
      );
      const shardDir = path.join(dir, 'shard');
      const run = spawnSync(process.execPath, [script, shardDir], { encoding: 'utf8', timeout: 60_000 });
      expect(run.status, run.stderr).toBe(0);
      type Out = {
        first: number;
        stored: number[];
        errors: [number, string, string, number?][];
        kept: number[];
        activeDocs: number;
        walBytes: number;
        problems: { kind: string; detail: string }[];
        dup: boolean;
      };
      const out = JSON.parse(run.stdout) as Out[];
      const all = (o: Out) => Array.from({ length: 600 }, (_, i) => o.first + i);
      expect(out[0]!.stored).toEqual(all(out[0]!));
      for (const failed of [out[1]!, out[2]!]) {
        // Nothing stored, every item refused as not stored (the kept copy of 'dup' too: its first copy failed).
        expect(failed.stored).toEqual([]);
        expect(failed.kept).toEqual([]);
        expect(failed.errors.map((e) => e[0])).toEqual(Array.from({ length: 600 }, (_, i) => i));
        for (const e of failed.errors) {
          expect(e[1]).toBe('storage_exception');
          expect(e[3]).toBe(500);
          expect(e[2]).toMatch(/not stored: .*EIO/);
        }
        // Gone from memory and from the file.
        expect(failed.activeDocs).toBe(600);
        expect(failed.walBytes).toBe(out[0]!.walBytes);
        expect(failed.problems.map((p) => `${p.kind} ${p.detail}`)).toEqual([
          'write_failed write-ahead fsync failed: EIO',
        ]);
        expect(failed.dup).toBe(false);
      }
      expect(out[3]!.stored).toEqual(all(out[3]!));
      expect(out[3]!.activeDocs).toBe(1200);
      expect(out[3]!.problems).toEqual([]);
      // A write that fails after a chunk of the batch was written: the whole batch is undone the same way.
      const w = out[4]!;
      expect(w.stored).toEqual([]);
      expect(w.errors.map((e) => `${e[0]} ${e[1]} ${e[3]}`)).toEqual(
        Array.from({ length: 600 }, (_, i) => `${i} storage_exception 500`),
      );
      expect(w.errors[0]![2]).toMatch(/not stored: .*EIO/);
      expect(w.activeDocs).toBe(1200);
      expect(w.walBytes).toBe(out[3]!.walBytes);
      expect(w.problems.map((p) => `${p.kind} ${p.detail}`)).toEqual(['write_failed write-ahead append failed: EIO']);
      expect(out[5]!.stored).toEqual(all(out[5]!));
      expect(out[5]!.activeDocs).toBe(1800);
      expect(out[5]!.problems).toEqual([]);
      // One error line per episode (two failed batches, then one), a warning per batch undone, each episode's end.
      expect(run.stderr.match(/level=error[^\n]*write failed/g)).toHaveLength(2);
      expect(run.stderr.match(/batch not stored: the write-ahead file was cut back/g)).toHaveLength(3);
      expect(run.stderr).toMatch(/writes succeed again/);
      // What a restart replays: exactly the stored documents.
      const wal = new Wal(path.join(shardDir, 'frac-0000000001.wal'));
      const replayed: number[] = [];
      const { loss } = wal.replay((r) => replayed.push((JSON.parse(Buffer.from(r.doc).toString()) as { n: number }).n));
      wal.close();
      expect(loss).toBeNull();
      expect(replayed).toEqual([...out[0]!.stored, ...out[3]!.stored, ...out[5]!.stored]);

      // When even cutting back fails, nothing can say what is on disk: the process stops without answering.
      const fatal = spawnSync(process.execPath, [script, path.join(dir, 'shard2'), 'fatal'], {
        encoding: 'utf8',
        timeout: 60_000,
      });
      expect(fatal.signal).toBe('SIGKILL');
      expect(fatal.stdout).toBe('');
      expect(fatal.stderr).toMatch(/level=fatal .*cutting the write-ahead file back failed too/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a seal that fails at its next write-ahead file or at the catalog (SQLITE_FULL) keeps the active fraction whole, reports the full disk and is redone', () => {
    // The real Shard in a child process; node:fs's openSync (the next write-ahead file) and the catalog's SQLite
    // statement are made to fail once each, as a full disk makes them fail.
    const dir = tempDir('tidepool-sealfail-');
    try {
      const script = path.join(dir, 'seal.mjs');
      const dist = (f: string) => JSON.stringify(path.join(ROOT, 'dist', 'src', f));
      writeFileSync(
        script,
        `
        import fs from 'node:fs';
        import { syncBuiltinESMExports } from 'node:module';
        import { createRequire } from 'node:module';
        import { Shard } from ${dist('logstore/storage/shard.js')};
        import { autoMapping } from ${dist('logstore/mapping.js')};
        import { LogHub } from ${dist('shared/logger.js')};
        const realOpen = fs.openSync;
        let failOpen = false;
        fs.openSync = (file, ...rest) => {
          if (failOpen && String(file).endsWith('.wal')) {
            failOpen = false;
            throw Object.assign(new Error('ENOSPC: no space left on device, open'), { code: 'ENOSPC', errno: -28, syscall: 'open' });
          }
          return realOpen(file, ...rest);
        };
        syncBuiltinESMExports();
        const Database = createRequire(${JSON.stringify(path.join(ROOT, 'package.json'))})('better-sqlite3');
        const realTx = Database.prototype.transaction;
        let failTx = false;
        Database.prototype.transaction = function (fn) {
          const tx = realTx.call(this, fn);
          return (...args) => {
            if (failTx) {
              failTx = false;
              throw Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' });
            }
            return tx(...args);
          };
        };
        const dir = process.argv[2];
        const shard = new Shard({ dir, shard: 0, mapping: autoMapping(), fracSize: 1 << 30, totalSize: 0, retention: 0 }, new LogHub({ level: 'silent' }).get('test'));
        let next = 0;
        const docs = Array.from({ length: 500 }, () => Buffer.from(JSON.stringify({ n: next++, msg: 'y'.repeat(100) })));
        const buf = Buffer.concat(docs);
        const offs = new Int32Array(2 * docs.length);
        for (let i = 0, at = 0; i < docs.length; at += docs[i].length, i++) { offs[2 * i] = at; offs[2 * i + 1] = docs[i].length; }
        shard.ingest(buf, offs);
        const out = [];
        const look = (what) => {
          const st = shard.status();
          out.push({ what, fractions: st.fractions.map((f) => f.name + ':' + f.state + ':' + f.docs), files: fs.readdirSync(dir).filter((f) => f.startsWith('frac-')).sort(), problems: st.problems.map((p) => p.kind) });
        };
        // The next write-ahead file cannot be created: the seal throws, nothing of it is left.
        failOpen = true;
        try { shard.seal(); out.push({ what: 'open', sealed: true }); } catch (err) { out.push({ what: 'open', error: err.code }); }
        look('after open');
        // The catalog is full, in a seal set off by a batch: the batch is stored (fsynced before), the disk reported full.
        shard.opts.fracSize = 1;
        failTx = true;
        const r = shard.ingest(buf, offs);
        out.push({ what: 'catalog', errors: r.errors.length, stored: Buffer.from(r.ids).toString('latin1').replace(/ /g, '').length / 24 });
        look('after catalog');
        // Tried again (its 10 s are made up): sealed, the episode over.
        shard.sealRetryAt = 0;
        shard.ingest(buf, offs);
        look('after the third try');
        shard.opts.fracSize = 1 << 30;
        shard.ingest(buf, offs);
        shard.close(false);
        const again = new Shard({ dir, shard: 0, mapping: autoMapping(), fracSize: 1 << 30, totalSize: 0, retention: 0 }, new LogHub({ level: 'silent' }).get('test'));
        const st = again.status();
        out.push({ what: 'reopened', fractions: st.fractions.map((f) => f.name + ':' + f.state + ':' + f.docs) });
        again.close(false);
        process.stdout.write(JSON.stringify(out));
      `,
      );
      const run = spawnSync(process.execPath, [script, path.join(dir, 'shard')], { encoding: 'utf8', timeout: 60_000 });
      expect(run.status, run.stderr).toBe(0);
      expect(JSON.parse(run.stdout)).toEqual([
        { what: 'open', error: 'ENOSPC' },
        // Nothing of the failed seal is left: no sealed directory, no next write-ahead file; the active one holds all.
        { what: 'after open', fractions: ['frac-0000000001:active:500'], files: ['frac-0000000001.wal'], problems: [] },
        { what: 'catalog', errors: 0, stored: 500 },
        {
          what: 'after catalog',
          fractions: ['frac-0000000001:active:1000'],
          files: ['frac-0000000001.wal'],
          problems: ['disk_full'],
        },
        {
          what: 'after the third try',
          fractions: ['frac-0000000001:sealed:1500', 'frac-0000000002:active:0'],
          files: ['frac-0000000001', 'frac-0000000002.wal'],
          problems: [],
        },
        { what: 'reopened', fractions: ['frac-0000000001:sealed:1500', 'frac-0000000002:active:500'] },
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
