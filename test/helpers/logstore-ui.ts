// Test helper: runs the log-store UI backend (`tidepool logstore-ui`) as a real child process over a temporary config.
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ROOT, ensureBuilt, tempDir } from './logstore.js';

export interface UiProcess {
  url: string;
  grpcAddr: string;
  debugUrl: string;
  dir: string;
  child: ChildProcess;
  output(): string;
  /** Peak resident memory so far (VmHWM), in bytes. */
  peakRss(): number;
  rss(): number;
  stop(): Promise<void>;
  cleanup(): Promise<void>;
}

export interface UiOptions {
  logstoreAddrs: string[];
  clients?: Record<string, unknown>;
  limits?: Record<string, unknown>;
  tail?: Record<string, unknown>;
  /** Extra raw YAML appended to the config. */
  extraYaml?: string;
  /** Node.js flags for the process (e.g. a heap cap). */
  nodeArgs?: string[];
  /** saved_queries.path; absent: saved.db in the temporary directory. */
  savedQueriesPath?: string;
}

function status(pid: number, key: string): number {
  const m = new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) * 1024 : 0;
}

function yamlBlock(indent: string, obj: Record<string, unknown>): string {
  return Object.entries(obj)
    .map(([k, v]) =>
      typeof v === 'object' && v !== null && !Array.isArray(v)
        ? `${indent}${k}:\n${yamlBlock(`${indent}  `, v as Record<string, unknown>)}`
        : `${indent}${k}: ${JSON.stringify(v)}`,
    )
    .join('\n');
}

export async function startUi(opts: UiOptions): Promise<UiProcess> {
  ensureBuilt();
  const dir = tempDir('tidepool-ui-');
  const configFile = path.join(dir, 'ui.yaml');
  writeFileSync(
    configFile,
    `${yamlBlock('', {
      server: { http_addr: '127.0.0.1:0', grpc_addr: '127.0.0.1:0', debug_addr: '127.0.0.1:0' },
      clients: { logstore_addrs: opts.logstoreAddrs, logstore_timeout: '5s', ...opts.clients },
      handlers: { logstore_api: { ...opts.limits } },
      saved_queries: { path: opts.savedQueriesPath ?? path.join(dir, 'saved.db') },
      tail: { poll_interval: '200ms', ...opts.tail },
      log: { level: 'warn' },
    })}\n${opts.extraYaml ?? ''}`,
  );
  let out = '';
  const child = spawn(
    process.execPath,
    [...(opts.nodeArgs ?? []), path.join(ROOT, 'bin', 'tidepool.js'), 'logstore-ui', '--config', configFile],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const proc: UiProcess = {
    url: '',
    grpcAddr: '',
    debugUrl: '',
    dir,
    child,
    output: () => out,
    peakRss: () => status(child.pid!, 'VmHWM'),
    rss: () => status(child.pid!, 'VmRSS'),
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const done = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await done;
      clearTimeout(t);
    },
    async cleanup() {
      await proc.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /listening on http ([\d.]+:\d+), grpc ([\d.]+:\d+), debug ([\d.]+:\d+)/.exec(out);
      if (m && !proc.url) {
        proc.url = `http://${m[1]}`;
        proc.grpcAddr = m[2]!;
        proc.debugUrl = `http://${m[3]}`;
        resolve();
      }
    });
    child.stderr!.on('data', (d: Buffer) => {
      out += d.toString();
    });
    child.once('exit', (code, sig) =>
      reject(new Error(`logstore-ui exited (${code ?? sig}) before listening:\n${out}`)),
    );
  });
  return proc;
}

export async function api<T = Record<string, any>>(
  ui: UiProcess,
  method: string,
  p: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: T }> {
  const res = await fetch(`${ui.url}/api/v1${p}`, {
    method,
    headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new Error(
      `${method} ${p}: ${res.status} answered non-JSON (${(err as Error).message}): ${text.slice(0, 300)}`,
    );
  }
  return { status: res.status, body: parsed as T };
}
