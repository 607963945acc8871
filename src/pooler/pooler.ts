// The pooler: builds its parts (listener.ts, maintenance.ts, the pool set, auth_query, native logins) and gives them
// their hosts; keeps the client registry and cancel keys, resolves logins, answers the admin verbs and RELOAD.
import type { Logger } from 'pino';
import { loadPoolerConfig, type PoolConfig, type PoolerConfig, type UserConfig } from '../config/pooler.js';
import { SqlState } from '../protocol/codes.js';
import type { LogHub } from '../shared/logger.js';
import { ClientSession, TAKEOVER_LEFT_MESSAGE } from './client-session.js';
import type { ClientMover, MovedClient } from './takeover-clients.js';
import type { MovableServer, MovedServer } from './takeover-servers.js';
import { fdPassing } from '../native/fd-passing.js';
import { CancelKeys, NATIVE_LOGIN_PID_BIT } from './cancel-keys.js';
import { SlotSet } from './id-table.js';
import { killDatabase, pausePools, reconnectPools, resumePools, startPause } from './pool-verbs.js';
import type { LoginTarget } from './client-login.js';
import type { Pool } from './pool.js';
import type { ServerConnection } from './server-connection.js';
import { PoolSet } from './pool-set.js';
import type { AdminHost, DurationHistogram, Overview, PauseAnswer, ShowTable } from './control.js';
import type { PoolerCounters, SnapshotSource } from './hosts.js';
import { showTable } from './admin/show.js';
import { EventRing } from './events.js';
import { AppRegistry } from './apps.js';
import { takeSnapshot, type PoolerSnapshot, type SnapshotParts } from './snapshot.js';
import { overviewOf } from './overview.js';
import { planReload, reloadMessage, type ReloadPlan } from './reload.js';
import { attachAdminConsole } from './admin/console.js';
import { Listener, type ListenerHost } from './listener.js';
import { Maintenance, type MaintenanceHost } from './maintenance.js';
import { setQueryStatsSize } from './query-stats/stats.js';
import {
  loadTlsSettings,
  nativeTlsRelay,
  tlsNeedsJsRelay,
  NO_TLS,
  type ClientTls,
  type ServerTls,
  type TlsSettings,
} from './tls/tls-settings.js';
import { AuthQueryLogins, type AuthQueryHost } from './auth/auth-query-pools.js';
import { HbaRules, type HbaConnection, type HbaMethod } from './auth/hba.js';
import { NativeRelay } from './relay/native.js';
import { NativeLogins } from './native-logins.js';
import { LogLimiter } from './log-limiter.js';
import { ClientStartup } from './client-startup.js';
import { reconcileLogShipper, type LogShipStats, type LogShipper } from './log-ship/log-shipper.js';

export const ADMIN_DATABASES = new Set(['tidepool', 'pgbouncer']);
/** ParameterStatus values the admin console reports at login. */
const ADMIN_PARAMS: ReadonlyMap<string, string> = new Map([
  ['server_version', '16.0 (tidepool)'],
  ['server_encoding', 'UTF8'],
  ['client_encoding', 'UTF8'],
  ['DateStyle', 'ISO, MDY'],
  ['integer_datetimes', 'on'],
  ['standard_conforming_strings', 'on'],
  ['TimeZone', 'UTC'],
  ['is_superuser', 'on'],
]);

export class Pooler implements AdminHost, ListenerHost, SnapshotSource<ClientSession>, MaintenanceHost, AuthQueryHost {
  /** Pools and coordinators, kept to match the config (pool-set.ts). */
  readonly poolSet = new PoolSet(this);
  readonly pools = this.poolSet.pools;
  readonly clients = new SlotSet<ClientSession>();
  /** Logged-in clients by the key of their BackendKeyData. */
  private readonly cancelKeys = new CancelKeys<ClientSession>();
  readonly startedAt = new Date();
  readonly log: Logger;
  readonly counters: PoolerCounters = {
    connections: 0,
    errors: 0,
    cancel: 0,
    tls: 0,
    nativeLogins: 0,
    jsLogins: 0,
    loginTimeouts: 0,
    refusedMaxConnections: 0,
    refusedDescriptors: 0,
    movedIn: 0,
    movedOut: 0,
    serversMovedIn: 0,
    serversMovedOut: 0,
  };
  /** One warn line per period for what attackers can trigger by the thousand (log-limiter.ts). */
  readonly limitedLogs: {
    readonly loginTimeouts: LogLimiter;
    readonly maxConnections: LogLimiter;
    readonly descriptors: LogLimiter;
  };
  /** JavaScript logins in progress, in accept order (client_login_timeout: the oldest are first). */
  readonly logins = new Set<ClientStartup>();
  /** The logins the native relay runs itself (native-logins.ts). */
  readonly nativeLogins = new NativeLogins(this);
  /** Accepts clients and hands them to their logins (listener.ts). */
  readonly listener = new Listener(this);
  /** Every periodic tick and the shutdown (maintenance.ts). */
  private readonly maintenance = new Maintenance(this);
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
  private reloadListeners: ((c: PoolerConfig) => void)[] = [];
  /** Ships log records to [logs] ship_to; null when shipping is off. */
  private shipper: LogShipper | null = null;
  /** Resolves when the pooler has stopped (SHUTDOWN, signals). */
  readonly stopped: Promise<void>;
  private resolveStopped!: () => void;

