// The pooler: client listener, pools per (database, user), cancel routing, admin verbs, reload, shutdown.
import net from 'node:net';
import type { Logger } from 'pino';
import { loadPoolerConfig, type PoolConfig, type PoolerConfig, type UserConfig } from '../config/pooler.js';
import { SqlState } from '../protocol/codes.js';
import type { LogHub } from '../shared/logger.js';
import type { ClientSession } from './client-session.js';
import { CancelKeys, NATIVE_LOGIN_PID_BIT } from './cancel-keys.js';
import { SlotSet } from './id-table.js';
import { killDatabase, pausePools, reconnectPools, resumePools, startPause } from './pool-verbs.js';
import type { LoginTarget } from './client-login.js';
import type { Pool } from './pool.js';
import { PoolSet } from './pool-set.js';
import type { DurationHistogram, Overview, PauseAnswer, PoolerControl, ShowTable } from './control.js';
import { showTable } from './admin/show.js';
import { EventRing } from './events.js';
import { AppRegistry } from './apps.js';
import { takeSnapshot, type PoolerSnapshot, type SnapshotParts } from './snapshot.js';
import { overviewOf } from './overview.js';
import { configChanges, restartNeeded } from './config-diff.js';
import { attachAdminConsole } from './admin/console.js';
import { acceptSocket, nativeAcceptor, CLIENT_KEEPALIVE_MS } from './client-accept.js';
import { setQueryStatsSize } from './query-stats/stats.js';
import { loadTlsSettings, reloadTlsSettings, nativeTlsRelay, tlsNeedsJsRelay, NO_TLS, type ClientTls, type ServerTls, type TlsSettings } from './tls/tls-settings.js';
import { AuthQueryLogins, type AuthQueryHost } from './auth/auth-query-pools.js';
import { HbaRules, type HbaConnection, type HbaMethod } from './auth/hba.js';
import type { NativeRelay } from './relay/native.js';
import { NativeLogins } from './native-logins.js';
import { LogLimiter } from './log-limiter.js';
import { clientSocketCap, openFileLimit } from './fd-limit.js';
import type { ClientStartup } from './client-startup.js';
import { reconcileLogShipper, type LogShipStats, type LogShipper } from './log-ship/log-shipper.js';

export const ADMIN_DATABASES = new Set(['tidepool', 'pgbouncer']);
/** ParameterStatus values the admin console reports at login. */
/** TCP_DEFER_ACCEPT's time with tcp_defer_accept on: PgBouncer's fixed 45 s. */
const DEFER_ACCEPT_SECS = 45;

const ADMIN_PARAMS: ReadonlyMap<string, string> = new Map([
  ['server_version', '16.0 (tidepool)'], ['server_encoding', 'UTF8'], ['client_encoding', 'UTF8'], ['DateStyle', 'ISO, MDY'],
  ['integer_datetimes', 'on'], ['standard_conforming_strings', 'on'], ['TimeZone', 'UTC'], ['is_superuser', 'on'],
]);

