// Admission of bulk and single-document writes: a fixed number run at once, then a short bounded FIFO queue
// (bodies unread, so waiting costs no memory), then rejection, which the caller answers per item as Elasticsearch does.

export type Admitted = 'run' | 'rejected';

interface Waiter {
  resolve(v: Admitted): void;
  timer: NodeJS.Timeout;
}

export class WriteAdmission {
  private running = 0;
  private readonly queue: Waiter[] = [];

  /**
   * @param slots writes processed at once (limits.inflight_bulks)
   * @param queueMax writes that may wait for a slot (limits.bulk_queue)
   * @param waitMs longest wait before rejection (limits.bulk_queue_wait)
   */
  constructor(
    private readonly slots: number,
    private readonly queueMax: number,
    private readonly waitMs: number,
  ) {}

  get inflight(): number {
    return this.running;
  }

  get waiting(): number {
    return this.queue.length;
  }

  /** Resolves 'run' once the caller holds a slot (it must call release()), or 'rejected'. */
  acquire(): Promise<Admitted> {
    if (this.running < this.slots && this.queue.length === 0) {
      this.running++;
      return Promise.resolve('run');
    }
    if (this.queue.length >= this.queueMax || this.waitMs <= 0) return Promise.resolve('rejected');
    return new Promise<Admitted>((resolve) => {
      const w: Waiter = {
        resolve,
        timer: setTimeout(() => {
          const i = this.queue.indexOf(w);
          if (i >= 0) this.queue.splice(i, 1);
          resolve('rejected');
        }, this.waitMs),
      };
      this.queue.push(w);
    });
  }

  /** Hands the slot to the oldest waiter, or frees it. */
  release(): void {
    const next = this.queue.shift();
    if (next) {
      clearTimeout(next.timer);
      next.resolve('run');
      return;
    }
    this.running--;
  }
}

/** What write admission reads and counts in the request context (context.ts HttpContext is one). */
export interface AdmissionContext {
  readonly config: {
    readonly limits: { readonly inflight_bulks: number; readonly bulk_queue: number; readonly bulk_queue_wait: number };
  };
  admission?: WriteAdmission;
  inflight: { bulks: number };
  readonly metrics: {
    readonly queued: { set(n: number): void };
    readonly inflight: { set(n: number): void };
    readonly rejectedBulks: { inc(): void };
  };
}

export function admission(ctx: AdmissionContext): WriteAdmission {
  const l = ctx.config.limits;
  return (ctx.admission ??= new WriteAdmission(l.inflight_bulks, l.bulk_queue, l.bulk_queue_wait));
}

/** Waits for a write slot (the body stays unread meanwhile); false when the write is rejected for overload. */
export async function admitWrite(ctx: AdmissionContext): Promise<boolean> {
  const adm = admission(ctx);
  const p = adm.acquire();
  ctx.metrics.queued.set(adm.waiting);
  const verdict = await p;
  ctx.metrics.queued.set(adm.waiting);
  if (verdict === 'rejected') {
    ctx.metrics.rejectedBulks.inc();
    return false;
  }
  ctx.inflight.bulks = adm.inflight;
  ctx.metrics.inflight.set(adm.inflight);
  return true;
}

export function releaseWrite(ctx: AdmissionContext): void {
  const adm = admission(ctx);
  adm.release();
  ctx.inflight.bulks = adm.inflight;
  ctx.metrics.inflight.set(adm.inflight);
  ctx.metrics.queued.set(adm.waiting);
}

export function overloadReason(ctx: AdmissionContext): string {
  const l = ctx.config.limits;
  return `rejected execution: limits.inflight_bulks (${l.inflight_bulks}) writes in flight and the bulk queue full or waited ${l.bulk_queue_wait} ms (limits.bulk_queue ${l.bulk_queue}); retry later`;
}
