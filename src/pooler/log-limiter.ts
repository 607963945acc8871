// Warnings an attacker or a storm can trigger by the thousand (login timeouts, refused clients, accept failures),
// logged as one line per period with the count since the last line, never one line per socket.
import type { Logger } from 'pino';

/** The first event of a quiet spell is logged at once; the rest of a period are counted and reported in one line
 * when the next event comes after the period, or at flush() (the pooler's maintenance tick). */
export class LogLimiter {
  private pending = 0;
  private last = -Infinity;
  private fields: Record<string, unknown> = {};

  constructor(
    private readonly log: Logger,
    private readonly message: string,
    private readonly periodMs = 10_000,
  ) {}

  /** `n` events now; `fields` describe the latest (they go on the next line logged). */
  add(n: number, fields: Record<string, unknown> = {}, now = Date.now()): void {
    if (n <= 0) return;
    this.pending += n;
    this.fields = fields;
    if (now - this.last >= this.periodMs) this.flush(now);
  }

  /** Logs what was counted since the last line, once the period allows. */
  flush(now = Date.now()): void {
    if (this.pending === 0 || now - this.last < this.periodMs) return;
    this.log.warn({ ...this.fields, count: this.pending, period_ms: this.periodMs }, this.message);
    this.pending = 0;
    this.last = now;
  }
}
