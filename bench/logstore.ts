// Log-store benchmark: http_logs-shaped documents into tidepool (HTTP bulk, concurrent senders) and into
// PostgreSQL (jsonb + GIN, COPY), then the same searches on both; medians to bench/results/logstore.md.
// The same ingest and searches run on a cluster too: a proxy over one store, and a proxy over two shards.
// Usage: node dist/bench/logstore.js [--docs 1000000] [--senders 4] [--shards 2] [--runs 21] [--quick-runs 501] [--warmups 2] [--no-pg] [--no-cluster] [--out file.md]
//   Searches: undici with one kept connection per tidepool target (as the pg driver keeps one), every round a fresh
//   seeded random order of all targets; a row whose warm-ups took under 5 ms on every target gets --quick-runs rounds
//   (a median of 21 sub-millisecond requests on a shared 2-CPU machine moves by 10% from run to run).
//   [--ids] (every action carries a client _id, as Fluent Bit's Generate_ID sends) [--ingest-only] (single mode:
//   print the ingest figures as one JSON line and stop) [--tidepool DIR] (run the log store of another checkout, built)
//   [--frac-size BYTES] (storage.frac_size of the stores; default: the store's own default)
// BENCH_WORK: scratch directory instead of bench/.work. BENCH_STORE_NODE_ARGS (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof") is passed to the log-store process.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createWriteStream, mkdirSync, readFileSync, rmSync, statSync, readdirSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { findPsql, startPostgres, type RunningPostgres } from '../src/launcher/embedded-postgres.js';
import { nativeLoaded, postings as nativePostings } from '../src/native/index.js';
import { encodePostings, postingsTs } from '../src/native/postings.js';
import { mulberry32 } from '../test/helpers/prng.js';
import { HTTP_LOGS_SPAN_MS, HTTP_LOGS_START, httpLogsDoc } from './http-logs.js';
import { closeKept, keptRequest } from './logstore-procs.js';
import { writeResults } from './results-file.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
/** Scratch directory (emptied at the start): BENCH_WORK, so that two runs of one checkout do not share it. */
const WORK = process.env.BENCH_WORK ? path.resolve(process.env.BENCH_WORK) : path.join(ROOT, 'bench', '.work');

function arg(name: string, dflt: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : dflt;
}
const DOCS = arg('docs', 1_000_000);
const SENDERS = arg('senders', 4);
const SHARDS = arg('shards', 2);
const RUNS = arg('runs', 21);
/** Rounds of a row whose every target took under QUICK_MS in the warm-ups. */
const QUICK_RUNS = arg('quick-runs', 501);
const QUICK_MS = 5;
/** Untimed runs of every search on each target first, alternating (JIT and caches warm on both systems). */
const WARMUPS = arg('warmups', 2);
const WITH_PG = !process.argv.includes('--no-pg');
const WITH_IDS = process.argv.includes('--ids');
const INGEST_ONLY = process.argv.includes('--ingest-only');
const WITH_CLUSTER = !process.argv.includes('--no-cluster') && !INGEST_ONLY;
const TIDEPOOL_ROOT = process.argv.includes('--tidepool')
  ? path.resolve(process.argv[process.argv.indexOf('--tidepool') + 1]!)
  : null;
const FRAC_SIZE = arg('frac-size', 0);
const BULK_DOCS = 5000;

const rng = mulberry32;

const START = HTTP_LOGS_START;
const SPAN_MS = HTTP_LOGS_SPAN_MS;
const makeDoc = (i: number, r: () => number): string => httpLogsDoc(i, DOCS, r);

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[s.length >> 1]!;
}

/**
 * CPU seconds (user + system) of this process's children that have exited and been waited for, from /proc: the
 * whole life of a stopped log store, its shutdown seal included (only the log store is a child in --ingest-only).
 */
function reapedChildrenCpuSeconds(): number {
  const fields = readFileSync('/proc/self/stat', 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[13]) + Number(fields[14])) / 100;
}

/** CPU seconds (user + system, all threads) a process has used so far, from /proc. */
function cpuSeconds(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch (err) {
    process.stderr.write(`cannot read CPU time of ${pid}: ${(err as Error).message}\n`);
    return NaN;
  }
}

