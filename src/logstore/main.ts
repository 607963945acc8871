// `tidepool logstore --mode single|proxy|store --config <file>`: loads the config and mapping, starts the mode.
import type http from 'node:http';
import type * as grpc from '@grpc/grpc-js';
import type { Logger } from 'pino';
import { AsyncSearches } from './api/async-search.js';
import { LocalBackend, type LogBackend } from './backend.js';
import { Cluster } from './cluster/cluster.js';
import { apiHandlers } from './grpc/api-service.js';
import { FLOW_WINDOW, services } from './grpc/proto.js';
import { startGrpc } from './grpc/server.js';
import { storeHandlers, storeServiceDefinition } from './grpc/store/index.js';
import { BulkBudget } from './ingest/bulk-budget.js';
import type { HttpContext } from './context.js';
import {
  LOGSTORE_MODES,
  LogstoreConfigError,
  loadLogstoreConfig,
  parseAddr,
  type LogstoreConfig,
} from '../config/logstore.js';
import { LogHub } from '../shared/logger.js';
import { LogstoreMetrics } from './http/metrics.js';
import { createApiServer, createDebugServer } from './http/server.js';
import { MappingError, loadMapping } from './mapping.js';
import { Store } from './store.js';
import { runUntilSignal } from './run-until-signal.js';

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
  mode: 'single' | 'proxy' | 'store';
  /** Empty in store mode (no HTTP API). */
  httpAddr: string;
  grpcAddr: string;
  debugAddr: string;
  store: Store | null;
  close(): Promise<void>;
}

/** The HTTP API, the debug listener and the gRPC listener of single and proxy mode, over one backend. */
async function startFront(
  config: LogstoreConfig,
  hub: LogHub,
  backend: LogBackend,
  grpcExtra: GrpcPart[],
  bulkBudget?: BulkBudget,
) {
  const mapping = loadMapping(config.mapping.path);
  const log = hub.get('logstore::http');
  const env = { store: backend, mapping, config };
  const asyncSearches = new AsyncSearches(env, config.async_search, hub.get('logstore::async'));
  const ctx: HttpContext = {
    store: backend,
    mapping,
    config,
    log,
    metrics: new LogstoreMetrics(),
    inflight: { bulks: 0 },
    asyncSearches,
    ...(bulkBudget ? { bulkBudget } : {}),
  };
  ctx.metrics.watchStorage(async () => (await backend.status()).shards.flatMap((s) => s.problems ?? []));
  const api = createApiServer(ctx);
  api.keepAliveTimeout = 65_000;
  api.requestTimeout = 0;
  const debug = createDebugServer(ctx);
  const keepalive = { time: config.cluster.keepalive_time, timeout: config.cluster.keepalive_timeout };
  const grpcListener = await startGrpc(
    config.server.grpc_addr,
    [[services().api.service, apiHandlers(env, asyncSearches, hub.get('logstore::grpc'), ctx.inflight)], ...grpcExtra],
    keepalive,
  );
  const httpAddr = await listen(api, config.server.http_addr);
  const debugAddr = await listen(debug, config.server.debug_addr);
  return {
    httpAddr,
    debugAddr,
    grpcAddr: grpcListener.addr,
    ctx,
    async close() {
      const closed = Promise.all([
        new Promise((r) => api.close(r)),
        new Promise((r) => debug.close(r)),
        grpcListener.close(),
      ]);
      api.closeIdleConnections();
      // Requests still running get a few seconds to finish; then their connections are cut.
      const cut = setTimeout(() => {
        api.closeAllConnections();
        debug.closeAllConnections();
      }, 5000);
      await closed;
      clearTimeout(cut);
    },
  };
}

type GrpcPart = [grpc.ServiceDefinition, grpc.UntypedServiceImplementation];

function retentionTimer(store: Store, log: Logger): NodeJS.Timeout {
  const t = setInterval(() => {
    store.applyRetention().catch((err: Error) => log.error({ err }, 'retention pass failed'));
  }, 60_000);
  t.unref();
  return t;
}

/** Starts single mode; resolves once the listeners are bound and every shard has recovered. */
export async function startSingle(config: LogstoreConfig, hub: LogHub): Promise<RunningLogstore> {
  const log = hub.get('logstore');
  const mapping = loadMapping(config.mapping.path);
  const store = new Store(config, mapping, log);
  await store.ready();
  const storeInflight = { bulks: 0 };
  // One limits.bulk_memory for the HTTP API's bulks and the store API's batches.
  const budget = new BulkBudget(config.limits.bulk_memory);
  const handlers = storeHandlers(store, mapping, hub.get('logstore::grpc'), storeInflight, budget);
  const front = await startFront(config, hub, new LocalBackend(store), [[storeServiceDefinition(), handlers]], budget);
  const retention = retentionTimer(store, log);
  log.info(
    {
      http: front.httpAddr,
      grpc: front.grpcAddr,
      debug: front.debugAddr,
      shards: config.storage.shards,
      data_dir: config.storage.data_dir,
      mapping: config.mapping.path,
    },
    'log store listening (single mode)',
  );
  return {
    mode: 'single',
    httpAddr: front.httpAddr,
    grpcAddr: front.grpcAddr,
    debugAddr: front.debugAddr,
    store,
    async close() {
      clearInterval(retention);
      await front.close();
      await store.close();
    },
  };
}

