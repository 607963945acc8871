// The native relay (native/relay*.cc) seen from TypeScript: the addon forwards bytes itself and reports only what JavaScript decides.
import type net from 'node:net';
import { addon } from '../../native/index.js';
import { DURATION_BOUNDS, SQLSTATE_SLOTS, STATS_LAYOUT, type PoolStats } from '../stats.js';
import { LANE_MAX_ENTRIES } from '../prepared/lane.js';
import type { QueryStatsRow } from '../query-stats/table.js';
import { NativeClientEnd, NativeServerEnd, type NativeEndsRelay } from './native-ends.js';
import { IdTable } from '../id-table.js';
import { NATIVE_LOGIN_PID_BIT } from '../cancel-keys.js';
import {
  NativeTlsLogins,
  NativeTlsSocket,
  nativeTlsContext,
  type NativeTlsContext,
  type NativeTlsHandlers,
} from './native-tls.js';
import type {
  ClientEnd,
  ClientEvents,
  ClientOptions,
  ClientRelaySocket,
  Relay,
  RelayCounts,
  RelaySocket,
  ServerEnd,
  ServerEvents,
} from './relay.js';
import {
  LOGIN_SQLSTATES,
  RelayEvent,
  type LendOptions,
  type NativeAcceptor,
  type NativeLoginUser,
  type RelayAddon,
} from './native-addon.js';

export type { LendOptions, NativeAcceptor, NativeLoginOk, NativeLoginUser, RelayAddon } from './native-addon.js';

/** Parking: in transaction mode, while a pool has nobody waiting (and is not paused or draining), the
 * relay keeps a pair linked after its transaction instead of splitting it, so a client that comes back
 * before anyone else needs the server costs no JavaScript at all. JavaScript still owns every decision:
 * whenever it needs the pool's real state (a waiter, PAUSE, RECONNECT, maintenance, SHOW) it reclaims
 * the parked servers first, as if each had been released at its ReadyForQuery. */

type WithHandle = net.Socket & { _handle?: { fd?: number } | null };

/** The descriptor under a connected socket, or -1 when this platform or Node does not expose it. */
export function socketFd(socket: net.Socket): number {
  const fd = (socket as WithHandle)._handle?.fd;
  return typeof fd === 'number' && fd >= 0 ? fd : -1;
}

function isTls(socket: net.Socket): boolean {
  return (socket as net.Socket & { encrypted?: boolean }).encrypted === true;
}

/** Closes Node's socket object after the relay took a duplicate of its descriptor: the connection stays open. */
function dropNodeSocket(socket: net.Socket): void {
  socket.removeAllListeners();
  socket.on('error', () => undefined);
  socket.destroy();
}

/** Doubles per row of relayHeldRows (native/relay-lend.cc kHeldRow). */
const HELD_ROW = 8;

/** A held login as a snapshot lists it (NativeRelay.heldRows): it has sent nothing since its login. */
export interface HeldRow {
  readonly clientId: number;
  readonly entry: number;
  readonly applicationName: string;
  /** address:port, as ClientStartup.addr. */
  readonly addr: string;
  /** Milliseconds since the relay accepted it. */
  readonly ageMs: number;
}

/** reason: 0 EOF, 1 Terminate, 2 socket error, 3 TLS error (relayTlsError says which). */
const CLIENT_CLOSE_REASONS = ['client closed the connection', 'client terminated', 'socket error', 'TLS error'];
const CLOSE_TLS = 3;
/** reason: 0 EOF (the connection says why), 1 socket error, 2 malformed message. */
const SERVER_CLOSE_REASONS = ['', 'socket error', 'PostgreSQL sent a malformed message'];

/** After login the addon takes the sockets' descriptors and forwards bytes on the event loop by itself, reporting
 * only transaction boundaries and closes, in one batch per loop iteration through a shared Int32Array (five slots
 * per event). TIDEPOOL_NATIVE=0 (no addon) or [native] relay = false leaves every socket to js.ts. */