function du(dir: string): number {
  let total = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    total += e.isDirectory() ? du(p) : statSync(p).size;
  }
  return total;
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });

function request(
  port: number,
  method: string,
  p: string,
  body: Buffer | string,
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        method,
        path: p,
        agent,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
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

interface Proc {
  child: ChildProcess;
  port: number;
  grpc: string;
}

/** Starts one log-store process in `mode` and waits for its listening line. */
async function startProc(dir: string, mode: 'single' | 'store' | 'proxy'): Promise<Proc> {
  const extra = (process.env.BENCH_STORE_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const child = spawn(
    process.execPath,
    [
      ...extra,
      path.join(TIDEPOOL_ROOT ?? ROOT, 'bin', 'tidepool.js'),
      'logstore',
      '--mode',
      mode,
      '--config',
      path.join(dir, 'logstore.yaml'),
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  return new Promise<Proc>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      // (A build older than the cluster modes prints no grpc address: --tidepool can drive it in single mode.)
      const m = /listening on http [\d.]+:(\d+), debug [\d.]+:\d+(?:, grpc ([\d.]+:\d+))?[ \n]/.exec(out);
      const st = /listening on grpc ([\d.]+:\d+)/.exec(out);
      if (m) resolve({ child, port: Number(m[1]), grpc: m[2] ?? '' });
      else if (st) resolve({ child, port: 0, grpc: st[1]! });
    });
    child.once('exit', (c) => reject(new Error(`log store (${mode}) exited ${c}`)));
  });
}

async function stopStore(child: ChildProcess): Promise<void> {
  const done = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await done;
}

const MAPPING =
  'mapping-list:\n  - {name: clientip, type: keyword}\n  - {name: request, type: text}\n  - {name: status, type: keyword}\n  - {name: size, type: keyword}\n  - {name: service, type: keyword}\n';

function writeConfig(dir: string, shards: number, cluster = ''): void {
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, 'mapping.yaml'), MAPPING);
  writeFileSync(
    path.join(dir, 'logstore.yaml'),
    `server:\n  http_addr: 127.0.0.1:0\n  grpc_addr: 127.0.0.1:0\n  debug_addr: 127.0.0.1:0\nstorage:\n  data_dir: ${path.join(dir, 'data')}\n  shards: ${shards}\n${FRAC_SIZE > 0 ? `  frac_size: ${FRAC_SIZE}\n` : ''}mapping:\n  path: ${path.join(dir, 'mapping.yaml')}\nlog:\n  level: warn\n${cluster}`,
  );
}

/**
 * One way to run the log store: single mode, or a proxy over `stores` store processes (one shard each,
 * one replica). start() (re)starts every process; a proxy gets the stores' fresh gRPC addresses.
 */
class Topology {
  procs: Proc[] = [];
  proxy: Proc | null = null;

  constructor(
    readonly name: string,
    readonly dir: string,
    readonly stores: number,
    readonly shardsPerStore: number,
  ) {}

  get port(): number {
    return (this.proxy ?? this.procs[0]!).port;
  }

  /** Every process's pid: the proxy's (if any) first. */
  get pids(): number[] {
    return [...(this.proxy ? [this.proxy.child.pid!] : []), ...this.procs.map((p) => p.child.pid!)];
  }

  async start(): Promise<void> {
    if (this.stores === 0) {
      writeConfig(this.dir, this.shardsPerStore);
      this.procs = [await startProc(this.dir, 'single')];
      return;
    }
    this.procs = [];
    for (let i = 0; i < this.stores; i++) {
      const d = path.join(this.dir, `store-${i}`);
      writeConfig(d, this.shardsPerStore);
      this.procs.push(await startProc(d, 'store'));
    }
    const pd = path.join(this.dir, 'proxy');
    writeConfig(
      pd,
      1,
      `cluster:\n  hot_stores: [${this.procs.map((p) => JSON.stringify(p.grpc)).join(', ')}]\n  hot_replicas: 1\n`,
    );
    this.proxy = await startProc(pd, 'proxy');
  }

