// The pools per (database, user) and the coordinator per database, made, updated and retired to match the config.
import type { PoolConfig, PoolerConfig, UserConfig } from '../config/pooler.js';
import type { LogHub } from '../shared/logger.js';
import { Coordinator } from './coordinator.js';
import type { EventRing } from './events.js';
import { Pool } from './pool.js';
import { coordinatorSettings, poolKey, poolSettings, serverChanged, type PoolSettings } from './pool-settings.js';
import type { TlsSettings } from './tls/tls-settings.js';

/** What the set needs of the pooler; `tls` is read at each call (RELOAD replaces it). */
export interface PoolSetHost {
  readonly logs: LogHub;
  readonly events: EventRing;
  readonly tls: TlsSettings;
  readonly tlsRelay: boolean;
  readonly nativeLogins: { queue(): void };
  readonly authQuery: { isDynamic(pool: Pool): boolean };
}

export class PoolSet {
  readonly pools = new Map<string, Pool>();
  /** Per database: max_db_connections, reserve, eviction (coordinator.ts). */
  readonly coordinators = new Map<string, Coordinator>();

  /** Called with each pool made (a takeover's counters wait for pools made after it: takeover-stats.ts). */
  onCreated: ((database: string, user: string) => void) | null = null;

  constructor(private readonly host: PoolSetHost) {}

  get(database: string, user: string): Pool | null {
    return this.pools.get(poolKey(database, user)) ?? null;
  }

  /** A pool for a user not in the config (auth_query). */
  create(config: PoolerConfig, database: string, pc: PoolConfig, user: UserConfig): Pool {
    return this.add(database, this.coordinatorFor(database, pc), this.settings(config, database, pc, user));
  }

  /** Creates, updates and retires pools to match `config`. */
  apply(config: PoolerConfig): void {
    const seen = new Set<string>();
    for (const [db, pc] of Object.entries(config.pools)) {
      const coordinator = this.coordinatorFor(db, pc);
      for (const u of pc.users) {
        const key = poolKey(db, u.username);
        seen.add(key);
        const settings = this.settings(config, db, pc, u);
        const existing = this.pools.get(key);
        if (!existing) {
          this.add(db, coordinator, settings);
          continue;
        }
        const changed = serverChanged(existing.settings, settings);
        existing.settings = settings;
        existing.retired = false;
        if (changed) {
          existing.serverParams = null;
          existing.reconnect();
        }
      }
    }
    for (const [key, pool] of this.pools) {
      // auth_query's pools stay while their database does (auth-query-pools.ts drops them once idle).
      if (!seen.has(key) && !(this.host.authQuery.isDynamic(pool) && config.pools[pool.settings.database])) {
        pool.retired = true;
        pool.reconnect();
      }
    }
  }

  private settings(config: PoolerConfig, database: string, pc: PoolConfig, user: UserConfig): PoolSettings {
    return poolSettings(config, database, pc, user, this.host.tls.server, this.host.tlsRelay);
  }

  private coordinatorFor(db: string, pc: PoolConfig): Coordinator {
    const settings = coordinatorSettings(pc);
    let c = this.coordinators.get(db);
    if (!c) this.coordinators.set(db, (c = new Coordinator(db, settings)));
    else c.settings = settings;
    return c;
  }

  private add(db: string, coordinator: Coordinator, settings: PoolSettings): Pool {
    const pool = new Pool(settings, this.host.logs.get('pooler::pool'));
    pool.onParamsKnown = () => this.host.nativeLogins.queue();
    pool.coordinator = coordinator;
    coordinator.pools.add(pool);
    const label = `${db}/${settings.user}`;
    pool.onEvent = (kind, message) => this.host.events.add(kind, label, message);
    this.pools.set(poolKey(db, settings.user), pool);
    this.onCreated?.(db, settings.user);
    return pool;
  }
}
