// Processes: kill -9 during a stream of acknowledged bulks loses none of them; restarts keep data; retention.
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { type LogstoreProcess, bulk, ndjson, postJson, startLogstore } from '../../helpers/logstore.js';

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

async function exportAll(url: string, query = '*'): Promise<{ id: string; data: Record<string, unknown> }[]> {
  const res = await fetch(`${url}/export`, { method: 'POST', body: JSON.stringify({ query: { query } }) });
  expect(res.status).toBe(200);
  const text = await res.text();
  return text
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { id: string; data: Record<string, unknown> });
}

describe('durability', () => {
  it('kill -9 during a stream of bulks loses no acknowledged document; restart recovers them', async () => {
    const ls = await start({ storage: { frac_size: '256KB', shards: 2 } });
    const acked = new Set<number>();
    let next = 0;
    let ackedBulks = 0;
    let stop = false;
    const sender = async () => {
      while (!stop) {
        const seqs = Array.from({ length: 200 }, () => next++);
        const body = ndjson(seqs.map((seq) => ({ seq, msg: `event number ${seq}`, pad: 'p'.repeat(seq % 50) })));
        try {
          const r = await bulk(ls.url, body);
          if (r.status === 200 && !r.body.errors) {
            for (const s of seqs) acked.add(s);
            ackedBulks++;
          }
        } catch {
          return; // the connection died with the process: these documents were never acknowledged
        }
      }
    };
    const senders = [sender(), sender(), sender(), sender()];
    while (ackedBulks < 40) await new Promise((r) => setTimeout(r, 5));
    await ls.kill9();
    stop = true;
    await Promise.all(senders);
    expect(acked.size).toBeGreaterThanOrEqual(40 * 200);

    await ls.restart();
    const docs = await exportAll(ls.url);
    const found = new Set(docs.map((d) => d.data.seq as number));
    const lost = [...acked].filter((s) => !found.has(s));
    expect(lost).toEqual([]);
    const ids = docs.map((d) => d.id);
    expect(new Set(ids).size).toBe(ids.length);
    // A second crash right after recovery changes nothing.
    await ls.kill9();
    await ls.restart();
    expect((await exportAll(ls.url)).length).toBe(docs.length);
  });

  it('keeps sealed and active data across a clean restart', async () => {
    const ls = await start({ storage: { frac_size: '16KB', shards: 2 } });
    const base = Date.parse('2026-04-01T00:00:00Z');
    const docs = Array.from({ length: 1500 }, (_, i) => ({
      timestamp: new Date(base + i * 1000).toISOString(),
      i,
      kind: i % 3 ? 'x' : 'y',
    }));
    for (let k = 0; k < docs.length; k += 300)
      expect((await bulk(ls.url, ndjson(docs.slice(k, k + 300)))).body.errors).toBe(false);
    const st = (await (await fetch(`${ls.url}/status`)).json()) as {
      docs: number;
      fractions: { sealed: number; active: number };
    };
    expect(st.docs).toBe(1500);
    expect(st.fractions.sealed).toBeGreaterThan(2);
    const q = {
      query: {
        query: 'kind:y',
        from: new Date(base + 100_000).toISOString(),
        to: new Date(base + 900_000).toISOString(),
      },
      size: 1000,
    };
    const r1 = await postJson<{ total: number; docs: { id: string }[] }>(`${ls.url}/search`, q);
    await ls.stop();
    await ls.restart();
    const r2 = await postJson<{ total: number; docs: { id: string }[] }>(`${ls.url}/search`, q);
    expect(r2.body).toEqual(r1.body);
    expect(r2.body.total).toBe(docs.filter((d) => d.kind === 'y' && d.i >= 100 && d.i <= 900).length);
    const st2 = (await (await fetch(`${ls.url}/status`)).json()) as { docs: number; fractions: { sealed: number } };
    expect(st2.docs).toBe(1500);
    expect(st2.fractions.sealed).toBe(st.fractions.sealed);
    // Fewer shards configured than the data directory holds: every shard is still opened.
    await ls.stop();
    writeFileSync(ls.configFile, readFileSync(ls.configFile, 'utf8').replace('shards: 2', 'shards: 1'));
    await ls.restart();
    const r3 = await postJson<{ total: number; docs: { id: string }[] }>(`${ls.url}/search`, q);
    expect(r3.body).toEqual(r1.body);
  });

  it('retention drops whole oldest fractions past total_size and past retention', async () => {
    const ls = await start({ storage: { frac_size: '8KB', total_size: '40KB', retention: '1h', shards: 1 } });
    const now = Date.now();
    const old = Array.from({ length: 200 }, (_, i) => ({
      timestamp: new Date(now - 3 * 86_400_000 + i).toISOString(),
      age: 'old',
      i,
      text: `old entry ${i} `.repeat(3),
    }));
    expect((await bulk(ls.url, ndjson(old))).body.errors).toBe(false);
    const recent = Array.from({ length: 3000 }, (_, i) => ({
      timestamp: new Date(now - 600_000 + i * 100).toISOString(),
      age: 'new',
      i,
      text: `entry ${i * 7919} `.repeat(3),
    }));
    for (let k = 0; k < recent.length; k += 250)
      expect((await bulk(ls.url, ndjson(recent.slice(k, k + 250)))).body.errors).toBe(false);
    const oldLeft = await postJson<{ total: number }>(`${ls.url}/search`, { query: { query: 'age:old' } });
    expect(oldLeft.body.total).toBe(0);
    const newest = await postJson<{ total: number; docs: { data: { i: number } }[] }>(`${ls.url}/search`, {
      query: { query: 'age:new' },
      size: 1,
    });
    expect(newest.body.docs[0]!.data.i).toBe(2999);
    expect(newest.body.total).toBeLessThan(3000);
    const st = (await (await fetch(`${ls.url}/status`)).json()) as {
      disk_bytes: number;
      per_shard: { fractions: { state: string; disk_bytes: number }[] }[];
    };
    const sealedBytes = st.per_shard[0]!.fractions.filter((f) => f.state === 'sealed').reduce(
      (s, f) => s + f.disk_bytes,
      0,
    );
    expect(sealedBytes).toBeLessThanOrEqual(40 * 1024);
    const dirs = readdirSync(`${ls.dataDir}/shard-0`).filter((e) => e.startsWith('frac-') && !e.endsWith('.wal'));
    expect(dirs.length).toBe(st.per_shard[0]!.fractions.filter((f) => f.state === 'sealed').length);
  });
});
