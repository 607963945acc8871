// The pooler: client listener, pools per (database, user), cancel routing, admin verbs, reload, shutdown.
import net from 'node:net';
import { timingSafeEqual } from 'node:crypto';
import type { Logger } from 'pino';
import { effectivePoolMode, loadPoolerConfig, type PoolConfig, type PoolerConfig, type UserConfig } from '../config/pooler.js';
import { SqlState } from '../protocol/codes.js';
import type { LogHub } from '../shared/logger.js';
import { ClientSession } from './client-session.js';
import type { LoginTarget } from './client-login.js';
import { Pool, type PoolSettings } from './pool.js';
import { PoolNotFoundError, type DurationHistogram, type Overview, type PoolerControl, type ShowTable } from './control.js';
import { showTable } from './admin/show.js';
import { Coordinator, type CoordinatorSettings } from './coordinator.js';
import { EventRing } from './events.js';
import { AppRegistry } from './apps.js';
import { takeSnapshot, type PoolerSnapshot } from './snapshot.js';
import { overviewOf } from './overview.js';
import { configChanges } from './config-diff.js';
import { attachAdminConsole } from './admin/console.js';
import { ReadBuffer, adoptWithOnread } from './read-buffer.js';
import { loadTlsSettings, reloadTlsSettings, nativeTlsRelay, tlsNeedsJsRelay, NO_TLS, type ClientTls, type ServerTls, type TlsSettings } from './tls/tls-settings.js';
import { AuthQueryLogins, type AuthQueryHost } from './auth/auth-query-pools.js';
import { HbaRules, type HbaConnection, type HbaMethod } from './auth/hba.js';
import type { NativeAcceptor, NativeLoginOk, NativeRelay } from './relay/native.js';
import { NativeLogins } from './native-logins.js';
import type { NativeTlsSocket } from './relay/native-tls.js';
import { reconcileLogShipper, type LogShipStats, type LogShipper } from './log-ship/log-shipper.js';

export const ADMIN_DATABASES = new Set(['tidepool', 'pgbouncer']);
/** ParameterStatus values the admin console reports at login. */
const ADMIN_PARAMS: ReadonlyMap<string, string> = new Map([
  ['server_version', '16.0 (tidepool)'], ['server_encoding', 'UTF8'], ['client_encoding', 'UTF8'], ['DateStyle', 'ISO, MDY'],
  ['integer_datetimes', 'on'], ['standard_conforming_strings', 'on'], ['TimeZone', 'UTC'], ['is_superuser', 'on'],
]);
/** TCP keepalive idle time of client connections. */
const CLIENT_KEEPALIVE_MS = 60_000;
/** Read buffer per client socket: clients send small messages, and there can be many of them. */
const CLIENT_READ_BUFFER = 16 * 1024;

function poolKey(database: string, user: string): string {
  return `${database}\0${user}`;
}

