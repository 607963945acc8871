// The log store under large bulks: peak resident memory (VmHWM) stays under a generous bound with default
// limits, one big bulk is spread over every shard, and past limits.bulk_memory documents are answered 429
// per item, never stored, while every acknowledged one survives kill -9.
import { readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { type LogstoreProcess, postJson, startLogstore } from '../../helpers/logstore.js';

let running: LogstoreProcess[] = [];
afterEach(async () => {
  for (const ls of running) await ls.cleanup();
  running = [];
});

async function start(opts: Parameters<typeof startLogstore>[0]): Promise<LogstoreProcess> {
  const ls = await startLogstore(opts);
  running.push(ls);
  return ls;
}

const MiB = 1024 * 1024;

/** A bulk body of about `mb` MiB of http_logs-shaped documents numbered from `first` (field `seq`). */
function body(mb: number, first = 0): { buf: Buffer; docs: number } {
  const target = mb * MiB;
  const buf = Buffer.allocUnsafe(target + 1024);
  let pos = 0;
  let n = 0;
  while (pos < target) {
    const seq = first + n++;
    pos += buf.write(
      `{"index":{}}\n{"timestamp":"${new Date(1.79e12 + seq).toISOString()}","seq":${seq},"clientip":"10.${seq % 251}.${(seq >> 8) % 253}.${seq % 7}","request":"GET /page_${seq % 977}.html HTTP/1.0","status":${seq % 50 ? 200 : 404}}\n`,
      pos,
    );
  }
  return { buf: buf.subarray(0, pos), docs: n };
}

/** Sends a bulk over one HTTP request and returns each item's status, in order. */
function sendBulk(url: string, buf: Buffer, query = ''): Promise<number[]> {
  return new Promise((resolve, reject) => {
    const u = new URL(`${url}/_bulk${query}`);
    const req = http.request(
      {
        host: u.hostname,
        port: u.port,
        method: 'POST',
        path: u.pathname + u.search,
        headers: { 'content-type': 'application/x-ndjson', 'content-length': buf.length },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          if (res.statusCode !== 200) return reject(new Error(`bulk answered ${res.statusCode}`));
          const answer = JSON.parse(Buffer.concat(chunks).toString()) as {
            items: Record<string, { status: number }>[];
          };
          resolve(answer.items.map((it) => Object.values(it)[0]!.status));
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(buf);
  });
}

function peakRss(pid: number): number {
  const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m![1]) * 1024;
}

function resetPeak(pid: number): void {
  writeFileSync(`/proc/${pid}/clear_refs`, '5');
}

async function perShard(url: string): Promise<number[]> {
  const res = await fetch(`${url}/status`);
  const st = (await res.json()) as { per_shard: { fractions: { docs: number }[] }[] };
  return st.per_shard.map((s) => s.fractions.reduce((a, f) => a + f.docs, 0));
}

describe('memory under large bulks', () => {
  it(
    'one 200 MB bulk uses every shard; five in a row and four senders at once stay under 600 MiB peak, with no growth',
    { timeout: 900_000 },
    async () => {
      // The sizes with the defaults (limits, frac_size, auto mapping); two shards whatever the machine's CPU count.
      const ls = await start({ storage: { shards: 2 } });
      const pid = ls.child.pid!;
      const big = body(200);
      const peaks: number[] = [];
      for (let i = 0; i < 5; i++) {
        resetPeak(pid);
        const statuses = await sendBulk(ls.url, big.buf, '?filter_path=errors,items.*.error,items.*.status');
        expect(statuses.length).toBe(big.docs);
        expect(statuses.every((s) => s === 201)).toBe(true);
        peaks.push(peakRss(pid));
        process.stderr.write(`memory.test: 200 MB bulk ${i + 1} of 5, peak ${peaks[i]! >> 20} MiB\n`);
        if (i === 0) {
          const shards = await perShard(ls.url);
          expect(shards.reduce((a, b) => a + b, 0)).toBe(big.docs);
          // Spread over both shards (batches go to the least busy one), not all on one.
          for (const n of shards) expect(n).toBeGreaterThan(big.docs * 0.2);
        }
      }
      resetPeak(pid);
      const all = await Promise.all(
        [0, 1, 2, 3].map(() => sendBulk(ls.url, big.buf, '?filter_path=errors,items.*.error,items.*.status')),
      );
      for (const statuses of all) expect(statuses.filter((s) => s === 201).length).toBe(big.docs);
      peaks.push(peakRss(pid));
      process.stderr.write(
        `memory.test peaks (VmHWM MiB): 200 MB bulks in a row ${peaks
          .slice(0, 5)
          .map((p) => p >> 20)
          .join(', ')}; four senders at once ${peaks[5]! >> 20}\n`,
      );
      for (const p of peaks) expect(p).toBeLessThan(600 * MiB);
      // No growth from one big bulk to the next beyond noise: the last of five against the first.
      expect(peaks[4]!).toBeLessThan(peaks[0]! * 1.15 + 30 * MiB);
      const total = await postJson<{ total: number }>(`${ls.url}/search`, { query: { query: '*' }, size: 0 });
      expect(total.body.total).toBe(9 * big.docs);
    },
  );

  it(
    'past limits.bulk_memory answers 429 per item, stores none of those, and loses no acknowledged one to kill -9',
    { timeout: 120_000 },
    async () => {
      // 3 MB: up to about 1 MB of it is the four bulks' item state (codes and id pages), charged with their batches.
      const ls = await start({ storage: { shards: 1 }, limits: { bulk_memory: '3MB' } });
      const bodies = [0, 1, 2, 3].map((k) => body(2, k * 1_000_000));
      const answers = await Promise.all(bodies.map((b) => sendBulk(ls.url, b.buf)));
      const acked: number[] = [];
      const rejected: number[] = [];
      answers.forEach((statuses, k) =>
        statuses.forEach((s, i) => {
          expect([201, 429]).toContain(s);
          (s === 201 ? acked : rejected).push(k * 1_000_000 + i);
        }),
      );
      expect(acked.length).toBeGreaterThan(0);
      expect(rejected.length).toBeGreaterThan(0);
      await ls.kill9();
      await ls.restart();
      const res = await fetch(`${ls.url}/export`, { method: 'POST', body: JSON.stringify({ query: { query: '*' } }) });
      const seqs = new Set(
        (await res.text())
          .split('\n')
          .filter(Boolean)
          .map((l) => (JSON.parse(l) as { data: { seq: number } }).data.seq),
      );
      expect(acked.filter((s) => !seqs.has(s))).toEqual([]);
      expect(rejected.filter((s) => seqs.has(s))).toEqual([]);
      expect(seqs.size).toBe(acked.length);
    },
  );

  it(
    'a bulk of large documents, each batch of it larger than a small limits.bulk_memory, is stored (not 429 on every item forever)',
    { timeout: 60_000 },
    async () => {
      const ls = await start({ storage: { shards: 1 }, limits: { bulk_memory: '256KB' } });
      // 100 documents of ~19 KB: 1.9 MB, seven times the budget; few items, so little item state.
      const pad = 'p'.repeat(19_000);
      const lines: string[] = [];
      for (let i = 0; i < 100; i++) lines.push('{"index":{}}', `{"seq":${i},"pad":"${pad}"}`);
      const text = lines.join('\n') + '\n';
      for (let round = 0; round < 3; round++) {
        const res = await fetch(`${ls.url}/_bulk`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-ndjson' },
          body: text,
        });
        expect(res.status).toBe(200);
        const j = (await res.json()) as { items: { index: { status: number } }[] };
        expect(
          j.items.map((x) => x.index.status).filter((s) => s !== 201),
          `round ${round}`,
        ).toEqual([]);
      }
      const total = await postJson<{ total: number }>(`${ls.url}/search`, { query: { query: '*' }, size: 0 });
      expect(total.body.total).toBe(300);
    },
  );

  it(
    'a bulk whose items alone would pass limits.bulk_memory is refused whole (413) and the store serves on',
    { timeout: 60_000 },
    async () => {
      const ls = await start({ storage: { shards: 1 }, limits: { bulk_memory: '1MB' } });
      // 400-character ids: about 860 bytes of state an item, so the 20 000 items need about 17 MB.
      const lines: string[] = [];
      for (let i = 0; i < 20_000; i++)
        lines.push(`{"index":{"_id":"${String(i).padStart(400, 'k')}"}}`, `{"seq":${i}}`);
      const res = await fetch(`${ls.url}/_bulk`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-ndjson' },
        body: lines.join('\n') + '\n',
      });
      expect(res.status).toBe(413);
      const err = (await res.json()) as { error: { type: string; reason: string }; status: number };
      expect(err.status).toBe(413);
      expect(err.error.reason).toMatch(/limits\.bulk_memory \(1048576 bytes\)/);
      const small = body(0.1);
      const statuses = await sendBulk(ls.url, small.buf);
      expect(statuses.filter((s) => s === 201).length).toBe(small.docs);
    },
  );
});