/** Store mode: the store API over gRPC, plus the debug listener; no HTTP API. */
export async function startStore(config: LogstoreConfig, hub: LogHub): Promise<RunningLogstore> {
  const log = hub.get('logstore');
  const mapping = loadMapping(config.mapping.path);
  const store = new Store(config, mapping, log);
  await store.ready();
  const inflight = { bulks: 0 };
  const keepalive = { time: config.cluster.keepalive_time, timeout: config.cluster.keepalive_timeout };
  const handlers = storeHandlers(
    store,
    mapping,
    hub.get('logstore::grpc'),
    inflight,
    new BulkBudget(config.limits.bulk_memory),
  );
  const grpcListener = await startGrpc(config.server.grpc_addr, [[storeServiceDefinition(), handlers]], keepalive);
  if (!grpcListener.windows)
    log.warn(
      { window: FLOW_WINDOW },
      'the gRPC receive window could not be widened (this @grpc/grpc-js has no hook for it): proxies send batches in 64 KiB windows',
    );
  const metrics = new LogstoreMetrics();
  metrics.watchStorage(async () => (await store.status()).flatMap((s) => s.problems));
  // No HTTP API in store mode: the debug listener serves /status and /health over the local shards.
  const debug = createDebugServer({
    metrics,
    inflight,
    config,
    mapping,
    store: new LocalBackend(store, 'store'),
  });
  const debugAddr = await listen(debug, config.server.debug_addr);
  const retention = retentionTimer(store, log);
  log.info(
    { grpc: grpcListener.addr, debug: debugAddr, shards: config.storage.shards, data_dir: config.storage.data_dir },
    'log store listening (store mode)',
  );
  return {
    mode: 'store',
    httpAddr: '',
    grpcAddr: grpcListener.addr,
    debugAddr,
    store,
    async close() {
      clearInterval(retention);
      await Promise.all([grpcListener.close(), new Promise((r) => debug.close(r))]);
      await store.close();
    },
  };
}

/** Proxy mode: the public HTTP and gRPC APIs over the stores of cluster.hot_stores; holds no data. */
export async function startProxy(config: LogstoreConfig, hub: LogHub): Promise<RunningLogstore> {
  const log = hub.get('logstore');
  const cluster = new Cluster(config, hub.get('logstore::cluster'));
  const front = await startFront(config, hub, cluster, []);
  log.info(
    {
      http: front.httpAddr,
      grpc: front.grpcAddr,
      debug: front.debugAddr,
      shards: cluster.shardCount,
      stores: config.cluster.hot_stores,
    },
    'log store listening (proxy mode)',
  );
  return {
    mode: 'proxy',
    httpAddr: front.httpAddr,
    grpcAddr: front.grpcAddr,
    debugAddr: front.debugAddr,
    store: null,
    async close() {
      await front.close();
      cluster.close();
    },
  };
}

export async function runLogstore(flags: Map<string, string | true>): Promise<number> {
  // Without --mode, single mode: the one a newcomer means (one process, its own data).
  const mode = flags.get('mode') ?? 'single';
  if (typeof mode !== 'string' || !(LOGSTORE_MODES as readonly string[]).includes(mode)) {
    process.stderr.write(
      `tidepool logstore: --mode must be one of ${LOGSTORE_MODES.join(', ')}; found ${mode === undefined ? 'nothing' : JSON.stringify(mode === true ? '' : mode)}\n`,
    );
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
    if ((mode === 'proxy' || mode === 'ingestor') && config.cluster.hot_stores.length === 0) {
      process.stderr.write(
        `tidepool logstore: ${file}: --mode ${mode} needs cluster.hot_stores, the gRPC addresses of the stores ("<host>:9004")\n`,
      );
      return 1;
    }
  } catch (err) {
    if (err instanceof LogstoreConfigError || err instanceof MappingError) {
      process.stderr.write(`tidepool logstore: ${err.message}\n`);
      return 1;
    }
    throw err;
  }
  const hub = new LogHub({ level: config.log.level, format: config.log.format });
  // A write past the process's file size limit (ulimit -f) raises SIGXFSZ, which would kill the process with its
  // unsynced state; handled, the write fails with EFBIG instead and is treated like a full disk (storage/shard.ts).
  let sawXfsz = false;
  process.on('SIGXFSZ', () => {
    if (!sawXfsz)
      hub
        .get('logstore::storage')
        .warn('a write went past the file size limit (ulimit -f); such writes fail as on a full disk');
    sawXfsz = true;
  });
  const running =
    mode === 'store'
      ? await startStore(config, hub)
      : mode === 'single'
        ? await startSingle(config, hub)
        : await startProxy(config, hub);
  process.stdout.write(
    running.mode === 'store'
      ? `tidepool logstore (store mode) listening on grpc ${running.grpcAddr}, debug ${running.debugAddr}\n`
      : `tidepool logstore listening on http ${running.httpAddr}, debug ${running.debugAddr}, grpc ${running.grpcAddr} (${running.mode} mode)\n`,
  );
  await runUntilSignal(() => running.close(), hub.get('logstore'));
  return 0;
}