export class Pooler implements PoolerControl, AuthQueryHost {
  readonly pools = new Map<string, Pool>();
  readonly clients = new Set<ClientSession>();
  /** Clients by the pid of their BackendKeyData: a session-mode client's is its server's pid, which may equal another client's id. */
  private readonly byCancelPid = new Map<number, ClientSession[]>();
  readonly startedAt = new Date();
  readonly log: Logger;
  /** connections: accepted; tls: of them, those that completed a TLS handshake; nativeLogins / jsLogins: logins that
   * succeeded, by who ran the password exchange (the native relay, or client-login.ts). */
  readonly counters = { connections: 0, errors: 0, cancel: 0, tls: 0, nativeLogins: 0, jsLogins: 0 };
  /** The logins the native relay runs itself (native-logins.ts). */
  readonly nativeLogins = new NativeLogins(this);
  /** TLS contexts in force: read at start, re-read on RELOAD (a file that fails keeps the previous ones). */
  tls: TlsSettings = NO_TLS;
  /** Users not in the config, checked against secrets fetched by auth_query, each with a pool of its own. */
  readonly authQuery: AuthQueryLogins = new AuthQueryLogins(this);
  /** auth_hba_file's rules, null without one: read at start, re-read on RELOAD (a file with an error keeps these). */
  hba: HbaRules | null = null;
  /** TLS at start needed the JavaScript relay (server TLS, or no native relay): every pool runs there, and Node's tls
   * carries client TLS too. */
  readonly tlsRelay: boolean;
  /** The native relay terminates client TLS (fixed at start); null when Node's tls does. */
  readonly nativeTls: NativeRelay | null;
  /** Client connections accepted and not yet logged in (SHOW LISTS login_clients). */
  loggingIn = 0;
  /** Per database: max_db_connections, reserve, eviction (coordinator.ts). */
  readonly coordinators = new Map<string, Coordinator>();
  /** What an operator needs to reconstruct an incident (SHOW EVENTS, /api/events). */
  readonly events = new EventRing();
  /** Load per application_name (/api/apps). */
  readonly apps = new AppRegistry();
  private server: net.Server | null = null;
  private timer: NodeJS.Timeout | null = null;
  private lastRoll = Date.now();
  private reloadListeners: ((c: PoolerConfig) => void)[] = [];
  /** Ships log records to [logs] ship_to; null when shipping is off. */
  private shipper: LogShipper | null = null;
  shuttingDown = false;
  private shutdownDone: Promise<void> | null = null;
  /** Resolves when the pooler has stopped (SHUTDOWN, signals). */
  readonly stopped: Promise<void>;
  private resolveStopped!: () => void;

  constructor(public config: PoolerConfig, readonly configFile: string | null, readonly logs: LogHub) {
    this.log = logs.get('pooler');
    this.stopped = new Promise((r) => { this.resolveStopped = r; });
    // Before listen(): the "pooler listening" line is shipped too.
    this.tlsRelay = tlsNeedsJsRelay(config);
    this.nativeTls = this.tlsRelay ? null : nativeTlsRelay(config);
    this.tls = loadTlsSettings(config, this.nativeTls);
    this.hba = config.general.auth_hba_file ? HbaRules.load(config.general.auth_hba_file) : null;
    this.shipper = reconcileLogShipper(null, logs, config.logs);
    this.applyPools(config);
  }

  /** Loads `configFile` and listens; resolves with the bound address. */
  static async start(configFile: string, logs: LogHub): Promise<Pooler> {
    const config = loadPoolerConfig(configFile);
    logs.level = config.general.log_level;
    logs.format = config.general.log_format;
    const p = new Pooler(config, configFile, logs);
    try {
      await p.listen();
    } catch (err) {
      await p.shipper?.close(0);
      throw err;
    }
    return p;
  }

  get port(): number {
    return this.nativePort || ((this.server?.address() as net.AddressInfo | null)?.port ?? 0);
  }

  /** True when the native relay accepts this pooler's clients itself (see listen). */
  get acceptsNatively(): boolean {
    return this.nativeListener > 0;
  }

  /** The port and listener id the native relay accepts on (see listen), 0 when net.Server does. */
  private nativePort = 0;
  private nativeListener = 0;

  async listen(): Promise<void> {
    const { host, port, tcp_no_delay } = this.config.general;
    this.server = net.createServer({ noDelay: tcp_no_delay, pauseOnConnect: true }, (socket) => this.accept(socket));
    await new Promise<void>((resolve, reject) => {
      this.server!.once('error', reject);
      this.server!.listen(port, host, () => {
        this.server!.removeListener('error', reject);
        resolve();
      });
    });
    this.server.on('error', (err) => this.log.error({ err: err.message }, 'listener error'));
    // With the native relay carrying every pool, it accepts the clients itself: a login costs no Node socket
    // (TIDEPOOL_NATIVE_ACCEPT=0 keeps net.Server's accepts, as with the JavaScript relay).
    const listener = process.env.TIDEPOOL_NATIVE_ACCEPT !== '0' ? this.nativeTls?.listen(this.server, tcp_no_delay, CLIENT_KEEPALIVE_MS, this.acceptor) ?? 0 : 0;
    if (listener > 0) {
      this.nativeListener = listener;
      this.nativePort = (this.server.address() as net.AddressInfo).port;
      this.server.close();
      this.server = null;
      this.nativeLogins.listening(listener);
    }
    this.timer = setInterval(() => this.maintain(), 1000);
    this.timer.unref();
    this.log.info({ host, port: this.port }, 'pooler listening');
  }

