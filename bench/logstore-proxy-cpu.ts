// Ingest CPU through a proxy against single mode, in one run: the same http_logs-shaped bulks into single mode
// and into a proxy over one store (and, with --baseline DIR, the same two on another built checkout), each
// round starting every process fresh, the targets alternating round by round; CPU (user + system, every thread,
// every process of the topology, from /proc) per document, medians. Writes bench/results/logstore-proxy-cpu.md.
// Usage: node dist/bench/logstore-proxy-cpu.js [--docs 200000] [--warmup 100000] [--rounds 5] [--senders 4] [--shards 2]
//   [--baseline DIR]
// Two figures per target and round, both over all processes of the topology:
// - ingest window: --warmup N documents go in first, uncounted, for every target alike; the CPU counted is that of
//   the next --docs documents until the last is acknowledged: not the fixed cost of starting and warming up fresh
//   processes, and none of the seals (which come every ~170 000 documents a shard);
// - to sealed: CPU from the first bulk (warm-up included) until every process has exited with every document
//   sealed (the seals at shutdown too), over all --warmup + --docs documents: what ingesting them costs in all.
// PROXY_NODE_ARGS (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof") is passed to the proxy process only, STORE_NODE_ARGS
// to the store, SINGLE_NODE_ARGS to the single-mode process.
import { readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { mulberry32 } from '../test/helpers/prng.js';
import { httpLogsDoc } from './http-logs.js';
import { logstoreConfig, startLogstore, stopLogstore, type LogstoreProc } from './logstore-procs.js';
import { writeResults } from './results-file.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const WORK = process.env.BENCH_WORK
  ? path.resolve(process.env.BENCH_WORK)
  : path.join(ROOT, 'bench', '.work-proxy-cpu');
const arg = (name: string, dflt: number) =>
  process.argv.includes(`--${name}`) ? Number(process.argv[process.argv.indexOf(`--${name}`) + 1]) : dflt;
const DOCS = arg('docs', 200_000);
const WARMUP = arg('warmup', 100_000);
const ROUNDS = arg('rounds', 5);
const SENDERS = arg('senders', 4);
const SHARDS = arg('shards', 2);
const BASELINE = process.argv.includes('--baseline')
  ? path.resolve(process.argv[process.argv.indexOf('--baseline') + 1]!)
  : null;
const BULK_DOCS = 5000;

function cpuSeconds(pid: number): number {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(f[11]) + Number(f[12])) / 100;
}

/** CPU seconds of this process's children that have exited and been waited for (all their threads). */
function reapedChildrenCpuSeconds(): number {
  const f = readFileSync('/proc/self/stat', 'utf8').split(') ')[1]!.split(' ');
  return (Number(f[13]) + Number(f[14])) / 100;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });

function post(port: number, body: Buffer): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: '/_bulk',
        agent,
        headers: { 'content-type': 'application/x-ndjson', 'content-length': body.length },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString() }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

type Proc = LogstoreProc;

function start(
  root: string,
  dir: string,
  mode: 'single' | 'store' | 'proxy',
  shards: number,
  cluster = '',
): Promise<Proc> {
  const extra = (
    process.env[mode === 'proxy' ? 'PROXY_NODE_ARGS' : mode === 'store' ? 'STORE_NODE_ARGS' : 'SINGLE_NODE_ARGS'] ?? ''
  )
    .split(' ')
    .filter(Boolean);
  return startLogstore(root, mode, logstoreConfig(dir, shards, cluster), extra);
}

const stop = stopLogstore;

interface Target {
  name: string;
  root: string;
  proxy: boolean;
}
interface Round {
  cpu: number;
  proxyCpu: number;
  sec: number;
  sealed: number;
}

async function send(port: number, bodies: Buffer[]): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: SENDERS }, async () => {
      while (next < bodies.length) {
        const r = await post(port, bodies[next++]!);
        if (r.status !== 200 || r.text.includes('"errors":true'))
          throw new Error(`bulk failed: ${r.status} ${r.text.slice(0, 300)}`);
      }
    }),
  );
}

async function round(t: Target, warmup: Buffer[], bodies: Buffer[], dir: string): Promise<Round> {
  rmSync(dir, { recursive: true, force: true });
  const reaped0 = reapedChildrenCpuSeconds();
  const procs: Proc[] = [];
  let front: Proc;
  if (t.proxy) {
    const store = await start(t.root, path.join(dir, 'store'), 'store', SHARDS);
    procs.push(store);
    front = await start(
      t.root,
      path.join(dir, 'proxy'),
      'proxy',
      1,
      `cluster:\n  hot_stores: [${JSON.stringify(store.grpc)}]\n  hot_replicas: 1\n`,
    );
    procs.unshift(front);
  } else {
    front = await start(t.root, path.join(dir, 'single'), 'single', SHARDS);
    procs.push(front);
  }
  let started = 0;
  let window: Omit<Round, 'sealed'>;
  try {
    started = procs.reduce((n, p) => n + cpuSeconds(p.child.pid!), 0);
    await send(front.port, warmup);
    const cpu0 = procs.map((p) => cpuSeconds(p.child.pid!));
    const t0 = process.hrtime.bigint();
    await send(front.port, bodies);
    const sec = Number(process.hrtime.bigint() - t0) / 1e9;
    const cpus = procs.map((p, i) => cpuSeconds(p.child.pid!) - cpu0[i]!);
    window = { cpu: cpus.reduce((a, b) => a + b, 0), proxyCpu: t.proxy ? cpus[0]! : 0, sec };
  } finally {
    for (const p of procs) await stop(p);
    rmSync(dir, { recursive: true, force: true });
  }
  return { ...window, sealed: reapedChildrenCpuSeconds() - reaped0 - started };
}

