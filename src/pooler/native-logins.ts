// The logins the native relay runs itself (native/relay-auth.cc): which users it may take, their secrets and greetings.
import type { PoolerConfig } from '../config/pooler.js';
import { chooseMethod, scramSecretFor } from './auth/client-auth.js';
import { md5Inner } from './auth/md5.js';
import { cachedScramSecret, type ScramSecret } from './auth/scram.js';
import { loginPrefix } from './client-login.js';
import type { Pool } from './pool.js';
import type { NativeLoginOk, NativeLoginUser, NativeRelay } from './relay/native.js';
import type { HeldClient, HeldCount } from './hosts.js';
import { claimClientIds, peekClientId } from './client-startup.js';
import type { TlsSettings } from './tls/tls-settings.js';
import type { ServerConnection } from './server-connection.js';
import { pinMaskFor } from './session-state/pins.js';
import { poolQueryId, queryStatsOn } from './query-stats/stats.js';

/** What the table is made from: the pooler's configuration, pools and TLS settings. */
export interface NativeLoginHost {
  readonly config: PoolerConfig;
  readonly tls: TlsSettings;
  readonly hba: unknown;
  readonly nativeTls: NativeRelay | null;
  pool(database: string, user: string): Pool | null;
  /** The totals block of an application_name (apps.ts). */
  appBlock(name: string): Float64Array;
  /** Whether 'client logged in' is logged for each client (relay-only logins would skip it). */
  logsEachLogin(): boolean;
}

/** Admin console databases: their logins are always JavaScript's. */
const ADMIN = new Set(['tidepool', 'pgbouncer']);

/** Each user of a transaction-mode pool whose greeting is known (its first server told its parameters), with an md5 or
 * SCRAM secret, while no auth_hba_file and no client TLS requirement apply, logs in inside the relay: JavaScript hears
 * one event per login. Everything else (auth_query, hba rules, trust and plain, session mode, the admin console, TLS,
 * other startup parameters, max_connections reached) stays with client-login.ts, chosen per login by the relay.
 * [native] login = false turns it off. */
export class NativeLogins {
  /** Shared with the relay: [0] clients, [1] native logins counted here, [2] native logins under way, [3] native
   * logins the relay reported (see NativeRelay.setLogins), [4] relay-only clients now, [5] relay-only logins that
   * left unreported and [6] 1 while a login that finds no lent server may be held (native/relay-lend.cc). */
  private readonly slots = new Int32Array(7);
  /** Set when the listener closed (shutdown, takeover): no login is held from then on. */
  private stopped = false;
  /** Pools by the entry number the relay reports logins with (stable for the pool's life), and the SCRAM secret of
   * each entry whose user is configured with one (the pool logs in to PostgreSQL with the key a client proved). */
  private readonly pools: Pool[] = [];
  private readonly entries = new Map<Pool, number>();
  private readonly scram: (ScramSecret | null)[] = [];
  private listener = 0;
  private queued = false;
  /** [native] login ([native] is fixed at start: RELOAD keeps it). */
  private get on(): boolean {
    return this.host.config.native.login;
  }
  /** Idle servers of the pools whose logins the relay runs are lent to it, so that a login that runs its transactions
   * and leaves costs JavaScript nothing (native/relay-lend.cc). [native] lend = false turns it off. */
  private get lending(): boolean {
    return this.host.config.native.lend;
  }

  constructor(private readonly host: NativeLoginHost) {}

  /** Logins the relay has under way (SHOW LISTS login_clients counts them). */
  get underWay(): number {
    return this.slots[2]!;
  }

  /** Relay-only clients connected now (counted against max_client_conn with the pooler's own). */
  get relayOnly(): number {
    return this.slots[4]!;
  }

  /** Relay-only logins JavaScript has not heard of (counted as connections and native logins): those that left, and
   * those still connected (held, or none once materializeHeld ran). */
  get unreported(): number {
    return this.slots[5]! + this.slots[4]!;
  }

  /** Reports every relay-only client now (held logins included), so that what walks the pooler's clients sees them
   * all: KILL, RELOAD, a shutdown (a snapshot counts and lists held logins without this: heldCounts, heldRows). */
  materializeHeld(): void {
    if (this.slots[4]! > 0) this.host.nativeTls?.materialize(null);
  }

  /** Held logins (native/relay-lend.cc Hold) by pool and application_name, left held: a snapshot counts them so
   * (cl_idle, an application's clients) without making them sessions. */
  heldCounts(): HeldCount[] {
    const relay = this.host.nativeTls;
    if (!relay || this.slots[4]! === 0) return [];
    const out: HeldCount[] = [];
    for (const h of relay.heldCounts(this.slots)) {
      // A login for a pool this pooler does not know would be dropped when reported: it is not counted.
      const pool = this.pools[h.entry];
      if (pool) out.push({ pool, applicationName: h.applicationName, count: h.count });
    }
    return out;
  }

  /** Held logins as client rows (SHOW CLIENTS), left held: each has the client id it keeps once reported. */
  heldRows(): HeldClient[] {
    const relay = this.host.nativeTls;
    if (!relay || this.slots[4]! === 0) return [];
    const out: HeldClient[] = [];
    let last = 0;
    for (const r of relay.heldRows(this.slots, peekClientId(), this.slots[4]!)) {
      last = Math.max(last, r.clientId);
      const pool = this.pools[r.entry];
      if (pool) out.push({ ...r, pool });
    }
    claimClientIds(last);
    return out;
  }