  /** Clients the native relay accepted (NativeRelay.listen): their logins run on the addon's endpoint, in JavaScript
   * or, for the users of nativeLogins, in the relay itself. */
  private readonly acceptor: NativeAcceptor = {
    accept: (socket, login) => this.acceptNative(socket, login),
    loginFailed: (address, port, entry, sqlstate, message) => {
      this.counters.connections++;
      this.counters.errors++;
      const pool = this.nativeLogins.pool(entry);
      if (sqlstate !== SqlState.ProtocolViolation) {
        this.log.info({ user: pool?.settings.user, database: pool?.settings.database, addr: `${address}:${port}` }, 'client authentication failed');
      }
      this.events.loginFailure(`client ${address}:${port}: ${message} (SQLSTATE ${sqlstate})`);
    },
    loginGone: () => { this.counters.connections++; },
  };

  private acceptNative(socket: NativeTlsSocket, login: NativeLoginOk | null): void {
    this.counters.connections++;
    const pool = login ? this.nativeLogins.loggedIn(login, socket.id) : null;
    if (this.shuttingDown) {
      socket.destroy();
      return;
    }
    if (login && !pool) {
      // Greeted by the relay for a pool this pooler does not know: nothing can serve it.
      socket.destroy();
      return;
    }
    this.loggingIn++;
    if (login && pool) new ClientSession(socket, this, { pool, login });
    else new ClientSession(socket, this);
  }

  private accept(accepted: net.Socket): void {
    this.counters.connections++;
    if (this.shuttingDown) {
      accepted.destroy();
      return;
    }
    let session: ClientSession | null = null;
    this.loggingIn++;
    const socket = adoptWithOnread(accepted, new ReadBuffer(CLIENT_READ_BUFFER).onread(() => session!.handler));
    if (socket) {
      socket.setKeepAlive(true, CLIENT_KEEPALIVE_MS);
      session = new ClientSession(socket, this);
    } else {
      accepted.setKeepAlive(true, CLIENT_KEEPALIVE_MS);
      const s = new ClientSession(accepted, this);
      accepted.on('data', (chunk: Buffer) => s.handler(chunk));
      accepted.resume();
    }
  }


  private maintain(): void {
    const now = Date.now();
    this.authQuery.maintain(now);
    for (const [key, pool] of this.pools) {
      pool.maintain(now);
      if (pool.retired && pool.servers.size === 0 && !this.poolHasClients(pool)) {
        this.pools.delete(key);
        pool.coordinator?.pools.delete(pool);
      }
    }
    for (const [db, c] of this.coordinators) {
      if (c.pools.size === 0) {
        c.close();
        this.coordinators.delete(db);
      }
    }
    if (now - this.lastRoll >= this.config.general.stats_period) {
      for (const pool of this.pools.values()) pool.stats.roll(now - this.lastRoll);
      this.apps.roll(now - this.lastRoll);
      this.lastRoll = now;
    }
  }

  private poolHasClients(pool: Pool): boolean {
    for (const c of this.clients) if (c.pool === pool) return true;
    return false;
  }

  // ---- configuration ----

