// The process's descriptor limit (RLIMIT_NOFILE, soft), for keeping net.Server's accepts below it.
import { readFileSync } from 'node:fs';

/** The soft "Max open files" of /proc/self/limits (Linux); 0 when unknown or unlimited. */
export function openFileLimit(): number {
  let text: string;
  try {
    text = readFileSync('/proc/self/limits', 'utf8');
  } catch {
    // Not Linux: no limit known, net.Server's accepts are not capped.
    return 0;
  }
  const m = /^Max open files\s+(\d+)/m.exec(text);
  return m ? Number(m[1]) : 0;
}

/** Client sockets net.Server may hold for a descriptor limit: the rest stay for server connections, the web
 * listener, log files and Node's own (an eighth, at least 32). libuv closes a client silently when accept() fails
 * with EMFILE, so the pooler refuses (and counts) before the limit rather than at it. */
export function clientSocketCap(limit: number): number {
  return limit > 0 ? Math.max(16, limit - Math.max(32, Math.floor(limit / 8))) : 0;
}