async function main(): Promise<void> {
  const r = mulberry32(1);
  const all: Buffer[] = [];
  for (let i = 0; i < WARMUP + DOCS; i += BULK_DOCS) {
    const lines: string[] = [];
    for (let k = i; k < Math.min(WARMUP + DOCS, i + BULK_DOCS); k++)
      lines.push('{"index":{}}', httpLogsDoc(k, WARMUP + DOCS, r));
    all.push(Buffer.from(lines.join('\n') + '\n'));
  }
  const warmup = all.slice(0, Math.ceil(WARMUP / BULK_DOCS));
  const bodies = all.slice(warmup.length);
  const targets: Target[] = [
    { name: 'single', root: ROOT, proxy: false },
    { name: 'proxy + 1 store', root: ROOT, proxy: true },
  ];
  if (BASELINE)
    targets.push(
      { name: 'baseline single', root: BASELINE, proxy: false },
      { name: 'baseline proxy + 1 store', root: BASELINE, proxy: true },
    );
  const loads: number[] = [];
  const rounds = targets.map((): Round[] => []);
  for (let k = 0; k < ROUNDS; k++) {
    for (let i = 0; i < targets.length; i++) {
      // Rotate the order each round so no target always follows the same one.
      const ti = (i + k) % targets.length;
      loads.push(os.loadavg()[0]!);
      const x = await round(targets[ti]!, warmup, bodies, path.join(WORK, `t${ti}`));
      rounds[ti]!.push(x);
      process.stderr.write(
        `round ${k + 1}/${ROUNDS} ${targets[ti]!.name}: ${x.cpu.toFixed(2)} CPU-s (proxy ${x.proxyCpu.toFixed(2)}), ${x.sec.toFixed(1)} s; to sealed ${x.sealed.toFixed(2)} CPU-s\n`,
      );
    }
  }
  const us = (cpu: number) => (cpu * 1e6) / DOCS;
  const usAll = (cpu: number) => (cpu * 1e6) / (WARMUP + DOCS);
  const rows = targets.map((t, i) => {
    const xs = rounds[i]!;
    return {
      t,
      cpu: median(xs.map((x) => x.cpu)),
      proxy: median(xs.map((x) => x.proxyCpu)),
      sealed: median(xs.map((x) => x.sealed)),
      all: xs.map((x) => us(x.cpu).toFixed(1)).join(', '),
      allSealed: xs.map((x) => usAll(x.sealed).toFixed(1)).join(', '),
    };
  });
  // Per round: the proxy topology's CPU over the single mode's of the same build in the same round.
  const ratio = (proxyIdx: number, singleIdx: number, of: (x: Round) => number) =>
    median(rounds[proxyIdx]!.map((x, k) => of(x) / of(rounds[singleIdx]![k]!)));
  const pct = (of: (x: Round) => number) =>
    `${((ratio(1, 0, of) - 1) * 100).toFixed(0)}%` +
    (BASELINE ? ` (baseline build: ${((ratio(3, 2, of) - 1) * 100).toFixed(0)}%)` : '');
  const lines = [
    `${DOCS.toLocaleString('en-US')} http_logs-shaped documents counted a round after ${WARMUP.toLocaleString('en-US')} uncounted warm-up documents, in ${BULK_DOCS}-document bulks, ${SENDERS} senders, ${SHARDS} shard threads in the single-mode process and in the store; ` +
      `${ROUNDS} rounds, every process started fresh each round, targets rotating; load average (1 min) during the rounds ${Math.min(...loads).toFixed(1)}-${Math.max(...loads).toFixed(1)} on ${os.cpus().length} CPUs. ` +
      'Ingest window: the counted documents, until the last is acknowledged (no seal). To sealed: from the first bulk until the processes exited with every document sealed, over all documents.',
    '',
    '| Target | ingest window, us per document (median) | of which the proxy, us | rounds | to sealed, us per document (median) | rounds |',
    '|---|---:|---:|---|---:|---|',
    ...rows.map(
      (x) =>
        `| ${x.t.name} | ${us(x.cpu).toFixed(1)} | ${x.t.proxy ? us(x.proxy).toFixed(1) : '-'} | ${x.all} | ${usAll(x.sealed).toFixed(1)} | ${x.allSealed} |`,
    ),
    '',
    `Proxy + 1 store over single mode, CPU per document (median of the per-round ratios): ingest window ${pct((x) => x.cpu)}; to sealed ${pct((x) => x.sealed)}.`,
  ];
  const text = lines.join('\n');
  process.stdout.write(`${text}\n`);
  // The results file keeps its dated sections (results-file.ts).
  writeResults(
    path.join(ROOT, 'bench', 'results', 'logstore-proxy-cpu.md'),
    `# Ingest CPU through a proxy against single mode (same run)\n\n${text}\n`,
  );
  rmSync(WORK, { recursive: true, force: true });
}

main().then(
  () => agent.destroy(),
  (err: Error) => {
    process.stderr.write(`${err.stack ?? err.message}\n`);
    process.exit(1);
  },
);
