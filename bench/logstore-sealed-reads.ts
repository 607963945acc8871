// CPU of reading documents from a sealed fraction of the bench's http_logs documents, as fetch, export and context
// read them: 5 000 consecutive documents and the newest 100, on a fraction opened afresh (its dictionary and keyword
// columns not read yet, as after a restart) and on one that has read them (no document block cached either way);
// and the seal's CPU. `--tidepool <checkout>` runs another build's compiled reader and seal (its dist/) on the same
// documents, to compare formats side by side. Every document read is compared with its ingested bytes.
// Run: node dist/bench/logstore-sealed-reads.js [--docs 200000] [--rounds 21] [--tidepool <checkout>]
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { mulberry32 } from '../test/helpers/prng.js';
import { httpLogsDoc } from './http-logs.js';

const arg = (name: string, dflt: string) =>
  process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1]! : dflt;
if (process.argv.includes('--help')) {
  console.log('node dist/bench/logstore-sealed-reads.js [--docs 200000] [--rounds 21] [--tidepool <checkout>]');
  process.exit(0);
}
const DOCS = Number(arg('--docs', '200000'));
const ROUNDS = Number(arg('--rounds', '21'));
const ROOT = process.argv.includes('--tidepool')
  ? path.resolve(arg('--tidepool', '.'), 'dist')
  : path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const MAPPING =
  'mapping-list:\n  - {name: clientip, type: keyword}\n  - {name: request, type: text}\n  - {name: status, type: keyword}\n  - {name: size, type: keyword}\n  - {name: service, type: keyword}\n';

interface Ref {
  buf: Uint8Array;
  start: number;
  end: number;
}
interface Sealed {
  docCount: number;
  meta: { format: number };
  docRef(local: number): Ref;
  close(): void;
}
const { parseMapping } = (await import(path.join(ROOT, 'src/logstore/mapping.js'))) as {
  parseMapping: (y: string) => unknown;
};
const { ActiveFraction } = (await import(path.join(ROOT, 'src/logstore/storage/active-fraction.js'))) as {
  ActiveFraction: new (
    name: string,
    mapping: unknown,
    shard: string,
  ) => { add(d: unknown, b: Buffer, s: number, e: number, t: number, c: number): void };
};
const { sealFraction } = (await import(path.join(ROOT, 'src/logstore/storage/seal.js'))) as {
  sealFraction: (f: unknown, dir: string) => void;
};
const { SealedFraction } = (await import(path.join(ROOT, 'src/logstore/storage/sealed-fraction.js'))) as {
  SealedFraction: new (dir: string) => Sealed;
};

const r = mulberry32(1);
const docs: Buffer[] = [];
const times: number[] = [];
let raw = 0;
for (let i = 0; i < DOCS; i++) {
  const d = Buffer.from(httpLogsDoc(i, DOCS, r));
  docs.push(d);
  times.push(Date.parse((JSON.parse(d.toString()) as { timestamp: string }).timestamp));
  raw += d.length + 1;
}
const frac = new ActiveFraction('frac-0000000001', parseMapping(MAPPING), '00');
for (let i = 0; i < DOCS; i++)
  frac.add(JSON.parse(docs[i]!.toString()), docs[i]!, 0, docs[i]!.length, times[i]!, i + 1);
const dir = mkdtempSync(path.join(os.tmpdir(), 'tidepool-reads-'));
const fdir = path.join(dir, 'f');
const cpu = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
const s0 = cpu();
sealFraction(frac, fdir);
const sealMs = cpu() - s0;
let disk = 0;
for (const f of readdirSync(fdir)) disk += statSync(path.join(fdir, f)).size;

/** Documents come back in time order, as the generator made them (times increase), so local id i is document i. */
function read(sf: Sealed, from: number, to: number): number {
  const t0 = cpu();
  let bad = 0;
  for (let i = from; i < to; i++) {
    const d = sf.docRef(i);
    if (Buffer.compare(d.buf.subarray(d.start, d.end), docs[i]!) !== 0) bad++;
  }
  const ms = cpu() - t0;
  if (bad) throw new Error(`${bad} documents differ`);
  return ms;
}

const median = (a: number[]) => [...a].sort((x, y) => x - y)[a.length >> 1]!;
const rows: Record<string, number[]> = {
  'range 5 000, fresh fraction': [],
  'range 5 000, warm fraction': [],
  'newest 100, fresh fraction': [],
  'newest 100, warm fraction': [],
};
const rr = mulberry32(2);
for (let k = 0; k < ROUNDS; k++) {
  const from = Math.floor(rr() * (DOCS - 20_000));
  let sf = new SealedFraction(fdir);
  rows['range 5 000, fresh fraction']!.push(read(sf, from, from + 5000));
  // Another range on the same fraction: its dictionary and columns are read, its blocks not.
  rows['range 5 000, warm fraction']!.push(read(sf, from + 10_000, from + 15_000));
  sf.close();
  sf = new SealedFraction(fdir);
  rows['newest 100, fresh fraction']!.push(read(sf, DOCS - 100, DOCS));
  read(sf, from, from + 1);
  const sf2 = sf;
  // The newest block again, not cached: a fraction whose columns are read (the range above) and blocks dropped.
  (sf2 as unknown as { blockCache: Map<number, unknown>; last: unknown }).blockCache.clear();
  (sf2 as unknown as { last: unknown }).last = null;
  rows['newest 100, warm fraction']!.push(read(sf2, DOCS - 100, DOCS));
  sf.close();
}
const format = new SealedFraction(fdir).meta.format;
console.log(
  `format ${format} (${ROOT}), ${DOCS} documents: seal ${sealMs.toFixed(0)} ms CPU, disk ${(disk / DOCS).toFixed(2)} bytes a document (${(disk / raw).toFixed(3)}x of raw); reads, ms of CPU, median of ${ROUNDS}:`,
);
for (const [k, v] of Object.entries(rows)) console.log(`  ${k}: ${median(v).toFixed(3)}`);
rmSync(dir, { recursive: true, force: true });
