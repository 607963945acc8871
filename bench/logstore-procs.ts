// Log-store processes for the benches: a config directory (http_logs mapping, ports on 0), a start that reads the
// listening line for the HTTP port and gRPC address, and a stop by pid that waits for the exit.
import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Pool } from 'undici';

export interface LogstoreProc {
  child: ChildProcess;
  port: number;
  grpc: string;
}

/** The http_logs mapping the benches index (request text, the rest keywords). */
export const HTTP_LOGS_MAPPING =
  'mapping-list:\n  - {name: clientip, type: keyword}\n  - {name: request, type: text}\n  - {name: status, type: keyword}\n  - {name: size, type: keyword}\n  - {name: service, type: keyword}\n';

/** Writes `dir`/mapping.yaml and `dir`/logstore.yaml (every port 0, data in `dir`/data) and returns the config path. */
export function logstoreConfig(dir: string, shards: number, cluster = ''): string {
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, 'mapping.yaml'), HTTP_LOGS_MAPPING);
  const file = path.join(dir, 'logstore.yaml');
  writeFileSync(
    file,
    `server:\n  http_addr: 127.0.0.1:0\n  grpc_addr: 127.0.0.1:0\n  debug_addr: 127.0.0.1:0\nstorage:\n  data_dir: ${path.join(dir, 'data')}\n  shards: ${shards}\nmapping:\n  path: ${path.join(dir, 'mapping.yaml')}\nlog:\n  level: warn\n${cluster}`,
  );
  return file;
}

/** Starts `root`'s bin/tidepool.js in `mode` with node flags `extra`; resolves once it listens (a store has no HTTP port: 0). */
export function startLogstore(root: string, mode: string, cfg: string, extra: string[] = []): Promise<LogstoreProc> {
  const child = spawn(
    process.execPath,
    [...extra, path.join(root, 'bin', 'tidepool.js'), 'logstore', '--mode', mode, '--config', cfg],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      // BENCH_TEE=FILE: the processes' standard output appended there too (node's --trace-gc writes to it).
      if (process.env.BENCH_TEE) appendFileSync(process.env.BENCH_TEE, d);
      const m = /listening on http [\d.]+:(\d+), debug [\d.]+:\d+, grpc ([\d.]+:\d+)/.exec(out);
      const st = /listening on grpc ([\d.]+:\d+)/.exec(out);
      if (m) resolve({ child, port: Number(m[1]), grpc: m[2]! });
      else if (st) resolve({ child, port: 0, grpc: st[1]! });
    });
    child.once('exit', (c) => reject(new Error(`log store (${mode}) exited ${c}`)));
  });
}

/** SIGTERM by pid, then waits for the exit (the active fraction is sealed on the way out). */
export async function stopLogstore(p: LogstoreProc): Promise<void> {
  if (p.child.exitCode !== null) return;
  const done = new Promise((r) => p.child.once('exit', r));
  p.child.kill('SIGTERM');
  await done;
}

const kept = new Map<number, Pool>();

/** A request through undici with one kept connection per port (as the pg driver keeps one), the body read whole as text. */
export async function keptRequest(
  port: number,
  method: string,
  p: string,
  body: string,
): Promise<{ status: number; text: string }> {
  let pool = kept.get(port);
  if (!pool) kept.set(port, (pool = new Pool(`http://127.0.0.1:${port}`, { connections: 1, pipelining: 1 })));
  const res = await pool.request({
    method: method as 'GET' | 'POST',
    path: p,
    ...(body ? { body, headers: { 'content-type': 'application/json' } } : {}),
  });
  return { status: res.statusCode, text: await res.body.text() };
}

/** Closes keptRequest's connections. */
export async function closeKept(): Promise<void> {
  for (const pool of kept.values()) await pool.close();
  kept.clear();
}
