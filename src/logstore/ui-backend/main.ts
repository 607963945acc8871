// `tidepool logstore-ui --config ui.yaml`: the UI backend: HTTP API + explorer, the same API over gRPC, /metrics and /health.
import http from 'node:http';
import path from 'node:path';
import { type LogstoreUiConfig, LogstoreUiConfigError, loadLogstoreUiConfig } from '../../config/logstore-ui.js';
import { parseAddr } from '../../config/logstore.js';
import { LogHub } from '../../shared/logger.js';
import { packageRoot } from '../../shared/package-root.js';
import { startGrpc } from '../grpc/server.js';
import { buildUiApp, type UiAppEnv } from './app.js';
import { uiGrpcHandlers, uiService } from './grpc-service.js';
import { LogstoreClient } from './logstore-client.js';
import { UiMetrics } from './metrics.js';
import { SavedQueries } from './saved-queries.js';
import { runUntilSignal } from '../run-until-signal.js';

export const DEFAULT_EXPLORER_DIR = path.join(packageRoot, 'ui', 'dist', 'explorer');

export interface RunningUi {
  httpAddr: string;
  grpcAddr: string;
  debugAddr: string;
  close(): Promise<void>;
}

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

function debugServer(metrics: UiMetrics, saved: SavedQueries): http.Server {
  return http.createServer((req, res) => {
    const p = (req.url ?? '/').split('?')[0];
    req.resume();
    const json = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
      res.end(JSON.stringify(body));
    };
    if (p === '/metrics') {
      metrics.registry.metrics().then(
        (text) => {
          res.writeHead(200, { 'content-type': metrics.registry.contentType });
          res.end(text);
        },
        (err: Error) => json(500, { error: { code: 'internal', message: err.message }, status: 500 }),
      );
      return;
    }
    if (p === '/health') {
      // Always 200 (the process answers); the body says how well, as the log store's /health does.
      const problem = saved.problem();
      return json(200, problem ? { status: 'degraded', degraded: [problem] } : { status: 'ok' });
    }
    return json(404, {
      error: { code: 'not_found', message: `no route ${req.method} ${p}; try /metrics or /health` },
      status: 404,
    });
  });
}

/** Starts the three listeners; resolves once they are bound. */
export async function startUi(config: LogstoreUiConfig, hub: LogHub): Promise<RunningUi> {
  const log = hub.get('logstore::ui');
  const metrics = new UiMetrics();
  const client = new LogstoreClient(config.clients, hub.get('logstore::ui::client'), metrics);
  const saved = new SavedQueries(config.saved_queries.path, hub.get('logstore::ui::saved'));
  const env: UiAppEnv = {
    client,
    metrics,
    log,
    saved,
    limits: config.handlers.logstore_api,
    avgDocSize: config.clients.logstore_avg_doc_size,
    running: { exports: 0 },
    tail: { pollMs: config.tail.poll_interval, maxStreams: config.tail.max_streams, open: 0 },
    staticDir: config.static.dir || DEFAULT_EXPLORER_DIR,
    consoleUrl: config.links.console_url,
  };
  const app = await buildUiApp(env);
  const ka = config.clients.grpc_keepalive_params;
  const grpcListener = await startGrpc(config.server.grpc_addr, [[uiService().service, uiGrpcHandlers(env)]], {
    time: ka.time,
    timeout: ka.timeout,
  });
  const { host, port } = parseAddr(config.server.http_addr)!;
  await app.listen({ host, port });
  const a = app.server.address();
  const httpAddr = typeof a === 'object' && a ? `${a.address}:${a.port}` : String(a);
  const debug = debugServer(metrics, saved);
  const debugAddr = await listen(debug, config.server.debug_addr);
  log.info(
    { http: httpAddr, grpc: grpcListener.addr, debug: debugAddr, logstore_addrs: config.clients.logstore_addrs },
    'log-store UI backend listening',
  );
  return {
    httpAddr,
    grpcAddr: grpcListener.addr,
    debugAddr,
    async close() {
      await Promise.all([app.close(), grpcListener.close(), new Promise((r) => debug.close(r))]);
      client.close();
      saved.close();
    },
  };
}

export async function runLogstoreUi(flags: Map<string, string | true>): Promise<number> {
  const file = flags.get('config') ?? flags.get('c');
  if (typeof file !== 'string') {
    process.stderr.write('tidepool logstore-ui: --config <ui.yaml> is required\n');
    return 1;
  }
  let config: LogstoreUiConfig;
  try {
    config = loadLogstoreUiConfig(file);
  } catch (err) {
    if (err instanceof LogstoreUiConfigError) {
      process.stderr.write(`tidepool logstore-ui: ${err.message}\n`);
      return 1;
    }
    throw err;
  }
  const hub = new LogHub({ level: config.log.level, format: config.log.format });
  const running = await startUi(config, hub);
  process.stdout.write(
    `tidepool logstore-ui listening on http ${running.httpAddr}, grpc ${running.grpcAddr}, debug ${running.debugAddr}\n`,
  );
  await runUntilSignal(() => running.close(), hub.get('logstore::ui'));
  return 0;
}
