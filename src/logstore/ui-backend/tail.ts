// Live tail: polls the log store for documents newer than the last one sent (oldest first) and hands each new one
// to the listener once; a short look-back window catches documents that arrive a little late.
import type { Logger } from 'pino';
import { UiError, asUiError } from './errors.js';
import { type UiEvent, eventOf } from './operations.js';
import type { LogstoreClient } from './logstore-client.js';

export interface TailOptions {
  query: string;
  /** Documents from this time on (ms); default: now. */
  since: number;
  pollMs: number;
  /** Documents asked per poll (max_search_limit). */
  batch: number;
}

/** Documents up to this much older than the newest one sent are still looked for (and sent once). */
export const TAIL_LOOKBACK_MS = 2_000;

export class Tail {
  private stopped = false;
  private timer: NodeJS.Timeout | null = null;
  private cursor: number;
  /** Ids sent whose time is inside the look-back window. */
  private readonly sent = new Map<string, number>();
  private failing = false;

  constructor(
    private readonly client: LogstoreClient,
    private readonly opts: TailOptions,
    private readonly onEvents: (events: UiEvent[]) => void,
    private readonly onError: (err: UiError) => void,
    private readonly log: Logger,
  ) {
    this.cursor = opts.since;
  }

  start(): void {
    this.schedule(0);
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.poll().then(
        (full) => this.schedule(full ? 0 : this.opts.pollMs),
        (err: unknown) => {
          this.log.error({ err }, 'tail poll failed');
          this.schedule(this.opts.pollMs);
        },
      );
    }, ms);
  }

  /** One poll; true when the batch was full (more are waiting). */
  private async poll(): Promise<boolean> {
    const from = Math.max(this.opts.since, this.cursor - TAIL_LOOKBACK_MS);
    let docs;
    try {
      const r = await this.client.complexSearch({
        query: { query: this.opts.query, from: new Date(from).toISOString(), to: '' },
        size: this.opts.batch,
        offset: 0,
        with_total: false,
        order: 'ORDER_ASC',
        aggs: [],
        hist_interval: '',
      });
      docs = r.docs;
      this.failing = false;
    } catch (err) {
      // One error event per outage; the tail keeps polling and resumes when the log store is back.
      if (!this.failing && !this.stopped) this.onError(asUiError(err));
      this.failing = true;
      return false;
    }
    if (this.stopped) return false;
    const fresh: UiEvent[] = [];
    for (const d of docs) {
      if (this.sent.has(d.id)) continue;
      const t = Date.parse(d.time);
      this.sent.set(d.id, t);
      if (t > this.cursor) this.cursor = t;
      fresh.push(eventOf(d));
    }
    for (const [id, t] of this.sent) if (t < this.cursor - TAIL_LOOKBACK_MS) this.sent.delete(id);
    if (fresh.length) this.onEvents(fresh);
    // A full batch of documents already sent means the window is crowded: move past it.
    if (docs.length >= this.opts.batch && fresh.length === 0) this.cursor += TAIL_LOOKBACK_MS;
    return docs.length >= this.opts.batch;
  }
}

export function tailLimitError(max: number): UiError {
  return new UiError('too_many_requests', `${max} live tails are open: tail.max_streams (${max})`, {
    limit: 'tail.max_streams',
    value: max,
  });
}
