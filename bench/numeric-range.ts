// Numeric range filters over sealed fractions, each way side by side in one run: the pass over the dictionary of
// before (every token tested, the accepted lists read), the posting lists found by the tokens' numbers, the numeric column
// (block bounds skip or take whole blocks, the rest decoded), and the store's own choice. The bench's http_logs
// documents (bench/http-logs.ts) into one shard, sealed; the query evaluated over every fraction. Usage:
//   node --expose-gc dist/bench/numeric-range.js [--docs 1000000] [--rounds 15] [--out bench/results/numeric-range.md]
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { mulberry32 } from '../test/helpers/prng.js';
import { parseMapping } from '../src/logstore/mapping.js';
import { parseQuery } from '../src/logstore/query/parser.js';
import { planQuery } from '../src/logstore/query/plan.js';
import { evaluate } from '../src/logstore/search/evaluate.js';
import type { FractionView } from '../src/logstore/storage/fraction-view.js';
import { NUMERIC_RANGE, SealedFraction } from '../src/logstore/storage/sealed-fraction.js';
import { Shard } from '../src/logstore/storage/shard.js';
import { HTTP_LOGS_SPAN_MS, HTTP_LOGS_START, httpLogsDoc } from './http-logs.js';
import { writeResults } from './results-file.js';

if (process.argv.includes('--help')) {
  process.stdout.write(
    'usage: node dist/bench/numeric-range.js [--docs N (1000000)] [--rounds R (15)] [--out FILE (bench/results/numeric-range.md)]\n',
  );
  process.exit(0);
}
const arg = (name: string, dflt: string) =>
  process.argv.includes(`--${name}`) ? process.argv[process.argv.indexOf(`--${name}`) + 1]! : dflt;
const DOCS = Number(arg('docs', '1000000'));
const ROUNDS = Number(arg('rounds', '15'));
const OUT = arg('out', 'bench/results/numeric-range.md');
const MAPPING =
  '- {name: clientip, type: keyword}\n- {name: request, type: text}\n- {name: status, type: keyword}\n- {name: size, type: keyword}\n- {name: service, type: keyword}\n';
const mapping = parseMapping(MAPPING);

const LAST_HOUR = HTTP_LOGS_START + HTTP_LOGS_SPAN_MS - 3_600_000;
const QUERIES: [query: string, from: number][] = [
  ['size:[1000, 2000]', -Infinity],
  ['size:[0, 100)', -Infinity],
  ['size:[40000, *]', -Infinity],
  ['size:[0, *]', -Infinity],
  ['size:[1000, 2000] and service:api', -Infinity],
  ['size:[1000, 2000]', LAST_HOUR],
  ['status:[500, 599]', -Infinity],
  ['status:[400, 499]', -Infinity],
  ['status:[200, 299]', -Infinity],
];
const MODES = ['before', 'dictionary', 'column', 'auto'] as const;
type Mode = (typeof MODES)[number];

