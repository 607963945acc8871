// The README's log-store examples, as printed, against the records a real pooler ships: the `curl .../search` bodies
// (README.md) and the explorer's example queries (docs/explorer.md) each find what the test computes from every
// shipped record.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWebListener, type WebListener } from '../../../src/pooler/web/server.js';
import { ROOT, postJson, startLogstore, type LogstoreProcess } from '../../helpers/logstore.js';
import { appPoolToml, startTestPooler, type TestPooler } from '../../helpers/pooler.js';
import { startTestPostgres, type TestPostgres } from '../../helpers/postgres.js';

type Rec = Record<string, unknown>;
const s = (v: unknown) => (typeof v === 'string' ? v : '');
const contains = (d: Rec, word: string) =>
  Object.values(d).some(
    (v) => (typeof v === 'string' || typeof v === 'number') && String(v).toLowerCase().includes(word),
  );

/** What each query printed in the README must find, over every shipped record. A README query not listed here fails. */
const EXPECTED: Record<string, (d: Rec) => boolean> = {
  'target:pooler*': (d) => s(d.target).startsWith('pooler'),
  RELOAD: (d) => contains(d, 'reload'),
  '"log shipping on"': (d) => contains(d, 'log shipping on'),
  'target:pooler::web::access and status:[400, 499]': (d) =>
    d.target === 'pooler::web::access' && typeof d.status === 'number' && d.status >= 400 && d.status <= 499,
  'not target:pooler::web::access': (d) => d.target !== 'pooler::web::access',
};

/** The `curl ... /search -d '<body>'` bodies and the explorer's **Examples** queries, in README.md and docs/explorer.md. */
function readmeExamples(): { query: string; body: Rec }[] {
  const readme = ['README.md', 'docs/explorer.md'].map((f) => readFileSync(path.join(ROOT, f), 'utf8')).join('\n');
  const out: { query: string; body: Rec }[] = [];
  for (const m of readme.matchAll(/curl -s localhost:9002\/search -d '([^']+)'/g)) {
    const body = JSON.parse(m[1]!) as { query: { query: string } } & Rec;
    out.push({ query: body.query.query, body });
  }
  const bullet = /^- \*\*Examples\*\*([\s\S]*?)\n(?=- \*\*)/m.exec(readme);
  if (!bullet) throw new Error('README.md, docs/explorer.md: no "- **Examples**" bullet');
  for (const m of bullet[1]!.matchAll(/`([^`]+)`/g)) {
    if (m[1] === 'npm start') continue;
    out.push({
      query: m[1]!,
      body: { query: { query: m[1]!, from: '2020-01-01T00:00:00Z', to: '2100-01-01T00:00:00Z' } },
    });
  }
  return out;
}

let db: TestPostgres;
let store: LogstoreProcess;
let tp: TestPooler;
let web: WebListener;
let shipped: Rec[];

beforeAll(async () => {
  db = await startTestPostgres();
  store = await startLogstore(); // auto mapping, as `npm start` runs it
  const toml = (level: string) => `
[general]
host = "127.0.0.1"
port = 0
admin_password = "readme-admin-pw"
log_level = "${level}"
[logs]
ship_to = "${store.url}"
ship_flush_interval = "100ms"
${appPoolToml(db)}`;
  tp = await startTestPooler(toml('info')); // npm start's level
  web = await startWebListener(tp.pooler, { host: '127.0.0.1', port: 0 });
  const base = `http://127.0.0.1:${web.port}`;
  const client = new pg.Client({
    host: '127.0.0.1',
    port: tp.port,
    user: 'md5user',
    password: 'md5pass',
    database: 'app',
  });
  await client.connect();
  await client.query('SELECT 1');
  await client.end();
  await fetch(`${base}/api/no-such-thing`);
  tp.writeConfig(toml('info'));
  await tp.pooler.reload();
  // The last record: once it is in the store, every record before it is (one queue, sent in order).
  const marker = `/api/readme-marker-${process.pid}`;
  await fetch(`${base}${marker}`);
  const deadline = Date.now() + 30_000;
  for (;;) {
    const r = await postJson<{ total: number }>(`${store.url}/search`, {
      query: { query: `path:"${marker}"` },
      size: 0,
    });
    if (r.body.total > 0) break;
    if (Date.now() > deadline) throw new Error('the marker record never reached the log store');
    await new Promise((res) => setTimeout(res, 100));
  }
  const all = await postJson<{ docs: { data: Rec }[] }>(`${store.url}/search`, { query: { query: '*' }, size: 10_000 });
  shipped = all.body.docs.map((d) => d.data);
}, 120_000);

afterAll(async () => {
  await web?.close();
  await tp?.stop();
  await store?.cleanup();
  await db?.cleanup();
});

describe("the README's log examples", () => {
  it('cover targets other than plain `pooler`, reloads and a web 4xx (what the examples are about)', () => {
    expect(shipped.filter((d) => d.target === 'pooler').length).toBeLessThan(shipped.length / 2);
    expect(shipped.some((d) => contains(d, 'reload'))).toBe(true);
    expect(shipped.some((d) => d.target === 'pooler::web::access' && d.status === 404)).toBe(true);
  });

  for (const { query, body } of readmeExamples()) {
    it(`${query} finds what it says`, async () => {
      const pred = EXPECTED[query];
      if (!pred) throw new Error(`README example ${JSON.stringify(query)} has no expectation in this test`);
      const r = await postJson<{ total: number; docs: { data: Rec }[] }>(`${store.url}/search`, {
        ...body,
        size: 10_000,
      });
      expect(r.status).toBe(200);
      const want = shipped.filter(pred);
      expect(r.body.total, query).toBe(want.length);
      expect(want.length, query).toBeGreaterThan(0);
    });
  }
});
