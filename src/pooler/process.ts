// Runs the pooler as the process's main job: logs, signals (SIGHUP reload, SIGTERM graceful, SIGINT now).
import { LogHub } from '../shared/logger.js';
import { ConfigError } from '../config/pooler.js';
import { Pooler } from './pooler.js';

export async function startPoolerProcess(file: string): Promise<number> {
  const logs = new LogHub();
  const log = logs.get('pooler::process');
  const pooler = await Pooler.start(file, logs);
  process.on('SIGHUP', () => {
    pooler.reload().catch((err: unknown) => {
      log.error({ err: err instanceof ConfigError ? err.message : String(err) }, 'RELOAD failed, the old configuration stays');
    });
  });
  process.on('SIGTERM', () => {
    log.info({ shutdown_timeout_ms: pooler.config.general.shutdown_timeout }, 'SIGTERM: graceful shutdown');
    void pooler.shutdown(true);
  });
  process.on('SIGINT', () => {
    log.info('SIGINT: exiting now');
    void pooler.shutdown(false);
  });
  await pooler.stopped;
  return 0;
}
