// Fetch by id in an active fraction, isolated: a fraction filled the way a store fills it (a proxy's batches, whose
// id counters jump between batches), then ids looked up through the fraction's run index and through the lookup
// it replaced (a guess from the first counter, else a scan of every document), alternating, CPU-time medians to
// bench/results/logstore-fetch.md. Usage: node dist/bench/logstore-fetch.js [--docs 200000] [--runs 7]
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { idCounter } from '../src/logstore/doc-time.js';
import { parseMapping } from '../src/logstore/mapping.js';
import { ActiveFraction } from '../src/logstore/storage/active-fraction.js';
import { OWN_SHARD } from '../src/logstore/doc-time.js';
import { mulberry32 } from '../test/helpers/prng.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const arg = (name: string, dflt: number) =>
  process.argv.includes(`--${name}`) ? Number(process.argv[process.argv.indexOf(`--${name}`) + 1]) : dflt;
const DOCS = arg('docs', 200_000);
const RUNS = arg('runs', 7);
const BATCH = 500;
const LOOKUPS = 200;

/** The lookup before the run index: the position the first counter gives, else every document's id compared. */
function scanFind(frac: ActiveFraction, id: string): number {
  if (frac.docCount === 0 || id.length !== 24) return -1;
  const local = (idCounter(id) - (frac.counter(0) % 2 ** 40) + 2 ** 40) % 2 ** 40;
  if (local < frac.docCount && frac.id(local) === id) return local;
  for (let i = 0; i < frac.docCount; i++) if (frac.id(i) === id) return i;
  return -1;
}

function build(): ActiveFraction {
  const frac = new ActiveFraction('frac-bench', parseMapping('- {name: level, type: keyword}\n'), '00');
  const r = mulberry32(7);
  const start = Date.parse('2026-11-20T00:00:00Z');
  let counter = 1_000_000;
  for (let i = 0; i < DOCS; i += BATCH) {
    // A proxy's counter moves past each batch it sends, to any of its shards: this store sees gaps.
    counter += BATCH + 1 + ((r() * 3) | 0) * (BATCH + 1);
    for (let k = 0; k < BATCH && i + k < DOCS; k++) {
      const bytes = Buffer.from(`{"level":"info","n":${i + k}}`);
      frac.add(
        { level: 'info', n: i + k },
        bytes,
        0,
        bytes.length,
        start + (i + k) * 5,
        OWN_SHARD + 2 * 2 ** 40 + counter + k,
      );
    }
  }
  return frac;
}

function cpuMs(fn: () => void): number {
  const t = process.cpuUsage();
  fn();
  const d = process.cpuUsage(t);
  return (d.user + d.system) / 1000;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;

const frac = build();
const r = mulberry32(11);
const present = Array.from({ length: LOOKUPS }, () => frac.id((r() * frac.docCount) | 0));
const absent = present.map((id) => id.slice(0, 14) + 'ffffffffff');
const rows: string[] = [];
for (const [label, ids] of [
  ['present', present],
  ['absent', absent],
] as const) {
  const runs = { index: [] as number[], scan: [] as number[] };
  for (let k = 0; k < RUNS; k++) {
    let a = 0;
    let b = 0;
    runs.index.push(
      cpuMs(() => {
        for (const id of ids) a += frac.find(id);
      }),
    );
    runs.scan.push(
      cpuMs(() => {
        for (const id of ids) b += scanFind(frac, id);
      }),
    );
    if (a !== b) throw new Error(`the two lookups disagree (${a} vs ${b})`);
  }
  const us = (xs: number[]) => (median(xs) * 1000) / ids.length;
  rows.push(
    `| ${label} | ${us(runs.index).toFixed(2)} | ${us(runs.scan).toFixed(1)} | ${(us(runs.scan) / us(runs.index)).toFixed(0)}x |`,
  );
}
const table = [
  `Fetch by id in one active fraction of ${DOCS} documents in proxy batches of ${BATCH} (${RUNS} alternating runs of ${LOOKUPS} lookups, CPU microseconds per id, medians)`,
  '',
  '| ids | run index | first-counter guess + scan | ratio |',
  '|---|---|---|---|',
  ...rows,
].join('\n');
process.stdout.write(`${table}\n`);
writeFileSync(
  path.join(ROOT, 'bench', 'results', 'logstore-fetch.md'),
  `# Fetch by id in an active fraction\n\n${table}\n`,
);
