// Keeps a log-store process (single, proxy, store, or the UI backend) running until SIGTERM or SIGINT, then closes it once (a failed close is logged).
import type { Logger } from 'pino';

export function runUntilSignal(close: () => Promise<void>, log: Logger): Promise<void> {
  return new Promise<void>((resolve) => {
    const stop = (sig: string) => {
      log.info({ signal: sig }, 'shutting down');
      close().then(resolve, (err: Error) => {
        log.error({ err }, 'shutdown failed');
        resolve();
      });
    };
    process.once('SIGTERM', () => stop('SIGTERM'));
    process.once('SIGINT', () => stop('SIGINT'));
  });
}