function ingest(dir: string): void {
  const shard = new Shard(
    { dir, shard: 0, mapping, fracSize: 128 * 1024 ** 2, totalSize: 0, retention: 0 },
    pino({ level: 'silent' }),
  );
  const r = mulberry32(1);
  const step = 5000;
  for (let at = 0; at < DOCS; at += step) {
    const lines: Buffer[] = [];
    for (let i = at; i < Math.min(DOCS, at + step); i++) lines.push(Buffer.from(httpLogsDoc(i, DOCS, r)));
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
}

/** A sealed fraction as it was read before: no numericRange, so a range scans the dictionary. */
function before(sf: SealedFraction): FractionView {
  return new Proxy(sf, {
    get(t, k) {
      if (k === 'numericRange') return undefined;
      const v = Reflect.get(t, k, t) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(t) : v;
    },
  }) as FractionView;
}

function run(views: FractionView[], query: string, from: number, mode: Mode): { ms: number; matches: number } {
  NUMERIC_RANGE.mode = mode === 'before' ? 'auto' : mode;
  const plan = planQuery(parseQuery(query), mapping);
  // CPU time of the process (one thread works): on a shared machine, time waiting for a CPU is left out.
  const t = process.cpuUsage();
  let matches = 0;
  for (const v of views) {
    const [lo, hi] = v.timeRange(from, Infinity)!;
    if (hi > lo) matches += evaluate(plan, v, { lo, hi }).length;
  }
  const used = process.cpuUsage(t);
  return { ms: (used.user + used.system) / 1000, matches };
}

/** With node --expose-gc: a collection before each timed run, so no way pays for another's garbage. */
const gc = (globalThis as { gc?: () => void }).gc;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;

function main(): void {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tidepool-numrange-bench-'));
  try {
    const t0 = Date.now();
    ingest(dir);
    const fracs = readdirSync(dir).filter((e) => e.startsWith('frac-') && statSync(path.join(dir, e)).isDirectory());
    process.stderr.write(`${DOCS} documents in ${fracs.length} fractions (${Date.now() - t0} ms)\n`);
    const load0 = os.loadavg()[0]!;
    const rows: string[] = [];
    for (const [query, from] of QUERIES) {
      // Each way its own fraction objects: the first round reads dictionaries, lists and columns from the files.
      const views = Object.fromEntries(
        MODES.map((m) => {
          const sfs = fracs.map((f) => new SealedFraction(path.join(dir, f)));
          return [m, m === 'before' ? sfs.map(before) : sfs];
        }),
      ) as Record<Mode, FractionView[]>;
      const times: Record<Mode, number[]> = { before: [], dictionary: [], column: [], auto: [] };
      let matches = -1;
      for (let round = 0; round < ROUNDS; round++) {
        // Each way in each place of the order in turn, and the garbage of the one before collected first.
        const order = MODES.map((_, k) => MODES[(k + round) % MODES.length]!);
        for (const m of order) {
          gc?.();
          const r = run(views[m], query, from, m);
          if (matches >= 0 && r.matches !== matches) throw new Error(`${query} ${m}: ${r.matches} for ${matches}`);
          matches = r.matches;
          times[m].push(r.ms);
        }
      }
      for (const m of MODES) for (const v of views[m]) (v as SealedFraction).close();
      const warm = (m: Mode) => median(times[m].slice(1));
      const b = warm('before');
      const when = from === -Infinity ? '' : ' (last hour)';
      rows.push(
        `| \`${query}\`${when} | ${matches} | ${MODES.map((m) => `${warm(m).toFixed(2)} (${times[m][0]!.toFixed(1)})`).join(' | ')} | ${(b / warm('auto')).toFixed(1)}x |`,
      );
      process.stderr.write(`${rows[rows.length - 1]}\n`);
    }
    const report = [
      '# Numeric range filters over sealed fractions',
      '',
      `\`node --expose-gc dist/bench/numeric-range.js --docs ${DOCS} --rounds ${ROUNDS}\`: ${DOCS} http_logs documents in ${fracs.length} sealed fractions of one shard (frac_size 128 MiB), each query evaluated over all of them on one thread. CPU milliseconds of the process (waits for a CPU left out): the median of rounds 2..${ROUNDS} (warm), in brackets the first round (files read: dictionary, offsets, lists, column). The four ways take each place of the order in turn, with a garbage collection before each timed run${gc ? '' : ' (not this run: no --expose-gc)'}; load average ${load0.toFixed(1)} -> ${os.loadavg()[0]!.toFixed(1)} (2 CPUs, shared with other work).`,
      '',
      '| Query | Matches | before: dictionary pass | lists found by number | numeric column | auto (the store) | before / auto |',
      '|---|---:|---:|---:|---:|---:|---:|',
      ...rows,
      '',
    ].join('\n');
    writeResults(OUT, report);
    process.stdout.write(report);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

main();
