// Ships the pooler's own log records to a log store's bulk API: a hub sink, a bounded queue, batches, retries.
import type { Logger } from 'pino';
import type { LogsConfig } from '../../config/pooler.js';
import type { LogHub, LogRecord } from '../../shared/logger.js';
import { BulkClient, type BulkReply } from './bulk-client.js';
import { bulkActionLine, bulkBody, readBulkAnswer, shipDocument } from './ship-document.js';
import { ShipQueue, type QueuedDoc } from './ship-queue.js';

export const SHIP_TARGET = 'pooler::log_ship';
/** First wait after a failed bulk request; it doubles up to ship_backoff_max. */
export const BACKOFF_MIN_MS = 250;
/** Times a document the store refused per item with 429 or 5xx is sent again before it counts as rejected. */
export const ITEM_RETRIES = 3;
/** At most one log line per this period about documents the store rejected (they may be our own lines). */
export const REJECT_LOG_PERIOD_MS = 60_000;

/** Counters and the queue, for /metrics. */
export interface LogShipStats {
  readonly sent: number;
  readonly dropped: { readonly queue_full: number; readonly rejected: number; readonly shutdown: number };
  readonly failedRequests: number;
  readonly queueLength: number;
  readonly queueCapacity: number;
}

type Outcome = 'stored' | 'failed' | 'items_retry';

interface Inflight {
  abort(reason: string): void;
  settled: Promise<Outcome>;
}

export class LogShipper {
  private settings: LogsConfig;
  private client: BulkClient;
  private action: string;
  private readonly queue: ShipQueue;
  private readonly log: Logger;
  private detach: (() => void) | null;
  private timer: NodeJS.Timeout | null = null;
  /** The pending timer is a retry after a failure: a full batch does not cut it short. */
  private retrying = false;
  private immediate: NodeJS.Immediate | null = null;
  private inflight: Inflight | null = null;
  private backoffMs = 0;
  /** Set from the first failed request to the next stored batch. */
  private outage: { since: number; droppedBefore: number; display: string } | null = null;
  private closed: Promise<void> | null = null;
  private readonly counts = { sent: 0, queue_full: 0, rejected: 0, shutdown: 0, failedRequests: 0 };
  private rejectedSinceLog = 0;
  private lastRejectLog = -Infinity;

  constructor(hub: LogHub, settings: LogsConfig) {
    this.settings = settings;
    this.client = new BulkClient(settings.ship_to);
    this.action = bulkActionLine(settings.ship_index);
    this.queue = new ShipQueue(settings.ship_queue_size);
    this.log = hub.get(SHIP_TARGET);
    this.detach = hub.addSink((rec, line) => this.enqueue(rec, line));
    this.log.info({ ship_to: this.client.display, index: settings.ship_index }, 'log shipping on');
  }

  get stats(): LogShipStats {
    const c = this.counts;
    return {
      sent: c.sent,
      dropped: { queue_full: c.queue_full, rejected: c.rejected, shutdown: c.shutdown },
      failedRequests: c.failedRequests,
      queueLength: this.queue.length,
      queueCapacity: this.queue.capacity,
    };
  }

  /** A RELOAD with shipping still on: new settings apply from the next batch; a new address is tried at once. */
  update(next: LogsConfig): void {
    const prev = this.settings;
    this.settings = next;
    this.action = bulkActionLine(next.ship_index);
    this.counts.queue_full += this.queue.resize(next.ship_queue_size);
    if (next.ship_to !== prev.ship_to) {
      const old = this.client;
      this.client = new BulkClient(next.ship_to);
      if (this.inflight) void this.inflight.settled.finally(() => old.close());
      else old.close();
      this.backoffMs = 0;
      this.clearTimers();
      this.log.info({ ship_to: this.client.display, index: next.ship_index }, 'log shipping address changed');
    } else if (next.ship_flush_interval !== prev.ship_flush_interval && !this.retrying) {
      this.clearTimers();
    }
    this.schedule();
  }

  private enqueue(rec: LogRecord, line: string): void {
    this.counts.queue_full += this.queue.push(shipDocument(rec, line));
    this.schedule();
  }

