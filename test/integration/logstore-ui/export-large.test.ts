// Export of 100 000 documents through the UI backend, JSON lines and CSV, with the UI backend's memory measured
// (it must not hold the export); a second export past max_parallel_export_requests is a 429.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bulk, ndjson, startLogstore, type LogstoreProcess } from '../../helpers/logstore.js';
import { startUi, type UiProcess } from '../../helpers/logstore-ui.js';

const N = 100_000;
const T0 = Date.now() - 3_600_000;
const PAD = 'x'.repeat(400);
const doc = (i: number) => ({
  timestamp: new Date(T0 + i * 10).toISOString(),
  n: i,
  service: `svc-${i % 7}`,
  msg: `line ${i} "quoted", comma ${PAD}`,
});

let store: LogstoreProcess;
let ui: UiProcess;

beforeAll(async () => {
  store = await startLogstore({ storage: { shards: 2 } });
  for (let i = 0; i < N; i += 10_000) {
    const r = await bulk(store.url, ndjson(Array.from({ length: 10_000 }, (_, k) => doc(i + k))));
    expect(r.body.errors).toBe(false);
  }
  ui = await startUi({
    logstoreAddrs: [store.grpcAddr],
    clients: { logstore_avg_doc_size: 600, logstore_timeout: '20s' },
    limits: { max_export_limit: N, max_parallel_export_requests: 1 },
    // A heap smaller than the export: holding it (as strings, twice its size) would end the process.
    nodeArgs: ['--max-old-space-size=64'],
  });
}, 180_000);

afterAll(async () => {
  await ui?.cleanup();
  await store?.cleanup();
});

function startExport(body: unknown): Promise<Response> {
  return fetch(`${ui.url}/api/v1/export`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}

/** Reads a streamed body line by line without keeping it; `pauseAfter` bytes in, stops reading for a while. */
async function readLines(
  res: Response,
  sep: string,
  onLine: (line: string) => void,
  pauseAfter = 0,
  pause = async () => {},
): Promise<number> {
  const reader = res.body!.getReader();
  const dec = new TextDecoder();
  let rest = '';
  let bytes = 0;
  let paused = false;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    bytes += value.length;
    rest += dec.decode(value, { stream: true });
    let i;
    while ((i = rest.indexOf(sep)) >= 0) {
      onLine(rest.slice(0, i));
      rest = rest.slice(i + sep.length);
    }
    if (pauseAfter && !paused && bytes >= pauseAfter) {
      paused = true;
      await pause();
    }
  }
  expect(rest).toBe('');
  return bytes;
}

describe('export of 100 000 documents', () => {
  it('JSON lines: every document once, newest first, with bounded memory; a parallel export meanwhile is a 429', async () => {
    // A first, smaller export warms the process up (code, gRPC and socket buffers): the measure is what a big one adds.
    const warm = await startExport({ query: '*', format: 'jsonl', limit: 20_000 });
    await readLines(warm, '\n', () => {});
    const rssBefore = ui.rss();
    const res = await startExport({ query: '*', format: 'jsonl' });
    expect(res.status).toBe(200);
    let count = 0;
    let prevN = Infinity;
    let ordered = true;
    const bytes = await readLines(
      res,
      '\n',
      (line) => {
        const e = JSON.parse(line) as { id: string; time: string; data: { n: number; msg: string } };
        if (e.data.n >= prevN) ordered = false;
        prevN = e.data.n;
        count++;
      },
      1 << 20,
      async () => {
        // While this export is held by a slow reader: the second one is refused, naming the limit.
        const second = await startExport({ query: '*', format: 'jsonl', limit: 10 });
        expect(second.status).toBe(429);
        expect((await second.json()).error).toMatchObject({
          code: 'too_many_requests',
          limit: 'max_parallel_export_requests',
          value: 1,
        });
        await new Promise((r) => setTimeout(r, 500));
      },
    );
    expect(count).toBe(N);
    expect(ordered).toBe(true);
    expect(prevN).toBe(0);
    const grown = ui.peakRss() - rssBefore;
    process.stdout.write(
      `export jsonl: ${(bytes / 1e6).toFixed(1)} MB sent; UI backend RSS before ${(rssBefore / 1e6).toFixed(0)} MB, peak growth ${(grown / 1e6).toFixed(1)} MB\n`,
    );
    // Holding the export would cost more than its size; streaming costs a small, fixed amount.
    expect(grown).toBeLessThan(bytes / 2);
    // The slot is free again.
    const third = await startExport({ query: 'n:5', format: 'jsonl' });
    expect(third.status).toBe(200);
    expect((await third.text()).trim().split('\n').length).toBe(1);
  }, 120_000);

  it('CSV: a header and one row per document, cells quoted as RFC 4180 says', async () => {
    const rssBefore = ui.rss();
    const res = await startExport({ query: '*', format: 'csv', fields: ['n', 'service', 'msg'] });
    expect(res.status).toBe(200);
    let rows = 0;
    let header = '';
    let sample = '';
    const bytes = await readLines(res, '\r\n', (line) => {
      if (!header) header = line;
      else {
        rows++;
        if (line.startsWith('777,')) sample = line;
      }
    });
    expect(header).toBe('n,service,msg');
    expect(rows).toBe(N);
    expect(sample).toBe(`777,svc-0,"line 777 ""quoted"", comma ${PAD}"`);
    process.stdout.write(
      `export csv: ${(bytes / 1e6).toFixed(1)} MB sent; UI backend RSS before ${(rssBefore / 1e6).toFixed(0)} MB, peak since start ${(ui.peakRss() / 1e6).toFixed(0)} MB\n`,
    );
    expect(ui.peakRss()).toBeLessThan(rssBefore + bytes / 2);
    expect(ui.child.exitCode).toBe(null);
  }, 120_000);
});
