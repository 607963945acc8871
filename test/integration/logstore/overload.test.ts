// A period of forced overload with the real Elasticsearch client's bulk helper at its default settings
// (flushBytes 5 MB, concurrency 5, 3 retries 5 s apart): every document arrives, none twice.
import http from 'node:http';
import { Client } from '@elastic/elasticsearch';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LogstoreProcess, ndjson, startLogstore } from '../../helpers/logstore.js';

let ls: LogstoreProcess;
let client: Client;

beforeAll(async () => {
  // One write at a time; a bulk waits at most 3 s for it before its items are answered 429.
  ls = await startLogstore({ limits: { inflight_bulks: 1, bulk_queue: 8, bulk_queue_wait: '3s' } });
  client = new Client({ node: ls.url });
});
afterAll(async () => {
  await client?.close();
  await ls?.cleanup();
});

/** Holds the one write slot with a bulk whose body is still being sent; resolves the release function. */
async function holdSlot(): Promise<() => Promise<void>> {
  const url = new URL(ls.url);
  const req = http.request({
    host: url.hostname,
    port: url.port,
    method: 'POST',
    path: '/_bulk',
    headers: { 'content-type': 'application/x-ndjson' },
  });
  const done = new Promise<void>((resolve, reject) => {
    req.on('response', (res) => {
      res.resume();
      res.on('end', () => resolve());
    });
    req.on('error', reject);
  });
  req.write(ndjson([{ tag: 'holder' }]));
  for (;;) {
    const h = (await (await fetch(`${ls.debugUrl}/health`)).json()) as { inflight_bulks: number };
    if (h.inflight_bulks === 1) break;
    await new Promise((r) => setTimeout(r, 10));
  }
  return async () => {
    req.end();
    await done;
  };
}

describe('overload with the Elasticsearch bulk helper', () => {
  it('rejected items (429 inside a 200) are retried by the helper: every document stored exactly once', async () => {
    const n = 60_000;
    const base = Date.parse('2026-03-01T00:00:00Z');
    const docs = Array.from({ length: n }, (_, i) => ({
      '@timestamp': new Date(base + i).toISOString(),
      seq: i,
      tag: 'overload',
      message: `request ${i} done in ${i % 997} ms`,
      pad: 'x'.repeat(100),
    }));
    const release = await holdSlot();
    // The slot is held for 5 s: the helper's first requests wait 3 s in the queue, then get per-item 429s.
    const timer = setTimeout(() => void release(), 5000);
    const drops: unknown[] = [];
    try {
      const stats = await client.helpers.bulk({
        datasource: docs,
        onDocument: () => ({ index: { _index: 'overload' } }),
        onDrop: (d) => drops.push(d),
      });
      expect(drops).toEqual([]);
      expect(stats.failed).toBe(0);
      expect(stats.successful).toBe(n);
      // The overload happened: the helper retried rejected items.
      expect(stats.retry).toBeGreaterThan(0);
    } finally {
      clearTimeout(timer);
      await release();
    }
    const metrics = await (await fetch(`${ls.debugUrl}/metrics`)).text();
    expect(Number(/tidepool_logstore_rejected_bulks_total (\d+)/.exec(metrics)?.[1])).toBeGreaterThan(0);
    // Every document once: the export lists each seq exactly one time.
    const res = await fetch(`${ls.url}/export`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: { query: 'tag:overload | fields seq' } }),
    });
    const seqs = (await res.text())
      .trim()
      .split('\n')
      .map((l) => (JSON.parse(l) as { data: { seq: number } }).data.seq);
    expect(seqs).toHaveLength(n);
    expect(new Set(seqs).size).toBe(n);
  }, 120_000);
});
