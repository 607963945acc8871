// The bulk queue over limits.inflight_bulks and per-item 429 past it, a large streamed bulk, and the command line's config errors.
import http from 'node:http';
import { spawn } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type LogstoreProcess,
  bulk,
  ndjson,
  postJson,
  runCli,
  startLogstore,
  tempDir,
  ensureBuilt,
} from '../../helpers/logstore.js';

let ls: LogstoreProcess;
beforeAll(async () => {
  ls = await startLogstore({ limits: { inflight_bulks: 1, bulk_queue: 1, bulk_queue_wait: '400ms' } });
});
afterAll(async () => {
  await ls?.cleanup();
});

/** A bulk whose body is sent in two parts: it holds the one write slot until finish() is called. */
async function holdSlot(tag: string): Promise<{ finish(): Promise<{ status: number; body: string }> }> {
  const url = new URL(ls.url);
  const req = http.request({
    host: url.hostname,
    port: url.port,
    method: 'POST',
    path: '/_bulk',
    headers: { 'content-type': 'application/x-ndjson' },
  });
  const done = new Promise<{ status: number; body: string }>((resolve, reject) => {
    req.on('response', (res) => {
      let body = '';
      res.on('data', (d: Buffer) => {
        body += d.toString();
      });
      res.on('end', () => resolve({ status: res.statusCode!, body }));
    });
    req.on('error', reject);
  });
  req.write(ndjson([{ tag, k: 1 }]));
  for (;;) {
    const h = (await (await fetch(`${ls.debugUrl}/health`)).json()) as { inflight_bulks: number };
    if (h.inflight_bulks === 1) break;
    await new Promise((r) => setTimeout(r, 10));
  }
  return {
    finish() {
      req.end(ndjson([{ tag, k: 2 }]));
      return done;
    },
  };
}

type Items = {
  items: Record<string, { status: number; _id: string | null; error?: { type: string; reason: string } }>[];
};

describe('limits', () => {
  it('over limits.inflight_bulks a bulk waits in the queue, then runs: nothing rejected, nothing lost', async () => {
    const holder = await holdSlot('slow');
    const queued = bulk(
      ls.url,
      ndjson([
        { tag: 'queued', k: 1 },
        { tag: 'queued', k: 2 },
      ]),
    );
    await new Promise((r) => setTimeout(r, 100));
    const done = await holder.finish();
    expect(done.status).toBe(200);
    expect(JSON.parse(done.body).items).toHaveLength(2);
    const q = await queued;
    expect(q.status).toBe(200);
    expect(q.body.items.map((it) => it.index!.status)).toEqual([201, 201]);
    const s = await postJson<{ total: number }>(`${ls.url}/search`, { query: { query: 'tag:slow or tag:queued' } });
    expect(s.body.total).toBe(4);
  });

  it('a bulk that waited limits.bulk_queue_wait, or found the queue full, gets 429 es_rejected_execution_exception per item inside a 200', async () => {
    const holder = await holdSlot('slow2');
    const waited = bulk(
      ls.url,
      [
        '{"index":{}}',
        '{"tag":"rejected"}',
        '{"create":{"_id":"r-1"}}',
        '{"tag":"rejected"}',
        '{"index":{}}',
        '{"tag":',
        '{"delete":{"_id":"x"}}',
      ].join('\n') + '\n',
    );
    await new Promise((r) => setTimeout(r, 50));
    const full = await bulk(ls.url, ndjson([{ tag: 'rejected' }]));
    expect(full.status).toBe(200);
    expect(full.body.errors).toBe(true);
    expect(full.body.items[0]!.index!.status).toBe(429);
    const w = await waited;
    expect(w.status).toBe(200);
    expect(w.body.errors).toBe(true);
    const items = (w.body as unknown as Items).items.map((it) => Object.entries(it)[0]!);
    expect(items.map(([op, x]) => [op, x.status])).toEqual([
      ['index', 429],
      ['create', 429],
      ['index', 429],
      ['delete', 400],
    ]);
    expect(items[0]![1].error!.type).toBe('es_rejected_execution_exception');
    expect(items[1]![1]._id).toBe('r-1');
    await holder.finish();
    const s = await postJson<{ total: number }>(`${ls.url}/search`, { query: { query: 'tag:rejected' } });
    expect(s.body.total).toBe(0);
    const metrics = await (await fetch(`${ls.debugUrl}/metrics`)).text();
    expect(metrics).toMatch(/tidepool_logstore_rejected_bulks_total 2/);
    const after = await bulk(ls.url, ndjson([{ tag: 'after' }]));
    expect(after.body.items[0]!.index!.status).toBe(201);
  });

  it('streams a large bulk (50 000 documents, ~8 MB) with an oversize line in the middle', async () => {
    const n = 50_000;
    let i = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(ctrl) {
        if (i >= n) {
          ctrl.close();
          return;
        }
        const part: string[] = [];
        for (let k = 0; k < 1000 && i < n; k++, i++) {
          part.push(
            '{"index":{}}',
            i === 25_000
              ? JSON.stringify({ big: 'x'.repeat(2 * 1024 * 1024) })
              : JSON.stringify({ tag: 'stream', i, filler: 'abcdefghij'.repeat(12) }),
          );
        }
        ctrl.enqueue(new TextEncoder().encode(part.join('\n') + '\n'));
      },
    });
    const res = await fetch(`${ls.url}/_bulk`, {
      method: 'POST',
      body: stream,
      duplex: 'half',
      headers: { 'content-type': 'application/x-ndjson' },
    } as RequestInit);
    expect(res.status).toBe(200);
    const j = (await res.json()) as {
      errors: boolean;
      items: { index: { status: number; error?: { type: string } } }[];
    };
    expect(j.items).toHaveLength(n);
    expect(j.items.filter((x) => x.index.status !== 201).map((x) => x.index.error!.type)).toEqual([
      'document_too_large_exception',
    ]);
    expect(j.items[25_000]!.index.status).toBe(400);
    const s = await postJson<{ total: number }>(`${ls.url}/search`, { query: { query: 'tag:stream' } });
    expect(s.body.total).toBe(n - 1);
  });
});

