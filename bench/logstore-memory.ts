// Log-store memory under load: 200 MB bulks (one, five in a row, four senders at once) into a single-mode log
// store with default settings, peak resident memory (VmHWM, reset before each step) and ingest CPU per document.
// Usage: node dist/bench/logstore-memory.js [--mb 200] [--repeat 5] [--senders 4] [--filter-path]
//   [--tidepool DIR[,DIR...]] (run the log store of other built checkouts too, alternating with this one)
//   [--out bench/results/logstore-memory.md]
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { mulberry32 } from '../test/helpers/prng.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const WORK = path.join(ROOT, 'bench', '.work', 'memory');

function arg(name: string, dflt: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1]! : dflt;
}
const MB = Number(arg('mb', '200'));
const REPEAT = Number(arg('repeat', '5'));
const SENDERS = Number(arg('senders', '4'));
const FILTER = process.argv.includes('--filter-path');
const OUT = path.resolve(arg('out', path.join(ROOT, 'bench', 'results', 'logstore-memory.md')));
const OTHERS = arg('tidepool', '')
  .split(',')
  .filter(Boolean)
  .map((d) => path.resolve(d));

const WORDS = ['images', 'english', 'french', 'spanish', 'news', 'teams', 'venues', 'tickets', 'history', 'players'];
const EXT = ['gif', 'html', 'jpg', 'htm', 'css', 'js'];
const SERVICES = ['www', 'cdn', 'api', 'shop', 'media'];
const START = Date.parse('2026-11-20T00:00:00Z');

/** One bulk body of about `mb` MiB of http_logs-shaped documents (each with a plain index action). */
function makeBody(mb: number): { body: Buffer; docs: number } {
  const r = mulberry32(1);
  const target = mb * 1024 * 1024;
  const body = Buffer.allocUnsafe(target + 4096);
  let pos = 0;
  let docs = 0;
  while (pos < target) {
    const t = new Date(START + docs * 7).toISOString();
    const ip = `${(r() * 223 + 1) | 0}.${(r() * 255) | 0}.${(r() * 255) | 0}.${(r() * 40) | 0}`;
    let p = '';
    for (let k = 0; k < 1 + ((r() * 3) | 0); k++) p += `/${WORDS[(r() * r() * WORDS.length) | 0]}`;
    p += `_${(r() * 300) | 0}.${EXT[(r() * EXT.length) | 0]}`;
    const status = r() < 0.9 ? 200 : r() < 0.5 ? 404 : 500;
    const line = `{"index":{}}\n{"timestamp":"${t}","clientip":"${ip}","request":"GET ${p} HTTP/1.0","status":${status},"size":${(r() * r() * 50_000) | 0},"service":"${SERVICES[(r() * r() * 5) | 0]}"}\n`;
    pos += body.write(line, pos);
    docs++;
  }
  return { body: body.subarray(0, pos), docs };
}

interface Proc {
  child: ChildProcess;
  port: number;
}

async function startStore(root: string, dir: string): Promise<Proc> {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const cfg = path.join(dir, 'logstore.yaml');
  // Defaults everywhere (shards, frac_size, limits, auto mapping) but the addresses and the data directory.
  writeFileSync(
    cfg,
    `server:\n  http_addr: 127.0.0.1:0\n  grpc_addr: 127.0.0.1:0\n  debug_addr: 127.0.0.1:0\nstorage:\n  data_dir: ${path.join(dir, 'data')}\nlog:\n  level: warn\n`,
  );
  const child = spawn(
    process.execPath,
    [path.join(root, 'bin', 'tidepool.js'), 'logstore', '--mode', 'single', '--config', cfg],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  return new Promise<Proc>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /listening on http [\d.]+:(\d+)/.exec(out);
      if (m) resolve({ child, port: Number(m[1]) });
    });
    child.once('exit', (c) => reject(new Error(`log store exited ${c}`)));
  });
}

async function stopStore(p: Proc): Promise<void> {
  const done = new Promise((r) => p.child.once('exit', r));
  p.child.kill('SIGTERM');
  await done;
}

function procStatus(pid: number): { rss: number; hwm: number } {
  const s = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (k: string) => Number(new RegExp(`${k}:\\s+(\\d+) kB`).exec(s)![1]) * 1024;
  return { rss: kb('VmRSS'), hwm: kb('VmHWM') };
}

/** Resets VmHWM to the current RSS, so the next reading is the peak of one step. */
function resetPeak(pid: number): void {
  writeFileSync(`/proc/${pid}/clear_refs`, '5');
}

function cpuSeconds(pid: number): number {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(f[11]) + Number(f[12])) / 100;
}

interface BulkAnswer {
  status: number;
  bytes: number;
  items: number;
  errors: boolean;
}

/** Sends one bulk and reads its whole answer, counting items (the client side of a shipper). */
function sendBulk(port: number, body: Buffer): Promise<BulkAnswer> {
  const q = FILTER ? '?filter_path=errors,items.*.error,items.*.status' : '';
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: `/_bulk${q}`,
        headers: { 'content-type': 'application/x-ndjson', 'content-length': body.length },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const all = Buffer.concat(chunks);
          let items = 0;
          const mark = Buffer.from('"status":');
          for (let at = all.indexOf(mark); at >= 0; at = all.indexOf(mark, at + 9)) items++;
          const head = all.subarray(0, 200).toString();
          resolve({
            status: res.statusCode ?? 0,
            bytes: all.length,
            items: res.statusCode === 200 ? items : 0,
            errors: !/"errors":false/.test(head),
          });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

async function shardDocs(port: number): Promise<number[]> {
  const text = await new Promise<string>((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, path: '/status' }, (res) => {
        let s = '';
        res.on('data', (c) => (s += c));
        res.on('end', () => resolve(s));
      })
      .on('error', reject);
  });
  const st = JSON.parse(text) as { per_shard: { fractions: { docs: number }[] }[] };
  return st.per_shard.map((s) => s.fractions.reduce((a, f) => a + f.docs, 0));
}

