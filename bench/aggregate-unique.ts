// unique over a sealed fraction of the bench's http_logs documents: this build's aggregation beside another
// checkout's (its dist/), on the same fraction in one process, alternating; answers checked equal. Usage:
//   node --expose-gc dist/bench/aggregate-unique.js --base /path/to/other/checkout [--docs 200000] [--runs 9]
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import pino from 'pino';
import { mulberry32 } from '../test/helpers/prng.js';
import * as here from '../src/logstore/aggregate/aggregate.js';
import { parseMapping } from '../src/logstore/mapping.js';
import { SealedFraction } from '../src/logstore/storage/sealed-fraction.js';
import { Shard } from '../src/logstore/storage/shard.js';
import { httpLogsDoc } from './http-logs.js';
import { writeResults } from './results-file.js';

if (process.argv.includes('--help')) {
  process.stdout.write(
    'usage: node dist/bench/aggregate-unique.js --base CHECKOUT [--docs N (200000)] [--runs R (9)] [--out FILE]\n',
  );
  process.exit(0);
}
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const arg = (name: string, dflt: string) =>
  process.argv.includes(`--${name}`) ? process.argv[process.argv.indexOf(`--${name}`) + 1]! : dflt;
const BASE = path.resolve(arg('base', ROOT));
const DOCS = Number(arg('docs', '200000'));
const RUNS = Number(arg('runs', '9'));
const OUT = arg('out', 'bench/results/aggregate-unique.md');
const MAPPING =
  '- {name: clientip, type: keyword}\n- {name: request, type: text}\n- {name: status, type: keyword}\n- {name: size, type: keyword}\n- {name: service, type: keyword}\n';
const SPECS: here.AggSpec[] = [
  { field: 'clientip', func: 'unique' },
  { field: 'clientip', func: 'unique', group_by: 'status' },
  { field: 'service', func: 'unique', interval: 3_600_000 },
  { field: 'status', func: 'unique', group_by: 'service', interval: 600_000 },
];

/** With node --expose-gc: a collection before each timed run, so neither build pays for the other's garbage. */
const gc = (globalThis as { gc?: () => void }).gc;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;

async function main(): Promise<void> {
  const base = (await import(
    pathToFileURL(path.join(BASE, 'dist', 'src', 'logstore', 'aggregate', 'aggregate.js')).href
  )) as typeof here;
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tidepool-unique-bench-'));
  try {
    const shard = new Shard(
      { dir, shard: 0, mapping: parseMapping(MAPPING), fracSize: 1 << 30, totalSize: 0, retention: 0 },
      pino({ level: 'silent' }),
    );
    const r = mulberry32(1);
    for (let at = 0; at < DOCS; at += 5000) {
      const lines: Buffer[] = [];
      for (let i = at; i < Math.min(DOCS, at + 5000); i++) lines.push(Buffer.from(httpLogsDoc(i, DOCS, r)));
      const offs = new Int32Array(lines.length * 2);
      let p = 0;
      lines.forEach((l, k) => {
        offs[2 * k] = p;
        offs[2 * k + 1] = l.length;
        p += l.length;
      });
      shard.ingest(Buffer.concat(lines), offs, Date.now());
    }
    shard.seal();
    shard.close(false);
    const frac = readdirSync(dir).find((e) => e.startsWith('frac-') && statSync(path.join(dir, e)).isDirectory())!;
    const sf = new SealedFraction(path.join(dir, frac));
    const all = Uint32Array.from({ length: sf.docCount }, (_, i) => i);
    const load0 = os.loadavg()[0]!;
    const rows: string[] = [];
    for (const spec of SPECS) {
      const t: Record<'base' | 'this', number[]> = { base: [], this: [] };
      const answers: Record<string, string> = {};
      for (let k = 0; k < RUNS; k++) {
        const order: ['base' | 'this', typeof here][] = [
          ['base', base],
          ['this', here],
        ];
        if (k % 2) order.reverse();
        for (const [name, m] of order) {
          const into = m.emptyPartial();
          gc?.();
          const s = process.cpuUsage();
          m.aggregateFraction(sf, all, spec, into);
          const used = process.cpuUsage(s);
          t[name].push((used.user + used.system) / 1000);
          answers[name] = JSON.stringify(m.finalizeAgg(spec, into));
        }
      }
      if (answers.base !== answers.this) throw new Error(`answers differ: ${JSON.stringify(spec)}`);
      const b = median(t.base.slice(1));
      const h = median(t.this.slice(1));
      rows.push(`| \`${JSON.stringify(spec)}\` | ${b.toFixed(1)} | ${h.toFixed(1)} | ${(b / h).toFixed(1)}x |`);
      process.stderr.write(`${rows[rows.length - 1]}\n`);
    }
    sf.close();
    const report = [
      '# unique over columns',
      '',
      `\`node --expose-gc dist/bench/aggregate-unique.js --base ${BASE} --docs ${DOCS} --runs ${RUNS}\`: one sealed fraction of ${DOCS} http_logs documents, every document matched; CPU ms per aggregation (waits for a CPU left out; a garbage collection before each${gc ? '' : ', not this run: no --expose-gc'}), medians of runs 2..${RUNS}, the two builds alternating in one process; load average ${load0.toFixed(1)} -> ${os.loadavg()[0]!.toFixed(1)} (2 CPUs, shared).`,
      '',
      '| Aggregation | base, CPU ms | this build, CPU ms | base / this |',
      '|---|---:|---:|---:|',
      ...rows,
      '',
    ].join('\n');
    writeResults(OUT, report);
    process.stdout.write(report);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