export class Pooler implements PoolerControl, AuthQueryHost {
  /** Pools and coordinators, kept to match the config (pool-set.ts). */
  readonly poolSet = new PoolSet(this);
  readonly pools = this.poolSet.pools;
  readonly clients = new SlotSet<ClientSession>();
  /** Logged-in clients by the key of their BackendKeyData. */
  private readonly cancelKeys = new CancelKeys<ClientSession>();
  readonly startedAt = new Date();
  readonly log: Logger;
  /** connections: accepted; tls: of them, those that completed a TLS handshake; nativeLogins / jsLogins: logins that
   * succeeded, by who ran the password exchange (the native relay, or client-login.ts). */
  readonly counters = {
    connections: 0, errors: 0, cancel: 0, tls: 0, nativeLogins: 0, jsLogins: 0,
    /** Logins closed by client_login_timeout; clients refused at accept for max_connections, and for want of
     * descriptors (EMFILE, ENFILE). */
    loginTimeouts: 0, refusedMaxConnections: 0, refusedDescriptors: 0,
  };
  /** One warn line per period for what attackers can trigger by the thousand (log-limiter.ts). */
  readonly limitedLogs: { readonly loginTimeouts: LogLimiter; readonly maxConnections: LogLimiter; readonly descriptors: LogLimiter };
  /** JavaScript logins in progress, in accept order (client_login_timeout: the oldest are first). */
  readonly logins = new Set<ClientStartup>();
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
  readonly coordinators = this.poolSet.coordinators;
  /** What an operator needs to reconstruct an incident (SHOW EVENTS, /api/events). */
  readonly events = new EventRing();
  /** Load per application_name (/api/apps). */
  readonly apps = new AppRegistry();
  private server: net.Server | null = null;
  private timer: NodeJS.Timeout | null = null;
  private loginTimer: NodeJS.Timeout | null = null;
  private loginSweepMs = 0;
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
    this.limitedLogs = {
      loginTimeouts: new LogLimiter(this.log, 'client logins closed by client_login_timeout'),
      maxConnections: new LogLimiter(this.log, 'clients refused: max_connections reached (SQLSTATE 53300)'),
      descriptors: new LogLimiter(this.log, 'clients refused: no file descriptors left (EMFILE/ENFILE); raise the limit (ulimit -n) or lower max_connections'),
    };
    this.stopped = new Promise((r) => { this.resolveStopped = r; });
    // Before listen(): the "pooler listening" line is shipped too.
    this.tlsRelay = tlsNeedsJsRelay(config);
    this.nativeTls = this.tlsRelay ? null : nativeTlsRelay(config);
    this.tls = loadTlsSettings(config, this.nativeTls);
    this.hba = config.general.auth_hba_file ? HbaRules.load(config.general.auth_hba_file) : null;
    this.shipper = reconcileLogShipper(null, logs, config.logs);
    this.poolSet.apply(config);
    setQueryStatsSize(config.general.query_stats_size);
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
  /** Client sockets net.Server's accepts may hold (fd-limit.ts), 0: no cap. */
  clientSocketCap = 0;

  async listen(): Promise<void> {
    const { host, port, tcp_no_delay, tcp_defer_accept } = this.config.general;
    this.server = net.createServer({ noDelay: tcp_no_delay, pauseOnConnect: true }, (socket) => acceptSocket(this, socket));
    await new Promise<void>((resolve, reject) => {
      this.server!.once('error', reject);
      this.server!.listen(port, host, () => {
        this.server!.removeListener('error', reject);
        resolve();
      });
    });
    this.server.on('error', (err: NodeJS.ErrnoException) => {
      // libuv keeps a descriptor in reserve and closes the waiting client with it on EMFILE, then reports the error
      // here: one per refused client, so they are counted and logged once a period.
      if (err.code === 'EMFILE' || err.code === 'ENFILE') {
        this.counters.refusedDescriptors++;
        this.limitedLogs.descriptors.add(1, { err: err.code });
        return;
      }
      this.log.error({ err: err.message }, 'listener error');
    });
    // libuv answers EMFILE by closing the waiting clients without a word to Node: acceptSocket refuses clients past a
    // cap below the descriptor limit itself, where they can be counted and logged (net.Server's maxConnections
    // cannot: sockets read through a ReadBuffer leave its count).
    this.clientSocketCap = clientSocketCap(openFileLimit());
    // With the native relay carrying every pool, it accepts the clients itself: a login costs no Node socket
    // (TIDEPOOL_NATIVE_ACCEPT=0 keeps net.Server's accepts, as with the JavaScript relay).
    const listener = process.env.TIDEPOOL_NATIVE_ACCEPT !== '0' ? this.nativeTls?.listen(this.server, tcp_no_delay, CLIENT_KEEPALIVE_MS, nativeAcceptor(this), tcp_defer_accept ? DEFER_ACCEPT_SECS : 0) ?? 0 : 0;
    if (listener > 0) {
      this.nativeListener = listener;
      this.nativePort = (this.server.address() as net.AddressInfo).port;
      this.server.close();
      this.server = null;
      this.nativeLogins.listening(listener);
    }
    this.timer = setInterval(() => this.maintain(), 1000);
    this.timer.unref();
    this.scheduleLoginSweep();
    this.onReload(() => this.scheduleLoginSweep());
    this.log.info({ host, port: this.port }, 'pooler listening');
  }

