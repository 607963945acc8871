// Search latency of two tidepool builds side by side: the same sealed data, single mode (or a proxy over one
// store), the floor, an empty-range search (a search route's floor), the newest-100, range-fetch, status:in and
// count-by-status rows of bench/logstore.ts, requests interleaved (a fresh random order of all targets every round).
// Usage: node dist/bench/logstore-latency.js --a DIR --b DIR [--docs 200000] [--runs 1000] [--warmups 100] [--proxy] [--only TEXT] [--pg]
//     [--client http|undici|both] [--stack-floor]
//   --pg: PostgreSQL (jsonb + GIN + timestamp btree, the pg driver) as a third target, alternating too.
//   --client: the HTTP client of the tidepool targets (default both, each build timed with each, all alternating):
//     node's http.request with a keep-alive agent, and undici's Pool (one kept connection per build, as the pg
//     driver keeps one connection). Each client gets its own table row.
//   --only: just the rows whose name contains TEXT.
//   --stack-floor: two more targets that do no search work (bench/stack-floor.ts), answering each row with build b's
//     answer bytes: node:http alone ("bare HTTP"), and node:http asking a second process for the bytes over a
//     grpc-js stream first ("bare HTTP + gRPC hop"), the least a search through a proxy can cost on this stack.
//   BENCH_STORE_NODE_ARGS: node flags for build b's store and proxy processes (profiling).
//   Below the table: each build's CPU per request (user + system, from /proc), per process, row by row, and this
//   process's CPU per request of each target (the client's work: sending, receiving and decoding the answer).
//   DIR: a built checkout (bin/tidepool.js, dist/, build/). Prints a markdown table of medians (ms) and ratios.
import { spawnSync } from 'node:child_process';
import { cpSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { findPsql, startPostgres, type RunningPostgres } from '../src/launcher/embedded-postgres.js';
import { mulberry32 } from '../test/helpers/prng.js';
import { HTTP_LOGS_SPAN_MS, HTTP_LOGS_START, httpLogsDoc } from './http-logs.js';
import {
  closeKept,
  keptRequest,
  logstoreConfig,
  startLogstore,
  stopLogstore,
  type LogstoreProc,
} from './logstore-procs.js';
import { startStackFloor, type StackFloor } from './stack-floor.js';

function flag(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
}
const DOCS = Number(flag('docs') ?? 200_000);
const RUNS = Number(flag('runs') ?? 1000);
const WARMUPS = Number(flag('warmups') ?? 100);
const PROXY = process.argv.includes('--proxy');
/** PostgreSQL (jsonb, GIN and a btree on the timestamp, as bench/logstore.ts) as a third target in the same run. */
const WITH_PG = process.argv.includes('--pg');
const STACK_FLOOR = process.argv.includes('--stack-floor');
const BUILDS = [flag('a'), flag('b')].map((d) => (d ? path.resolve(d) : undefined));
if (!BUILDS[0] || !BUILDS[1]) throw new Error('usage: --a DIR --b DIR (two built tidepool checkouts)');
/** BENCH_STORE_NODE_ARGS (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof"): node flags of build b's store (and proxy) processes. */
const NODE_ARGS = (process.env.BENCH_STORE_NODE_ARGS ?? '').split(' ').filter(Boolean);
const WORK = path.join(os.tmpdir(), `tidepool-latency-${process.pid}`);

const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });

