// Runs the pooler as the process's main job: logs, web listener, signals (SIGHUP reload, SIGTERM graceful, SIGINT now,
// SIGUSR2 takeover by a new process: takeover-signal.ts), and the takeover socket a successor takes the listening
// sockets from (takeover.ts).
import { LogHub } from '../shared/logger.js';
import { ConfigError, loadPoolerConfig } from '../config/pooler.js';
import { Pooler } from './pooler.js';
import {
  Handoff,
  TakeoverError,
  TakeoverServer,
  takeoverSocketPath,
  type InheritedListener,
  type PassedListener,
} from './takeover.js';
import type { WebListener } from './web/server.js';
import { ClientMover, ClientReceiver } from './takeover-clients.js';
import { SignalTakeover } from './takeover-signal.js';
import { StatsCarry, StatsPusher, collectStats, type StatsHost } from './takeover-stats.js';

/** `takeover`: the listening sockets come from the pooler process running with this config (--takeover). */
export async function startPoolerProcess(file: string, opts: { takeover?: boolean } = {}): Promise<number> {
  const logs = new LogHub();
  const log = logs.get('pooler::process');
  const config = loadPoolerConfig(file);
  const socketPath = takeoverSocketPath(config, file);
  let handoff: Handoff | null = null;
  if (opts.takeover) {
    try {
      handoff = Handoff.receive(socketPath);
      checkSameAddress(handoff.listener('pooler'), config.general.host, config.general.port, 'general');
      if (config.web.enabled) checkSameAddress(handoff.listener('web'), config.web.host, config.web.port, 'web');
    } catch (err) {
      handoff?.abort();
      if (!(err instanceof TakeoverError)) throw err;
      process.stderr.write(`${err.message}\n`);
      return 1;
    }
    log.info(
      { from_pid: handoff.oldPid, listeners: handoff.listeners.map((l) => `${l.name} ${l.host}:${l.bound}`) },
      'takeover: listening sockets received',
    );
  }
  // SIGHUP's default action ends the process: it is caught before the pooler listens (and says so on its log), and one
  // that comes during the start reloads once the pooler runs, as the file may have changed after it was read.
  let started: Pooler | null = null;
  let reloadAtStart = false;
  const reload = (p: Pooler) => {
    p.reload().catch((err: unknown) => {
      log.error(
        { err: err instanceof ConfigError ? err.message : String(err) },
        'RELOAD failed, the old configuration stays',
      );
    });
  };
  process.on('SIGHUP', () => {
    if (started) reload(started);
    else reloadAtStart = true;
  });
  // SIGUSR2 (whose default action ends the process) starts a takeover once this process answers takeovers.
  let takeoverOpen = false;
  new SignalTakeover(
    {
      refuse: () => {
        if (!started) return 'the pooler is still starting';
        if (started.shuttingDown) return 'this process is shutting down';
        if (!takeoverOpen) return 'this process does not answer takeovers (see the takeover socket warning)';
        return null;
      },
    },
    logs.get('pooler::takeover'),
  ).install();
  const inheritedPooler = handoff?.listener('pooler') ?? null;
  const inheritedWeb = config.web.enabled ? (handoff?.listener('web') ?? null) : null;
  let pooler: Pooler;
  try {
    pooler = await Pooler.start(file, logs, { listenFd: inheritedPooler?.fd });
  } catch (err) {
    // The old process serves on: it hears the connection close without a ready.
    handoff?.abort();
    throw err;
  }
  started = pooler;
  if (reloadAtStart) reload(pooler);
  // Counters: the old process's, carried (before the web listener answers a scrape), then its later ones as they come.
  const statsHost: StatsHost = {
    pools: pooler.pools,
    apps: pooler.apps,
    counters: pooler.counters,
    coordinators: pooler.poolSet.coordinators,
  };
  let carry: StatsCarry | null = null;
  if (handoff) {
    const c = new StatsCarry(statsHost, handoff.oldPid);
    carry = c;
    pooler.poolSet.onCreated = (database, user) => c.poolCreated(database, user);
    if (!c.apply(handoff.stats))
      log.warn({ from_pid: handoff.oldPid }, 'takeover: the old process sent no counters; they restart at zero');
  }
  let pusher: StatsPusher | null = null;
  let takeover: TakeoverServer | null = null;
  process.on('SIGTERM', () => {
    log.info({ shutdown_timeout_ms: pooler.config.general.shutdown_timeout }, 'SIGTERM: graceful shutdown');
    takeover?.close();
    void pooler.shutdown(true);
  });
  process.on('SIGINT', () => {
    log.info('SIGINT: exiting now');
    takeover?.close();
    void pooler.shutdown(false);
  });
  let web: WebListener | null = null;
  if (pooler.config.web.enabled) {
    const { startWebListener } = await import('./web/server.js');
    try {
      web = await startWebListener(pooler, { fd: inheritedWeb?.fd });
    } catch (err) {
      log.error(
        { err: (err as Error).message, host: pooler.config.web.host, port: pooler.config.web.port },
        'web listener failed to start',
      );
      handoff?.abort();
      await pooler.shutdown(false);
      return 1;
    }
  }
  let receiver: ClientReceiver | null = null;
  if (handoff) {
    const channel = handoff.ready(
      [inheritedPooler?.fd, inheritedWeb?.fd].filter((fd): fd is number => fd !== undefined),
    );
    log.info(
      { from_pid: handoff.oldPid },
      'takeover: serving on the inherited sockets; the old process stops accepting',
    );
    // The old process moves its clients next, each as soon as it is between transactions.
    if (channel >= 0) {
      receiver = new ClientReceiver(channel, pooler, logs.get('pooler::takeover'));
      pooler.cancelElsewhere = (pid, secret) => receiver!.forwardCancel(pid, secret);
    }
  }
  if (!pooler.shuttingDown) {
    takeover = new TakeoverServer(
      socketPath,
      {
        listeners: () => {
          if (pooler.shuttingDown) return null;
          const g = pooler.config.general;
          const list: { passed: PassedListener; fd: number }[] = [
            {
              passed: { name: 'pooler', host: g.host, port: g.port, bound: pooler.port },
              fd: pooler.listener.listeningFd,
            },
          ];
          if (web)
            list.push({
              passed: { name: 'web', host: pooler.config.web.host, port: pooler.config.web.port, bound: web.port },
              fd: web.listeningFd,
            });
          return list;
        },
        stats: () => collectStats(statsHost),
        carried: (pid, stats) => carry !== null && pid === carry.fromPid && carry.apply(stats),
        handedOver: (_pid, channel) => {
          pooler.listener.close();
          web?.stopAccepting();
          pusher = new StatsPusher(socketPath, () => collectStats(statsHost), logs.get('pooler::takeover'));
          pusher.start();
          pooler.moveClients(
            new ClientMover(channel.socket, channel.fd, pooler, logs.get('pooler::takeover'), channel.rest),
          );
          void pooler.shutdown(true, { drain: true });
        },
      },
      logs.get('pooler::takeover'),
    );
    takeoverOpen = await takeover.open();
  }
  await pooler.stopped;
  // Handed over: the successor takes this process's final counters.
  await (pusher as StatsPusher | null)?.final();
  receiver?.close();
  takeover?.close();
  await web?.close();
  return 0;
}

/** A takeover keeps the listening address: a config that moves it needs a restart instead (the old process's
 * socket would otherwise go on listening where the new config no longer says). */
function checkSameAddress(l: InheritedListener | null, host: string, port: number, section: string): void {
  if (!l)
    throw new TakeoverError(
      `takeover: the running pooler has no ${section === 'web' ? 'web ' : ''}listener to hand over; [${section}] needs a restart`,
    );
  if (l.host !== host || l.port !== port) {
    throw new TakeoverError(
      `takeover keeps the listening address: [${section}] host/port changed from ${l.host}:${l.port} to ${host}:${port}; restart instead`,
    );
  }
}
