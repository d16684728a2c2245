// A token bucket over an injected clock: up to `burst` calls at once, `perSecond` sustained.

export class TokenBucket {
  private tokens: number;
  private updatedAt: number;

  /** `now` returns milliseconds on any monotonic clock. */
  constructor(
    private readonly burst: number,
    private readonly perSecond: number,
    private readonly now: () => number,
  ) {
    this.tokens = burst;
    this.updatedAt = now();
  }

  /** Takes one token; false when the bucket is empty (the call is over the limit). */
  take(): boolean {
    const now = this.now();
    const elapsed = now - this.updatedAt;
    if (elapsed > 0) {
      this.tokens = Math.min(this.burst, this.tokens + (elapsed * this.perSecond) / 1000);
      this.updatedAt = now;
    }
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }
}
