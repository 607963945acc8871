// Runs the pooler as the process's main job: logs, web listener, signals (SIGHUP reload, SIGTERM graceful, SIGINT now).
import { LogHub } from '../shared/logger.js';
import { ConfigError } from '../config/pooler.js';
import { Pooler } from './pooler.js';

export async function startPoolerProcess(file: string): Promise<number> {
  const logs = new LogHub();
  const log = logs.get('pooler::process');
  // SIGHUP's default action ends the process: it is caught before the pooler listens (and says so on its log), and one
  // that comes during the start reloads once the pooler runs, as the file may have changed after it was read.
  let started: Pooler | null = null;
  let reloadAtStart = false;
  const reload = (p: Pooler) => {
    p.reload().catch((err: unknown) => {
      log.error({ err: err instanceof ConfigError ? err.message : String(err) }, 'RELOAD failed, the old configuration stays');
    });
  };
  process.on('SIGHUP', () => {
    if (started) reload(started);
    else reloadAtStart = true;
  });
  const pooler = await Pooler.start(file, logs);
  started = pooler;
  if (reloadAtStart) reload(pooler);
  process.on('SIGTERM', () => {
    log.info({ shutdown_timeout_ms: pooler.config.general.shutdown_timeout }, 'SIGTERM: graceful shutdown');
    void pooler.shutdown(true);
  });
  process.on('SIGINT', () => {
    log.info('SIGINT: exiting now');
    void pooler.shutdown(false);
  });
  let web: { close(): Promise<void> } | null = null;
  if (pooler.config.web.enabled) {
    const { startWebListener } = await import('./web/server.js');
    try {
      web = await startWebListener(pooler);
    } catch (err) {
      log.error({ err: (err as Error).message, host: pooler.config.web.host, port: pooler.config.web.port }, 'web listener failed to start');
      await pooler.shutdown(false);
      return 1;
    }
  }
  await pooler.stopped;
  await web?.close();
  return 0;
}
