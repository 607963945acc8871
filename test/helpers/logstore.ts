// Test helper: builds dist/ when the log-store sources are newer, and runs the log store as a real child process.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  rmdirSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

function newestTs(dir: string): number {
  let newest = 0;
  if (!existsSync(dir)) return 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) newest = Math.max(newest, newestTs(p));
    else if (e.name.endsWith('.ts')) newest = Math.max(newest, statSync(p).mtimeMs);
  }
  return newest;
}

/** Runs tsc when a log-store source is newer than the compiled worker (tests load workers from dist/). */
export function ensureBuilt(): void {
  const marker = path.join(ROOT, 'dist', 'src', 'logstore', 'storage', 'shard-worker.js');
  const sources = Math.max(
    ...['src/logstore', 'src/config', 'src/native', 'src/shared'].map((d) => newestTs(path.join(ROOT, d))),
    statSync(path.join(ROOT, 'src', 'cli.ts')).mtimeMs,
  );
  if (existsSync(marker) && statSync(marker).mtimeMs >= sources) return;
  const lock = path.join(ROOT, 'dist', '.logstore-build-lock');
  mkdirSync(path.join(ROOT, 'dist'), { recursive: true });
  for (let i = 0; i < 600; i++) {
    try {
      mkdirSync(lock);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      spawnSync('sleep', ['0.2']);
      if (existsSync(marker) && statSync(marker).mtimeMs >= sources) return;
    }
  }
  try {
    // tsc exits non-zero when any file of the repository has a type error but still emits; the marker decides.
    spawnSync(
      process.execPath,
      [path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', path.join(ROOT, 'tsconfig.json')],
      { cwd: ROOT, encoding: 'utf8' },
    );
    if (!existsSync(marker)) throw new Error('tsc did not produce dist/src/logstore/storage/shard-worker.js');
  } finally {
    rmdirSync(lock);
  }
}

export interface LogstoreProcess {
  mode: LogstoreMode;
  /** HTTP API base URL (empty in store mode). */
  url: string;
  /** gRPC address, "127.0.0.1:<port>". */
  grpcAddr: string;
  debugUrl: string;
  dir: string;
  dataDir: string;
  configFile: string;
  child: ChildProcess;
  output(): string;
  /** SIGTERM and wait. */
  stop(): Promise<void>;
  /** SIGKILL and wait. */
  kill9(): Promise<void>;
  /** Starts the same config again (after stop or kill9). */
  restart(): Promise<void>;
  /** The `ulimit -f` the next start runs under (undefined: none). */
  fileBlocks?: number;
  /** Stops the process (if running) and removes the temporary directory. */
  cleanup(): Promise<void>;
}

export type LogstoreMode = 'single' | 'proxy' | 'store' | 'ingestor';

export interface LogstoreOptions {
  /** --mode; absent: single. */
  mode?: LogstoreMode;
  /** cluster.* keys (hot_stores, hot_replicas, request_timeout, ...). */
  cluster?: Record<string, unknown>;
  /** The gRPC port to bind (so a store restarts on the address its proxy knows); absent: a free one. */
  grpcPort?: number;
  /** server.* keys over the defaults (127.0.0.1:0 for http and debug). */
  server?: Record<string, unknown>;
  storage?: Record<string, unknown>;
  limits?: Record<string, unknown>;
  /** search.* keys (timeout). */
  search?: Record<string, unknown>;
  /** Mapping YAML text; absent: auto. */
  mapping?: string;
  /** `ulimit -f` of the process, in 512-byte blocks (sh's unit): a write past it fails with EFBIG, as on a full disk. */
  fileBlocks?: number;
  /** storage.data_dir (e.g. on a small filesystem); absent: `data` in the temporary directory. */
  dataDir?: string;
}

function yamlOf(obj: Record<string, Record<string, unknown>>): string {
  return (
    Object.entries(obj)
      .map(
        ([sec, kv]) =>
          `${sec}:\n${Object.entries(kv)
            .map(([k, v]) => `  ${k}: ${JSON.stringify(v)}`)
            .join('\n')}`,
      )
      .join('\n') + '\n'
  );
}

export function tempDir(prefix = 'tidepool-ls-'): string {
  return mkdtempSync(path.join(os.tmpdir(), prefix));
}

export function runCli(args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [path.join(ROOT, 'bin', 'tidepool.js'), ...args], {
    encoding: 'utf8',
    timeout: 30_000,
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

export async function startLogstore(opts: LogstoreOptions = {}): Promise<LogstoreProcess> {
  ensureBuilt();
  const dir = tempDir();
  const dataDir = opts.dataDir ?? path.join(dir, 'data');
  const mapping: Record<string, unknown> = { path: 'auto' };
  if (opts.mapping) {
    writeFileSync(path.join(dir, 'mapping.yaml'), opts.mapping);
    mapping.path = path.join(dir, 'mapping.yaml');
  }
  const configFile = path.join(dir, 'logstore.yaml');
  writeFileSync(
    configFile,
    yamlOf({
      server: {
        http_addr: '127.0.0.1:0',
        grpc_addr: `127.0.0.1:${opts.grpcPort ?? 0}`,
        debug_addr: '127.0.0.1:0',
        ...opts.server,
      },
      storage: { data_dir: dataDir, shards: 2, ...opts.storage },
      mapping,
      limits: { ...opts.limits },
      search: { ...opts.search },
      cluster: { ...opts.cluster },
      log: { level: 'warn' },
    }),
  );
  let out = '';
  let child!: ChildProcess;
  const launch = () =>
    new Promise<void>((resolve, reject) => {
      const argv = [path.join(ROOT, 'bin', 'tidepool.js'), 'logstore', '--mode', mode, `--config=${configFile}`];
      child =
        proc.fileBlocks === undefined
          ? spawn(process.execPath, argv, { stdio: ['ignore', 'pipe', 'pipe'] })
          : spawn('/bin/sh', ['-c', `ulimit -f ${proc.fileBlocks} && exec "$0" "$@"`, process.execPath, ...argv], {
              stdio: ['ignore', 'pipe', 'pipe'],
            });
      const onData = (d: Buffer) => {
        out += d.toString();
        const m = /listening on http ([\d.]+:\d+), debug ([\d.]+:\d+), grpc ([\d.]+:\d+)/.exec(out.slice(start));
        const st = /\(store mode\) listening on grpc ([\d.]+:\d+), debug ([\d.]+:\d+)/.exec(out.slice(start));
        if (m) {
          proc.url = `http://${m[1]}`;
          proc.debugUrl = `http://${m[2]}`;
          proc.grpcAddr = m[3]!;
          resolve();
        } else if (st) {
          proc.grpcAddr = st[1]!;
          proc.debugUrl = `http://${st[2]}`;
          resolve();
        }
      };
      const start = out.length;
      child.stdout!.on('data', onData);
      child.stderr!.on('data', (d: Buffer) => {
        out += d.toString();
      });
      child.once('exit', (code, sig) =>
        reject(new Error(`log store exited (${code ?? sig}) before listening:\n${out}`)),
      );
    });
  const waitExit = () =>
    new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) resolve();
      else child.once('exit', () => resolve());
    });
  const mode = opts.mode ?? 'single';
  const proc: LogstoreProcess = {
    mode,
    url: '',
    grpcAddr: '',
    debugUrl: '',
    dir,
    dataDir,
    configFile,
    fileBlocks: opts.fileBlocks,
    get child() {
      return child;
    },
    output: () => out,
    async stop() {
      const done = waitExit();
      child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await done;
      clearTimeout(t);
    },
    async kill9() {
      const done = waitExit();
      child.kill('SIGKILL');
      await done;
    },
    async restart() {
      // The same gRPC port again, so that a proxy finds a restarted store where it was.
      if (proc.grpcAddr)
        writeFileSync(
          configFile,
          readFileSync(configFile, 'utf8').replace(/grpc_addr: "127\.0\.0\.1:0"/, `grpc_addr: "${proc.grpcAddr}"`),
        );
      await launch();
    },
    async cleanup() {
      if (child.exitCode === null && child.signalCode === null) await proc.kill9();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  await launch();
  return proc;
}

export async function postJson<T = Record<string, unknown>>(
  url: string,
  body: unknown,
): Promise<{ status: number; body: T }> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: JSON.parse(text) as T };
}

/** NDJSON bulk body from documents (each preceded by {"index":{}}). */
export function ndjson(docs: unknown[]): string {
  return docs.map((d) => `{"index":{}}\n${typeof d === 'string' ? d : JSON.stringify(d)}\n`).join('');
}

export async function bulk(
  url: string,
  body: string | Uint8Array,
  headers: Record<string, string> = {},
): Promise<{
  status: number;
  body: {
    errors: boolean;
    items: Record<string, { status: number; _id: string | null; error?: { type: string; reason: string } }>[];
  } & Record<string, unknown>;
}> {
  const res = await fetch(`${url}/_bulk`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-ndjson', ...headers },
    body: body as BodyInit,
  });
  return { status: res.status, body: JSON.parse(await res.text()) };
}