  constructor(
    public config: PoolerConfig,
    readonly configFile: string | null,
    readonly logs: LogHub,
  ) {
    this.log = logs.get('pooler');
    this.limitedLogs = {
      loginTimeouts: new LogLimiter(this.log, 'client logins closed by client_login_timeout'),
      maxConnections: new LogLimiter(this.log, 'clients refused: max_connections reached (SQLSTATE 53300)'),
      descriptors: new LogLimiter(
        this.log,
        'clients refused: no file descriptors left (EMFILE/ENFILE); raise the limit (ulimit -n) or lower max_connections',
      ),
    };
    this.stopped = new Promise((r) => {
      this.resolveStopped = r;
    });
    // Before any pool: the process's native relay is made with this config's [native] relay_events.
    if (config.native.relay) NativeRelay.start(config.native.relay_events);
    // Before listen(): the "pooler listening" line is shipped too.
    this.tlsRelay = tlsNeedsJsRelay(config);
    this.nativeTls = this.tlsRelay ? null : nativeTlsRelay(config);
    this.tls = loadTlsSettings(config, this.nativeTls);
    this.hba = config.general.auth_hba_file ? HbaRules.load(config.general.auth_hba_file) : null;
    this.shipper = reconcileLogShipper(null, logs, config.logs);
    this.poolSet.apply(config);
    setQueryStatsSize(config.general.query_stats_size, NativeRelay.get());
  }

  /** Loads `configFile` and listens; resolves with the bound address. `listenFd`: a listening socket received from the
   * process this one takes over from (takeover.ts), accepted on instead of opening general.host:port. */
  static async start(configFile: string, logs: LogHub, opts: { listenFd?: number } = {}): Promise<Pooler> {
    const config = loadPoolerConfig(configFile);
    logs.level = config.general.log_level;
    logs.format = config.general.log_format;
    const p = new Pooler(config, configFile, logs);
    try {
      await p.listen(opts.listenFd);
    } catch (err) {
      await p.shipper?.close(0);
      throw err;
    }
    return p;
  }

  get port(): number {
    return this.listener.port;
  }

  /** True when the native relay accepts this pooler's clients itself (listener.ts). */
  get acceptsNatively(): boolean {
    return this.listener.acceptsNatively;
  }

  async listen(inheritedFd?: number): Promise<void> {
    const { host } = this.config.general;
    await this.listener.listen(inheritedFd);
    this.maintenance.start();
    this.log.info({ host, port: this.port, inherited: inheritedFd !== undefined }, 'pooler listening');
  }

  get shuttingDown(): boolean {
    return this.maintenance.shuttingDown;
  }

  /** Closes the logins older than client_login_timeout (maintenance.ts). */
  expireLogins(now = Date.now()): number {
    return this.maintenance.expireLogins(now);
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
      if (user !== g.admin_username)
        return { error: `user "${user}" may not use the admin console`, sqlstate: SqlState.InvalidAuthorization };
      if (!g.admin_password)
        return {
          error: 'the admin console is disabled: general.admin_password is empty',
          sqlstate: SqlState.InvalidAuthorization,
        };
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
    if (!uc || !pool)
      return { error: `no such user "${user}" in database "${database}"`, sqlstate: SqlState.InvalidAuthorization };
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

  registerClient(c: ClientSession, native: boolean | 'moved' = false): void {
    this.logins.delete(c.startup);
    this.clients.add(c);
    this.loginCountChanged(-1);
    if (native === 'moved') this.counters.movedIn++;
    else if (native) this.counters.nativeLogins++;
    else this.counters.jsLogins++;
    this.cancelKeys.add(c);
    if (c.isAdmin) attachAdminConsole(this, c);
    if (this.log.isLevelEnabled('debug'))
      this.log.debug({ client_id: c.id, user: c.user, database: c.database, addr: c.addr }, 'client logged in');
  }

  unregisterClient(c: ClientSession): void {
    // A session that closed before its greeting (a server awaited for it) was never registered.
    this.logins.delete(c.startup);
    if (!this.clients.delete(c)) this.loginCountChanged(-1);
    else this.nativeLogins.clients(this.clients.size + this.loggingIn);
    this.cancelKeys.drop(c);
  }

  /** A connection closed before its login succeeded (client-startup.ts). */
  loginEnded(c: ClientStartup): void {
    this.logins.delete(c);
    this.loginCountChanged(-1);
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
      // After a takeover, the client may still be on the old process (in a transaction there).
      const forwarded = this.cancelElsewhere?.(pid, secret) ?? false;
      this.log.debug({ pid, forwarded_to_old_process: forwarded }, 'cancel request for an unknown key');
      return;
    }
    c.cancelRequested++;
    const s = c.server;
    // Only while the client's query runs on its server: one that finished (its ReadyForQuery went through the
    // relay) has nothing to cancel, and its server may already be another client's.
    const counts = c.relayCounts();
    const inFlight = s !== null && s.owner === c && counts !== null && (counts.syncs > 0 || counts.unsynced);
    this.log.debug(
      { client_id: c.id, server_id: s?.id, backend_pid: s?.backendPid, forwarded: inFlight },
      'cancel request',
    );
    if (!inFlight || !c.pool) return;
    c.pool.forwardCancel(s, (message) => this.log.warn({ err: message }, 'forwarding a cancel request failed'));
  }