function request(port: number, method: string, p: string, body: string): Promise<string> {
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
        res.on('end', () =>
          res.statusCode === 200
            ? resolve(Buffer.concat(chunks).toString())
            : reject(new Error(`${p}: ${res.statusCode} ${Buffer.concat(chunks).toString().slice(0, 200)}`)),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** The same exchange through undici: one kept-alive connection per port, the body read whole as text. */
async function requestUndici(port: number, method: string, p: string, body: string): Promise<string> {
  const { status, text } = await keptRequest(port, method, p, body);
  if (status !== 200) throw new Error(`${p}: ${status} ${text.slice(0, 200)}`);
  return text;
}

type Client = 'http.request' | 'undici';
const CLIENT = flag('client') ?? 'both';
if (!['http', 'undici', 'both'].includes(CLIENT)) throw new Error('--client must be http, undici or both');
const CLIENTS: Client[] =
  CLIENT === 'both' ? ['http.request', 'undici'] : CLIENT === 'http' ? ['http.request'] : ['undici'];
const send = (c: Client) => (c === 'undici' ? requestUndici : request);

type Proc = LogstoreProc;
const config = (dir: string, cluster = ''): string => logstoreConfig(dir, 2, cluster);
const start = startLogstore;
const stop = stopLogstore;

/** CPU seconds (user + system) a process has used so far, from /proc/<pid>/stat. */
function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) / 100;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;

async function main(): Promise<void> {
  const procs: Proc[] = [];
  let pgsrv: RunningPostgres | null = null;
  let client: pg.Client | null = null;
  let floor: StackFloor | null = null;
  try {
    rmSync(WORK, { recursive: true, force: true });
    // Ingest once with build a, stop (the active fraction is sealed), then give each build its own copy.
    const seedCfg = config(path.join(WORK, 'seed'));
    const seed = await start(BUILDS[0]!, 'single', seedCfg);
    procs.push(seed);
    process.stderr.write(`ingesting ${DOCS} documents\n`);
    const r = mulberry32(1);
    const raw: string[] = [];
    for (let i = 0; i < DOCS; i += 5000) {
      const lines: string[] = [];
      for (let k = i; k < Math.min(DOCS, i + 5000); k++) {
        const d = httpLogsDoc(k, DOCS, r);
        lines.push('{"index":{}}', d);
        if (WITH_PG) raw.push(d);
      }
      await request(seed.port, 'POST', '/_bulk', lines.join('\n') + '\n');
    }
    await stop(seed);
    const ports: number[] = [];
    /** Per build, its processes (the store first, then the proxy; or the one single-mode process). */
    const measured: { role: string; pid: number }[][] = [[], []];
    for (const [b, root] of BUILDS.entries()) {
      const dir = path.join(WORK, `build-${b}`);
      if (!PROXY) {
        const cfg = config(dir);
        cpSync(path.join(WORK, 'seed', 'data'), path.join(dir, 'data'), { recursive: true });
        const p = await start(root!, 'single', cfg, b === 1 ? NODE_ARGS : []);
        procs.push(p);
        ports.push(p.port);
        measured[b]!.push({ role: 'single', pid: p.child.pid! });
        continue;
      }
      const scfg = config(path.join(dir, 'store'));
      cpSync(path.join(WORK, 'seed', 'data'), path.join(dir, 'store', 'data'), { recursive: true });
      const s = await start(root!, 'store', scfg, b === 1 ? NODE_ARGS : []);
      procs.push(s);
      measured[b]!.push({ role: 'store', pid: s.child.pid! });
      const p = await start(
        root!,
        'proxy',
        config(path.join(dir, 'proxy'), `cluster:\n  hot_stores: [${JSON.stringify(s.grpc)}]\n  hot_replicas: 1\n`),
        b === 1 ? NODE_ARGS : [],
      );
      procs.push(p);
      ports.push(p.port);
      measured[b]!.push({ role: 'proxy', pid: p.child.pid! });
    }
    if (WITH_PG) {
      process.stderr.write('loading PostgreSQL\n');
      pgsrv = await startPostgres({
        dataDir: path.join(WORK, 'pg'),
        settings: { shared_buffers: '1GB', work_mem: '64MB', max_parallel_workers_per_gather: 2 },
      });
      pgsrv.sql('CREATE TABLE logs (doc jsonb NOT NULL)');
      const file = path.join(WORK, 'docs.ndjson');
      writeFileSync(file, raw.join('\n') + '\n');
      raw.length = 0;
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
          `\\copy logs(doc) FROM '${file}' WITH (FORMAT csv, QUOTE E'\\x01', DELIMITER E'\\x02')`,
        ],
        { encoding: 'utf8' },
      );
      if (copy.status !== 0) throw new Error(`COPY failed: ${copy.stderr}`);
      pgsrv.sql('CREATE INDEX logs_gin ON logs USING gin (doc)');
      pgsrv.sql("CREATE INDEX logs_ts ON logs ((doc->>'timestamp'))");
      pgsrv.sql('VACUUM ANALYZE logs');
      client = new pg.Client({ host: pgsrv.host, port: pgsrv.port, user: 'postgres', database: 'postgres' });
      await client.connect();
    }
    const iso = (t: number) => new Date(t).toISOString();
    const mid = HTTP_LOGS_START + HTTP_LOGS_SPAN_MS / 2;
    // An hour before the first document: a search that finds nothing, the floor of a search route (through a proxy,
    // its gRPC hop to the store included).
    const emptyFrom = iso(HTTP_LOGS_START - 7_200_000);
    const emptyTo = iso(HTTP_LOGS_START - 3_600_000);
    const hourFrom = iso(HTTP_LOGS_START + HTTP_LOGS_SPAN_MS - 3_600_000);
    const pgSql: Record<string, string> = {
      'floor: GET /': 'SELECT 1',
      'empty range: newest 100 of none': `SELECT doc FROM logs WHERE doc->>'timestamp' >= '${emptyFrom}' AND doc->>'timestamp' < '${emptyTo}' ORDER BY doc->>'timestamp' DESC LIMIT 100`,
      'newest 100 in the last hour': `SELECT doc FROM logs WHERE doc->>'timestamp' >= '${hourFrom}' ORDER BY doc->>'timestamp' DESC LIMIT 100`,
      '5 000-document range fetch': `SELECT doc FROM logs WHERE doc->>'timestamp' >= '${iso(mid)}' ORDER BY doc->>'timestamp' LIMIT 5000`,
      // (The total with the newest 100: a window count over every match, taken before the LIMIT.)
      'status:in(500,400,403): total + newest 100': `SELECT doc, count(*) OVER () FROM logs WHERE doc @> '{"status":500}' OR doc @> '{"status":400}' OR doc @> '{"status":403}' ORDER BY doc->>'timestamp' DESC LIMIT 100`,
      'count by status': `SELECT doc->>'status', count(*) FROM logs GROUP BY 1`,
    };
    type Send = typeof request;
    /** name, method, path, body */
    const rowRequests: [string, string, string, string][] = [
      ['floor: GET /', 'GET', '/', ''],
      [
        'empty range: newest 100 of none',
        'POST',
        '/search',
        JSON.stringify({ query: { query: '*', from: emptyFrom, to: emptyTo }, size: 100 }),
      ],
      [
        'newest 100 in the last hour',
        'POST',
        '/search',
        JSON.stringify({
          query: {
            query: '*',
            from: iso(HTTP_LOGS_START + HTTP_LOGS_SPAN_MS - 3_600_000),
            to: iso(HTTP_LOGS_START + HTTP_LOGS_SPAN_MS),
          },
          size: 100,
        }),
      ],
      [
        '5 000-document range fetch',
        'POST',
        '/search',
        JSON.stringify({
          query: { query: '*', from: iso(mid), to: iso(mid + Math.ceil((5000 / DOCS) * HTTP_LOGS_SPAN_MS)) },
          size: 5000,
          order: 'asc',
        }),
      ],
      // Searches that are not plain time ranges: the shards' search threads read them (the rows of bench/logstore.ts).
      [
        'status:in(500,400,403): total + newest 100',
        'POST',
        '/search',
        JSON.stringify({ query: { query: 'status:in(500,400,403)' }, size: 100, with_total: true }),
      ],
      ['count by status', 'POST', '/aggregate', JSON.stringify({ aggs: [{ field: 'status', func: 'count' }] })],
    ];
    const only = flag('only');
    if (only) rowRequests.splice(0, rowRequests.length, ...rowRequests.filter(([n]) => n.includes(only)));
    const rows: [string, (port: number, req: Send) => Promise<unknown>][] = rowRequests.map(
      ([name, method, p, body]) => [name, (port, req) => req(port, method, p, body).then((t) => JSON.parse(t))],
    );
    if (STACK_FLOOR) {
      floor = await startStackFloor();
      measured.push(floor.pids.map((pid, i) => ({ role: i === 0 ? 'grpc-js server' : 'node:http', pid })));
      for (const [ri, [, method, p, body]] of rowRequests.entries())
        await floor.setAnswer(ri, Buffer.from(await requestUndici(ports[1]!, method, p, body)));
    }
    // Both builds must answer the same.
    for (const [name, run] of rows) {
      for (const c of CLIENTS) {
        const [a, b] = await Promise.all(ports.map((p) => run(p, send(c))));
        if (JSON.stringify(a) !== JSON.stringify(b)) throw new Error(`${name}: the two builds answer differently`);
      }
    }
    const load0 = os.loadavg()[0]!;
    const cpuNotes: string[] = [];
    const out = client
      ? [
          `| Row (${PROXY ? 'proxy + 1 store' : 'single mode'}) | HTTP client | a, ms | b, ms | b / a | PostgreSQL, ms | PostgreSQL / b |`,
          '|---|---|---:|---:|---:|---:|---:|',
        ]
      : [
          `| Row (${PROXY ? 'proxy + 1 store' : 'single mode'}) | HTTP client | a, ms | b, ms | b / a |`,
          '|---|---|---:|---:|---:|',
        ];
    const floorOut = [
      '| Row | bare HTTP, ms | bare HTTP + gRPC hop, ms | the hop, ms | b (undici), ms | PostgreSQL, ms |',
      '|---|---:|---:|---:|---:|---:|',
    ];
    for (const [ri, [name, run]] of rows.entries()) {
      process.stderr.write(`timing ${name}\n`);
      // Every (client, build) pair is a target, then PostgreSQL: all alternate request by request.
      const targets: (() => Promise<unknown>)[] = CLIENTS.flatMap((c) => ports.map((p) => () => run(p, send(c))));
      const pgAt = targets.length;
      if (client) targets.push(() => client!.query(pgSql[name]!));
      const floorAt = targets.length;
      const [, , , body] = rowRequests[ri]!;
      if (floor)
        targets.push(
          () => requestUndici(floor!.port, 'POST', `/bare/${ri}`, body),
          () => requestUndici(floor!.port, 'POST', `/hop/${ri}`, body),
        );
      const label = (k: number) =>
        k === pgAt && client
          ? 'PostgreSQL'
          : k >= floorAt
            ? k === floorAt
              ? 'bare HTTP'
              : 'bare hop'
            : `${CLIENTS[Math.floor(k / 2)]} ${k % 2 ? 'b' : 'a'}`;
      const xs: number[][] = targets.map(() => []);
      /** This process's CPU (us) while each target's requests were in flight: the client's side of the exchange. */
      const clientCpu = targets.map(() => 0);
      // Each round runs every target once in a fresh random order (seeded), so every target follows every other
      // (and itself, across rounds) equally often. A fixed order reversed every other round made some targets
      // always follow a request to the same process (warm) and others always follow one to another process.
      const shuffle = mulberry32(7);
      let cpu0: number[][] = [];
      for (let i = 0; i < WARMUPS + RUNS; i++) {
        const order = targets.map((_, k) => k);
        for (let j = order.length - 1; j > 0; j--) {
          const r = Math.floor(shuffle() * (j + 1));
          [order[j], order[r]] = [order[r]!, order[j]!];
        }
        if (i === WARMUPS) cpu0 = measured.map((ps) => ps.map((x) => cpuSeconds(x.pid)));
        for (const k of order) {
          const u = process.cpuUsage();
          const t = process.hrtime.bigint();
          await targets[k]!();
          if (i >= WARMUPS) {
            xs[k]!.push(Number(process.hrtime.bigint() - t) / 1e6);
            const d = process.cpuUsage(u);
            clientCpu[k]! += d.user + d.system;
          }
        }
      }
      const meds = xs.map(median);
      // Each build's processes served RUNS requests of every client.
      // Each build's processes served RUNS requests of every client; the stack floor's grpc-js server RUNS hops, its
      // node:http process RUNS requests of each of its two targets.
      const cpu = measured.map((ps, b) =>
        ps
          .map(
            (x, j) =>
              `${x.role} ${((1000 * (cpuSeconds(x.pid) - cpu0[b]![j]!)) / (RUNS * (b < 2 ? CLIENTS.length : j === 0 ? 1 : 2))).toFixed(3)}`,
          )
          .join(', '),
      );
      const clientMs = clientCpu.map((us) => (us / 1000 / RUNS).toFixed(3));
      cpuNotes.push(
        `- ${name}: CPU ms per request, a: ${cpu[0]}; b: ${cpu[1]}${floor ? `; the stack floor (grpc-js server per hop, node:http per request): ${cpu[2]}` : ''}; the client's (this process) per target: ${targets.map((_, k) => `${label(k)} ${clientMs[k]}`).join(', ')}`,
      );
      const c = client ? meds[pgAt] : undefined;
      if (floor) {
        const bUndici = meds[CLIENTS.indexOf('undici') * 2 + 1];
        floorOut.push(
          `| ${name} | ${meds[floorAt]!.toFixed(3)} | ${meds[floorAt + 1]!.toFixed(3)} | ${(meds[floorAt + 1]! - meds[floorAt]!).toFixed(3)} | ${bUndici !== undefined && CLIENTS.includes('undici') ? bUndici.toFixed(3) : '-'} | ${c !== undefined ? c.toFixed(3) : '-'} |`,
        );
      }
      for (const [ci, cname] of CLIENTS.entries()) {
        const a = meds[ci * 2]!;
        const b = meds[ci * 2 + 1]!;
        out.push(
          `| ${name} | ${cname} | ${a.toFixed(3)} | ${b.toFixed(3)} | ${(b / a).toFixed(2)} |${c !== undefined ? ` ${c.toFixed(3)} | ${(c / b).toFixed(2)} |` : ''}`,
        );
      }
    }
    if (floor)
      out.push(
        '',
        `Stack floor (${PROXY ? 'beside a proxy + 1 store' : 'beside single mode'}): the same answers from processes that do no search work.`,
        '',
        ...floorOut,
      );
    out.push(
      '',
      ...cpuNotes,
      '',
      `${DOCS} documents, medians of ${RUNS} runs each after ${WARMUPS} warm-ups, all targets interleaved in a random order each round; a: ${BUILDS[0]}, b: ${BUILDS[1]}; load average ${load0.toFixed(1)} -> ${os.loadavg()[0]!.toFixed(1)}.`,
    );
    process.stdout.write(out.join('\n') + '\n');
  } finally {
    await client?.end();
    await pgsrv?.stop();
    await floor?.stop();
    for (const p of procs.reverse()) await stop(p);
    agent.destroy();
    await closeKept();
    rmSync(WORK, { recursive: true, force: true });
  }
}

main().catch((err: Error) => {
  process.stderr.write(`${err.stack ?? err.message}\n`);
  process.exitCode = 1;
});
