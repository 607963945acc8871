// POST /_bulk over real HTTP: per-item errors in a mixed bulk, non-NDJSON bodies, gzip, /<index>/_bulk, probes.
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LogstoreProcess, bulk, ndjson, postJson, startLogstore } from '../../helpers/logstore.js';

let ls: LogstoreProcess;

beforeAll(async () => {
  ls = await startLogstore({ limits: { max_doc_size: '2KB' } });
});
afterAll(async () => {
  await ls?.cleanup();
});

const base = Date.parse('2026-01-01T00:00:00Z');

describe('POST /_bulk', () => {
  it('stores documents and answers one item per document, in order', async () => {
    const docs = Array.from({ length: 50 }, (_, i) => ({
      timestamp: new Date(base + i * 1000).toISOString(),
      n: i,
      service: i % 2 ? 'odd' : 'even',
    }));
    const r = await bulk(ls.url, ndjson(docs));
    expect(r.status).toBe(200);
    expect(r.body.errors).toBe(false);
    expect(r.body.items).toHaveLength(50);
    for (const it of r.body.items) {
      expect(it.index!.status).toBe(201);
      expect(it.index!._id).toMatch(/^[0-9a-f]{24}$/);
    }
    const ids = r.body.items.map((it) => it.index!._id!);
    expect([...ids].sort()).toEqual(ids);
    const s = await postJson<{ total: number; docs: { id: string; data: { n: number }; time: string }[] }>(
      `${ls.url}/search`,
      { query: { query: 'service:odd' }, size: 100 },
    );
    expect(s.status).toBe(200);
    expect(s.body.total).toBe(25);
    expect(s.body.docs.map((d) => d.data.n)).toEqual(
      docs
        .filter((d) => d.n % 2)
        .map((d) => d.n)
        .reverse(),
    );
    expect(s.body.docs[0]!.time).toBe(new Date(base + 49_000).toISOString());
  });

  it(
    'one large bulk is spread over every shard, and the id of each item is its own document, in order',
    { timeout: 120_000 },
    async () => {
      const ls3 = await startLogstore({ storage: { shards: 3 } });
      try {
        // About 5 MiB: several 1 MiB batches, which go to the least busy shard each.
        const n = 40_000;
        const lines: string[] = [];
        for (let i = 0; i < n; i++)
          lines.push(
            '{"index":{}}',
            JSON.stringify({ timestamp: new Date(base + i).toISOString(), n: i, pad: 'x'.repeat(60) }),
          );
        const res = await fetch(`${ls3.url}/_bulk?filter_path=items.*._id,items.*.status`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-ndjson' },
          body: lines.join('\n') + '\n',
        });
        const items = ((await res.json()) as { items: { index: { _id: string; status: number } }[] }).items;
        expect(items).toHaveLength(n);
        expect(items.every((it) => it.index.status === 201)).toBe(true);
        const ids = items.map((it) => it.index._id);
        // The id names the shard that stored the document (hex digits 12-13): every shard took part.
        expect(new Set(ids.map((id) => id.slice(12, 14)))).toEqual(new Set(['00', '01', '02']));
        const st = (await (await fetch(`${ls3.url}/status`)).json()) as {
          per_shard: { fractions: { docs: number }[] }[];
        };
        const perShard = st.per_shard.map((sh) => sh.fractions.reduce((a, f) => a + f.docs, 0));
        expect(perShard.reduce((a, b) => a + b, 0)).toBe(n);
        for (const c of perShard) expect(c).toBeGreaterThan(0);
        // Item i's id fetches document i (every 997th item and the last: a fetch looks each id up in every shard).
        const sample = [...items.keys()].filter((i) => i % 997 === 0 || i === n - 1);
        const got = await postJson<{ docs: { id: string; data: { n: number } }[] }>(`${ls3.url}/fetch`, {
          ids: sample.map((i) => ids[i]),
        });
        expect(got.body.docs.map((d) => d.id)).toEqual(sample.map((i) => ids[i]));
        expect(got.body.docs.map((d) => d.data.n)).toEqual(sample);
      } finally {
        await ls3.cleanup();
      }
    },
  );

  it('fails a bad document alone: invalid JSON, not an object, too large', async () => {
    const body =
      [
        '{"index":{"_index":"mixed"}}',
        '{"tag":"mixed","k":1}',
        '{"index":{}}',
        '{"tag":"mixed", broken',
        '{"create":{}}',
        '[1,2,3]',
        '{"index":{}}',
        JSON.stringify({ tag: 'mixed', big: 'x'.repeat(5000) }),
        '{"delete":{"_id":"x"}}',
        '{"index":{}}',
        '{"tag":"mixed","k":2}',
      ].join('\n') + '\n';
    const r = await bulk(ls.url, body);
    expect(r.status).toBe(200);
    expect(r.body.errors).toBe(true);
    const statuses = r.body.items.map((it) => Object.values(it)[0]!.status);
    expect(statuses).toEqual([201, 400, 400, 400, 400, 201]);
    const errs = r.body.items.map((it) => Object.values(it)[0]!.error);
    expect(errs[1]!.type).toBe('mapper_parsing_exception');
    expect(errs[2]!.reason).toMatch(/not a JSON object/);
    expect(errs[3]!.type).toBe('document_too_large_exception');
    expect(errs[4]!.reason).toMatch(/append-only: "delete" is not supported/);
    expect(Object.keys(r.body.items[2]!)).toEqual(['create']);
    expect(Object.keys(r.body.items[4]!)).toEqual(['delete']);
    expect(r.body.items[4]!.delete!._id).toBe('x');
    expect(r.body.items[0]!.index!).toMatchObject({ _index: 'mixed' });
    const s = await postJson<{ total: number }>(`${ls.url}/search`, { query: { query: 'tag:mixed' } });
    expect(s.body.total).toBe(2);
  });

  it('rejects a body that is not NDJSON with a 400 and stores nothing', async () => {
    for (const body of ['{\n  "pretty": "json"\n}\n', 'hello world\n', '{"foo":1}\n{"bar":2}\n', '']) {
      const res = await fetch(`${ls.url}/_bulk`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-ndjson' },
        body,
      });
      expect(res.status).toBe(400);
      const j = (await res.json()) as { error: { type: string; reason: string } };
      expect(j.error.reason).toMatch(/not NDJSON/);
    }
    const s = await postJson<{ total: number }>(`${ls.url}/search`, { query: { query: 'foo:1 or pretty:json' } });
    expect(s.body.total).toBe(0);
  });

  it('accepts gzip bodies and /<index>/_bulk, and skips empty lines', async () => {
    const body = gzipSync(
      Buffer.from(
        '\n' +
          ndjson([
            { tag: 'gz', k: 1 },
            { tag: 'gz', k: 2 },
          ]) +
          '\n\n',
      ),
    );
    const res = await fetch(`${ls.url}/my-index/_bulk`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-ndjson', 'content-encoding': 'gzip' },
      body,
    });
    expect(res.status).toBe(200);
    const j = (await res.json()) as { errors: boolean; items: { index: { _index: string } }[] };
    expect(j.errors).toBe(false);
    expect(j.items.map((i) => i.index._index)).toEqual(['my-index', 'my-index']);
    const bad = await fetch(`${ls.url}/_bulk`, {
      method: 'POST',
      headers: { 'content-encoding': 'gzip' },
      body: 'not gzip at all',
    });
    expect(bad.status).toBe(400);
    const s = await postJson<{ total: number }>(`${ls.url}/search`, { query: { query: 'tag:gz' } });
    expect(s.body.total).toBe(2);
  });

  it('answers the probes shippers send before a bulk', async () => {
    const root = await fetch(`${ls.url}/`);
    expect(root.status).toBe(200);
    expect(((await root.json()) as { version: { number: string } }).version.number).toMatch(/^8\./);
    expect((await fetch(`${ls.url}/`, { method: 'HEAD' })).status).toBe(200);
    expect((await fetch(`${ls.url}/_license`)).status).toBe(200);
    for (const p of ['/_ilm/policy/logs', '/_index_template/logs', '/_ingest/pipeline/x', '/_nodes/http']) {
      const r = await fetch(`${ls.url}${p}`);
      expect(r.status, p).toBe(200);
      expect(await r.json()).toEqual({});
    }
    const missing = await fetch(`${ls.url}/nope`);
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as { error: { code: string } }).error.code).toBe('not_found');
  });

  it('shapes the answer with filter_path as Logstash and Beats ask for it (gzip too)', async () => {
    const body =
      [
        '{"index":{}}',
        '{"tag":"fp","k":1}',
        '{"index":{}}',
        '{"tag":"fp", broken',
        '{"create":{"_id":"fp-1"}}',
        '{"tag":"fp","k":3}',
      ].join('\n') + '\n';
    const send = async (filter: string, gzip = false) => {
      const res = await fetch(`${ls.url}/_bulk?filter_path=${encodeURIComponent(filter)}`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-ndjson', ...(gzip ? { 'content-encoding': 'gzip' } : {}) },
        body: gzip ? gzipSync(body) : body,
      });
      expect(res.status).toBe(200);
      return res.text();
    };
    const shipper = JSON.parse(await send('errors,items.*.error,items.*.status')) as {
      errors: boolean;
      items: Record<string, { status: number; error?: { type: string } }>[];
    };
    expect(shipper.errors).toBe(true);
    expect(shipper.items.map((it) => Object.keys(it)[0])).toEqual(['index', 'index', 'create']);
    expect(shipper.items.map((it) => Object.keys(Object.values(it)[0]!))).toEqual([
      ['status'],
      ['status', 'error'],
      ['status'],
    ]);
    expect(shipper.items.map((it) => Object.values(it)[0]!.status)).toEqual([201, 400, 201]);
    expect(await send('errors', true)).toBe('{"errors":true}');
    expect(JSON.parse(await send('items.*.error.type'))).toEqual({
      items: [
        { index: { error: { type: 'mapper_parsing_exception' } } },
        { create: { error: { type: 'version_conflict_engine_exception' } } },
      ],
    });
    expect(Object.keys(JSON.parse(await send('-items')) as object)).toEqual(['took', 'errors']);
    const s = await postJson<{ total: number }>(`${ls.url}/search`, { query: { query: 'tag:fp' } });
    expect(s.body.total).toBe(5);
  });
});
