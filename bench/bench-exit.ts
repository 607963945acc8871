// How a pooler benchmark stops what it started, however it ends.
import { rmSync } from 'node:fs';

/**
 * Returns the benchmark's cleanup, to call when it ends (also on failure). On SIGINT, SIGTERM and SIGHUP it runs that
 * cleanup and exits 130 (SIGKILL of `pids()` if the cleanup takes over 15 s). On any other exit before the cleanup
 * finished, such as an uncaught EPIPE when the output was piped into `head`, it SIGKILLs `pids()` (what may still run:
 * PostgreSQL, the poolers, pgbench) and removes `dir()`, synchronously, as an 'exit' listener must.
 */
export function stopOnExit(
  cleanup: () => Promise<void>,
  pids: () => readonly (number | null | undefined)[],
  dir: () => string,
  say: (msg: string) => void,
): () => Promise<void> {
  let done = false;
  const kill = () => {
    for (const pid of pids()) {
      if (!pid || pid < 0) continue;
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* already gone */
      }
    }
    const d = dir();
    if (d) rmSync(d, { recursive: true, force: true });
  };
  const stop = async () => {
    await cleanup();
    done = true;
  };
  let stopping = false;
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.on(sig, () => {
      // A second signal (timeout and a terminal send one to the whole group) waits for the first one's cleanup.
      if (stopping) return;
      stopping = true;
      say(`${sig}: stopping what this benchmark started`);
      const force = setTimeout(() => {
        kill();
        process.exit(130);
      }, 15_000);
      void stop().finally(() => {
        clearTimeout(force);
        process.exit(130);
      });
    });
  }
  process.on('exit', () => {
    if (!done) kill();
  });
  return stop;
}

/** Runs a benchmark's `main`, then `stop` (what it started) whether it succeeded or failed; a failure is said with
 * its stack and makes the exit code 1. */
export function runBench(main: () => Promise<void>, stop: () => Promise<void>, say: (msg: string) => void): void {
  main().then(stop, async (err: unknown) => {
    say(`failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    await stop();
    process.exitCode = 1;
  });
}
