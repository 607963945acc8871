// In-memory log tap behind /api/logs: a ring of the pooler's own records, on while someone is reading it.
import { levelName, type LogHub, type LogRecord } from '../../shared/logger.js';

export interface TapEntry {
  seq: number;
  time: string;
  level: string;
  target: string;
  msg: string;
  fields: Record<string, unknown>;
}

export interface TapQuery {
  since?: number;
  level?: string;
  q?: string;
  limit?: number;
}

const LEVEL_VALUES: Record<string, number> = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, fatal: 60 };

export function isTapLevel(level: string): boolean {
  return level in LEVEL_VALUES;
}

/** Idle time after which the tap stops collecting (spec: 2 minutes without requests). */
export const TAP_IDLE_MS = 120_000;

export class LogTap {
  private ring: (TapEntry | undefined)[];
  private next = 0;
  private seq = 0;
  private lastRead = 0;
  private detach: (() => void) | null = null;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly hub: LogHub,
    private size: number,
    private readonly opts: { idleMs?: number; now?: () => number } = {},
  ) {
    this.ring = new Array<TapEntry | undefined>(size);
  }

  /** Ring size ([web] log_tap_max_entries); 0 means the tap is disabled. */
  get capacity(): number {
    return this.size;
  }

  /** A new log_tap_max_entries after RELOAD: the ring starts over with the new size. */
  resize(capacity: number): void {
    if (capacity === this.size) return;
    this.stop();
    this.size = capacity;
    this.ring = new Array<TapEntry | undefined>(capacity);
  }

  get active(): boolean {
    return this.detach !== null;
  }

  private now(): number {
    return (this.opts.now ?? Date.now)();
  }

  private get idleMs(): number {
    return this.opts.idleMs ?? TAP_IDLE_MS;
  }

  /** Marks a read: activates the tap if needed and pushes the idle deadline back. */
  touch(): void {
    this.lastRead = this.now();
    if (this.capacity === 0 || this.detach) return;
    this.detach = this.hub.addSink((rec) => this.push(rec));
    this.timer = setInterval(() => this.checkIdle(), Math.min(this.idleMs, 10_000));
    this.timer.unref();
  }

  /** Deactivates the tap when nobody has read it for the idle time; returns whether it is still active. */
  checkIdle(): boolean {
    if (this.detach && this.now() - this.lastRead >= this.idleMs) this.stop();
    return this.active;
  }

  stop(): void {
    this.detach?.();
    this.detach = null;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.ring = new Array<TapEntry | undefined>(this.capacity);
    this.next = 0;
  }

  private push(rec: LogRecord): void {
    const { level, time, target, msg, ...rest } = rec;
    delete rest['pid'];
    delete rest['hostname'];
    this.ring[this.next] = {
      seq: ++this.seq,
      time: new Date(time).toISOString(),
      level: levelName(level),
      target: typeof target === 'string' ? target : '-',
      msg: typeof msg === 'string' ? msg : '',
      fields: rest,
    };
    this.next = (this.next + 1) % this.capacity;
  }

  /** Entries after `since`, at or above `level`, containing `q` (in msg, target or fields), oldest first, at most `limit`. */
  read(query: TapQuery): TapEntry[] {
    const min = query.level ? (LEVEL_VALUES[query.level] ?? 0) : 0;
    const needle = query.q?.toLowerCase();
    const limit = query.limit ?? 500;
    const out: TapEntry[] = [];
    for (let i = 0; i < this.capacity; i++) {
      const e = this.ring[(this.next + i) % this.capacity];
      if (!e || e.seq <= (query.since ?? 0) || (LEVEL_VALUES[e.level] ?? 0) < min) continue;
      if (needle && !`${e.target} ${e.msg} ${JSON.stringify(e.fields)}`.toLowerCase().includes(needle)) continue;
      out.push(e);
    }
    return out.length > limit ? out.slice(out.length - limit) : out;
  }
}