  private settingsFor(config: PoolerConfig, database: string, pool: PoolConfig, user: UserConfig): PoolSettings {
    const g = config.general;
    const serverPassword = user.server_password ?? (user.password.startsWith('SCRAM-SHA-256$') ? null : user.password);
    return {
      database, user: user.username, mode: effectivePoolMode(config, pool, user),
      target: {
        host: pool.server_host, port: pool.server_port, database: pool.server_database ?? database, applicationName: pool.application_name ?? '',
        tls: this.tls.server,
      },
      serverUser: user.server_username ?? user.username, serverPassword,
      poolSize: user.pool_size, minPoolSize: user.min_pool_size,
      connectTimeoutMs: g.connect_timeout, idleTimeoutMs: g.idle_timeout, lifetimeMs: g.server_lifetime,
      queryWaitTimeoutMs: g.query_wait_timeout, maxConcurrentConnects: g.max_concurrent_connects, noDelay: g.tcp_no_delay,
      resetQuery: g.server_reset_query,
      prepared: effectivePoolMode(config, pool, user) === 'transaction' && g.prepared_statements
        ? { cacheSize: g.prepared_statements_cache_size, serverCacheSize: g.server_prepared_statements_cache_size }
        : null,
      tls: this.tlsRelay,
    };
  }

  private coordinatorFor(db: string, pc: PoolConfig): Coordinator {
    const settings: CoordinatorSettings = {
      maxDbConnections: pc.max_db_connections, reserveSize: pc.reserve_pool_size, reserveTimeoutMs: pc.reserve_pool_timeout,
      minGuaranteed: pc.min_guaranteed_pool_size, minConnectionLifetimeMs: pc.min_connection_lifetime,
    };
    let c = this.coordinators.get(db);
    if (!c) this.coordinators.set(db, c = new Coordinator(db, settings));
    else c.settings = settings;
    return c;
  }

  /** Creates, updates and retires pools to match `config`. */
  private applyPools(config: PoolerConfig): void {
    const seen = new Set<string>();
    for (const [db, pc] of Object.entries(config.pools)) {
      const coordinator = this.coordinatorFor(db, pc);
      for (const u of pc.users) {
        const key = poolKey(db, u.username);
        seen.add(key);
        const settings = this.settingsFor(config, db, pc, u);
        const existing = this.pools.get(key);
        if (!existing) {
          this.addPool(db, coordinator, settings);
          continue;
        }
        const old = existing.settings;
        const serverChanged = old.target.host !== settings.target.host || old.target.port !== settings.target.port
          || old.target.database !== settings.target.database || old.target.tls.mode !== settings.target.tls.mode || old.serverUser !== settings.serverUser || old.serverPassword !== settings.serverPassword;
        existing.settings = settings;
        existing.retired = false;
        if (serverChanged) {
          existing.serverParams = null;
          existing.reconnect();
        }
      }
    }
    for (const [key, pool] of this.pools) {
      // auth_query's pools stay while their database does (auth-query-pools.ts drops them once idle).
      if (!seen.has(key) && !(this.authQuery.isDynamic(pool) && config.pools[pool.settings.database])) {
        pool.retired = true;
        pool.reconnect();
      }
    }
  }

  private addPool(db: string, coordinator: Coordinator, settings: PoolSettings): Pool {
    const pool = new Pool(settings, this.logs.get('pooler::pool'));
    pool.onParamsKnown = () => this.nativeLogins.queue();
    pool.coordinator = coordinator;
    coordinator.pools.add(pool);
    const label = `${db}/${settings.user}`;
    pool.onEvent = (kind, message) => this.events.add(kind, label, message);
    this.pools.set(poolKey(db, settings.user), pool);
    return pool;
  }

  // ---- AuthQueryHost ----

  serverTls(): ServerTls {
    return this.tls.server;
  }

  pool(database: string, user: string): Pool | null {
    return this.pools.get(poolKey(database, user)) ?? null;
  }

  createPool(database: string, pc: PoolConfig, user: UserConfig): Pool {
    return this.addPool(database, this.coordinatorFor(database, pc), this.settingsFor(this.config, database, pc, user));
  }