  /** The listener closed: logins that finish from now on are reported at once, never held. */
  stopHolding(): void {
    this.stopped = true;
    this.slots[6] = 0;
  }

  /** The pooler's client count changed. */
  clients(n: number): void {
    this.slots[0] = n;
  }

  /** The relay accepts on `listener` from now on. */
  listening(listener: number): void {
    this.listener = listener;
    this.push();
  }

  /** The table goes to the relay again after this turn (a pool learned its server's parameters). */
  queue(): void {
    if (this.queued || !this.listener) return;
    this.queued = true;
    queueMicrotask(() => this.push());
  }

  /** Gives the relay the table now (at listen, on RELOAD). */
  push(): void {
    this.queued = false;
    const relay = this.host.nativeTls;
    if (!this.listener || !relay) return;
    // An idle client costs JavaScript nothing until it sends something: a login that finds no lent server is held in
    // the relay (native/relay-lend.cc Hold). Off with lending, and while each login is logged (at its login).
    this.slots[6] = !this.stopped && this.on && this.lending && !this.host.logsEachLogin() ? 1 : 0;
    relay.setLogins(
      this.listener,
      this.host.config.general.max_connections,
      this.slots,
      this.users(),
      this.host.tls.client.mode === 'disable',
    );
  }

  pool(entry: number): Pool | null {
    return this.pools[entry] ?? null;
  }

  /** A login the relay ran: its pool (null if unknown), which takes the client's SCRAM key when it logs in with it. */
  loggedIn(login: NativeLoginOk, id: number): Pool | null {
    this.slots[1]++;
    const pool = this.pools[login.entry] ?? null;
    const secret = this.scram[login.entry];
    const current = pool?.scramCredential;
    if (pool && secret && !(current && 'secret' in current && current.secret === secret)) {
      const clientKey = this.host.nativeTls?.loginKey(id);
      if (clientKey) pool.scramCredential = { clientKey, secret };
    }
    return pool;
  }

  private users(): NativeLoginUser[] | null {
    const { config, tls, hba } = this.host;
    const mode = tls.client.mode;
    if (!this.on || hba || !(mode === 'disable' || mode === 'allow' || mode === 'prefer')) {
      this.setLenders(new Set());
      return null;
    }
    const authType = config.general.auth_type;
    const users: NativeLoginUser[] = [];
    const lending = new Set<Pool>();
    for (const [database, pc] of Object.entries(config.pools)) {
      if (ADMIN.has(database)) continue;
      for (const u of pc.users) {
        const pool = this.host.pool(database, u.username);
        if (!pool || pool.retired || pool.settings.mode !== 'transaction' || !pool.serverParams) continue;
        const method = chooseMethod(u.password, authType);
        if (method !== 'md5' && method !== 'scram') continue;
        const entry = this.entry(pool);
        lending.add(pool);
        const base = {
          entry,
          database,
          user: u.username,
          greeting: loginPrefix(pool.serverParams),
          idle: pool.idleCount,
          clientEncoding: pool.serverParams.get('client_encoding'),
        };
        if (method === 'md5') {
          this.scram[entry] = null;
          users.push({ ...base, md5: md5Inner(u.password, u.username) });
          continue;
        }
        const configured = cachedScramSecret(u.password);
        const s = configured ?? scramSecretFor(u.password);
        this.scram[entry] = configured;
        users.push({ ...base, iterations: s.iterations, salt: s.salt, storedKey: s.storedKey, serverKey: s.serverKey });
      }
    }
    this.setLenders(lending);
    return users;
  }

  /** Each pool whose logins the relay runs lends it idle servers; the others (and all when lending is off) do not. */
  private setLenders(pools: Set<Pool>): void {
    const relay = this.host.nativeTls;
    const on = this.lending && relay !== null && !this.host.logsEachLogin();
    for (const pool of this.pools) {
      const lend = on && pools.has(pool) && !pool.retired;
      if (!lend) {
        pool.lending.lender = null;
        continue;
      }
      if (pool.lending.lender) continue;
      const entry = this.entries.get(pool)!;
      pool.lending.lender = (s: ServerConnection) =>
        relay!.lend(s.end, {
          entry,
          kind: s.lendKind,
          stats: pool.stats.block,
          app: this.host.appBlock(relay!.appNameOf(s.lendKind >>> 1)),
          pinMask: pool.settings.mode === 'transaction' ? pinMaskFor(pool.interner !== null) : 0,
          queryPool: queryStatsOn() ? poolQueryId(pool.name) : 0,
          divert: pool.interner !== null,
          maxMessage: this.host.config.general.max_message_size,
          slots: this.slots,
        });
      // Its idle servers go to the relay now, not at the next tick: a login meanwhile would find none lent.
      pool.lending.queue();
    }
  }

  private entry(pool: Pool): number {
    let entry = this.entries.get(pool);
    if (entry === undefined) {
      entry = this.pools.length;
      this.pools.push(pool);
      this.entries.set(pool, entry);
    }
    return entry;
  }
}