  async stop(): Promise<void> {
    if (this.proxy) await stopStore(this.proxy.child);
    await Promise.all(this.procs.map((p) => stopStore(p.child)));
    this.proxy = null;
  }

  /** Disk of the stores' data directories. */
  disk(): number {
    return this.stores === 0
      ? du(path.join(this.dir, 'data'))
      : this.procs.reduce((s, _, i) => s + du(path.join(this.dir, `store-${i}`, 'data')), 0);
  }
}

/** Posting-list kernels, native addon vs TypeScript twin, on lists over 2 M ids (ms, medians). */
function postingKernels(): { name: string; native: number; ts: number }[] {
  const r = rng(7);
  const mk = (density: number) => {
    const out: number[] = [];
    for (let i = 0; i < 2_000_000; i++) if (r() < density) out.push(i);
    return Uint32Array.from(out);
  };
  const a = mk(0.3);
  const b = mk(0.1);
  const c = mk(0.001);
  const enc = encodePostings(a);
  const time = (fn: () => unknown) => {
    const xs: number[] = [];
    for (let i = 0; i < 7; i++) {
      const t = process.hrtime.bigint();
      fn();
      xs.push(Number(process.hrtime.bigint() - t) / 1e6);
    }
    return median(xs);
  };
  const kernels: [string, (p: typeof postingsTs) => unknown][] = [
    ['decode 600 k ids', (p) => p.decodePostings(enc, 0, enc.length, a.length)],
    ['intersect 600 k x 200 k', (p) => p.intersectPostings(a, b)],
    ['intersect 600 k x 2 k (galloping)', (p) => p.intersectPostings(a, c)],
    ['union 600 k + 200 k', (p) => p.unionPostings(a, b)],
    ['difference 600 k - 200 k', (p) => p.differencePostings(a, b)],
    ['union of 3 lists (bitmap)', (p) => p.unionManyPostings([a, b, c], 2_000_000)],
  ];
  return kernels.map(([name, fn]) => ({
    name,
    native: time(() => fn(nativePostings)),
    ts: time(() => fn(postingsTs)),
  }));
}

const roundOrder = mulberry32(7);

/** Every target once, in a fresh random order (so each follows every other, and itself, equally often); per target, ms. */
async function round(targets: (() => Promise<unknown>)[]): Promise<number[]> {
  const order = targets.map((_, k) => k);
  for (let j = order.length - 1; j > 0; j--) {
    const r = Math.floor(roundOrder() * (j + 1));
    [order[j], order[r]] = [order[r]!, order[j]!];
  }
  const ms = targets.map(() => 0);
  for (const k of order) {
    const t = process.hrtime.bigint();
    await targets[k]!();
    ms[k] = Number(process.hrtime.bigint() - t) / 1e6;
  }
  return ms;
}

/** Medians of each target over RUNS rounds (QUICK_RUNS when every target's warm-ups took under QUICK_MS), after WARMUPS
 * warm-up rounds, so that all meet the same load. Also the number of rounds timed. */
async function timeAll(targets: (() => Promise<unknown>)[]): Promise<{ ms: number[]; runs: number }> {
  const warm = targets.map(() => [] as number[]);
  for (let i = 0; i < WARMUPS; i++) (await round(targets)).forEach((m, k) => warm[k]!.push(m));
  const runs = WARMUPS > 0 && warm.every((w) => median(w) < QUICK_MS) ? Math.max(RUNS, QUICK_RUNS) : RUNS;
  const xs = targets.map(() => [] as number[]);
  for (let i = 0; i < runs; i++) (await round(targets)).forEach((m, k) => xs[k]!.push(m));
  return { ms: xs.map(median), runs };
}

interface SearchCase {
  name: string;
  store: (port: number) => Promise<unknown>;
  pg: string[];
}