  dropPool(pool: Pool): void {
    pool.retired = true;
    pool.reconnect();
  }

  inUse(pool: Pool): boolean {
    return pool.servers.size > 0 || this.poolHasClients(pool);
  }

  resolveLogin(database: string, user: string): LoginTarget | Promise<LoginTarget> {
    if (ADMIN_DATABASES.has(database)) {
      const g = this.config.general;
      if (user !== g.admin_username) return { error: `user "${user}" may not use the admin console`, sqlstate: SqlState.InvalidAuthorization };
      if (!g.admin_password) return { error: 'the admin console is disabled: general.admin_password is empty', sqlstate: SqlState.InvalidAuthorization };
      return { admin: true, pool: null, secret: g.admin_password };
    }
    const pc = this.config.pools[database];
    if (!pc) return { error: `database "${database}" does not exist`, sqlstate: SqlState.InvalidCatalogName };
    const uc = pc.users.find((u) => u.username === user);
    if (!uc) {
      const fetched = this.authQuery.resolve(database, pc, user);
      if (fetched) return fetched;
    }
    const pool = this.pools.get(poolKey(database, user));
    if (!uc || !pool) return { error: `no such user "${user}" in database "${database}"`, sqlstate: SqlState.InvalidAuthorization };
    return { admin: false, pool, secret: uc.password };
  }

  clientTls(): ClientTls {
    return this.tls.client;
  }

  hbaCheck(c: HbaConnection): { method: HbaMethod } | { error: string } | null {
    return this.hba ? this.hba.verdict(c) : null;
  }

  hbaWantsCertificates(): boolean {
    return this.hba?.wantsCertificates ?? false;
  }

  adminParams(): ReadonlyMap<string, string> {
    return ADMIN_PARAMS;
  }

  clientCount(): number {
    return this.clients.size + 1;
  }

  registerClient(c: ClientSession, native = false): void {
    this.loggingIn--;
    this.clients.add(c);
    this.nativeLogins.clients(this.clients.size);
    if (native) this.counters.nativeLogins++;
    else this.counters.jsLogins++;
    this.addCancelKey(c);
    if (c.isAdmin) attachAdminConsole(this, c);
    if (this.log.isLevelEnabled('debug')) this.log.debug({ client_id: c.id, user: c.user, database: c.database, addr: c.addr }, 'client logged in');
  }

  unregisterClient(c: ClientSession): void {
    // A connection that closed before its login completed was never registered.
    if (!this.clients.delete(c)) this.loggingIn--;
    this.nativeLogins.clients(this.clients.size);
    this.dropCancelKey(c);
  }

  /** Session mode: the client's BackendKeyData names its server's pid from now on. */
  rekeyCancel(c: ClientSession, pid: number): void {
    this.dropCancelKey(c);
    c.cancelPid = pid;
    if (this.clients.has(c)) this.addCancelKey(c);
  }

  private addCancelKey(c: ClientSession): void {
    const list = this.byCancelPid.get(c.cancelPid);
    if (list) list.push(c);
    else this.byCancelPid.set(c.cancelPid, [c]);
  }

  private dropCancelKey(c: ClientSession): void {
    const list = this.byCancelPid.get(c.cancelPid);
    if (!list) return;
    const i = list.indexOf(c);
    if (i >= 0) list.splice(i, 1);
    if (list.length === 0) this.byCancelPid.delete(c.cancelPid);
  }