interface Step {
  name: string;
  peak: number;
  rssAfter: number;
  seconds: number;
  cpu: number;
  docs: number;
  answerBytes: number;
  ok: boolean;
}

/** Runs `senders` bulks at once and measures the step's peak RSS, time and CPU. */
async function step(name: string, p: Proc, body: Buffer, docs: number, senders: number): Promise<Step> {
  const pid = p.child.pid!;
  resetPeak(pid);
  const cpu0 = cpuSeconds(pid);
  const t0 = process.hrtime.bigint();
  const answers = await Promise.all(Array.from({ length: senders }, () => sendBulk(p.port, body)));
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  const cpu = cpuSeconds(pid) - cpu0;
  const { hwm, rss } = procStatus(pid);
  const ok = answers.every((a) => a.status === 200 && !a.errors && a.items === docs);
  if (!ok) process.stderr.write(`${name}: ${JSON.stringify(answers)}\n`);
  return { name, peak: hwm, rssAfter: rss, seconds, cpu, docs: docs * senders, answerBytes: answers[0]!.bytes, ok };
}

const mib = (b: number) => (b / 1048576).toFixed(0);

async function runTarget(
  label: string,
  root: string,
  body: Buffer,
  docs: number,
): Promise<{ label: string; idle: number; steps: Step[]; shards: number[] }> {
  const p = await startStore(root, path.join(WORK, label.replace(/\W+/g, '-')));
  try {
    await new Promise((r) => setTimeout(r, 500));
    const idle = procStatus(p.child.pid!).rss;
    const steps: Step[] = [];
    for (let i = 1; i <= REPEAT; i++) {
      steps.push(await step(`bulk ${i} of ${REPEAT} in a row`, p, body, docs, 1));
      process.stderr.write(`${label}: ${steps.at(-1)!.name}: peak ${mib(steps.at(-1)!.peak)} MiB\n`);
    }
    steps.push(await step(`${SENDERS} senders at once`, p, body, docs, SENDERS));
    process.stderr.write(`${label}: ${steps.at(-1)!.name}: peak ${mib(steps.at(-1)!.peak)} MiB\n`);
    return { label, idle, steps, shards: await shardDocs(p.port) };
  } finally {
    await stopStore(p);
  }
}

async function main(): Promise<void> {
  const load = os.loadavg();
  process.stderr.write(`generating a ${MB} MiB bulk\n`);
  const { body, docs } = makeBody(MB);
  const targets: [string, string][] = [
    ['this build', ROOT],
    ...OTHERS.map((d) => [path.basename(d), d] as [string, string]),
  ];
  const results = [];
  for (const [label, root] of targets) results.push(await runTarget(label, root, body, docs));
  rmSync(WORK, { recursive: true, force: true });
  const lines = [
    '# Log store memory under load',
    '',
    `One bulk body of ${mib(body.length)} MiB (${docs.toLocaleString('en')} http_logs-shaped documents, \`{"index":{}}\` actions), sent ${REPEAT} times in a row, then by ${SENDERS} senders at once, to a single-mode log store with default settings (auto mapping, \`storage.shards\` = ${os.cpus().length} CPUs, \`frac_size\` 128MB, \`limits.*\` defaults)${FILTER ? ', with `?filter_path=errors,items.*.error,items.*.status` as Logstash and Beats send it' : ', without `filter_path` (the whole answer)'}. Peak = VmHWM of the log-store process, reset (\`/proc/<pid>/clear_refs\` 5) before each step; CPU = user + system seconds of the process, all threads. Machine: ${os.cpus().length} CPU, Node ${process.version}; load average at the start ${load.map((x) => x.toFixed(1)).join(', ')} (shared with other work).`,
    '',
  ];
  for (const r of results) {
    lines.push(
      `## ${r.label}`,
      '',
      `Idle RSS ${mib(r.idle)} MiB; documents per shard at the end: ${r.shards.map((n) => n.toLocaleString('en')).join(', ')}.`,
      '',
    );
    lines.push(
      '| Step | Peak RSS, MiB | RSS after, MiB | Seconds | Docs/s | Docs per CPU-second | Answer, MiB | All items 201 |',
      '|---|---:|---:|---:|---:|---:|---:|---|',
    );
    for (const s of r.steps) {
      lines.push(
        `| ${s.name} | ${mib(s.peak)} | ${mib(s.rssAfter)} | ${s.seconds.toFixed(1)} | ${Math.round(s.docs / s.seconds).toLocaleString('en')} | ${Math.round(s.docs / s.cpu).toLocaleString('en')} | ${(s.answerBytes / 1048576).toFixed(1)} | ${s.ok ? 'yes' : 'no'} |`,
      );
    }
    lines.push('');
  }
  lines.push(
    `Run: \`node dist/bench/logstore-memory.js${process.argv.slice(2).length ? ' ' + process.argv.slice(2).join(' ') : ''}\` (${new Date().toISOString().slice(0, 10)}).`,
    '',
  );
  writeFileSync(OUT, lines.join('\n'));
  process.stdout.write(lines.join('\n'));
}

main().catch((err: Error) => {
  process.stderr.write(`${err.stack ?? err.message}\n`);
  process.exit(1);
});
