// Many idle clients (issue 40, "Many clients"): for tidepool, PgBouncer 1.25 and Odyssey 1.5, one at a time, the
// pooler's RSS with 100 clients and with 10 000 logged-in clients (RSS per idle client), and the latency of 100
// active clients (select 1 in a closed loop) with 100 and with 10 000 connected (p99 at 10 000 over p99 at 100).
// With --scrape-every MS, a monitor scrapes /metrics (tidepool) and runs SHOW POOLS on the admin console (tidepool,
// PgBouncer) every MS ms through the large phase, as Prometheus and an operator's script would.
// Usage: npm run build && node dist/bench/pooler-idle-clients.js [--clients 10000] [--active 100] [--seconds 10]
//   [--targets tidepool,PgBouncer 1.25,Odyssey] [--scrape-every MS] [--rounds N] [--out FILE] [--help]. The peers come from
//   ../shared/peers (see bench/pooler-peers.ts); the run stops naming the archive when one is missing.
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { stopOnExit } from './bench-exit.js';
import { clockTicks, rssBytes, treePids, treeTicks } from './pooler-cpu.js';
import {
  BENCH_DB,
  BENCH_PASSWORD,
  BENCH_USER,
  benchSecret,
  startBenchPostgres,
  startOdyssey,
  startPgBouncer125,
  startTidepool,
  type RunningPeer,
} from './pooler-peers.js';
import { benchOpt, rawLogin, type RawClient } from './raw-pg-client.js';
import { writeResults } from './results-file.js';
import { freePort } from '../src/launcher/embedded-postgres.js';

const USAGE = `Usage: node dist/bench/pooler-idle-clients.js [options]
  --clients N      connected clients in the large phase (default 10000)
  --active N       clients running select 1 in a closed loop (default 100)
  --seconds N      length of each latency phase (default 10)
  --targets LIST   comma-separated: tidepool, PgBouncer 1.25, Odyssey (default all three); tidepool@DIR runs the
                   tidepool built in DIR (e.g. a git archive of another commit, compiled) as one more row
  --scrape-every MS  through the large phase, scrape /metrics (tidepool) and run SHOW POOLS on the admin console
                   (tidepool, PgBouncer; not Odyssey) every MS ms; the RSS is sampled after two scrapes (default 0: off)
  --rounds N       run every target N times, the order rotated from round to round; the table quotes medians and
                   the p99 ratio is the median of each round's own ratio (default 1)
  --out FILE       write the table there instead of bench/results/pooler-idle-clients.md
  --help           print this and exit
`;
if (process.argv.includes('--help') || process.argv.includes('-h')) {
  process.stdout.write(USAGE);
  process.exit(0);
}
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const opt = benchOpt;
const CLIENTS = Number(opt('clients', '10000'));
const ACTIVE = Number(opt('active', '100'));
const SECONDS = Number(opt('seconds', '10'));
const TARGETS = opt('targets', 'tidepool,PgBouncer 1.25,Odyssey').split(',');
const SCRAPE_MS = Number(opt('scrape-every', '0'));
const ROUNDS = Math.max(1, Number(opt('rounds', '1')));
const TICKS = clockTicks();
const ADMIN = { user: 'admin', password: 'bench-admin-password' };
const POOL_SIZE = 20;
const say = (msg: string) => process.stderr.write(`[idle-clients] ${msg}\n`);

/** RSS of the pooler's whole process tree (Odyssey and PgBouncer run as one process; tidepool too). */
function treeRss(pid: number): number {
  return treePids(pid).reduce((a, p) => a + (rssBytes(p) || 0), 0);
}

function pct(xs: number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? NaN;
}

/** `n` logins, at most 200 in flight. */
async function loginMany(port: number, n: number): Promise<RawClient[]> {
  const out: RawClient[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(200, n) }, async () => {
      while (next < n) {
        next++;
        out.push(await rawLogin(port, BENCH_USER, BENCH_PASSWORD, BENCH_DB));
      }
    }),
  );
  return out;
}

/** `clients` each run select 1 back to back for SECONDS; every latency in ms. */
async function closedLoop(clients: RawClient[]): Promise<{ lat: number[]; errors: number }> {
  const lat: number[] = [];
  let errors = 0;
  const until = performance.now() + SECONDS * 1000;
  await Promise.all(
    clients.map(async (c) => {
      while (performance.now() < until) {
        try {
          lat.push(await c.query('select 1'));
        } catch {
          errors++;
        }
      }
    }),
  );
  return { lat, errors };
}