export class NativeRelay implements Relay, NativeEndsRelay {
  private static instance: NativeRelay | null | undefined;
  private readonly clients = new IdTable<NativeClientEnd>();
  /** Clients whose TLS the addon terminates, until their login ends (native-tls.ts). */
  private readonly logins: NativeTlsLogins;
  private readonly servers = new IdTable<NativeServerEnd>();
  /** The shared event buffer: [native] relay_events events (at least 3, the longest group of events that must reach
   * JavaScript in one round). What does not fit in one round waits in order in the relay (native/relay-events.cc); a
   * small value makes tests go through that path. */
  private readonly events: Int32Array;
  private readonly infoOut = new Float64Array(13);
  private readonly reclaimOut = new Int32Array(4096);
  /** Parses and Binds the native lane answered in groups it saw through (counted when JavaScript takes them). */
  laneAnswered = 0;
  /** Release reports that brought the lane's counts (Relay::EmitRelease), not taken with relayLaneTake (tests read it). */
  laneReports = 0;
  /** NeedServer reports heard: a client's transaction that found no server linked or parked (tests read it). */
  needServers = 0;
  /** relayLaneTake's output: Parse hits, then per lane entry its Binds, Executes and their microseconds. */
  readonly laneCounts = new Float64Array(1 + 3 * LANE_MAX_ENTRIES);
  /** The lane's counts that came with this round's kRelease reports (Relay::EmitRelease); read before the round ends. */
  readonly laneOut = new Float64Array(8192);

  private constructor(
    readonly a: RelayAddon,
    eventSlots: number,
  ) {
    this.events = new Int32Array(5 * eventSlots);
    const layout = Int32Array.from([
      STATS_LAYOUT.qHist,
      STATS_LAYOUT.xHist,
      STATS_LAYOUT.qLog,
      STATS_LAYOUT.xLog,
      STATS_LAYOUT.logBuckets,
      STATS_LAYOUT.parkable,
      STATS_LAYOUT.sqlStates,
      SQLSTATE_SLOTS,
    ]);
    a.relayInit(this.onEvents, this.events, layout, Float64Array.from(DURATION_BOUNDS), this.laneOut);
    this.logins = new NativeTlsLogins(a, this);
  }

  /** Simple-protocol query statistics (native/query-stats.h): at most `n` fingerprints, 0 off; a new size empties the table. */
  queryStatsSize(n: number): void {
    this.a.relayQueryStatsSize(n);
  }

  /** The table's entries with at least one completed query (read only when /api/top/queries asks). */
  queryStats(): QueryStatsRow[] {
    const t = this.a.relayQueryStats();
    return t.pools.map((pool, i) => ({
      pool,
      hash: t.hashes[i]!,
      text: t.texts[i]!,
      count: t.counts[i]!,
      timeUs: t.times[i]!,
    }));
  }

  /** The process's native relay, made by the first pooler whose [native] relay is on (its relay_events size the event
   * buffer for the process's life); null when the addon has no relay. */
  static start(eventSlots: number): NativeRelay | null {
    if (NativeRelay.instance !== undefined) return NativeRelay.instance;
    const a = addon as unknown as Partial<RelayAddon> | null;
    NativeRelay.instance =
      process.platform !== 'win32' && a && typeof a.relayInit === 'function'
        ? new NativeRelay(a as RelayAddon, eventSlots)
        : null;
    return NativeRelay.instance;
  }

  /** The process's native relay if a pooler made it (start), else null. */
  static get(): NativeRelay | null {
    return NativeRelay.instance ?? null;
  }

  /** A client that asked for TLS: the addon takes its descriptor right after the pooler's 'S' (Node's socket must hold
   * no unsent bytes) and runs the handshake under `context`; `initial` is ciphertext Node already read. The login goes
   * on through the returned socket. Null when the descriptor cannot be had. */
  startTls(
    socket: net.Socket,
    context: NativeTlsContext,
    askCertificate: boolean,
    initial: Buffer | null,
    handlers: NativeTlsHandlers,
  ): NativeTlsSocket | null {
    const fd = socketFd(socket);
    if (fd < 0 || isTls(socket) || socket.writableLength > 0) return null;
    const s = this.logins.start(fd, context, askCertificate, initial, handlers);
    dropNodeSocket(socket);
    return s;
  }

  /** The relay accepts clients on the listening socket `server` from now on (relay-login.cc): each becomes a client in
   * login, given to `onAccept` as a NativeTlsSocket (plaintext until its login asks for TLS), and no Node socket is
   * made for it. The caller closes `server` afterwards (the relay keeps a duplicate of its descriptor). Returns the
   * listener's id for unlisten, or 0 when the descriptor cannot be had. `deferAcceptSecs` > 0: TCP_DEFER_ACCEPT on
   * the listening socket (a client is accepted once its first bytes arrived). */
  listen(
    server: net.Server,
    noDelay: boolean,
    keepAliveMs: number,
    acceptor: NativeAcceptor,
    deferAcceptSecs = 0,
  ): number {
    const fd = (server as net.Server & { _handle?: { fd?: number } | null })._handle?.fd;
    if (typeof fd !== 'number' || fd < 0) return 0;
    const id = this.a.relayListen(fd, noDelay, Math.max(1, Math.round(keepAliveMs / 1000)), deferAcceptSecs);
    this.acceptors.set(id, acceptor);
    this.listening.add(id);
    return id;
  }

