// One shard thread's ingest cost, isolated from HTTP: the http_logs-shaped batches of bench/logstore.ts (as the bulk
// parser hands them over) into a fresh Shard until sealed, CPU time of the process; this build against another
// checkout's build, each run in a fresh process, alternating. Usage:
//   node dist/bench/logstore-shard-ingest.js --base /path/to/other/checkout [--docs 500000] [--runs 7]
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { mulberry32 } from '../test/helpers/prng.js';
import { httpLogsDoc } from './http-logs.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const arg = (name: string, dflt: string) =>
  process.argv.includes(`--${name}`) ? process.argv[process.argv.indexOf(`--${name}`) + 1]! : dflt;
const DOCS = Number(arg('docs', '500000'));
const RUNS = Number(arg('runs', '7'));
const BATCH_BYTES = 1024 * 1024;
const MAPPING =
  '- {name: clientip, type: keyword}\n- {name: request, type: text}\n- {name: status, type: keyword}\n- {name: size, type: keyword}\n- {name: service, type: keyword}\n';

/** The document of bench/logstore.ts (the same generator). */
const makeDoc = (i: number, r: () => number): string => httpLogsDoc(i, DOCS, r);

/** Batches as the bulk parser makes them: documents with their action lines between them, 1 MiB each. */
function batches(): { buf: Buffer; offs: Int32Array }[] {
  const r = mulberry32(1);
  const out: { buf: Buffer; offs: Int32Array }[] = [];
  let parts: string[] = [];
  let offs: number[] = [];
  let used = 0;
  const close = () => {
    out.push({ buf: Buffer.from(parts.join('')), offs: Int32Array.from(offs) });
    parts = [];
    offs = [];
    used = 0;
  };
  for (let i = 0; i < DOCS; i++) {
    const d = makeDoc(i, r);
    const len = Buffer.byteLength(d);
    if (used + len + 14 > BATCH_BYTES) close();
    offs.push(used, len);
    parts.push(d, '\n{"index":{}}\n');
    used += len + 14;
  }
  if (parts.length) close();
  return out;
}

/** In a child: ingests every batch into a fresh shard of the checkout at `root`; prints CPU ms. */
async function child(root: string): Promise<void> {
  const { Shard } = (await import(
    pathToFileURL(path.join(root, 'dist', 'src', 'logstore', 'storage', 'shard.js')).href
  )) as typeof import('../src/logstore/storage/shard.js');
  const { parseMapping } = (await import(
    pathToFileURL(path.join(root, 'dist', 'src', 'logstore', 'mapping.js')).href
  )) as typeof import('../src/logstore/mapping.js');
  const { default: pino } = await import('pino');
  const data = batches();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tidepool-shard-ingest-'));
  const shard = new Shard(
    { dir, shard: 0, mapping: parseMapping(MAPPING), fracSize: 128 * 1024 ** 2, totalSize: 0, retention: 0 },
    pino({ level: 'silent' }),
  );
  const t = process.cpuUsage();
  for (const b of data) {
    const res = shard.ingest(b.buf, b.offs, Date.now());
    if (res.errors.length) throw new Error(`ingest failed: ${res.errors[0]![2]}`);
  }
  shard.seal();
  const used = process.cpuUsage(t);
  shard.close(false);
  rmSync(dir, { recursive: true, force: true });
  process.stdout.write(`${(used.user + used.system) / 1000}\n`);
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[s.length >> 1]!;
}

async function main(): Promise<void> {
  if (process.argv.includes('--child')) return child(arg('child', ROOT));
  const base = path.resolve(arg('base', ROOT));
  const me = fileURLToPath(import.meta.url);
  const once = (root: string) =>
    Number(execFileSync(process.execPath, [me, '--child', root, '--docs', String(DOCS)], { encoding: 'utf8' }).trim());
  const xs: Record<'base' | 'this', number[]> = { base: [], this: [] };
  const load0 = os.loadavg()[0]!;
  for (let i = 0; i < RUNS; i++) {
    const order: ('base' | 'this')[] = i % 2 ? ['this', 'base'] : ['base', 'this'];
    for (const w of order) xs[w].push(once(w === 'base' ? base : ROOT));
    process.stderr.write(`run ${i}: base ${xs.base[i]!.toFixed(0)} ms, this ${xs.this[i]!.toFixed(0)} ms\n`);
  }
  const mb = median(xs.base);
  const mt = median(xs.this);
  process.stdout.write(
    [
      `${DOCS} documents into one shard (1 MiB batches, sealed at the end), CPU ms of the process, medians of ${RUNS}, alternating; load ${load0.toFixed(1)} -> ${os.loadavg()[0]!.toFixed(1)}`,
      '',
      '| Build | CPU ms (median) | documents per CPU-second | Ratio |',
      '|---|---:|---:|---:|',
      `| ${base} | ${mb.toFixed(0)} | ${Math.round(DOCS / (mb / 1000))} | 1.00 |`,
      `| this build | ${mt.toFixed(0)} | ${Math.round(DOCS / (mt / 1000))} | ${(mt / mb).toFixed(3)} |`,
      '',
      `Runs (ms), base / this: ${xs.base.map((x) => x.toFixed(0)).join(', ')} / ${xs.this.map((x) => x.toFixed(0)).join(', ')}`,
      '',
    ].join('\n'),
  );
}

main().catch((err: Error) => {
  process.stderr.write(`${err.stack ?? err.message}\n`);
  process.exitCode = 1;
});