async function main(): Promise<void> {
  const loadAtStart = os.loadavg();
  rmSync(WORK, { recursive: true, force: true });
  mkdirSync(WORK, { recursive: true });
  const topologies = [new Topology('single', path.join(WORK, 'logstore'), 0, SHARDS)];
  if (WITH_CLUSTER) {
    topologies.push(new Topology('proxy + 1 store', path.join(WORK, 'proxy-1'), 1, SHARDS));
    topologies.push(new Topology('proxy + 2 shards', path.join(WORK, 'proxy-2'), 2, Math.max(1, SHARDS >> 1)));
  }

  process.stderr.write(`generating ${DOCS} documents\n`);
  const r = rng(1);
  const rid = rng(99);
  const bodies: Buffer[] = [];
  const rawFile = path.join(WORK, 'docs.ndjson');
  const raw = createWriteStream(rawFile);
  let rawBytes = 0;
  for (let i = 0; i < DOCS; i += BULK_DOCS) {
    const lines: string[] = [];
    const docs: string[] = [];
    for (let k = i; k < Math.min(DOCS, i + BULK_DOCS); k++) {
      const d = makeDoc(k, r);
      docs.push(d);
      // A shipper-made id (Fluent Bit's Generate_ID hashes the record; a UUID-shaped hex string here).
      lines.push(
        WITH_IDS
          ? `{"index":{"_id":"${((rid() * 2 ** 32) >>> 0).toString(16).padStart(8, '0')}-${k.toString(16).padStart(8, '0')}-${((rid() * 2 ** 32) >>> 0).toString(16).padStart(8, '0')}"}}`
          : '{"index":{}}',
        d,
      );
    }
    const docText = docs.join('\n') + '\n';
    rawBytes += Buffer.byteLength(docText);
    raw.write(docText);
    bodies.push(Buffer.from(lines.join('\n') + '\n'));
  }
  await new Promise((res) => raw.end(res));
  const bulkBytes = bodies.reduce((s, b) => s + b.length, 0);

  // tidepool: ingest over HTTP with concurrent senders, into each topology in turn.
  // cpuToExit: CPU of the whole processes, start to exit (the seal of what is still active when they stop, too);
  // cpuBefore: what they had used before the first bulk (start-up).
  interface IngestRow {
    sec: number;
    cpu: number;
    proxyCpu: number;
    liveDisk: number;
    sealedDisk: number;
    cpuToExit: number;
    cpuBefore: number;
  }
  const ingest: IngestRow[] = [];
  for (const topo of topologies) {
    const reaped0 = reapedChildrenCpuSeconds();
    await topo.start();
    process.stderr.write(`ingesting into tidepool ${topo.name} (${SENDERS} senders)\n`);
    let nextBody = 0;
    const cpu0 = topo.pids.map(cpuSeconds);
    const t0 = process.hrtime.bigint();
    await Promise.all(
      Array.from({ length: SENDERS }, async () => {
        while (nextBody < bodies.length) {
          const b = bodies[nextBody++]!;
          const res = await request(topo.port, 'POST', '/_bulk', b);
          if (res.status !== 200 || res.text.startsWith('{"took":') === false || res.text.includes('"errors":true'))
            throw new Error(`bulk failed: ${res.status} ${res.text.slice(0, 300)}`);
        }
      }),
    );
    const sec = Number(process.hrtime.bigint() - t0) / 1e9;
    const cpus = topo.pids.map((pid, i) => cpuSeconds(pid) - cpu0[i]!);
    const liveDisk = topo.disk();
    await topo.stop();
    const cpuToExit = reapedChildrenCpuSeconds() - reaped0;
    ingest.push({
      sec,
      cpu: cpus.reduce((a, b) => a + b, 0),
      proxyCpu: topo.stores ? cpus[0]! : 0,
      liveDisk,
      sealedDisk: topo.disk(),
      cpuToExit,
      cpuBefore: cpu0.reduce((a, b) => a + b, 0),
    });
  }
  bodies.length = 0;
  if (INGEST_ONLY) {
    const { sec, cpu, cpuToExit, cpuBefore, sealedDisk } = ingest[0]!;
    // cpuSealed: the ingest window's CPU plus the seal at shutdown (all documents sealed), start-up excluded.
    process.stdout.write(
      `${JSON.stringify({ docs: DOCS, ids: WITH_IDS, tidepool: TIDEPOOL_ROOT ?? ROOT, seconds: sec, docsPerSec: DOCS / sec, cpuSeconds: cpu, cpuSealed: cpuToExit - cpuBefore, diskRatio: sealedDisk / rawBytes, load: os.loadavg()[0] })}\n`,
    );
    rmSync(WORK, { recursive: true, force: true });
    return;
  }
  for (const topo of topologies) await topo.start();
  const { sec: ingestSec, cpu: ingestCpu, liveDisk, sealedDisk, cpuToExit, cpuBefore } = ingest[0]!;
  const sealedCpu = cpuToExit - cpuBefore;
  // Like the pg driver, which parses every jsonb row it receives, the client decodes the whole response.
  const post = async (port: number, p: string, body: unknown, check?: (j: Record<string, unknown>) => void) => {
    const res = await keptRequest(port, 'POST', p, JSON.stringify(body));
    if (res.status !== 200) throw new Error(`${p}: ${res.status} ${res.text.slice(0, 300)}`);
    const j = JSON.parse(res.text) as Record<string, unknown>;
    if (check) check(j);
    return j;
  };
  const mid = START + SPAN_MS / 2;
  const rangeTo = new Date(mid + Math.ceil((5000 / DOCS) * SPAN_MS)).toISOString();
  const iso = (t: number) => new Date(t).toISOString();
  const hourFrom = iso(START + SPAN_MS - 3_600_000);
  const cases: SearchCase[] = [
    {
      name: 'floor: a trivial request (tidepool GET /, PostgreSQL SELECT 1)',
      store: async (port) => JSON.parse((await keptRequest(port, 'GET', '/', '')).text) as unknown,
      pg: ['SELECT 1'],
    },
    {
      name: 'newest 100 in the last hour',
      store: (port) =>
        post(port, '/search', { query: { query: '*', from: hourFrom, to: iso(START + SPAN_MS) }, size: 100 }),
      pg: [`SELECT doc FROM logs WHERE doc->>'timestamp' >= '${hourFrom}' ORDER BY doc->>'timestamp' DESC LIMIT 100`],
    },
    {
      name: 'status:in(500,400,403): total + newest 100',
      store: (port) =>
        post(port, '/search', { query: { query: 'status:in(500,400,403)' }, size: 100, with_total: true }),
      pg: [
        `SELECT count(*) FROM logs WHERE doc @> '{"status":500}' OR doc @> '{"status":400}' OR doc @> '{"status":403}'`,
        `SELECT doc FROM logs WHERE doc @> '{"status":500}' OR doc @> '{"status":400}' OR doc @> '{"status":403}' ORDER BY doc->>'timestamp' DESC LIMIT 100`,
      ],
    },
    {
      name: 'word in request (french): total + newest 100',
      store: (port) => post(port, '/search', { query: { query: 'request:french' }, size: 100, with_total: true }),
      pg: [
        `SELECT count(*) FROM logs WHERE doc->>'request' ILIKE '%french%'`,
        `SELECT doc FROM logs WHERE doc->>'request' ILIKE '%french%' ORDER BY doc->>'timestamp' DESC LIMIT 100`,
      ],
    },
    {
      // Free text: an `or` of the word over `request` (text) and "contains" over every keyword field.
      name: 'free text (french): total + newest 100',
      store: (port) => post(port, '/search', { query: { query: 'french' }, size: 100, with_total: true }),
      pg: [
        `SELECT count(*) FROM logs WHERE doc::text ILIKE '%french%'`,
        `SELECT doc FROM logs WHERE doc::text ILIKE '%french%' ORDER BY doc->>'timestamp' DESC LIMIT 100`,
      ],
    },
    {
      name: 'count by status',
      store: (port) => post(port, '/aggregate', { aggs: [{ field: 'status', func: 'count' }] }),
      pg: [`SELECT doc->>'status', count(*) FROM logs GROUP BY 1`],
    },
    {
      name: 'min of size by status',
      store: (port) => post(port, '/aggregate', { aggs: [{ field: 'size', func: 'min', group_by: 'status' }] }),
      pg: [`SELECT doc->>'status', min((doc->>'size')::bigint) FROM logs GROUP BY 1`],
    },
    {
      name: '5 000-document range fetch',
      store: (port) =>
        post(port, '/search', { query: { query: '*', from: iso(mid), to: rangeTo }, size: 5000, order: 'asc' }, (j) => {
          if ((j.docs as unknown[]).length < 4000)
            throw new Error(`range fetch returned ${(j.docs as unknown[]).length} documents`);
        }),
      pg: [`SELECT doc FROM logs WHERE doc->>'timestamp' >= '${iso(mid)}' ORDER BY doc->>'timestamp' LIMIT 5000`],
    },
  ];
  // PostgreSQL: jsonb column, GIN index (and a btree on the timestamp for time ordering), COPY ingest.
  // Searches then alternate between the two systems run by run, so both see the same machine load.
  let pgRes: { ingestSec: number; disk: number; ms: number[] } | null = null;
  const storeMs: number[] = [];
  /** Per case, per topology (single first). */
  const topoMs: number[][] = [];
  let loadAtSearch = os.loadavg();
  /** Rounds timed per case. */
  const rowRuns: number[] = [];
  let pgsrv: RunningPostgres | null = null;
  let client: pg.Client | null = null;
  try {
    let pgIngest = 0;
    let disk = 0;
    if (WITH_PG) {
      pgsrv = await startPostgres({
        dataDir: path.join(WORK, 'pg', 'data'),
        settings: {
          shared_buffers: '1GB',
          maintenance_work_mem: '1GB',
          work_mem: '64MB',
          max_parallel_workers_per_gather: 2,
        },
      });
      pgsrv.sql('CREATE TABLE logs (doc jsonb NOT NULL)');
      process.stderr.write('ingesting into PostgreSQL (COPY, then GIN + btree index builds)\n');
      const p0 = process.hrtime.bigint();
      const copy = spawnSync(
        findPsql(),
        [
          '-h',
          pgsrv.host,
          '-p',
          String(pgsrv.port),
          '-U',
          'postgres',
          '-d',
          'postgres',
          '-v',
          'ON_ERROR_STOP=1',
          '-c',
          `\\copy logs(doc) FROM '${rawFile}' WITH (FORMAT csv, QUOTE E'\\x01', DELIMITER E'\\x02')`,
        ],
        { encoding: 'utf8' },
      );
      if (copy.status !== 0) throw new Error(`COPY failed: ${copy.stderr}`);
      pgsrv.sql('CREATE INDEX logs_gin ON logs USING gin (doc)');
      pgsrv.sql("CREATE INDEX logs_ts ON logs ((doc->>'timestamp'))");
      pgsrv.sql('VACUUM ANALYZE logs');
      pgIngest = Number(process.hrtime.bigint() - p0) / 1e9;
      disk = Number(pgsrv.sql("SELECT pg_total_relation_size('logs')"));
      client = new pg.Client({ host: pgsrv.host, port: pgsrv.port, user: 'postgres', database: 'postgres' });
      await client.connect();
    }
    loadAtSearch = os.loadavg();
    const ms: number[] = [];
    for (const c of cases) {
      process.stderr.write(`searching: ${c.name}\n`);
      const pgRun = client
        ? async () => {
            for (const q of c.pg) await client!.query(q);
          }
        : null;
      const { ms: got, runs } = await timeAll([
        ...topologies.map((t) => () => c.store(t.port)),
        ...(pgRun ? [pgRun] : []),
      ]);
      rowRuns.push(runs);
      storeMs.push(got[0]!);
      topoMs.push(got.slice(0, topologies.length));
      ms.push(pgRun ? got[got.length - 1]! : NaN);
    }
    if (WITH_PG) pgRes = { ingestSec: pgIngest, disk, ms };
  } finally {
    await client?.end();
    await pgsrv?.stop();
    await closeKept();
    for (const t of topologies) await t.stop();
  }

  const kernels = postingKernels();
  const fmt = (n: number, d = 1) => n.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d });
  const lines: string[] = [];
  lines.push('# Log store benchmark', '');
  lines.push(
    `${DOCS.toLocaleString('en-US')} http_logs-shaped documents (timestamp, clientip, request, status, size, service), ` +
      `${fmt(rawBytes / 1024 ** 2)} MiB of raw NDJSON (${fmt(rawBytes / DOCS, 0)} bytes a document). ` +
      `Machine: ${os.cpus().length} CPU (${os.cpus()[0]?.model ?? 'unknown'}), Node ${process.version}, native posting lists: ${nativeLoaded ? 'yes' : 'no (TypeScript twins)'}. ` +
      `tidepool: single mode, ${SHARDS} shards, ${SENDERS} concurrent HTTP senders of ${BULK_DOCS}-document bulks, mapping: request text, clientip/status/size/service keyword. ` +
      `PostgreSQL ${pgRes ? '(embedded, fsync off)' : 'not run'}: one jsonb column, a GIN index on it and a btree on doc->>'timestamp', loaded with COPY. ` +
      `Latencies are medians of ${RUNS} runs (${Math.max(RUNS, QUICK_RUNS)} for the rows under ${QUICK_MS} ms: ${
        cases
          .filter((_, i) => rowRuns[i]! > RUNS)
          .map((c) => `"${c.name}"`)
          .join(', ') || 'none'
      }) after ${WARMUPS} warm-ups, every target once a round in a fresh random order, measured from the client until the whole response is received and decoded ` +
      `(undici with one kept connection and JSON.parse of the body for tidepool; the pg driver, one kept connection, which parses each jsonb row, for PostgreSQL); the floor row is the round trip of a trivial request on each. ` +
      `Load average (1, 5, 15 min) at the start: ${loadAtStart.map((x) => x.toFixed(1)).join(', ')}, before the tidepool searches: ${loadAtSearch.map((x) => x.toFixed(1)).join(', ')} ` +
      `(the 2-CPU machine is shared with other work, so absolute numbers move with its load).`,
    '',
  );
  lines.push('| Measure | tidepool | PostgreSQL jsonb + GIN | Target | Met |', '|---|---:|---:|---|---|');
  const dps = DOCS / ingestSec;
  lines.push(
    `| Ingest, docs/s | ${fmt(dps, 0)} (${fmt(bulkBytes / 1024 ** 2 / ingestSec)} MiB/s of bulk body) | ${pgRes ? fmt(DOCS / pgRes.ingestSec, 0) + ' (COPY + index builds)' : '-'} | >= 150 000 | ${dps >= 150_000 ? 'yes' : 'no'} |`,
  );
  lines.push(
    `| Ingest CPU cost (log-store process, all threads) | ${fmt(ingestCpu, 1)} CPU-s, ${fmt(DOCS / ingestCpu, 0)} docs per CPU-second | | | |`,
  );
  lines.push(
    `| Ingest CPU cost to sealed (the above plus the seal of what was still active at shutdown) | ${fmt(sealedCpu, 1)} CPU-s, ${fmt(DOCS / sealedCpu, 0)} docs per CPU-second | | | |`,
  );
  lines.push(
    `| Disk / raw NDJSON, sealed | ${fmt(sealedDisk / rawBytes, 2)}x (${fmt(sealedDisk / 1024 ** 2)} MiB) | ${pgRes ? fmt(pgRes.disk / rawBytes, 2) + 'x (' + fmt(pgRes.disk / 1024 ** 2) + ' MiB)' : '-'} | <= 0.5x | ${sealedDisk / rawBytes <= 0.5 ? 'yes' : 'no'} |`,
  );
  lines.push(`| Disk / raw NDJSON, live (write-ahead files before sealing) | ${fmt(liveDisk / rawBytes, 2)}x | | | |`);
  cases.forEach((c, i) => {
    const ours = storeMs[i]!;
    const theirs = pgRes ? pgRes.ms[i] : undefined;
    const ratio = theirs !== undefined ? theirs / ours : NaN;
    const floor = i === 0;
    lines.push(
      `| ${c.name}, ms | ${fmt(ours, 2)} | ${theirs !== undefined ? fmt(theirs, 2) : '-'} | ${floor ? '' : '>= 10x faster'} | ${Number.isNaN(ratio) ? '-' : `${fmt(ratio, 1)}x${floor ? '' : ratio >= 10 ? ' yes' : ' no'}`} |`,
    );
  });
  if (topologies.length > 1) {
    lines.push(
      '',
      `Cluster: the same ${DOCS.toLocaleString('en-US')} documents and searches through a proxy (HTTP in, gRPC to the stores) over one store ` +
        `(${SHARDS} local shards, as single mode) and over two stores of one shard each (hot_replicas 1), all processes on this machine; ` +
        'the searches of all topologies and PostgreSQL run once a round each, in a fresh random order. CPU is every process of the topology (proxy included).',
      '',
    );
    lines.push(
      `| Measure | ${topologies.map((t) => t.name).join(' | ')} | PostgreSQL |`,
      `|---|${topologies.map(() => '---:|').join('')}---:|`,
    );
    lines.push(
      `| Ingest, docs/s | ${ingest.map((x) => fmt(DOCS / x.sec, 0)).join(' | ')} | ${pgRes ? fmt(DOCS / pgRes.ingestSec, 0) : '-'} |`,
    );
    lines.push(
      `| Ingest CPU, CPU-s (docs per CPU-second) | ${ingest.map((x) => `${fmt(x.cpu, 1)} (${fmt(DOCS / x.cpu, 0)})`).join(' | ')} | |`,
    );
    lines.push(
      `| of which the proxy, CPU-s (vs single mode's total) | - | ${ingest
        .slice(1)
        .map((x) => `${fmt(x.proxyCpu, 1)} (${fmt((100 * x.proxyCpu) / ingest[0]!.cpu, 0)}%)`)
        .join(' | ')} | |`,
    );
    lines.push(
      `| CPU per document over single mode's (target: at most +25%) | - | ${ingest
        .slice(1)
        .map(
          (x) => `${x.cpu >= ingest[0]!.cpu ? '+' : ''}${fmt((100 * (x.cpu - ingest[0]!.cpu)) / ingest[0]!.cpu, 0)}%`,
        )
        .join(' | ')} | |`,
    );
    cases.forEach((c, i) => {
      const pgMs = pgRes?.ms[i];
      lines.push(
        `| ${c.name}, ms | ${topoMs[i]!.map((x) => (pgMs !== undefined ? `${fmt(x, 2)} (${fmt(pgMs / x, 1)}x)` : fmt(x, 2))).join(' | ')} | ${pgMs !== undefined ? fmt(pgMs, 2) : '-'} |`,
      );
    });
    lines.push('', "In brackets: PostgreSQL's time over tidepool's (above 1: tidepool is faster).");
  }
  lines.push(
    '',
    `Posting-list kernels (${nativeLoaded ? 'native addon' : 'addon not built: both columns are the TypeScript twin'} vs TypeScript twin), medians of 7 runs:`,
    '',
  );
  lines.push('| Kernel | native, ms | TypeScript, ms | Speed-up |', '|---|---:|---:|---:|');
  for (const k of kernels)
    lines.push(`| ${k.name} | ${fmt(k.native, 2)} | ${fmt(k.ts, 2)} | ${fmt(k.ts / k.native, 1)}x |`);
  lines.push(
    '',
    `Run: \`npm run bench:logstore -- ${['--docs', String(DOCS), ...process.argv.slice(2).filter((a, i, all) => a !== '--docs' && all[i - 1] !== '--docs')].join(' ')}\` (${new Date().toISOString().slice(0, 10)}).`,
    '',
  );
  const out = lines.join('\n');
  const outIdx = process.argv.indexOf('--out');
  // --out FILE is written whole; the results file keeps its dated sections (results-file.ts).
  if (outIdx >= 0) writeFileSync(path.resolve(process.argv[outIdx + 1]!), out);
  else writeResults(path.join(ROOT, 'bench', 'results', 'logstore.md'), out);
  process.stdout.write(out);
  agent.destroy();
  rmSync(WORK, { recursive: true, force: true });
}

main().catch((err: Error) => {
  process.stderr.write(`${err.stack ?? err.message}\n`);
  process.exitCode = 1;
});
