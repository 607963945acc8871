// A per-shard circuit breaker for writes: after `failures` consecutive failures the shard is skipped for
// `cooldown` ms, then one write probes it (half-open); a success closes it again.
export class Breaker {
  private fails = 0;
  private openUntil = 0;
  private probing = false;

  constructor(private readonly failures: number, private readonly cooldownMs: number) {}

  /** May a write go to this shard now? Past the cooldown the first caller gets the probe. */
  allow(now = Date.now()): boolean {
    if (this.fails < this.failures) return true;
    if (now < this.openUntil || this.probing) return false;
    this.probing = true;
    return true;
  }

  get open(): boolean {
    return this.fails >= this.failures;
  }

  success(): void {
    this.fails = 0;
    this.probing = false;
  }

  failure(now = Date.now()): void {
    this.fails++;
    this.probing = false;
    if (this.fails >= this.failures) this.openUntil = now + this.cooldownMs;
  }
}
