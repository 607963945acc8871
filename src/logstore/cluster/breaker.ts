// A per-shard circuit breaker for writes: after `failures` consecutive failures the shard is skipped for
// `cooldown` ms, then one write probes it (half-open); its success closes the breaker, its failure reopens it.
export class Breaker {
  private fails = 0;
  private openUntil = 0;
  private probing = false;

  constructor(
    private readonly failures: number,
    private readonly cooldownMs: number,
  ) {}

  /** May a write go to this shard now? (Closed, or open past its cooldown with no probe out.) No side effect. */
  available(now = Date.now()): boolean {
    return this.fails < this.failures || (now >= this.openUntil && !this.probing);
  }

  /** The shard was chosen for a write: if the breaker is open, this write is its probe. */
  taken(): void {
    if (this.fails >= this.failures) this.probing = true;
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