  // ---- takeover: clients moved between processes (takeover-clients.ts) ----

  /** The new process of a takeover: a CancelRequest for a key it does not know goes to the old one (true when sent). */
  cancelElsewhere: ((pid: number, secret: Buffer) => boolean) | null = null;
  /** The old process of a takeover: moves its clients to the new one. */
  private mover: ClientMover<ClientSession> | null = null;

  /** The old process of a takeover: from now on every client between transactions is sent to the new process. */
  moveClients(mover: ClientMover<ClientSession>): void {
    this.mover = mover;
    mover.onClose = () => this.moverClosed();
    mover.onServerMoved = () => this.counters.serversMovedOut++;
    // After the shutdown has begun (pools paused, parked servers back): the first offer of every client.
    setImmediate(() => mover.offerAll());
  }

  /** A client came between transactions (or asked for a server while this process drains): true when it is on its way
   * to the new process. */
  offerMove(c: ClientSession): boolean {
    return this.mover?.offer(c) ?? false;
  }

  /** Clients are moving to the new process: it answers. */
  get movingClients(): boolean {
    return this.mover?.active ?? false;
  }

  get handedOver(): boolean {
    return this.mover !== null;
  }

  /** The takeover connection closed while clients waited to move (their pools are paused): they hear 57P01 now, as
   * they would have without the hand-over. */
  private moverClosed(): void {
    for (const c of [...this.clients]) {
      if (c.state === 'waiting' && !c.isAdmin) c.kill(TAKEOVER_LEFT_MESSAGE, SqlState.AdminShutdown);
    }
  }

  /** The old process of a takeover: the servers idle in its pools now, each offered to the new process. */
  *movableServers(): Iterable<MovableServer> {
    for (const pool of this.poolSet.pools.values()) {
      for (const s of [...pool.servers.idle()]) yield { moveOut: () => pool.moveOut(s) };
    }
  }