  /** The logins the relay runs itself on `listener` from now on (null: JavaScript runs every login). `slots`: the
   * caller's Int32Array(4) — [0] its client count and [1] the native logins it has counted, kept by the caller; [2]
   * native logins under way and [3] native logins reported, kept by the relay. `sslRefused`: the relay answers an
   * SSLRequest N itself (no client TLS). */
  setLogins(
    listener: number,
    maxConnections: number,
    slots: Int32Array,
    users: NativeLoginUser[] | null,
    sslRefused: boolean,
  ): void {
    this.a.relayAuthSet(listener, maxConnections, slots, users, sslRefused);
  }

  /** The SCRAM ClientKey a natively logged-in client proved (until the relay adopts it), or null. */
  loginKey(id: number): Buffer | null {
    return this.a.relayLoginKey(id) ?? null;
  }

  /** application_name by the relay's id for it. */
  private readonly appNames: string[] = [];

  /** The application_name of the relay's id for it (NativeLoginOk.kind >>> 1). */
  appNameOf(id: number): string {
    return this.appName(id);
  }

  private appName(id: number): string {
    let name = this.appNames[id];
    if (name === undefined) this.appNames[id] = name = this.a.relayAppName(id);
    return name;
  }

  /** Client sockets closed by JavaScript and not yet closed by their peer (native/relay.cc relayClosingClients). */
  closingClients(): number {
    return this.a.relayClosingClients();
  }

  /** The listening descriptor the relay accepts on for `listener` (-1: none), for a takeover to pass on. */
  listenerFd(listener: number): number {
    return this.listening.has(listener) ? this.a.relayListenerFd(listener) : -1;
  }

  /** Stops accepting on `listener` (its connected clients stay). Its acceptor stays too: clients the relay accepted
   * before, and logins it ran for them, are reported afterwards and are served (a shutdown or a takeover tells them
   * 57P01 at their next transaction), never cut after the relay greeted them. */
  unlisten(listener: number): void {
    if (!this.listening.delete(listener)) return;
    this.a.relayUnlisten(listener);
  }

  /** client_login_timeout for the logins the relay runs on `listener` (native/relay-auth.cc ExpireLogins): how many
   * were closed. */
  expireLogins(listener: number, timeoutMs: number): number {
    return timeoutMs > 0 ? this.a.relayExpireLogins(listener, timeoutMs) : 0;
  }

  /** Clients the listener accepted and closed at once for want of descriptors since the last call (relay-login.cc). */
  acceptRefused(listener: number): number {
    return this.a.relayAcceptRefused(listener);
  }

  /** Who gets the clients of each listener (one per pooler in this process), kept after unlisten. */
  private readonly acceptors = new Map<number, NativeAcceptor>();
  /** The listeners still accepting. */
  private readonly listening = new Set<number>();

  /** kAccepted, and with `login` the event that followed it (kLoginOk, kLoginFailed: relay-auth.cc). */
  private accepted(
    id: number,
    port: number,
    listenerV4: number,
    v4: number,
    login?: { kind: number; entry: number; c: number; d: number },
  ): void {
    const address =
      (listenerV4 & 1) === 1
        ? `${v4 >>> 24}.${(v4 >>> 16) & 0xff}.${(v4 >>> 8) & 0xff}.${v4 & 0xff}`
        : this.a.relayPeer(id);
    const acceptor = this.acceptors.get(listenerV4 >>> 1);
    if (login?.kind === RelayEvent.LoginFailed) {
      const message = this.a.relayLoginError(id);
      acceptor?.loginFailed(address, port, login.entry, LOGIN_SQLSTATES[login.c] ?? '08P01', message);
      return;
    }
    const socket = this.logins.accepted(id, address, port);
    if (!acceptor) {
      socket.destroy();
      return;
    }
    if (!login) return acceptor.accept(socket, null);
    const secret = Buffer.allocUnsafe(4);
    secret.writeInt32BE(login.d, 0);
    const appId = login.c >>> 2;
    const lent = (login.c & 2) === 2;
    if (lent) socket.lent = true;
    // A held login a snapshot listed (heldRows) keeps the client id it was shown with.
    const clientId = this.listedHeld ? this.a.relayListedId(id) : 0;
    acceptor.accept(socket, {
      entry: login.entry,
      applicationName: this.appName(appId),
      clientEncoding: (login.c & 1) === 1,
      cancelPid: id | NATIVE_LOGIN_PID_BIT,
      cancelSecret: secret,
      kind: (appId << 1) | (login.c & 1),
      lent,
      clientId,
    });
  }

