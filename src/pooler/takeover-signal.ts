// SIGUSR2 to a running pooler starts the same takeover as `tidepool pooler --config X --takeover` (issue 38), as
// pg_doorman does: the process checks the new code's config first (the command it was started with plus -t, run to
// its end), then spawns that command plus --takeover as a new process of its own session, which takes the listening
// sockets and clients over the takeover socket (takeover.ts, takeover-clients.ts) while this one shuts down.
//
// The new process is `process.execPath` with this process's Node flags and arguments: after an upgrade in place (new
// files under the same path, a new node at the same path) it runs the new code. A bad config, or a takeover the new
// process refuses (it exits non-zero), leaves this process serving; the reason is on this process's log (the config
// check's output) and on the shared stderr (the new process's own message).
import { spawn, type ChildProcess } from 'node:child_process';
import type { Logger } from 'pino';

/** Longest the config check (`... -t`) may take. */
const CHECK_TIMEOUT_MS = 30_000;
/** Most of the config check's output kept for the log line. */
const MAX_CHECK_OUTPUT = 8192;

export interface SignalTakeoverHost {
  /** Why this process cannot be taken over now (shutting down, handed over, no takeover socket), or null. */
  refuse(): string | null;
}

/** The command that starts this process again: node, its flags, the script and its arguments (without --takeover). */
export function relaunchCommand(
  argv: readonly string[] = process.argv,
  execArgv: readonly string[] = process.execArgv,
): { command: string; args: string[] } {
  const args = [...execArgv, ...argv.slice(1).filter((a) => a !== '--takeover')];
  return { command: process.execPath, args };
}

/** Answers SIGUSR2: one takeover at a time. */
export class SignalTakeover {
  private running = false;
  /** The last takeover process spawned (for tests and the log). */
  child: ChildProcess | null = null;

  constructor(
    private readonly host: SignalTakeoverHost,
    private readonly log: Logger,
    private readonly cmd = relaunchCommand(),
  ) {}

  /** Installs the SIGUSR2 handler (before the pooler listens: the default action of SIGUSR2 ends the process). */
  install(): void {
    process.on('SIGUSR2', () => void this.trigger());
  }

  /** Runs one takeover: resolves true once the new process is spawned, false when it was not (logged). */
  async trigger(): Promise<boolean> {
    if (this.running) {
      this.log.warn('SIGUSR2: a takeover is under way already; ignored');
      return false;
    }
    const refused = this.host.refuse();
    if (refused !== null) {
      this.log.warn({ reason: refused }, 'SIGUSR2: no takeover');
      return false;
    }
    this.running = true;
    try {
      this.log.info({ command: [this.cmd.command, ...this.cmd.args].join(' ') }, 'SIGUSR2: checking the new config');
      const check = await this.check();
      if (check.code !== 0) {
        this.log.error(
          { exit_code: check.code, errors: check.output.trim() },
          'SIGUSR2: the new process would not start (config check failed); this process serves on',
        );
        return false;
      }
      if (this.host.refuse() !== null) return false;
      const child = spawn(this.cmd.command, [...this.cmd.args, '--takeover'], {
        detached: true,
        stdio: 'inherit',
        env: process.env,
      });
      this.child = child;
      const pid = await new Promise<number | null>((resolve) => {
        child.once('spawn', () => resolve(child.pid ?? null));
        child.once('error', (err) => {
          this.log.error({ err: err.message }, 'SIGUSR2: the takeover process could not be started; serving on');
          resolve(null);
        });
      });
      if (pid === null) return false;
      child.unref();
      this.log.info({ successor: pid }, 'SIGUSR2: takeover process started');
      child.once('exit', (code, signal) => {
        if (code === 0) return;
        // Before it listened this process serves on (takeover.ts); after, this one is shutting down anyway.
        this.log.error(
          { successor: pid, exit_code: code, signal },
          'SIGUSR2: the takeover process exited (its reason is on its stderr)',
        );
      });
      return true;
    } finally {
      this.running = false;
    }
  }

  /** The command plus -t: the new code validates the config file and exits 0 or 1. */
  private check(): Promise<{ code: number | null; output: string }> {
    return new Promise((resolve) => {
      const child = spawn(this.cmd.command, [...this.cmd.args, '-t'], {
        stdio: ['ignore', 'pipe', 'pipe'],
        env: process.env,
        timeout: CHECK_TIMEOUT_MS,
      });
      let output = '';
      const add = (d: Buffer) => {
        if (output.length < MAX_CHECK_OUTPUT) output += d.toString('utf8');
      };
      child.stdout!.on('data', add);
      child.stderr!.on('data', add);
      child.once('error', (err) => resolve({ code: null, output: err.message }));
      child.once('close', (code, signal) =>
        resolve({ code, output: signal ? `${output}\n(killed by ${signal})` : output.slice(0, MAX_CHECK_OUTPUT) }),
      );
    });
  }
}