  /** The old process of a takeover, before it closes its servers: the idle ones go to the new process, whose answers
   * are awaited (up to two seconds), so a server freed by the last client's leaving is not closed for nothing. */
  async lastServerMoves(): Promise<void> {
    const mover = this.mover;
    if (!mover?.active) return;
    for (const pool of this.poolSet.pools.values()) pool.settle();
    mover.offerServers();
    const until = Date.now() + 2000;
    while (mover.active && mover.pending > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
  }

  /** The new process of a takeover: an idle server connection of the old one joins the pool of the same name here
   * (null), or why not (the old process closes it). `fd` is this process's: used or closed here. */
  adoptMovedServer(m: MovedServer, fd: number): string | null {
    const pool = this.shuttingDown ? undefined : this.poolSet.get(m.database, m.user);
    if (!pool) {
      fdPassing?.fdClose(fd);
      return this.shuttingDown
        ? 'this process is shutting down'
        : `no pool for database "${m.database}" and user "${m.user}" here`;
    }
    const why = pool.adoptMoved(m, fd);
    if (why === null) this.counters.serversMovedIn++;
    return why;
  }

  /** The new process of a takeover: a client of the old one, logged in there, served here from now on (null), or why
   * not (the old process keeps it). `fd` is this process's: used or closed here. */
  adoptMoved(m: MovedClient, fd: number, serverFd?: number): string | null {
    let sfd = serverFd;
    const refuse = (why: string) => {
      fdPassing?.fdClose(fd);
      if (sfd !== undefined) fdPassing?.fdClose(sfd);
      return why;
    };
    if (this.shuttingDown) return refuse('this process is shutting down');
    if (m.linked && sfd === undefined) return refuse('a linked client came without its server');
    const pool = this.poolSet.get(m.database, m.user);
    if (!pool) return refuse(`no pool for database "${m.database}" and user "${m.user}" here`);
    const mode = m.linked?.session ? 'session' : 'transaction';
    if (pool.settings.mode !== mode) return refuse(`pool ${pool.name} is not in ${mode} mode here`);
    if (m.statements.length > 0 && !pool.interner)
      return refuse(`the client has prepared statements and pool ${pool.name} has prepared_statements off here`);
    if (this.connectionCount() >= this.config.general.max_connections) return refuse('max_connections reached here');
    // The connection, as if accepted here, with the cancel key and accept time the client had there: no login runs.
    let startup: ClientStartup;
    try {
      startup = ClientStartup.moved(fd, this, m);
    } catch (err) {
      return refuse(`not a socket: ${(err as Error).message}`);
    }
    // A client linked to its server (session mode, or pinned) takes that server here as its own, not into the pool.
    let server: ServerConnection | undefined;
    if (m.linked && sfd !== undefined) {
      const adopted = pool.adoptLinked(m.linked.server, sfd, !m.linked.session);
      sfd = undefined;
      if (typeof adopted === 'string') {
        startup.detach();
        startup.socket.on('error', () => undefined);
        startup.socket.destroy();
        return adopted;
      }
      server = adopted;
    }
    const socket = startup.socket;
    // Counted as a login under way until the session registers (registerClient), as any accepted client.
    this.loginCountChanged(1);
    // Born logged in: the relay takes it at once (the session starts Node's reads if it is the JavaScript relay).
    try {
      new ClientSession(this, startup, { moved: { pool, client: m, ...(server ? { server } : {}) } });
      if (server) this.counters.serversMovedIn++;
    } catch (err) {
      // A bug, not a state of the client: it goes back to the old process rather than nowhere.
      startup.detach();
      socket.on('error', () => undefined);
      socket.destroy();
      if (server) {
        pool.forgetMoved(server);
        server.destroy();
      }
      this.loginCountChanged(-1);
      this.log.error({ err: (err as Error).stack ?? String(err) }, 'takeover: adopting a client failed');
      return `adopting it failed: ${(err as Error).message}`;
    }
    return null;
  }

  // ---- AdminHost ----

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

  /** RELOAD: the plan is made in reload.ts (nothing changes when the file is bad); here it is applied to the parts. */
  async reload(): Promise<string> {
    if (!this.configFile) throw new Error('no config file to reload');
    let plan: ReloadPlan;
    try {
      plan = planReload(this, this.configFile);
    } catch (err) {
      this.events.add(
        'reload',
        null,
        `RELOAD failed, the old configuration stays: ${(err as Error).message.split('\n')[0]}`,
      );
      throw err;
    }
    const { next } = plan;
    for (const note of plan.notes) this.log.warn(`RELOAD: ${note}`);
    this.tls = plan.tls;
    if (plan.hba !== undefined) this.hba = plan.hba;
    // Relay-only clients become sessions and lent servers come back before the pools change.
    this.nativeLogins.materializeHeld();
    for (const p of this.pools.values()) p.settle();
    this.config = next;
    this.logs.level = next.general.log_level;
    this.logs.format = next.general.log_format;
    this.poolSet.apply(next);
    setQueryStatsSize(next.general.query_stats_size, NativeRelay.get());
    this.nativeLogins.push();
    this.shipper = reconcileLogShipper(this.shipper, this.logs, next.logs);
    for (const l of this.reloadListeners) l(next);
    const msg = reloadMessage(plan);
    this.events.add('reload', null, `${msg}; changed: ${plan.changed.length ? plan.changed.join(', ') : 'nothing'}`);
    this.log.info({ file: this.configFile }, msg);
    return msg;
  }

  logShipping(): LogShipStats | null {
    return this.shipper?.stats ?? null;
  }

  onReload(listener: (config: PoolerConfig) => void): void {
    this.reloadListeners.push(listener);
  }

  /** Stops accepting, lets running transactions finish up to shutdown_timeout, then closes everything (maintenance.ts);
   * `drain`: after a takeover, waits for the clients to leave. */
  shutdown(graceful = true, opts: { drain?: boolean } = {}): Promise<void> {
    return this.maintenance.shutdown(graceful, opts);
  }

  /** The shutdown's last step: queued log records get up to ship_timeout; SIGINT exits at once and counts them as
   * dropped. */
  async finishShutdown(graceful: boolean): Promise<void> {
    this.mover?.close();
    await this.shipper?.close(graceful ? undefined : 0);
    this.resolveStopped();
  }
}