/** closedLoop, and the pooler's CPU over it per query (microseconds). */
async function timedLoop(pid: number, clients: RawClient[]): Promise<{ lat: number[]; errors: number; cpuUs: number }> {
  const t0 = treeTicks(pid);
  const r = await closedLoop(clients);
  return { ...r, cpuUs: (((treeTicks(pid) - t0) / TICKS) * 1e6) / Math.max(1, r.lat.length) };
}

async function settle(): Promise<void> {
  await new Promise((r) => setTimeout(r, 2000));
}

/** The monitor of --scrape-every: /metrics (when the pooler has one) and SHOW POOLS every SCRAPE_MS ms. */
interface Scraper {
  /** Rounds done so far. */
  readonly rounds: number;
  /** Milliseconds each round took (the slowest of /metrics and SHOW POOLS). */
  readonly times: number[];
  errors: number;
  stop(): Promise<void>;
}

function startScraper(metricsUrl: string | null, admin: RawClient | null): Scraper {
  let stopped = false;
  const s: Scraper & { rounds: number } = {
    rounds: 0,
    times: [],
    errors: 0,
    stop: async () => {
      stopped = true;
      await loop;
    },
  };
  const loop = (async () => {
    while (!stopped) {
      const t0 = performance.now();
      try {
        await Promise.all([
          metricsUrl ? fetch(metricsUrl).then((r) => r.text()) : null,
          admin ? admin.query('SHOW POOLS') : null,
        ]);
        s.times.push(performance.now() - t0);
      } catch {
        s.errors++;
      }
      s.rounds++;
      const next = t0 + SCRAPE_MS;
      while (!stopped && performance.now() < next) await new Promise((r) => setTimeout(r, 50));
    }
  })();
  return s;
}

interface Row {
  target: string;
  /** --scrape-every: rounds during the large phase and their median time (ms). */
  scrapes: number;
  scrapeMs: number;
  rssBase: number;
  rssMany: number;
  perIdle: number;
  p50Few: number;
  p99Few: number;
  p50Many: number;
  p99Many: number;
  /** The pooler's CPU (its process tree, user + system) per query in each latency phase, microseconds. */
  cpuFew: number;
  cpuMany: number;
  errors: number;
}

/** How the monitor reaches a peer: its /metrics URL (tidepool's web listener) and its admin console login. */
interface Monitor {
  metricsUrl: string | null;
  admin: { user: string; password: string; database: string } | null;
}