  private clearTimers(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.retrying = false;
    if (this.immediate) clearImmediate(this.immediate);
    this.immediate = null;
  }

  /** A full batch goes out on the next loop turn, a partial one after ship_flush_interval, nothing during a retry wait. */
  private schedule(): void {
    if (this.inflight || this.closed || this.queue.length === 0 || this.retrying || this.immediate) return;
    if (this.queue.length >= this.settings.ship_batch_size) {
      if (this.timer) clearTimeout(this.timer);
      this.timer = null;
      // Never send from inside a log call: the record's writer goes on at once.
      this.immediate = setImmediate(() => this.pump());
      this.immediate.unref();
      return;
    }
    if (!this.timer) {
      this.timer = setTimeout(() => this.pump(), this.settings.ship_flush_interval);
      this.timer.unref();
    }
  }

  private retryAfter(ms: number): void {
    this.clearTimers();
    this.retrying = true;
    this.timer = setTimeout(() => this.pump(), ms);
    this.timer.unref();
  }

  private pump(): void {
    this.clearTimers();
    if (this.inflight || this.closed || this.queue.length === 0) return;
    void this.sendBatch(this.settings.ship_timeout).then((outcome) => {
      if (this.closed) return;
      if (outcome === 'failed') {
        this.backoffMs =
          this.backoffMs === 0 ? BACKOFF_MIN_MS : Math.min(this.backoffMs * 2, this.settings.ship_backoff_max);
        this.retryAfter(Math.min(this.backoffMs, this.settings.ship_backoff_max));
      } else if (outcome === 'items_retry') {
        this.retryAfter(Math.min(BACKOFF_MIN_MS, this.settings.ship_backoff_max));
      } else {
        this.schedule();
      }
    });
  }

  /** Sends the oldest batch; on failure its documents go back in front of the queue. */
  private sendBatch(timeoutMs: number): Promise<Outcome> {
    const items = this.queue.take(this.settings.ship_batch_size);
    const client = this.client;
    const req = client.post(bulkBody(this.action, items), timeoutMs);
    const settled = req.done
      .then(
        (reply) => this.answered(items, reply, client.display),
        (err: unknown) => this.failed(items, err instanceof Error ? err.message : String(err), client.display),
      )
      .catch((err: unknown): Outcome => {
        // A fault in the bookkeeping above must not become an unhandled rejection in the pooler.
        this.log.error(
          { err: err instanceof Error ? (err.stack ?? err.message) : String(err), records: items.length },
          'log shipping fault; the batch is lost',
        );
        this.counts.rejected += items.length;
        return 'stored';
      })
      .finally(() => {
        this.inflight = null;
      });
    this.inflight = { abort: req.abort, settled };
    return settled;
  }

  private answered(items: QueuedDoc[], reply: BulkReply, display: string): Outcome {
    const { status } = reply;
    if (status === 429 || status >= 500)
      return this.failed(items, `HTTP ${status}: ${reply.body.slice(0, 200)}`, display);
    if (status === 400 || status === 413) {
      // The store refuses this body as such: sending it again cannot help.
      this.rejected(items.length, `HTTP ${status}: ${reply.body.slice(0, 200)}`);
      this.resumed(display);
      return 'stored';
    }
    // Any other answer (a wrong path, missing credentials) is treated as an unreachable store until fixed by RELOAD.
    if (status < 200 || status >= 300)
      return this.failed(items, `HTTP ${status}: ${reply.body.slice(0, 200)}`, display);
    this.resumed(display);
    let answer;
    try {
      answer = readBulkAnswer(reply.body);
    } catch (err) {
      // A 2xx whose item list cannot be read: the store took the request; count the batch as sent.
      this.log.warn(
        { ship_to: display, err: (err as Error).message },
        'unreadable bulk answer; the batch counts as sent',
      );
      this.counts.sent += items.length;
      return 'stored';
    }
    if (answer.allStored) {
      this.counts.sent += items.length;
      return 'stored';
    }
    const again: QueuedDoc[] = [];
    let rejected = 0;
    let reason = '';
    items.forEach((item, i) => {
      const r = answer.items[i];
      if (!r || (r.status >= 200 && r.status < 300)) this.counts.sent++;
      else if ((r.status === 429 || r.status >= 500) && item.tries < ITEM_RETRIES)
        again.push({ doc: item.doc, tries: item.tries + 1 });
      else {
        rejected++;
        reason = `${r.status} ${r.reason}`;
      }
    });
    if (rejected) this.rejected(rejected, reason);
    if (again.length === 0) return 'stored';
    this.counts.queue_full += this.queue.unshift(again);
    return 'items_retry';
  }