  /** An OpenSSL context for startTls (see nativeTlsContext). */
  tlsContext(o: Parameters<typeof nativeTlsContext>[1]): NativeTlsContext {
    return nativeTlsContext(this.a, o);
  }

  /** Needs the descriptor of a plaintext socket (a TLS socket's bytes are encrypted under it), and Node's socket must
   * hold no unsent bytes: they would be lost with it. A client whose TLS the addon terminates stays where it is. */
  adoptClient(conn: ClientRelaySocket, options: ClientOptions, events: ClientEvents): ClientEnd | null {
    if (conn.socket instanceof NativeTlsSocket) {
      const s = conn.socket;
      // A relay-only login was adopted by the relay itself, with the same options (NativeRelay.lend).
      if (
        !s.lent &&
        !this.a.relayAdopt(
          s.id,
          options.stats.block,
          options.maxMessageSize,
          options.initial,
          options.intercept !== undefined,
          options.app,
          options.pinMask ?? 0,
          options.queryPool ?? 0,
        )
      )
        return null;
      s.adopt();
      const end = new NativeClientEnd(this, s.id, events, options.intercept);
      this.clients.set(s.id, end);
      return end;
    }
    const fd = socketFd(conn.socket);
    if (fd < 0 || isTls(conn.socket) || conn.socket.writableLength > 0) return null;
    const initial = options.initial.length ? options.initial : undefined;
    // The end exists before the addon may report on the initial bytes (they are scanned inside relayAddClient).
    const id = this.a.relayAddClient(
      fd,
      options.stats.block,
      options.maxMessageSize,
      initial,
      options.intercept !== undefined,
      options.app,
      options.pinMask ?? 0,
      options.queryPool ?? 0,
    );
    const end = new NativeClientEnd(this, id, events, options.intercept);
    this.clients.set(id, end);
    dropNodeSocket(conn.socket);
    return end;
  }

  adoptServer(conn: RelaySocket, events: ServerEvents, rewrites = false): ServerEnd | null {
    const fd = socketFd(conn.socket);
    if (fd < 0 || isTls(conn.socket) || conn.socket.writableLength > 0) return null;
    const id = this.a.relayAddServer(fd, 0x7fffffff, rewrites);
    const end = new NativeServerEnd(this, id, events);
    this.servers.set(id, end);
    dropNodeSocket(conn.socket);
    return end;
  }

  /** Sends what is pending, shuts down writes and discards reads until EOF; forced after `graceMs`. */
  close(id: number, graceMs: number): void {
    this.clients.delete(id);
    this.servers.delete(id);
    this.a.relayClose(id);
    setTimeout(() => this.a.relayDestroy(id), graceMs).unref();
  }

  forget(id: number): void {
    this.clients.delete(id);
  }

  forgetServer(id: number): void {
    this.servers.delete(id);
  }

  destroy(id: number): void {
    this.clients.delete(id);
    this.servers.delete(id);
    this.a.relayDestroy(id);
  }

  /** Lends the relay an idle server for relay-only logins of its pool (native/relay-lend.cc); false when it cannot. */
  lend(server: ServerEnd, o: LendOptions): boolean {
    if (!(server instanceof NativeServerEnd)) return false;
    return this.a.relayLend(
      server.id,
      o.entry,
      o.kind,
      o.stats,
      o.app,
      o.pinMask,
      o.queryPool,
      o.divert,
      o.maxMessage,
      o.slots,
    );
  }

  private readonly unlendOut = new Int32Array(1024);

  private readonly unlendOne = new Int32Array(1);

  /** Takes back the lent servers no client uses (of the pool counting into `stats`, or all; at most one with `one`):
   * their ends' ids. */
  unlend(stats: PoolStats | null, one = false): number[] {
    if (one) return this.a.relayUnlend(stats ? stats.block : null, this.unlendOne) === 1 ? [this.unlendOne[0]!] : [];
    const ids: number[] = [];
    for (;;) {
      const n = this.a.relayUnlend(stats ? stats.block : null, this.unlendOut);
      for (let k = 0; k < n; k++) ids.push(this.unlendOut[k]!);
      if (n < this.unlendOut.length) return ids;
    }
  }

