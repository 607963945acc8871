// The cost of the client-id existence check, isolated: one shard thread ingests the same http_logs-shaped
// batches with client ids, alternately through the real Shard and through one whose check answers "absent"
// at once (everything else identical: the stored _id, the id table, the seal). CPU-time medians to
// bench/results/logstore-id-check.md. Usage: node dist/bench/logstore-id-check.js [--docs 600000] [--runs 9]
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { parseMapping } from '../src/logstore/mapping.js';
import { Shard } from '../src/logstore/storage/shard.js';
import { mulberry32 } from '../test/helpers/prng.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const arg = (name: string, dflt: number) =>
  process.argv.includes(`--${name}`) ? Number(process.argv[process.argv.indexOf(`--${name}`) + 1]) : dflt;
const DOCS = arg('docs', 600_000);
const RUNS = arg('runs', 9);
const BATCH = 2500;
const mapping = parseMapping(
  '- {name: clientip, type: keyword}\n- {name: request, type: text}\n- {name: status, type: keyword}\n- {name: size, type: keyword}\n- {name: service, type: keyword}\n',
);

class NoCheckShard extends Shard {
  override hasClientId(): boolean {
    return false;
  }
}

interface Batch {
  buf: Buffer;
  offs: Int32Array;
  ids: string[];
}

function batches(): Batch[] {
  const r = mulberry32(1);
  const out: Batch[] = [];
  const start = Date.parse('2026-11-20T00:00:00Z');
  for (let i = 0; i < DOCS; i += BATCH) {
    const docs: string[] = [];
    const ids: string[] = [];
    for (let k = i; k < Math.min(DOCS, i + BATCH); k++) {
      const t = new Date(start + k * 50).toISOString();
      docs.push(
        `{"timestamp":"${t}","clientip":"${(r() * 223) | 0}.${(r() * 255) | 0}.${(r() * 255) | 0}.${(r() * 40) | 0}","request":"GET /images/logo_${(r() * 300) | 0}.gif HTTP/1.0","status":${r() < 0.9 ? 200 : 404},"size":${(r() * 50_000) | 0},"service":"www"}`,
      );
      ids.push(
        `${((r() * 2 ** 32) >>> 0).toString(16).padStart(8, '0')}-${k.toString(16).padStart(8, '0')}-${((r() * 2 ** 32) >>> 0).toString(16).padStart(8, '0')}`,
      );
    }
    const buf = Buffer.from(docs.join(''));
    const offs = new Int32Array(docs.length * 2);
    let p = 0;
    docs.forEach((d, j) => {
      offs[2 * j] = p;
      offs[2 * j + 1] = Buffer.byteLength(d);
      p += Buffer.byteLength(d);
    });
    out.push({ buf, offs, ids });
  }
  return out;
}

/** CPU milliseconds (user + system: fsync waits left out, they are the noisiest part here) to ingest every batch into a fresh shard. */
function run(make: (dir: string) => Shard, data: Batch[]): number {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tidepool-idcheck-'));
  const shard = make(dir);
  const create = new Uint8Array(BATCH);
  const t = process.cpuUsage();
  for (const b of data) {
    const res = shard.ingest(Buffer.from(b.buf), b.offs, Date.now(), undefined, {
      ids: b.ids,
      create: create.subarray(0, b.ids.length),
    });
    if (res.errors.length) throw new Error(`ingest failed: ${res.errors[0]![2]}`);
  }
  const used = process.cpuUsage(t);
  const ms = (used.user + used.system) / 1000;
  shard.close(false);
  rmSync(dir, { recursive: true, force: true });
  return ms;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[s.length >> 1]!;
}

const data = batches();
const opts = (dir: string) => ({ dir, shard: 0, mapping, fracSize: 64 * 1024 ** 2, totalSize: 0, retention: 0 });
const log = pino({ level: 'silent' });
const withCheck: number[] = [];
const without: number[] = [];
const load0 = os.loadavg()[0]!;
for (let i = 0; i < RUNS + 1; i++) {
  // Alternating which goes first (ABBA), so that neither always pays for the other's garbage.
  const withFn = () => run((dir) => new Shard(opts(dir), log), data);
  const withoutFn = () => run((dir) => new NoCheckShard(opts(dir), log), data);
  let a: number;
  let b: number;
  if (i % 2 === 0) {
    a = withFn();
    b = withoutFn();
  } else {
    b = withoutFn();
    a = withFn();
  }
  // The first pair warms the JIT up.
  if (i > 0) {
    withCheck.push(a);
    without.push(b);
  }
  process.stderr.write(`run ${i}: with check ${a.toFixed(0)} ms, without ${b.toFixed(0)} ms\n`);
}
const mw = median(withCheck);
const mo = median(without);
const lines = [
  "# Client-id existence check: its share of one shard thread's ingest time",
  '',
  `${DOCS} http_logs-shaped documents, each with a client \`_id\`, in batches of ${BATCH}, into one shard (64 MiB fractions,`,
  'so several are sealed and checked); the same batches alternately through the real Shard and through one whose',
  `hasClientId() answers false at once. CPU time of the process (fsync waits left out); ${RUNS} runs each after a`,
  `warm-up pair, which goes first alternating; medians. Load average at start ${load0.toFixed(1)} on`,
  `${os.availableParallelism()} CPUs shared with other work.`,
  '',
  '| Shard | CPU ms (median) | documents per CPU-second | Ratio |',
  '|---|---:|---:|---:|',
  `| without the check | ${mo.toFixed(0)} | ${Math.round(DOCS / (mo / 1000))} | 1.00 |`,
  `| with the check | ${mw.toFixed(0)} | ${Math.round(DOCS / (mw / 1000))} | ${(mw / mo).toFixed(3)} |`,
  '',
  `All runs (ms), with / without: ${withCheck.map((x) => x.toFixed(0)).join(', ')} / ${without.map((x) => x.toFixed(0)).join(', ')}.`,
  '',
];
writeFileSync(path.join(ROOT, 'bench', 'results', 'logstore-id-check.md'), lines.join('\n'));
process.stdout.write(lines.join('\n'));