describe('tidepool logstore command line', () => {
  beforeAll(() => ensureBuilt());
  const dir = tempDir('tidepool-cli-');
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const file = (name: string, text: string) => {
    const p = path.join(dir, name);
    writeFileSync(p, text);
    return p;
  };

  it('rejects an unknown mode, and starts single mode without --mode', async () => {
    const r = runCli(['logstore', '--mode', 'cluster', '--config', 'x.yaml']);
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/--mode must be one of single, proxy, store, ingestor; found "cluster"/);
    expect(runCli(['logstore', '--mode', '--config', 'x.yaml']).stderr).toMatch(/--mode must be one of/);
    const cfg = file(
      'nomode.yaml',
      `server:\n  http_addr: 127.0.0.1:0\n  grpc_addr: 127.0.0.1:0\n  debug_addr: 127.0.0.1:0\nstorage:\n  data_dir: ${path.join(dir, 'nomode-data')}\n  shards: 1\nlog:\n  level: warn\n`,
    );
    const child = spawn(process.execPath, [path.resolve('bin/tidepool.js'), 'logstore', `--config=${cfg}`], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
    });
    child.stderr!.on('data', (d: Buffer) => {
      out += d.toString();
    });
    try {
      const deadline = Date.now() + 30_000;
      while (!/\(single mode\)/.test(out)) {
        if (child.exitCode !== null) throw new Error(`exited ${child.exitCode}: ${out}`);
        if (Date.now() > deadline) throw new Error(`did not start: ${out}`);
        await new Promise((res) => setTimeout(res, 50));
      }
    } finally {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((res) => child.once('exit', res));
        child.kill('SIGKILL');
        await exited;
      }
    }
  });

  it('requires --config and a readable file', () => {
    expect(runCli(['logstore', '--mode', 'single']).stderr).toMatch(/--config <file.yaml> is required/);
    const r = runCli(['logstore', '--mode', 'single', `--config=${path.join(dir, 'missing.yaml')}`]);
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/\(file\): expected a readable file/);
  });

  it('names the key of every problem, with a did-you-mean', () => {
    const cfg = file(
      'bad.yaml',
      'storage:\n  frac_sise: 1MB\n  shards: zero\nserver:\n  http_addr: nowhere\nlimits:\n  max_doc_size: huge\n',
    );
    const r = runCli(['logstore', '--mode', 'single', '--config', cfg]);
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/storage\.frac_sise: expected one of the known keys .* \(did you mean "frac_size"\?\)/);
    expect(r.stderr).toMatch(/storage\.shards: expected an integer in \[1, 256\], found the string "zero"/);
    expect(r.stderr).toMatch(/server\.http_addr: expected "<host>:<port>"/);
    expect(r.stderr).toMatch(/limits\.max_doc_size: expected a size/);
  });

  it('refuses a cluster whose store count hot_replicas does not divide, a bad store address, and a proxy without stores', () => {
    const cfg = file(
      'cluster.yaml',
      'cluster:\n  hot_stores: ["127.0.0.1:9104", "127.0.0.1:9105", "127.0.0.1:9106"]\n  hot_replicas: 2\n',
    );
    // The check is the config's own (the same for every mode); proxy and store show it for both roles.
    for (const mode of ['proxy', 'store']) {
      const r = runCli(['logstore', '--mode', mode, '--config', cfg]);
      expect(r.status).toBe(1);
      expect(r.stderr).toMatch(
        /cluster\.hot_stores: expected a number of stores divisible by cluster\.hot_replicas \(2\): shards are groups of hot_replicas consecutive stores, found 3 stores/,
      );
    }
    const bad = runCli([
      'logstore',
      '--mode',
      'proxy',
      '--config',
      file('addr.yaml', 'cluster:\n  hot_stores: ["nowhere", ":9004"]\n'),
    ]);
    expect(bad.status).toBe(1);
    expect(bad.stderr).toMatch(
      /cluster\.hot_stores\[0\]: expected a store gRPC address "<host>:<port>", found "nowhere"/,
    );
    expect(bad.stderr).toMatch(/cluster\.hot_stores\[1\]: expected a store gRPC address/);
    const none = runCli(['logstore', '--mode', 'proxy', '--config', file('none.yaml', 'mapping:\n  path: auto\n')]);
    expect(none.status).toBe(1);
    expect(none.stderr).toMatch(/--mode proxy needs cluster\.hot_stores, the gRPC addresses of the stores/);
  }, 180_000);

  it('reports YAML syntax errors and bad mapping files', () => {
    expect(
      runCli(['logstore', '--mode', 'single', '--config', file('syntax.yaml', 'storage: [unclosed\n')]).stderr,
    ).toMatch(/expected valid YAML/);
    const mapping = file('mapping.yaml', 'mapping-list:\n  - name: level\n    type: keywrd\n');
    const r = runCli(['logstore', '--mode', 'single', '--config', file('m.yaml', `mapping:\n  path: ${mapping}\n`)]);
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(
      /mapping-list\[0\]\.type: expected one of keyword, text, path, exists, object; found "keywrd"/,
    );
  });
});