  /** Set once a snapshot listed held logins (heldRows): from then on a reported login asks for its listed id. */
  private listedHeld = false;
  private heldCountsOut = new Int32Array(3 * 64);

  /** The held logins (native/relay-lend.cc Hold) of the pooler whose slots are `slots`, counted by pool entry and
   * application_name, without reporting them: [entry, application_name, count] triples. */
  heldCounts(slots: Int32Array): { entry: number; applicationName: string; count: number }[] {
    let pairs = this.a.relayHeldCounts(slots, this.heldCountsOut);
    if (pairs * 3 > this.heldCountsOut.length) {
      this.heldCountsOut = new Int32Array(3 * pairs);
      pairs = this.a.relayHeldCounts(slots, this.heldCountsOut);
    }
    const out: { entry: number; applicationName: string; count: number }[] = [];
    const o = this.heldCountsOut;
    for (let k = 0; k < Math.min(pairs, o.length / 3); k++) {
      out.push({ entry: o[3 * k]!, applicationName: this.appName(o[3 * k + 1]!), count: o[3 * k + 2]! });
    }
    return out;
  }

  /** At most `max` held logins of the pooler whose slots are `slots`, in accept order, without reporting them: each
   * is given a client id from `nextId` on the first time it is listed, and its session keeps that id once it is
   * reported (NativeLoginOk.clientId). */
  heldRows(slots: Int32Array, nextId: number, max: number): HeldRow[] {
    if (max <= 0) return [];
    const o = new Float64Array(HELD_ROW * max);
    const n = this.a.relayHeldRows(slots, nextId, o);
    if (n > 0) this.listedHeld = true;
    const rows: HeldRow[] = [];
    for (let k = 0; k < n; k++) {
      const r = k * HELD_ROW;
      const listenerV4 = o[r + 4]!;
      const v4 = o[r + 5]!;
      rows.push({
        clientId: o[r]!,
        entry: o[r + 1]!,
        applicationName: this.appName(o[r + 2]!),
        addr: `${
          (listenerV4 & 1) === 1
            ? `${v4 >>> 24}.${(v4 >>> 16) & 0xff}.${(v4 >>> 8) & 0xff}.${v4 & 0xff}`
            : this.a.relayPeer(o[r + 7]!)
        }:${o[r + 3]!}`,
        ageMs: o[r + 6]!,
      });
    }
    return rows;
  }

  private readonly materializeOut = new Int32Array(15 * 256);

  /** Reports relay-only clients now (of the pool counting into `stats`, all with null, or only client `id`): each
   * becomes a session here, holding its lent server parked, before this returns. */
  materialize(stats: PoolStats | null, id = 0): void {
    for (;;) {
      const n = this.a.relayMaterialize(stats ? stats.block : null, id, this.materializeOut);
      if (n === 0) return;
      // Copied: the sessions made here may call back into the addon, which reuses the buffer.
      this.dispatch(this.materializeOut.slice(0, n), n);
      if (id > 0 || n + 15 <= this.materializeOut.length) return;
    }
  }

  reclaim(stats: PoolStats, keepRelayOnly = false): void {
    // Relay-only clients are reported first: their pairs are parked, and come back with the others.
    if (!keepRelayOnly) this.materialize(stats);
    for (;;) {
      const n = this.a.relayReclaim(stats.block, this.reclaimOut, keepRelayOnly);
      if (n === 0) return;
      const ids = this.reclaimOut.slice(0, n);
      for (const id of ids) this.clients.get(id)?.released();
      if (n < this.reclaimOut.length) return;
    }
  }

  /** Poll handles the addon has made: a closed descriptor's handle serves the next socket on its number (tests). */
  get pollHandles(): number {
    return this.a.relayPollHandles();
  }

  /** The addon's numbers for an endpoint it still knows, else null. */
  info(id: number): RelayCounts | null {
    const o = this.infoOut;
    if (!this.a.relayInfo(id, o)) return null;
    return {
      transactions: o[0]!,
      queries: o[1]!,
      errors: o[2]!,
      bytesSent: o[3]!,
      bytesReceived: o[4]!,
      txStatus: o[5]!,
      syncs: o[6]!,
      unsynced: o[7] === 1,
      xactTimeUs: o[10]!,
      queryAgeUs: o[11]!,
      xactAgeUs: o[12]!,
    };
  }