  /** client_login_timeout's sweep: a quarter of the timeout (100 ms to 1 s), so a login is closed at most a quarter
   * late; none when the timeout is off. */
  private scheduleLoginSweep(): void {
    const timeout = this.config.general.client_login_timeout;
    const every = timeout > 0 ? Math.min(1000, Math.max(100, Math.floor(timeout / 4))) : 0;
    if (every === this.loginSweepMs || this.shuttingDown) return;
    if (this.loginTimer) clearInterval(this.loginTimer);
    this.loginTimer = null;
    this.loginSweepMs = every;
    if (!every) return;
    this.loginTimer = setInterval(() => this.expireLogins(), every);
    this.loginTimer.unref();
  }

  /** Closes the logins older than client_login_timeout: JavaScript's in accept order (stopping at the first young
   * one, so a sweep costs what it closes), the native relay's in one pass there. */
  expireLogins(now = Date.now()): number {
    const timeout = this.config.general.client_login_timeout;
    if (timeout <= 0) return 0;
    let n = 0;
    for (const c of this.logins) {
      if (now - c.connectedAt < timeout) break;
      this.logins.delete(c);
      c.loginTimedOut();
      n++;
    }
    if (this.nativeListener && this.nativeLogins.underWay > 0) n += this.nativeTls?.expireLogins(this.nativeListener, timeout) ?? 0;
    if (n > 0) {
      this.counters.loginTimeouts += n;
      this.limitedLogs.loginTimeouts.add(n, { client_login_timeout_ms: timeout });
    }
    return n;
  }

  /** Every accepted client, logins in progress included (max_connections counts them all, as PgBouncer's
   * max_client_conn does). */
  connectionCount(): number {
    return this.clients.size + this.loggingIn + this.nativeLogins.underWay + this.nativeLogins.relayOnly;
  }

  /** A login began or ended: the native relay's max_connections check reads JavaScript's count. */
  loginCountChanged(delta: number): void {
    this.loggingIn += delta;
    this.nativeLogins.clients(this.clients.size + this.loggingIn);
  }

  private maintain(): void {
    const now = Date.now();
    if (this.nativeListener) {
      const refused = this.nativeTls?.acceptRefused(this.nativeListener) ?? 0;
      if (refused > 0) {
        this.counters.refusedDescriptors += refused;
        this.limitedLogs.descriptors.add(refused, { err: 'EMFILE' });
      }
    }
    for (const l of Object.values(this.limitedLogs)) l.flush(now);
    this.authQuery.maintain(now);
    this.poolSet.maintain(now);
    if (now - this.lastRoll >= this.config.general.stats_period) {
      for (const pool of this.pools.values()) {
        pool.stats.roll(now - this.lastRoll);
        pool.health.roll(now - this.lastRoll);
      }
      this.apps.roll(now - this.lastRoll);
      this.lastRoll = now;
    }
  }

  poolHasClients(pool: Pool): boolean {
    for (const c of this.clients) if (c.pool === pool) return true;
    return false;
  }

  // ---- AuthQueryHost ----

  serverTls(): ServerTls {
    return this.tls.server;
  }

  pool(database: string, user: string): Pool | null {
    return this.poolSet.get(database, user);
  }

  createPool(database: string, pc: PoolConfig, user: UserConfig): Pool {
    return this.poolSet.create(this.config, database, pc, user);
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
    const pool = this.poolSet.get(database, user);
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
    return this.clients.size + this.nativeLogins.relayOnly + 1;
  }

  appBlock(name: string): Float64Array {
    return this.apps.get(name).block;
  }

  logsEachLogin(): boolean {
    return this.log.isLevelEnabled('debug');
  }

  registerClient(c: ClientSession, native = false): void {
    this.logins.delete(c);
    this.clients.add(c);
    this.loginCountChanged(-1);
    if (native) this.counters.nativeLogins++;
    else this.counters.jsLogins++;
    this.cancelKeys.add(c);
    if (c.isAdmin) attachAdminConsole(this, c);
    if (this.log.isLevelEnabled('debug')) this.log.debug({ client_id: c.id, user: c.user, database: c.database, addr: c.addr }, 'client logged in');
  }

