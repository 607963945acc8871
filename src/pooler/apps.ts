// Load per application_name (/api/apps, SHOW APPS): totals the relays count into, kept after the clients leave.
import { PeriodTotals } from './stats.js';

/** Distinct application_names tracked at most; later ones share one entry. */
export const MAX_APPS = 1000;
export const OTHER_APPS = '(other)';

export interface AppEntry {
  readonly name: string;
  /** Eight totals in STATS_LAYOUT order, counted by the relays (ClientOptions.app). */
  readonly block: Float64Array;
  readonly period: PeriodTotals;
}

export class AppRegistry {
  private readonly apps = new Map<string, AppEntry>();

  /** The entry that counts the load of clients named `name`. */
  get(name: string): AppEntry {
    let e = this.apps.get(name);
    if (e) return e;
    if (this.apps.size >= MAX_APPS && name !== OTHER_APPS) return this.get(OTHER_APPS);
    const block = new Float64Array(8);
    e = { name, block, period: new PeriodTotals(block) };
    this.apps.set(name, e);
    return e;
  }

  roll(periodMs: number): void {
    for (const e of this.apps.values()) e.period.roll(periodMs);
  }

  entries(): IterableIterator<AppEntry> {
    return this.apps.values();
  }
}
