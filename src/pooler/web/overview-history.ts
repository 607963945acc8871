// The overview's last 15 minutes kept in the pooler (a ring of samples taken every 2 s), so a console that reloads
// or opens late draws its charts at once instead of starting from nothing.
import type { Overview } from '../control.js';

/** How often a sample is taken: the console's poll interval (ui/console/src/use-polling.ts POLL_MS). */
export const OVERVIEW_HISTORY_INTERVAL_MS = 2000;
/** How far back the ring reaches (the console's charts show 15 minutes). */
export const OVERVIEW_HISTORY_SECONDS = 15 * 60;

export interface OverviewSample {
  /** Unix seconds. */
  readonly t: number;
  readonly overview: Overview;
}

export class OverviewHistory {
  private readonly ring: (OverviewSample | undefined)[];
  private next = 0;
  private count = 0;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly take: () => Overview,
    readonly intervalMs = OVERVIEW_HISTORY_INTERVAL_MS,
    seconds = OVERVIEW_HISTORY_SECONDS,
  ) {
    this.ring = new Array<OverviewSample | undefined>(Math.max(1, Math.ceil((seconds * 1000) / intervalMs)));
  }

  /** Takes a sample now and then every interval; the timer does not keep the process alive. */
  start(): void {
    if (this.timer) return;
    this.sample();
    this.timer = setInterval(() => this.sample(), this.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  sample(now = Date.now()): void {
    this.ring[this.next] = { t: now / 1000, overview: this.take() };
    this.next = (this.next + 1) % this.ring.length;
    this.count = Math.min(this.count + 1, this.ring.length);
  }

  /** The samples kept, oldest first. */
  list(): OverviewSample[] {
    const out: OverviewSample[] = [];
    const start = (this.next - this.count + this.ring.length) % this.ring.length;
    for (let i = 0; i < this.count; i++) out.push(this.ring[(start + i) % this.ring.length]!);
    return out;
  }
}