  /** CancelRequest with the pooler's key: forwarded to the server now serving that client. */
  cancel(pid: number, secret: Buffer): void {
    this.counters.cancel++;
    const c = this.byCancelPid.get(pid)?.find((k) => k.cancelSecret.length === secret.length && timingSafeEqual(k.cancelSecret, secret));
    if (!c) {
      this.log.debug({ pid }, 'cancel request for an unknown key');
      return;
    }
    c.cancelRequested++;
    const s = c.server;
    // Only while the client's query runs on its server: one that finished (its ReadyForQuery went through the
    // relay) has nothing to cancel, and its server may already be another client's.
    const counts = c.relayCounts();
    const inFlight = s !== null && s.owner === c && counts !== null && (counts.syncs > 0 || counts.unsynced);
    this.log.debug({ client_id: c.id, server_id: s?.id, backend_pid: s?.backendPid, forwarded: inFlight }, 'cancel request');
    if (!inFlight || !c.pool) return;
    c.pool.forwardCancel(s, (message) => this.log.warn({ err: message }, 'forwarding a cancel request failed'));
  }

  // ---- PoolerControl ----

  private select(database?: string, user?: string): Pool[] {
    const out: Pool[] = [];
    for (const p of this.pools.values()) {
      if (p.retired) continue;
      if (database !== undefined && p.settings.database !== database) continue;
      if (user !== undefined && p.settings.user !== user) continue;
      out.push(p);
    }
    if (!out.length && (database !== undefined || user !== undefined)) {
      throw new PoolNotFoundError(user !== undefined ? `${user}@${database ?? '*'}` : `database ${database}`);
    }
    return out;
  }

  show(name: string, snapshot?: PoolerSnapshot): ShowTable {
    return showTable(this, name.toUpperCase(), snapshot);
  }

  snapshot(): PoolerSnapshot {
    return takeSnapshot(this);
  }

  durationHistograms(): DurationHistogram[] {
    return this.snapshot().pools.map((p) => ({ database: p.database, user: p.user, ...p.histograms }));
  }

  overview(snapshot?: PoolerSnapshot): Overview {
    return overviewOf(snapshot ?? this.snapshot());
  }

  async pause(database?: string, user?: string): Promise<string> {
    const pools = this.select(database, user);
    for (const p of pools) this.events.add('pause', `${p.settings.database}/${p.settings.user}`, 'PAUSE: new checkouts stop; running transactions finish');
    await Promise.all(pools.map((p) => p.pause()));
    return `PAUSE ${pools.map((p) => p.name).join(', ') || '(no pools)'}`;
  }

  resume(database?: string, user?: string): string {
    const pools = this.select(database, user);
    for (const p of pools) {
      p.resume();
      this.events.add('resume', `${p.settings.database}/${p.settings.user}`, 'RESUME: checkouts allowed again');
    }
    return `RESUME ${pools.map((p) => p.name).join(', ') || '(no pools)'}`;
  }

  reconnect(database?: string, user?: string): string {
    const pools = this.select(database, user);
    for (const p of pools) {
      p.reconnect();
      this.events.add('reconnect', `${p.settings.database}/${p.settings.user}`, 'RECONNECT: idle servers closed, active ones closed when they come back');
    }
    return `RECONNECT ${pools.map((p) => p.name).join(', ') || '(no pools)'}`;
  }

  /** KILL: drops every client and server of the database; its pools stay paused until RESUME. */
  kill(database: string): string {
    const pools = this.select(database);
    let killed = 0;
    for (const c of this.clients) if (c.pool && pools.includes(c.pool)) killed++;
    this.events.add('kill', null, `KILL ${database}: ${killed} clients and every server of ${pools.length} pools closed; the pools stay paused until RESUME`);
    for (const p of pools) {
      p.paused = true;
      p.failWaiters(`database "${database}" was killed by the administrator`, SqlState.AdminShutdown);
      for (const c of [...this.clients]) if (c.pool === p) c.kill(`database "${database}" was killed by the administrator`);
      p.closeAll('kill');
    }
    return `KILL ${database}`;
  }