  private failed(items: QueuedDoc[], reason: string, display: string): Outcome {
    this.counts.failedRequests++;
    this.counts.queue_full += this.queue.unshift(items);
    if (!this.outage) {
      this.outage = { since: Date.now(), droppedBefore: this.counts.queue_full, display };
      // One line per outage, never one per attempt: this line is shipped too once the store is back.
      this.log.warn(
        {
          ship_to: display,
          err: reason,
          backoff_max_ms: this.settings.ship_backoff_max,
          queue_size: this.queue.capacity,
        },
        `log shipping to ${display} failed; retrying with backoff, keeping the newest ${this.queue.capacity} records`,
      );
    }
    return 'failed';
  }

  private resumed(display: string): void {
    this.backoffMs = 0;
    const o = this.outage;
    if (!o) return;
    this.outage = null;
    const dropped = this.counts.queue_full - o.droppedBefore;
    this.log[dropped > 0 ? 'warn' : 'info'](
      { ship_to: display, dropped, down_ms: Date.now() - o.since },
      `log shipping resumed: ${dropped} records dropped while ${o.display} was unreachable`,
    );
  }

  private rejected(n: number, reason: string): void {
    this.counts.rejected += n;
    this.rejectedSinceLog += n;
    const now = Date.now();
    if (now - this.lastRejectLog < REJECT_LOG_PERIOD_MS) return;
    this.lastRejectLog = now;
    this.log.warn(
      { rejected: this.rejectedSinceLog, last_reason: reason.slice(0, 300) },
      `the log store rejected ${this.rejectedSinceLog} records (not sent again)`,
    );
    this.rejectedSinceLog = 0;
  }

  /**
   * Stops taking records and sends what is queued for at most `flushMs` (default ship_timeout; 0: nothing); the
   * rest is counted as dropped for shutdown. Safe to call more than once.
   */
  close(flushMs = this.settings.ship_timeout): Promise<void> {
    this.closed ??= (async () => {
      this.detach?.();
      this.detach = null;
      this.clearTimers();
      const deadline = Date.now() + flushMs;
      let timer: NodeJS.Timeout | null = null;
      const expired = new Promise<'expired'>((r) => {
        timer = setTimeout(() => r('expired'), Math.max(0, flushMs));
      });
      try {
        let outcome: Outcome | 'expired' = 'stored';
        if (this.inflight) outcome = await Promise.race([this.inflight.settled, expired]);
        while (outcome !== 'expired' && outcome !== 'failed' && this.queue.length > 0 && Date.now() < deadline) {
          outcome = await Promise.race([
            this.sendBatch(Math.min(this.settings.ship_timeout, Math.max(1, deadline - Date.now()))),
            expired,
          ]);
        }
        if (this.inflight) {
          const last = this.inflight.settled;
          this.inflight.abort('the pooler is shutting down');
          await last;
        }
      } finally {
        if (timer) clearTimeout(timer);
        this.counts.shutdown += this.queue.clear();
        this.client.close();
      }
      const c = this.counts;
      this.log.info(
        { sent: c.sent, dropped_queue_full: c.queue_full, rejected: c.rejected, dropped_shutdown: c.shutdown },
        'log shipping stopped',
      );
    })();
    return this.closed;
  }
}

/** The shipper for `logs` after a start or RELOAD: created, updated, or closed (in the background) when shipping is off. */
export function reconcileLogShipper(current: LogShipper | null, hub: LogHub, logs: LogsConfig): LogShipper | null {
  if (logs.ship_to === '') {
    if (current) void current.close();
    return null;
  }
  if (!current) return new LogShipper(hub, logs);
  current.update(logs);
  return current;
}
