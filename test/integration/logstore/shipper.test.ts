// A real shipper client (@elastic/elasticsearch and its bulk helper) ingests, then the search API reads back.
import { Client } from '@elastic/elasticsearch';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LogstoreProcess, postJson, startLogstore } from '../../helpers/logstore.js';

let ls: LogstoreProcess;
let client: Client;

beforeAll(async () => {
  ls = await startLogstore();
  client = new Client({ node: ls.url });
});
afterAll(async () => {
  await client?.close();
  await ls?.cleanup();
});

describe('Elasticsearch client', () => {
  it('pings and reads the version', async () => {
    expect(await client.ping()).toBe(true);
    const info = await client.info();
    expect(info.version.number).toMatch(/^8\./);
  });

  it('bulk helper ingests every document and the search API finds them', async () => {
    const base = Date.parse('2026-02-01T00:00:00Z');
    const docs = Array.from({ length: 3000 }, (_, i) => ({
      '@timestamp': new Date(base + i).toISOString(),
      seq: i,
      level: i % 10 === 0 ? 'error' : 'info',
      message: `request ${i} done`,
    }));
    const stats = await client.helpers.bulk({
      datasource: docs,
      onDocument: () => ({ index: { _index: 'app-logs' } }),
      flushBytes: 64 * 1024,
      concurrency: 3,
    });
    expect(stats.failed).toBe(0);
    expect(stats.successful).toBe(3000);
    const s = await postJson<{ total: number; docs: { data: { seq: number } }[] }>(`${ls.url}/search`, {
      query: { query: 'level:error' },
      size: 1000,
    });
    expect(s.body.total).toBe(300);
    expect(s.body.docs.map((d) => d.data.seq)).toEqual(
      docs
        .filter((d) => d.level === 'error')
        .map((d) => d.seq)
        .reverse(),
    );
    const gz = new Client({ node: ls.url, compression: true });
    try {
      const r = await gz.helpers.bulk({
        datasource: [
          { level: 'gzipped', n: 1 },
          { level: 'gzipped', n: 2 },
        ],
        onDocument: () => ({ create: { _index: 'gz' } }),
      });
      expect(r.successful).toBe(2);
    } finally {
      await gz.close();
    }
    const gzs = await postJson<{ total: number }>(`${ls.url}/search`, { query: { query: 'level:gzipped' } });
    expect(gzs.body.total).toBe(2);
    const direct = await client.bulk({
      operations: [{ index: {} }, { seq: 'x', level: 'direct' }, { create: {} }, { seq: 'y', level: 'direct' }],
    });
    expect(direct.errors).toBe(false);
    expect(direct.items).toHaveLength(2);
  });
});