  async reload(): Promise<string> {
    if (!this.configFile) throw new Error('no config file to reload');
    let next: PoolerConfig;
    try {
      next = loadPoolerConfig(this.configFile);
    } catch (err) {
      this.events.add('reload', null, `RELOAD failed, the old configuration stays: ${(err as Error).message.split('\n')[0]}`);
      throw err;
    }
    const changed = configChanges(this.config, next);
    const restartNeeded: string[] = [];
    if (next.general.host !== this.config.general.host || next.general.port !== this.config.general.port) restartNeeded.push('general.host/port');
    if (next.web.host !== this.config.web.host || next.web.port !== this.config.web.port || next.web.enabled !== this.config.web.enabled) restartNeeded.push('web.host/port/enabled');
    const g = this.config.general;
    if (next.general.prepared_statements !== g.prepared_statements || next.general.prepared_statements_cache_size !== g.prepared_statements_cache_size
      || next.general.server_prepared_statements_cache_size !== g.server_prepared_statements_cache_size) restartNeeded.push('general.prepared_statements*');
    const tls = reloadTlsSettings(this.tls, next, this.tlsRelay, this.nativeTls);
    this.tls = tls.settings;
    if (tls.restart) restartNeeded.push(tls.restart);
    if (tls.error) this.log.warn({ err: tls.error }, 'RELOAD: TLS files not loaded, the previous certificates and keys stay');
    const notes = tls.error ? [`TLS files not loaded, the previous certificates and keys stay: ${tls.error}`] : [];
    try {
      this.hba = next.general.auth_hba_file ? HbaRules.load(next.general.auth_hba_file) : null;
    } catch (err) {
      this.log.warn({ err: (err as Error).message }, 'RELOAD: auth_hba_file not loaded, the previous rules stay');
      notes.push(`auth_hba_file not loaded, the previous rules stay: ${(err as Error).message}`);
    }
    this.config = next;
    this.logs.level = next.general.log_level;
    this.logs.format = next.general.log_format;
    this.applyPools(next);
    this.nativeLogins.push();
    this.shipper = reconcileLogShipper(this.shipper, this.logs, next.logs);
    for (const l of this.reloadListeners) l(next);
    let msg = restartNeeded.length ? `RELOAD done; needs a restart to apply: ${restartNeeded.join(', ')}` : 'RELOAD done';
    if (notes.length) msg += `; ${notes.join('; ')}`;
    this.events.add('reload', null, `${msg}; changed: ${changed.length ? changed.join(', ') : 'nothing'}`);
    this.log.info({ file: this.configFile }, msg);
    return msg;
  }

  logShipping(): LogShipStats | null {
    return this.shipper?.stats ?? null;
  }

  onReload(listener: (config: PoolerConfig) => void): void {
    this.reloadListeners.push(listener);
  }

  /** Stops accepting, lets running transactions finish up to shutdown_timeout, then closes everything. */
  shutdown(graceful = true): Promise<void> {
    if (this.shutdownDone) return this.shutdownDone;
    this.shuttingDown = true;
    this.events.add('shutdown', null, graceful ? 'SHUTDOWN: running transactions get shutdown_timeout' : 'immediate shutdown');
    this.shutdownDone = (async () => {
      this.server?.close();
      if (this.nativeListener) this.nativeTls?.unlisten(this.nativeListener);
      if (graceful) {
        const deadline = Date.now() + this.config.general.shutdown_timeout;
        for (const p of this.pools.values()) p.paused = true;
        while (Date.now() < deadline && [...this.clients].some((c) => !c.isAdmin && !c.quiescent)) {
          await new Promise((r) => setTimeout(r, 50));
        }
      }
      for (const c of [...this.clients]) c.kill('the pooler is shutting down');
      for (const p of this.pools.values()) {
        p.failWaiters('the pooler is shutting down', SqlState.AdminShutdown);
        p.closeAll('shutdown');
      }
      if (this.timer) clearInterval(this.timer);
      for (const c of this.coordinators.values()) c.close();
      this.authQuery.close();
      this.log.info('pooler stopped');
      // Queued records get up to ship_timeout; SIGINT exits at once and counts them as dropped.
      await this.shipper?.close(graceful ? undefined : 0);
      this.resolveStopped();
    })();
    return this.shutdownDone;
  }
}