async function measure(peer: RunningPeer, monitor: Monitor): Promise<Row> {
  const active = await loginMany(peer.port, ACTIVE);
  await closedLoop(active.slice(0, 10)); // warm-up: servers open, caches warm
  await settle();
  const rssBase = treeRss(peer.pid);
  say(`${peer.name}: ${ACTIVE} connected, RSS ${(rssBase / 2 ** 20).toFixed(1)} MiB; latency with ${ACTIVE} connected`);
  const few = await timedLoop(peer.pid, active);
  say(`${peer.name}: logging in ${CLIENTS - ACTIVE} idle clients`);
  const idle = await loginMany(peer.port, CLIENTS - ACTIVE);
  let scraper: Scraper | null = null;
  let adminClient: RawClient | null = null;
  if (SCRAPE_MS > 0) {
    const a = monitor.admin;
    adminClient = a ? await rawLogin(peer.port, a.user, a.password, a.database) : null;
    scraper = startScraper(monitor.metricsUrl, adminClient);
    // Two rounds at least: the first may come before the pooler settled what the logins left.
    while (scraper.rounds < 2) await new Promise((r) => setTimeout(r, 50));
  }
  await settle();
  const rssMany = treeRss(peer.pid);
  say(`${peer.name}: ${CLIENTS} connected, RSS ${(rssMany / 2 ** 20).toFixed(1)} MiB; latency of ${ACTIVE} active`);
  const many = await timedLoop(peer.pid, active);
  await scraper?.stop();
  adminClient?.end();
  for (const c of [...active, ...idle]) c.end();
  return {
    target:
      peer.name === 'tidepool'
        ? `tidepool ${peer.version}`
        : `${peer.name} (${/\d+\.\d+(\.\d+)?/.exec(peer.version)?.[0] ?? '?'})`,
    scrapes: scraper?.rounds ?? 0,
    scrapeMs: scraper ? pct(scraper.times, 0.5) : NaN,
    rssBase,
    rssMany,
    perIdle: (rssMany - rssBase) / (CLIENTS - ACTIVE),
    p50Few: pct(few.lat, 0.5),
    p99Few: pct(few.lat, 0.99),
    p50Many: pct(many.lat, 0.5),
    p99Many: pct(many.lat, 0.99),
    cpuFew: few.cpuUs,
    cpuMany: many.cpuUs,
    errors: few.errors + many.errors + (scraper?.errors ?? 0),
  };
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** One target's rounds as one row: the median of each figure; `ratio` is the median of each round's own p99 ratio. */
function medianRow(rs: Row[]): Row & { ratio: number } {
  const m = (f: (r: Row) => number) => median(rs.map(f));
  return {
    target: rs[0]!.target,
    scrapes: m((r) => r.scrapes),
    scrapeMs: m((r) => r.scrapeMs),
    rssBase: m((r) => r.rssBase),
    rssMany: m((r) => r.rssMany),
    perIdle: m((r) => r.perIdle),
    p50Few: m((r) => r.p50Few),
    p99Few: m((r) => r.p99Few),
    p50Many: m((r) => r.p50Many),
    p99Many: m((r) => r.p99Many),
    cpuFew: m((r) => r.cpuFew),
    cpuMany: m((r) => r.cpuMany),
    errors: rs.reduce((a, r) => a + r.errors, 0),
    ratio: m((r) => r.p99Many / r.p99Few),
  };
}

async function main(): Promise<void> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tidepool-idle-clients-'));
  let pg: Awaited<ReturnType<typeof startBenchPostgres>> | null = null;
  let peer: RunningPeer | null = null;
  const cleanup = stopOnExit(
    async () => {
      await peer?.stop().catch(() => undefined);
      await pg?.stop().catch(() => undefined);
    },
    () => [peer?.pid, pg?.pid],
    () => dir,
    say,
  );
  const runs = new Map<string, Row[]>();
  const rows: (Row & { ratio: number })[] = [];
  const load0 = os.loadavg();
  try {
    pg = await startBenchPostgres(dir, { maxConnections: 200, scale: 1, progress: say });
    const secret = benchSecret((q) => pg!.sql(q));
    for (let round = 0; round < ROUNDS; round++) {
      const order = TARGETS.map((_, i) => TARGETS[(i + round) % TARGETS.length]!);
      if (ROUNDS > 1) say(`round ${round + 1} of ${ROUNDS}: ${order.join(', ')}`);
      for (const t of order) {
        const common = {
          dir: path.join(dir, `${t.replace(/\W+/g, '-')}-${round}`),
          serverHost: pg.host,
          serverPort: pg.port,
          poolSize: POOL_SIZE,
        };
        const monitor: Monitor = { metricsUrl: null, admin: null };
        if (t === 'tidepool' || t.startsWith('tidepool@')) {
          const root = t === 'tidepool' ? ROOT : path.resolve(t.slice('tidepool@'.length));
          const webPort = SCRAPE_MS > 0 ? await freePort('127.0.0.1') : 0;
          peer = await startTidepool({
            ...common,
            root,
            generalToml: `max_connections = ${CLIENTS + 1000}`,
            ...(webPort ? { extraToml: `\n[web]\nenabled = true\nhost = "127.0.0.1"\nport = ${webPort}\n` } : {}),
          });
          if (root !== ROOT) peer = { ...peer, version: `${peer.version} (${path.basename(root)})` };
          if (webPort) {
            monitor.metricsUrl = `http://127.0.0.1:${webPort}/metrics`;
            monitor.admin = { ...ADMIN, database: 'pgbouncer' };
          }
        } else if (t === 'PgBouncer 1.25') {
          peer = await startPgBouncer125({
            ...common,
            progress: say,
            secret,
            sessionPoolSize: 1,
            maxClients: CLIENTS + 1000,
            extraIni: [`stats_users = ${BENCH_USER}`],
          });
          monitor.admin = { user: BENCH_USER, password: BENCH_PASSWORD, database: 'pgbouncer' };
        } else if (t === 'Odyssey')
          peer = await startOdyssey({ ...common, progress: say, secret, maxClients: CLIENTS + 1000 });
        else throw new Error(`unknown target ${t} (tidepool, tidepool@DIR, PgBouncer 1.25, Odyssey)`);
        const row = await measure(peer, monitor);
        runs.set(t, [...(runs.get(t) ?? []), row]);
        await peer.stop();
        peer = null;
      }
    }
    for (const t of TARGETS) rows.push(medianRow(runs.get(t)!));
  } finally {
    await cleanup();
  }
  const mib = (b: number) => (b / 2 ** 20).toFixed(1);
  const pgb = rows.find((r) => r.target.startsWith('PgBouncer'));
  const out = [
    '# Many idle clients',
    '',
    `Each pooler alone in turn (transaction mode, pool size ${POOL_SIZE}, md5), ${ACTIVE} clients running \`select 1\` back to back ` +
      `for ${SECONDS} s with ${ACTIVE} connected, then again with ${CLIENTS.toLocaleString('en-US')} connected (the others logged in and idle). ` +
      `RSS of the pooler's process tree 2 s after each phase's logins; per idle client: the difference over the ${(CLIENTS - ACTIVE).toLocaleString('en-US')} idle ones. ` +
      `Pooler CPU per query: the user + system CPU of the pooler's process tree (/proc) over a latency phase divided by the queries answered. ` +
      (ROUNDS > 1
        ? `${ROUNDS} rounds, each running every target once in an order rotated from round to round; each figure is the median over the rounds, the p99 ratio the median of each round's own ratio. `
        : '') +
      (SCRAPE_MS > 0
        ? `Through the ${CLIENTS.toLocaleString('en-US')}-client phase a monitor scraped /metrics (tidepool, its web listener on) and ran SHOW POOLS on the admin console (tidepool, PgBouncer; Odyssey: neither) every ${SCRAPE_MS} ms; that phase's RSS was sampled 2 s after its second round. `
        : '') +
      `Machine: ${os.cpus().length} CPU, Node ${process.version}; load average at the start ${load0.map((x) => x.toFixed(1)).join(', ')}, at the end ${os
        .loadavg()
        .map((x) => x.toFixed(1))
        .join(', ')}.`,
    '',
    `| Pooler | RSS, ${ACTIVE} clients, MiB | RSS, ${CLIENTS} clients, MiB | per idle client, KiB | vs PgBouncer (target <= 1.5x) | p50 / p99 ms, ${ACTIVE} connected | p50 / p99 ms, ${CLIENTS} connected | p99 ratio (target <= 1.2x) | pooler CPU per query µs, ${ACTIVE} / ${CLIENTS} connected |${SCRAPE_MS > 0 ? ' scrape rounds, median ms |' : ''} errors |`,
    `|---|---:|---:|---:|---:|---:|---:|---:|---:|${SCRAPE_MS > 0 ? '---:|' : ''}---:|`,
    ...rows.map(
      (r) =>
        `| ${r.target} | ${mib(r.rssBase)} | ${mib(r.rssMany)} | ${(r.perIdle / 1024).toFixed(2)} | ${pgb ? `${(r.perIdle / pgb.perIdle).toFixed(2)}x` : '-'} | ${r.p50Few.toFixed(2)} / ${r.p99Few.toFixed(2)} | ${r.p50Many.toFixed(2)} / ${r.p99Many.toFixed(2)} | ${r.ratio.toFixed(2)}x | ${r.cpuFew.toFixed(1)} / ${r.cpuMany.toFixed(1)} |${SCRAPE_MS > 0 ? ` ${r.scrapes}, ${r.scrapes ? r.scrapeMs.toFixed(1) : '-'} |` : ''} ${r.errors} |`,
    ),
    ...(ROUNDS > 1
      ? [
          '',
          '| Pooler | p99 ratio per round | p99 ms at 100 / 10 000 connected per round |'
            .replace('100', String(ACTIVE))
            .replace('10 000', CLIENTS.toLocaleString('en-US')),
          '|---|---|---|',
          ...TARGETS.map((t) => {
            const rs = runs.get(t)!;
            return `| ${rs[0]!.target} | ${rs.map((r) => (r.p99Many / r.p99Few).toFixed(2)).join(', ')} | ${rs.map((r) => `${r.p99Few.toFixed(1)} / ${r.p99Many.toFixed(1)}`).join(', ')} |`;
          }),
        ]
      : []),
    '',
    `Run: \`node dist/bench/pooler-idle-clients.js ${process.argv.slice(2).join(' ')}\` (${new Date().toISOString().slice(0, 10)}).`,
    '',
  ].join('\n');
  const outIdx = process.argv.indexOf('--out');
  if (outIdx >= 0) writeFileSync(path.resolve(process.argv[outIdx + 1]!), out);
  else writeResults(path.join(ROOT, 'bench', 'results', 'pooler-idle-clients.md'), out);
  process.stdout.write(out);
  if (rows.some((r) => r.errors > 0)) process.exitCode = 1;
}

main().catch((err: Error) => {
  process.stderr.write(`${err.stack ?? err.message}\n`);
  process.exitCode = 1;
});