  private readonly onEvents = (count: number): void => {
    // Read in place: events raised while this runs wait in the addon for the next call.
    this.dispatch(this.events, count * 5);
  };

  private dispatch(batch: Int32Array, end: number): void {
    for (let i = 0; i < end; i += 5) {
      const kind = batch[i]!;
      const id = batch[i + 1]!;
      try {
        switch (kind) {
          case RelayEvent.NeedServer:
            this.needServers++;
            this.clients.get(id)?.events.onNeedServer();
            break;
          case RelayEvent.Release: {
            // The relay says the server has no parameter texts: the check-in under released() asks it nothing.
            const s = batch[i + 3] === 1 ? this.servers.get(batch[i + 2]!) : undefined;
            if (s) s.noParams = true;
            try {
              // The lane's counts came along (their offset in laneOut + 1) only in the shared buffer's reports.
              this.clients.get(id)?.released(batch === this.events ? batch[i + 4]! : 0);
            } finally {
              if (s) s.noParams = false;
            }
            break;
          }
          case RelayEvent.ClientClosed: {
            if (this.logins.closed(id, batch[i + 2]!, CLIENT_CLOSE_REASONS)) break;
            const c = this.clients.get(id);
            this.clients.delete(id);
            c?.takeLane();
            const reason = batch[i + 2]!;
            const why =
              reason === CLOSE_TLS
                ? `TLS error: ${this.a.relayTlsError(id) || 'refused by OpenSSL'}`
                : (CLIENT_CLOSE_REASONS[reason] ?? CLIENT_CLOSE_REASONS[0]!);
            c?.events.onClose(why, batch[i + 4] === 1 && c.settled);
            break;
          }
          case RelayEvent.ClientData:
            this.clients.get(id)?.onClientData(batch[i + 2]!, batch[i + 3]!, batch[i + 4]!);
            break;
          case RelayEvent.ServerData:
            this.clients.get(batch[i + 2]!)?.onServerData(id);
            break;
          case RelayEvent.Pin: {
            // The addon keeps the pair linked while the client holds session state that cannot move.
            const c = this.clients.get(id);
            if (c) c.transactionMode = batch[i + 3] === 0;
            c?.events.onPin(batch[i + 3]!);
            break;
          }
          case RelayEvent.ServerDiscarded:
            this.servers.get(id)?.events.onStatementsDropped?.();
            break;
          case RelayEvent.ServerSchema:
            this.servers.get(id)?.events.onSchemaChanged?.();
            break;
          case RelayEvent.ServerClosed: {
            const s = this.servers.get(id);
            this.servers.delete(id);
            // 0 mid-message, 1 at a boundary, 2 parked, 3 at a boundary after PostgreSQL's FATAL reached the client.
            const how = batch[i + 3]!;
            s?.events.onClose(SERVER_CLOSE_REASONS[batch[i + 4]!] ?? '', how === 1 || how === 3, how === 2, how === 3);
            break;
          }
          case RelayEvent.ServerReady:
            this.servers.get(id)?.onReady(batch[i + 2] === 1);
            break;
          case RelayEvent.TlsReady:
            this.logins.ready(id);
            break;
          case RelayEvent.LoginData:
            this.logins.data(id);
            break;
          case RelayEvent.Accepted: {
            // A login the relay ran comes as kAccepted and its outcome, always side by side (EmitPair).
            const next = i + 5 < end ? batch[i + 5]! : 0;
            if ((next === RelayEvent.LoginOk || next === RelayEvent.LoginFailed) && batch[i + 6] === id) {
              this.accepted(id, batch[i + 2]!, batch[i + 3]!, batch[i + 4]!, {
                kind: next,
                entry: batch[i + 7]!,
                c: batch[i + 8]!,
                d: batch[i + 9]!,
              });
              i += 5;
            } else {
              this.accepted(id, batch[i + 2]!, batch[i + 3]!, batch[i + 4]!);
            }
            break;
          }
          case RelayEvent.LoginGone:
            this.acceptors.get(batch[i + 2]!)?.loginGone();
            break;
          case RelayEvent.Lent:
            this.clients.get(id)?.lent(batch[i + 2]!);
            break;
          case RelayEvent.BadLength:
            this.clients.get(id)?.events.onBadLength(batch[i + 2]!);
            break;
          default:
            break;
        }
      } catch (err) {
        // One session's bug must not drop the other events of the batch.
        process.emitWarning(`native relay event ${kind} for ${id}: ${(err as Error).stack ?? String(err)}`);
      }
    }
  }
}