  unregisterClient(c: ClientSession): void {
    // A connection that closed before its login completed was never registered.
    this.logins.delete(c);
    if (!this.clients.delete(c)) this.loginCountChanged(-1);
    else this.nativeLogins.clients(this.clients.size + this.loggingIn);
    this.cancelKeys.drop(c);
  }

  /** The pid of a new client's BackendKeyData (cancel-keys.ts): never a backend's. */
  newCancelPid(): number {
    return this.cancelKeys.newPid();
  }

  /** Session mode: the client's BackendKeyData names its server's pid from now on. */
  rekeyCancel(c: ClientSession, pid: number): void {
    this.cancelKeys.drop(c);
    c.cancelPid = pid;
    if (this.clients.has(c)) this.cancelKeys.add(c);
  }

  /** CancelRequest with the pooler's key: forwarded to the server now serving that client. */
  cancel(pid: number, secret: Buffer): void {
    this.counters.cancel++;
    let c = this.cancelKeys.find(pid, secret);
    if (!c && this.nativeLogins.relayOnly > 0 && (pid & NATIVE_LOGIN_PID_BIT) !== 0) {
      // A relay-only client (native/relay-lend.cc) is reported now, with its key: its pid names its relay id.
      this.nativeTls?.materialize(null, pid & ~NATIVE_LOGIN_PID_BIT);
      c = this.cancelKeys.find(pid, secret);
    }
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

  show(name: string, snapshot?: PoolerSnapshot): ShowTable {
    return showTable(this, name.toUpperCase(), snapshot);
  }

  snapshot(parts?: SnapshotParts): PoolerSnapshot {
    return takeSnapshot(this, parts);
  }

  durationHistograms(): DurationHistogram[] {
    return this.snapshot().pools.map((p) => ({ database: p.database, user: p.user, ...p.histograms }));
  }

  overview(snapshot?: PoolerSnapshot): Overview {
    return overviewOf(snapshot ?? this.snapshot());
  }

  pause(database?: string, user?: string): Promise<string> {
    return pausePools(this, database, user);
  }

  pauseNow(database?: string, user?: string): PauseAnswer {
    const { message, running } = startPause(this, database, user);
    return { message, running_transactions: running };
  }

  resume(database?: string, user?: string): string {
    return resumePools(this, database, user);
  }

  reconnect(database?: string, user?: string): string {
    return reconnectPools(this, database, user);
  }

  kill(database: string): string {
    return killDatabase(this, database);
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
    const restart = restartNeeded(this.config, next);
    const tls = reloadTlsSettings(this.tls, next, this.tlsRelay, this.nativeTls);
    this.tls = tls.settings;
    if (tls.restart) restart.push(tls.restart);
    if (tls.error) this.log.warn({ err: tls.error }, 'RELOAD: TLS files not loaded, the previous certificates and keys stay');
    const notes = tls.error ? [`TLS files not loaded, the previous certificates and keys stay: ${tls.error}`] : [];
    try {
      this.hba = next.general.auth_hba_file ? HbaRules.load(next.general.auth_hba_file) : null;
    } catch (err) {
      this.log.warn({ err: (err as Error).message }, 'RELOAD: auth_hba_file not loaded, the previous rules stay');
      notes.push(`auth_hba_file not loaded, the previous rules stay: ${(err as Error).message}`);
    }
    // Relay-only clients become sessions and lent servers come back before the pools change.
    for (const p of this.pools.values()) p.settle();
    this.config = next;
    this.logs.level = next.general.log_level;
    this.logs.format = next.general.log_format;
    this.poolSet.apply(next);
    setQueryStatsSize(next.general.query_stats_size);
    this.nativeLogins.push();
    this.shipper = reconcileLogShipper(this.shipper, this.logs, next.logs);
    for (const l of this.reloadListeners) l(next);
    let msg = restart.length ? `RELOAD done; needs a restart to apply: ${restart.join(', ')}` : 'RELOAD done';
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
      for (const p of this.pools.values()) p.settle();
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
      if (this.loginTimer) clearInterval(this.loginTimer);
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
