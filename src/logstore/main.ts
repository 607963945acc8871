// `tidepool logstore --mode single --config <file>`: loads the config and mapping, opens the store, listens.
import type http from 'node:http';
import { LOGSTORE_MODES, LogstoreConfigError, loadLogstoreConfig, parseAddr, type LogstoreConfig } from '../config/logstore.js';
import { LogHub } from '../shared/logger.js';
import { LogstoreMetrics } from './http/metrics.js';
import { createApiServer, createDebugServer } from './http/server.js';
import { MappingError, loadMapping } from './mapping.js';
import { Store } from './store.js';

function listen(server: http.Server, addr: string): Promise<string> {
  const { host, port } = parseAddr(addr)!;
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      const a = server.address();
      resolve(typeof a === 'object' && a ? `${a.address}:${a.port}` : String(a));
    });
  });
}

export interface RunningLogstore {
  httpAddr: string;
  debugAddr: string;
  store: Store;
  close(): Promise<void>;
}

/** Starts single mode; resolves once both listeners are bound and every shard has recovered. */
export async function startSingle(config: LogstoreConfig, hub: LogHub): Promise<RunningLogstore> {
  const log = hub.get('logstore');
  const mapping = loadMapping(config.mapping.path);
  const store = new Store(config, mapping, log);
  await store.ready();
  const ctx = { store, mapping, config, log: hub.get('logstore::http'), metrics: new LogstoreMetrics(), inflight: { bulks: 0 } };
  const api = createApiServer(ctx);
  api.keepAliveTimeout = 65_000;
  api.requestTimeout = 0;
  const debug = createDebugServer(ctx);
  const httpAddr = await listen(api, config.server.http_addr);
  const debugAddr = await listen(debug, config.server.debug_addr);
  const retention = setInterval(() => {
    store.applyRetention().catch((err: Error) => log.error({ err }, 'retention pass failed'));
  }, 60_000);
  retention.unref();
  log.info({ http: httpAddr, debug: debugAddr, shards: config.storage.shards, data_dir: config.storage.data_dir, mapping: config.mapping.path }, 'log store listening (single mode)');
  return {
    httpAddr, debugAddr, store,
    async close() {
      clearInterval(retention);
      const closed = Promise.all([new Promise((r) => api.close(r)), new Promise((r) => debug.close(r))]);
      api.closeIdleConnections();
      // Requests still running get a few seconds to finish; then their connections are cut.
      const cut = setTimeout(() => { api.closeAllConnections(); debug.closeAllConnections(); }, 5000);
      await closed;
      clearTimeout(cut);
      await store.close();
    },
  };
}

export async function runLogstore(flags: Map<string, string | true>): Promise<number> {
  const mode = flags.get('mode');
  if (typeof mode !== 'string' || !(LOGSTORE_MODES as readonly string[]).includes(mode)) {
    process.stderr.write(`tidepool logstore: --mode must be one of ${LOGSTORE_MODES.join(', ')}; found ${mode === undefined ? 'nothing' : JSON.stringify(mode === true ? '' : mode)}\n`);
    return 1;
  }
  if (mode !== 'single') {
    process.stderr.write(`tidepool logstore: --mode ${mode} is not available in this build (only single)\n`);
    return 1;
  }
  const file = flags.get('config') ?? flags.get('c');
  if (typeof file !== 'string') {
    process.stderr.write('tidepool logstore: --config <file.yaml> is required\n');
    return 1;
  }
  let config: LogstoreConfig;
  try {
    config = loadLogstoreConfig(file);
    loadMapping(config.mapping.path);
  } catch (err) {
    if (err instanceof LogstoreConfigError || err instanceof MappingError) {
      process.stderr.write(`tidepool logstore: ${err.message}\n`);
      return 1;
    }
    throw err;
  }
  const hub = new LogHub({ level: config.log.level, format: config.log.format });
  const running = await startSingle(config, hub);
  process.stdout.write(`tidepool logstore listening on http ${running.httpAddr}, debug ${running.debugAddr}\n`);
  await new Promise<void>((resolve) => {
    const stop = (sig: string) => {
      hub.get('logstore').info({ signal: sig }, 'shutting down');
      running.close().then(resolve, (err: Error) => {
        hub.get('logstore').error({ err }, 'shutdown failed');
        resolve();
      });
    };
    process.once('SIGTERM', () => stop('SIGTERM'));
    process.once('SIGINT', () => stop('SIGINT'));
  });
  return 0;
}
